"""Discovery (exporter/discovery.py): JMX addresses from the operator's rule, and a watched set that the
cluster's answers only ever add to (a node absent from an answer is the node that needs watching)."""

from __future__ import annotations

import pytest

from exporter.catalog import Role
from exporter.config import ConfigError, Settings, parse_settings
from exporter.discovery import Discovered, JmxRule, NodeDiscovery, TemplateError, check_template, fill
from exporter.jmx.base import Endpoint
from exporter.model import ClusterSnapshot, FleetSnapshot, Member, QuorumView
from exporter.scraper import Target

RULE = JmxRule(broker="{host}:9999", controller="ctl-{id}.kafka:9998")
NONE: frozenset[int] = frozenset()


def _reconcile(
    state: Discovered, *members: Member, rule: JmxRule = RULE, ids: frozenset[int] = NONE, at: float = 1.0
) -> Discovered:
    return state.reconcile(members, rule, ids, frozenset(), frozenset(), at)


@pytest.mark.parametrize(
    ("template", "node_id", "host", "address"),
    [
        ("{host}:9999", 3, "kafka-3.example", "kafka-3.example:9999"),
        ("kafka-{id}.kafka-brokers.svc:9999", 3, None, "kafka-3.kafka-brokers.svc:9999"),
        ("127.0.0.1:{id+40000}", 101, None, "127.0.0.1:40101"),
        ("127.0.0.1:{id-1}", 9001, None, "127.0.0.1:9000"),
        ("{host}:9999", 3, None, None),  # the answer gave no host: no address, never a wrong one
    ],
)
def test_a_template_fills_in_the_host_and_the_id(
    template: str, node_id: int, host: str | None, address: str | None
) -> None:
    assert fill(check_template(template), node_id, host) == address


@pytest.mark.parametrize("template", ["{host}", "{hostname}:9999", "{host+1}:9999", "{id*2}:1", "x:{port}"])
def test_a_template_ctlplane_cannot_fill_is_refused_at_load_time(template: str) -> None:
    with pytest.raises(TemplateError):
        check_template(template)


def test_every_node_an_answer_names_is_watched_with_its_role_and_a_node_that_vanishes_stays() -> None:
    state = _reconcile(
        Discovered(),
        Member(1, Role.BROKER, "b1.example"),
        Member(2, Role.BROKER, "b2.example"),
        Member(101, Role.CONTROLLER),
    )
    assert {i: (w.node, w.address, w.member.role) for i, w in state.watched.items()} == {
        1: ("broker-1", "b1.example:9999", Role.BROKER),
        2: ("broker-2", "b2.example:9999", Role.BROKER),
        101: ("controller-101", "ctl-101.kafka:9998", Role.CONTROLLER),
    }
    # broker 2 fenced before Kafka 4.0 (describeCluster leaves it out), or an observer the leader forgot:
    # it stays, and so does when it was last named
    later = _reconcile(state, Member(1, Role.BROKER, "b1.example"), Member(101, Role.CONTROLLER), at=2.0)
    assert set(later.watched) == {1, 2, 101}
    assert later.watched[2].last_seen_at == 1.0 and later.watched[1].last_seen_at == 2.0
    # an answer that names nobody (the quorum failed over and knows no observer yet) drops nobody
    assert set(_reconcile(later, at=3.0).watched) == {1, 2, 101}


def test_answers_that_name_a_node_in_both_roles_make_it_combined() -> None:
    state = _reconcile(Discovered(), Member(1, Role.BROKER, "n1"), Member(1, Role.CONTROLLER))
    assert state.watched[1].member.role is Role.COMBINED and state.watched[1].address == "n1:9999"
    assert state.watched[1].node == "combined-1"


def test_a_node_the_rule_gives_no_address_is_known_and_unwatched_with_the_reason() -> None:
    brokers_only = JmxRule(broker="{host}:9999")
    state = _reconcile(Discovered(), Member(5, Role.BROKER), Member(101, Role.CONTROLLER, "c1"), rule=brokers_only)
    assert not state.watched
    assert "needs {host}" in state.unwatched[5].reason
    assert state.unwatched[101].reason == "no JMX address rule for a controller"
    # an override by id gives it one
    override = JmxRule(broker="{host}:9999", overrides={5: "10.0.0.5:9999"})
    assert _reconcile(state, Member(5, Role.BROKER), rule=override).watched[5].address == "10.0.0.5:9999"


def test_a_listed_node_is_never_discovered_twice() -> None:
    by_id = _reconcile(Discovered(), Member(1, Role.BROKER, "b1"), ids=frozenset({1}))
    assert not by_id.watched
    by_address = Discovered().reconcile(
        [Member(1, Role.BROKER, "b1")], RULE, NONE, frozenset({"b1:9999"}), frozenset(), 1.0
    )
    assert not by_address.watched
    # discovered before the listed node's id was known: the copy goes once it is
    copy = _reconcile(Discovered(), Member(1, Role.BROKER, "b1"))
    assert 1 in copy.watched and not _reconcile(copy, Member(1, Role.BROKER, "b1"), ids=frozenset({1})).watched
    clash = Discovered().reconcile(
        [Member(1, Role.BROKER, "b1")], RULE, NONE, frozenset(), frozenset({"broker-1"}), 1.0
    )
    assert not clash.watched and "broker-1" in clash.unwatched[1].reason


def _snapshot(members: tuple[Member, ...]) -> FleetSnapshot:
    view = QuorumView(read_at=1.0, members=members)
    return FleetSnapshot(1, 1.0, 0.1, (ClusterSnapshot("prod", (), view),))


def test_the_scraper_is_given_the_listed_nodes_then_the_discovered_ones_each_round() -> None:
    listed = Target("prod", "static-1", Endpoint("b1", 9999), Role.BROKER, 1)
    applied: list[list[Target]] = []

    def make(cluster: str, node: str, address: str, role: Role, node_id: int) -> Target:
        host, _, port = address.rpartition(":")
        return Target(cluster, node, Endpoint(host, int(port)), role, node_id)

    discovery = NodeDiscovery([listed], {"prod": RULE}, make, lambda targets: applied.append(list(targets)))
    discovery.observe(_snapshot((Member(1, Role.BROKER, "b1"), Member(2, Role.BROKER, "b2"))))
    assert [(t.node, t.endpoint.address, t.node_id) for t in applied[-1]] == [
        ("static-1", "b1:9999", 1),
        ("broker-2", "b2:9999", 2),
    ]
    discovery.observe(_snapshot(()))  # an answer naming nobody
    assert [t.node for t in applied[-1]] == ["static-1", "broker-2"]


def test_discovery_in_the_config_needs_a_bootstrap_address_and_a_jmx_rule() -> None:
    def settings(cluster: dict[str, object]) -> Settings:
        return parse_settings({"clusters": [{"name": "prod", **cluster}]})

    with pytest.raises(ConfigError, match="list its nodes, or set discovery"):
        settings({})
    with pytest.raises(ConfigError, match="bootstrap_servers or bootstrap_controllers"):
        settings({"discovery": {"jmx_port": 9999}})
    with pytest.raises(ConfigError, match="say how to reach a node's JMX"):
        settings({"bootstrap_servers": ["k:9092"], "discovery": {}})
    with pytest.raises(ConfigError, match="placeholders"):
        settings({"bootstrap_servers": ["k:9092"], "discovery": {"broker_jmx": "{hostname}:9999"}})
    ok = settings({"bootstrap_controllers": ["c:9093"], "discovery": {"jmx_port": 9999, "overrides": {3: "x:1"}}})
    discovery = ok.clusters[0].discovery
    assert discovery is not None
    rule = discovery.rule()
    assert rule.address(Member(7, Role.BROKER, "h7")) == "h7:9999" and rule.address(Member(3, Role.BROKER)) == "x:1"
