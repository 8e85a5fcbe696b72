"""DNS discovery (ctlplane/exporter/discovery/dns.py, NodeDiscovery.set_dns): a headless Service's records, asked
of a real DNS server on loopback; a node that leaves the answers is kept until it is seen elsewhere or proven gone."""

from __future__ import annotations

import re
from collections.abc import Iterator
from types import MappingProxyType

import pytest

from ctlplane.exporter.catalog import Mode, Role
from ctlplane.exporter.config.file import ConfigError, parse_settings
from ctlplane.exporter.discovery.answers import DnsNode, JmxRule, NodeDiscovery
from ctlplane.exporter.discovery.dns import DnsError, DnsName, DnsResolver, DnsWatch
from ctlplane.exporter.model import ClusterSnapshot, FleetSnapshot, NodeSnapshot, QuorumView
from ctlplane.exporter.scraper import Target
from ctlplane.exporter.sources.jmx.base import Endpoint
from ctlplane.exporter.state import ExporterState
from ctlplane.exporter.thresholds import Thresholds
from tests.dnsserver import LoopbackDns, loopback_dns
from tests.unit.exporter.builders import node

SERVICE = "my-cluster-kafka-brokers.kafka.svc.cluster.local."
SRV = f"_jmx._tcp.{SERVICE}"


def _pod(server: LoopbackDns, pod: str, ip: str, port: int = 9999) -> None:
    server.records.setdefault((SRV, "SRV"), []).append(f"0 50 {port} {pod}.{SERVICE}")
    server.records[(f"{pod}.{SERVICE}", "A")] = [ip]


@pytest.fixture
def server() -> Iterator[LoopbackDns]:
    with loopback_dns() as running:
        yield running


def test_srv_records_of_a_headless_service_are_nodes_named_by_their_pods(server: LoopbackDns) -> None:
    _pod(server, "my-cluster-broker-3", "10.0.0.13")
    _pod(server, "my-cluster-controller-0", "10.0.0.10", port=9998)
    nodes = DnsResolver([server.address]).resolve(DnsName(SRV, "SRV"))
    assert nodes == [
        DnsNode("my-cluster-broker-3", "10.0.0.13:9999"),
        DnsNode("my-cluster-controller-0", "10.0.0.10:9998"),
    ]


def test_a_records_are_nodes_named_by_their_addresses_at_the_configured_port(server: LoopbackDns) -> None:
    server.records[(SERVICE, "A")] = ["10.0.0.2", "10.0.0.1"]
    server.records[(SERVICE, "AAAA")] = ["fd00::7"]
    nodes = DnsResolver([server.address]).resolve(DnsName(SERVICE, "A", 9999))
    assert nodes == [
        DnsNode("10.0.0.1", "10.0.0.1:9999"),
        DnsNode("10.0.0.2", "10.0.0.2:9999"),
        DnsNode("fd00::7", "[fd00::7]:9999"),
    ]


def test_a_name_that_does_not_resolve_says_why_in_one_line(server: LoopbackDns) -> None:
    resolver = DnsResolver([server.address], timeout_seconds=0.5)
    with pytest.raises(DnsError, match="no such name") as missing:
        resolver.resolve(DnsName("_jmx._tcp.nothing.test.", "SRV"))
    assert "\n" not in str(missing.value)
    server.silent = True
    with pytest.raises(DnsError, match=re.escape("_jmx._tcp.nothing.test.")) as silent:
        resolver.resolve(DnsName("_jmx._tcp.nothing.test.", "SRV"))
    assert "\n" not in str(silent.value)


def test_a_failing_name_keeps_the_nodes_it_had(server: LoopbackDns) -> None:
    _pod(server, "b-1", "10.0.0.1")
    handed: list[list[DnsNode]] = []
    watch = DnsWatch(
        {"prod": (DnsResolver([server.address], 0.5), [DnsName(SRV, "SRV")])},
        lambda cluster, nodes: handed.append(list(nodes)),
    )
    watch.refresh()
    assert handed == [[DnsNode("b-1", "10.0.0.1:9999")]]
    server.silent = True
    watch.refresh()
    assert len(handed) == 1 and SRV in watch.errors  # nothing handed on: an outage is not an empty answer
    server.silent = False
    watch.refresh()
    assert len(handed) == 2 and not watch.errors


def _discovery() -> tuple[NodeDiscovery, list[list[Target]]]:
    applied: list[list[Target]] = []

    def make(cluster: str, name: str, address: str, role: Role, node_id: int | None) -> Target:
        host, _, port = address.rpartition(":")
        return Target(cluster, name, Endpoint(host, int(port)), role, node_id)

    rule = JmxRule(forget_after_seconds=0)
    return NodeDiscovery([], {"prod": rule}, make, lambda targets: applied.append(list(targets))), applied


def _round(discovery: NodeDiscovery, *nodes: NodeSnapshot, view: QuorumView | None = None) -> None:
    snapshot = FleetSnapshot(1, 5.0, 0.1, (ClusterSnapshot("prod", nodes, view),))
    discovery.observe(ExporterState(snapshot, Thresholds()).current())


def test_a_pod_gone_from_the_answer_stays_watched_until_its_node_id_answers_at_another_address() -> None:
    discovery, applied = _discovery()
    discovery.set_dns("prod", [DnsNode("10.0.0.1", "10.0.0.1:9999"), DnsNode("10.0.0.2", "10.0.0.2:9999")])
    assert [t.node for t in applied[-1]] == ["10.0.0.1", "10.0.0.2"]
    # the pod at 10.0.0.2 crashed and left the Service's endpoints: it is the node that needs watching
    discovery.set_dns("prod", [DnsNode("10.0.0.1", "10.0.0.1:9999")])
    down = node("10.0.0.2", cluster="prod", node_id=2, up=False)
    _round(discovery, node("10.0.0.1", cluster="prod", node_id=1), down)
    assert [t.node for t in applied[-1]] == ["10.0.0.1", "10.0.0.2"]
    # rescheduled: broker 2 answers at a new address, so the old one was the same broker, moved
    discovery.set_dns("prod", [DnsNode("10.0.0.1", "10.0.0.1:9999"), DnsNode("10.0.0.9", "10.0.0.9:9999")])
    _round(discovery, node("10.0.0.1", cluster="prod", node_id=1), down, node("10.0.0.9", cluster="prod", node_id=2))
    assert [t.node for t in applied[-1]] == ["10.0.0.1", "10.0.0.9"]
    rows = {row[2]: row[3] for family in discovery.families() for row in family.rows}
    assert rows[("prod", "moved")] == 1.0 and rows[("prod",)] == 2.0


def test_a_pod_gone_from_the_answer_leaves_on_the_evidence_kafka_gives() -> None:
    discovery, applied = _discovery()
    discovery.set_dns("prod", [DnsNode("b-1", "10.0.0.1:9999"), DnsNode("b-3", "10.0.0.3:9999")])
    discovery.set_dns("prod", [DnsNode("b-1", "10.0.0.1:9999")])  # scaled down
    down = node("b-3", cluster="prod", node_id=3, up=False, mode=Mode.KRAFT)
    # brokers of 4.0+ list every registered broker, fenced ones too: broker 3 is not among them
    view = QuorumView(read_at=5.0, fenced=MappingProxyType({1: False}))
    _round(discovery, node("b-1", cluster="prod", node_id=1), down, view=view)
    assert [t.node for t in applied[-1]] == ["b-1"]
    rows = {row[2]: row[3] for family in discovery.families() for row in family.rows}
    assert rows[("prod", "unregistered")] == 1.0


def test_dns_discovery_in_the_config() -> None:
    def settings(discovery: dict[str, object]) -> object:
        return parse_settings({"clusters": [{"name": "prod", "discovery": discovery}]})

    settings({"dns": [{"name": SRV}]})  # no bootstrap address needed: the names give the nodes
    with pytest.raises(ConfigError, match="needs the JMX port"):
        settings({"dns": [{"name": SERVICE, "type": "A"}]})
    with pytest.raises(ConfigError, match="carries its port"):
        settings({"dns": [{"name": SRV, "port": 9999}]})
