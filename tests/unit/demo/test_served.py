"""Catalogue conformance: the simulator serves only (ObjectName, attribute) pairs the catalogue reads."""

from __future__ import annotations

import pytest

from ctlplane.demo.served import KIND_ATTRIBUTES, served_mbeans
from ctlplane.demo.shapes import ClusterSpec, NodeSpec, fleet_shape, standard_shape
from ctlplane.exporter.catalog import CATALOG, Kind, MetricSpec, Mode, Role
from ctlplane.exporter.model import RawReading
from ctlplane.exporter.readings import parse_object_name, samples_from_readings

SHAPES = [*standard_shape(), *fleet_shape(2, 5)]
NODES = [(cluster, node) for cluster in SHAPES for node in cluster.nodes]


def _matches(pattern: str, object_name: str) -> bool:
    domain, keys = parse_object_name(pattern)
    served_domain, served_keys = parse_object_name(object_name)
    return (
        domain == served_domain
        and keys.keys() == served_keys.keys()
        and all(v == "*" or served_keys[k] == v for k, v in keys.items())
    )


def _catalogue_rows(object_name: str) -> list[MetricSpec]:
    return [spec for spec in CATALOG if _matches(spec.mbean, object_name)]


@pytest.mark.parametrize(("cluster", "node"), NODES, ids=[f"{c.name}/{n.name}" for c, n in NODES])
def test_every_served_attribute_is_in_the_catalogue(cluster: ClusterSpec, node: NodeSpec) -> None:
    for mbean in served_mbeans(node, cluster):
        rows = _catalogue_rows(mbean.object_name)
        assert rows, f"{mbean.object_name} is not in the catalogue"
        allowed = {a for spec in rows for a in (*spec.attributes, *KIND_ATTRIBUTES.get(spec.kind, ()))}
        assert set(mbean.attributes) <= allowed, f"{mbean.object_name}: {set(mbean.attributes) - allowed}"
        for spec in rows:
            if spec.only:
                _, keys = parse_object_name(mbean.object_name)
                assert all(keys[k] in v for k, v in spec.only.items())


def test_roles_serve_what_kafka_registers() -> None:
    zk, kraft = standard_shape()
    zk_names = {m.object_name for m in served_mbeans(zk.nodes[0], zk)}
    assert "kafka.network:type=RequestChannel,name=ControlPlaneRequestQueueSize" in zk_names
    assert "kafka.controller:type=ControllerChannelManager,name=QueueSize,broker-id=3" in zk_names
    assert not any("raft-metrics" in name for name in zk_names)
    controller = kraft.node("controller-1")
    broker = kraft.node("broker-101")
    assert controller is not None and broker is not None
    controller_names = {m.object_name for m in served_mbeans(controller, kraft)}
    assert "kafka.server:type=KafkaServer,name=BrokerState" not in controller_names
    assert {
        f"kafka.controller:type=KafkaController,name=BrokerRegistrationState,broker={i}" for i in (101, 102, 103)
    } <= controller_names
    assert "kafka.server:type=raft-metrics" in controller_names
    broker_names = {m.object_name for m in served_mbeans(broker, kraft)}
    assert "kafka.server:type=KafkaServer,name=BrokerState" in broker_names
    assert "kafka.server:type=broker-metadata-metrics" in broker_names
    assert not any(name.startswith("kafka.controller:") for name in broker_names)
    assert not any("ControlPlane" in name for name in controller_names | broker_names)


def test_meters_and_histograms_carry_the_yammer_attributes() -> None:
    zk, _ = standard_shape()
    kinds = {m.object_name: m for m in served_mbeans(zk.nodes[0], zk)}
    meter = kinds["kafka.server:type=KafkaRequestHandlerPool,name=ControlPlaneRequestHandlerAvgIdlePercent"]
    assert meter.kind is Kind.METER and {"Count", "OneMinuteRate"} <= set(meter.attributes)
    histogram = kinds["kafka.network:type=RequestMetrics,name=TotalTimeMs,request=LeaderAndIsr"]
    assert {"Count", "Mean", "50thPercentile", "99thPercentile"} <= set(histogram.attributes)
    assert "kafka.network:type=RequestMetrics,name=RequestsPerSec,request=LeaderAndIsr,version=7" in kinds


@pytest.mark.parametrize(("cluster", "node"), NODES[:9], ids=[f"{c.name}/{n.name}" for c, n in NODES[:9]])
def test_every_applicable_catalogue_series_comes_out_of_the_readings(cluster: ClusterSpec, node: NodeSpec) -> None:
    """Served MBeans, mapped by the exporter's own readings code, yield every series the node should have."""
    from ctlplane.demo.served import applies, node_rpcs
    from ctlplane.demo.values import cluster_values

    values = cluster_values(cluster, (), seed=1, origin=0.0, t=100.0)[node.name]
    readings = []
    for mbean in served_mbeans(node, cluster):
        for spec in mbean.specs:
            readings.append(RawReading(spec.mbean, mbean.object_name, dict(mbean.keys), values[mbean.object_name]))
    series = {sample.series for sample in samples_from_readings(readings)}
    # KRaft brokers receive none of the catalogue's control RPCs, so they have no request metrics for them
    expected = {spec.series for spec in CATALOG if applies(spec, node) and (node_rpcs(node) or not spec.only)}
    if node.role is Role.BROKER and node.mode is not Mode.ZOOKEEPER:
        # an observer never commits: Kafka reports NaN commit latency, which is no data, not a sample
        expected.discard("kafka_raft_commit_latency_seconds")
    assert series == expected
