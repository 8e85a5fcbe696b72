from __future__ import annotations

import pytest

from ctlplane.exporter.catalog import CATALOG, Mode, Role
from ctlplane.exporter.model import RawReading, Sample
from ctlplane.exporter.readings import (
    claims_active_controller,
    identify,
    parse_object_name,
    plan_queries,
    queries_for,
    samples_from_readings,
)


def reading(pattern: str, name: str, **values: float | str) -> RawReading:
    return RawReading(pattern, name, parse_object_name(name)[1], {k.replace("_", "-"): v for k, v in values.items()})


def test_plan_reads_each_mbean_pattern_once_with_every_attribute_it_needs() -> None:
    queries = plan_queries()
    patterns = [q.pattern for q in queries]
    assert len(patterns) == len(set(patterns))
    raft = next(q for q in queries if q.pattern == "kafka.server:type=raft-metrics")
    assert {"current-state", "current-leader", "current-epoch", "high-watermark"} <= set(raft.attributes)
    assert {spec.mbean for spec in CATALOG} == set(patterns)


def test_request_metrics_keep_only_control_plane_rpcs_and_sum_api_versions() -> None:
    pattern = "kafka.network:type=RequestMetrics,name=RequestsPerSec,request=*,version=*"
    samples = samples_from_readings(
        [
            reading(
                pattern,
                "kafka.network:type=RequestMetrics,name=RequestsPerSec,request=UpdateMetadata,version=7",
                Count=5,
            ),
            reading(
                pattern,
                "kafka.network:type=RequestMetrics,name=RequestsPerSec,request=UpdateMetadata,version=8",
                Count=2,
            ),
            reading(
                pattern, "kafka.network:type=RequestMetrics,name=RequestsPerSec,request=Produce,version=9", Count=99
            ),
        ]
    )
    assert samples == (Sample("kafka_requests_total", (("request", "UpdateMetadata"),), 7.0),)


def test_histogram_becomes_a_summary_in_seconds() -> None:
    pattern = "kafka.controller:type=ControllerEventManager,name=EventQueueTimeMs"
    (sample,) = samples_from_readings(
        [RawReading(pattern, pattern, {}, {"Count": 4.0, "Mean": 2.5, "50thPercentile": 2.0, "99thPercentile": 9.0})]
    )
    assert sample.series == "kafka_controller_event_queue_time_seconds"
    assert dict(sample.parts) == pytest.approx({"count": 4.0, "sum": 0.01, "0.5": 0.002, "0.99": 0.009})


def test_milliseconds_become_seconds_and_strings_become_labels() -> None:
    metadata = "kafka.server:type=broker-metadata-metrics"
    raft = "kafka.server:type=raft-metrics"
    info = "kafka.server:type=app-info,id=*"
    samples = samples_from_readings(
        [
            RawReading(metadata, metadata, {"type": "broker-metadata-metrics"}, {"last-applied-record-lag-ms": 1500.0}),
            RawReading(raft, raft, {"type": "raft-metrics"}, {"current-state": "observer", "current-leader": 2.0}),
            RawReading(info, "kafka.server:type=app-info,id=7", {"type": "app-info", "id": "7"}, {"Version": "4.3.1"}),
        ]
    )
    assert Sample("kafka_broker_last_applied_record_lag_seconds", (), 1.5) in samples
    assert Sample("kafka_raft_state", (("state", "observer"),), 1.0) in samples
    assert Sample("kafka_raft_current_leader", (), 2.0) in samples
    assert Sample("kafka_node_info", (("node_id", "7"), ("version", "4.3.1")), 1.0) in samples


def test_per_broker_controller_queues_carry_the_broker_label() -> None:
    pattern = "kafka.controller:type=ControllerChannelManager,name=QueueSize,broker-id=*"
    samples = samples_from_readings(
        [reading(pattern, "kafka.controller:type=ControllerChannelManager,name=QueueSize,broker-id=2", Value=3)]
    )
    assert samples == (Sample("kafka_controller_channel_queue_size", (("broker", "2"),), 3.0),)


def _samples(*series: str, **values: float) -> list[Sample]:
    out = [Sample(s, (), 1.0) for s in series]
    out += [Sample(k, (), v) for k, v in values.items()]
    return out


@pytest.mark.parametrize(
    ("samples", "mode", "role"),
    [
        (_samples("kafka_broker_state", "kafka_controller_active"), Mode.ZOOKEEPER, Role.BROKER),
        (_samples("kafka_controller_active"), Mode.ZOOKEEPER, Role.BROKER),  # jmxquery cannot read BrokerState
        (_samples("kafka_broker_state", "kafka_raft_current_leader"), Mode.KRAFT, Role.BROKER),
        (_samples("kafka_controller_active", "kafka_raft_current_leader"), Mode.KRAFT, Role.CONTROLLER),
        (_samples("kafka_controller_active", "kafka_broker_state", "kafka_raft_state"), Mode.KRAFT, Role.COMBINED),
        (
            _samples("kafka_controller_active", "kafka_raft_current_leader", kafka_controller_zk_migration_state=1.0),
            Mode.MIGRATION,
            Role.CONTROLLER,
        ),
        (
            _samples("kafka_controller_active", "kafka_raft_current_leader", kafka_controller_zk_migration_state=3.0),
            Mode.KRAFT,
            Role.CONTROLLER,
        ),
        # a ZooKeeper broker with zookeeper.metadata.migration.enable runs a raft observer (KafkaServer ->
        # RaftManager) beside its ZooKeeper session and its KafkaController, whose ZkMigrationState is 4 (ZK)
        (
            _samples(
                "kafka_broker_state",
                "kafka_controller_active",
                "kafka_raft_current_leader",
                kafka_zookeeper_expires_total=0.0,
                kafka_controller_zk_migration_state=4.0,
            ),
            Mode.ZOOKEEPER,
            Role.BROKER,
        ),
        # the same read before its KafkaController's gauges: its ZooKeeper session alone says so
        (
            _samples("kafka_broker_state", "kafka_raft_current_leader", kafka_zookeeper_expires_total=0.0),
            Mode.ZOOKEEPER,
            Role.BROKER,
        ),
        # a migrating KRaft controller holds a ZooKeeper session too, but no BrokerState
        (
            _samples(
                "kafka_controller_active",
                "kafka_raft_current_leader",
                kafka_zookeeper_expires_total=0.0,
                kafka_controller_zk_migration_state=1.0,
            ),
            Mode.MIGRATION,
            Role.CONTROLLER,
        ),
        # read through a naming that drops every raft-metrics MBean (Confluent's jmx-monitoring-stacks rules
        # exclude kafka.server:type=*): a KRaft broker still says so by its metadata loader's version, a
        # KRaft controller by its committed record offset
        (_samples("kafka_broker_state", "kafka_metadata_version_level"), Mode.KRAFT, Role.BROKER),
        (
            _samples("kafka_controller_active", "kafka_controller_last_committed_record_offset"),
            Mode.KRAFT,
            Role.CONTROLLER,
        ),
        (_samples(), None, Role.UNKNOWN),
    ],
)
def test_mode_and_role_come_from_what_the_node_exposes(samples: list[Sample], mode: Mode | None, role: Role) -> None:
    identity = identify(samples)
    assert (identity.mode, identity.role) == (mode, role)


def test_node_id_and_version_come_from_app_info() -> None:
    identity = identify([Sample("kafka_node_info", (("node_id", "3"), ("version", "3.9.2")), 1.0)])
    assert (identity.node_id, identity.version) == (3, "3.9.2")


def test_control_plane_gauges_kafka_registers_without_the_listener_are_dropped() -> None:
    socket_server = "kafka.network:type=SocketServer,name=ControlPlaneNetworkProcessorAvgIdlePercent"
    queue = "kafka.network:type=RequestChannel,name=ControlPlaneRequestQueueSize"
    idle = RawReading(socket_server, socket_server, {}, {"Value": 0.25})
    assert samples_from_readings([idle]) == ()
    with_listener = samples_from_readings([idle, RawReading(queue, queue, {}, {"Value": 0.0})])
    assert {s.series for s in with_listener} == {
        "kafka_control_plane_network_processor_idle_ratio",
        "kafka_control_plane_request_queue_size",
    }


def test_a_nan_value_is_no_data_and_never_a_sample() -> None:
    # raft commit latency on a follower, the idle ratio of a listener that does not exist: Kafka says NaN
    raft = "kafka.server:type=raft-metrics"
    queue_time = "kafka.network:type=RequestMetrics,name=RequestQueueTimeMs,request=*"
    readings = [
        RawReading(raft, raft, {"type": "raft-metrics"}, {"commit-latency-avg": float("nan"), "current-epoch": 7.0}),
        RawReading(
            queue_time,
            "kafka.network:type=RequestMetrics,name=RequestQueueTimeMs,request=BrokerHeartbeat",
            {"request": "BrokerHeartbeat"},
            {"Count": 3.0, "Mean": float("nan"), "50thPercentile": 1.0, "99thPercentile": 2.0},
        ),
    ]
    assert [(s.series, s.value) for s in samples_from_readings(readings)] == [("kafka_raft_current_epoch", 7.0)]


@pytest.mark.parametrize("node_id", ["\u00b2", "1" * 5000, "", "-", "3.0", "\u0663"])
def test_an_app_info_id_that_is_not_a_java_int_is_no_node_id(node_id: str) -> None:
    identity = identify([Sample("kafka_node_info", (("node_id", node_id), ("version", "3.9.2")), 1.0)])
    assert (identity.node_id, identity.version) == (None, "3.9.2")


def test_an_idle_meter_over_one_is_served_as_one_and_nan_stays_no_sample() -> None:
    """KafkaRequestHandler credits a handler's wait only when it ends, so the pool's one-minute idle rate
    overshoots 1 (1.023 read from a real Kafka 4.3.1 broker): a `_ratio` is a fraction, clamped."""
    handler = "kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent"
    network = "kafka.network:type=SocketServer,name=NetworkProcessorAvgIdlePercent"
    samples = samples_from_readings(
        [
            RawReading(handler, handler, parse_object_name(handler)[1], {"OneMinuteRate": 1.0229361004254562}),
            RawReading(network, network, parse_object_name(network)[1], {"Value": -0.01}),
        ]
    )
    assert {s.series: s.value for s in samples} == {
        "kafka_request_handler_idle_ratio": 1.0,
        "kafka_network_processor_idle_ratio": 0.0,
    }
    assert all(spec.bounds == (0.0, 1.0) for spec in CATALOG if spec.series.endswith("_ratio"))


def test_a_node_is_asked_what_its_mode_and_role_may_register_and_the_rest_marked_unexpected() -> None:
    """readings.queries_for: by the catalogue's own modes and roles. A node not yet identified, or migrating,
    gets every query unmarked; the same tuple each time (the JMX client caches its plan per tuple)."""
    queries = plan_queries()
    expected = {
        (mode, role): sum(not q.unexpected for q in queries_for(queries, mode, role))
        for mode, role in ((Mode.ZOOKEEPER, Role.BROKER), (Mode.KRAFT, Role.BROKER), (Mode.KRAFT, Role.CONTROLLER))
    }
    assert expected == {
        (Mode.ZOOKEEPER, Role.BROKER): 41,
        (Mode.KRAFT, Role.BROKER): 26,  # none of the kafka.controller domain (readings._registered_on)
        (Mode.KRAFT, Role.CONTROLLER): 45,
    }
    zk = {q.pattern for q in queries_for(queries, Mode.ZOOKEEPER, Role.BROKER) if not q.unexpected}
    assert "kafka.controller:type=ControllerChannelManager,name=QueueSize,broker-id=*" in zk
    assert "kafka.controller:type=KafkaController,name=BrokerRegistrationState,broker=*" not in zk
    assert [q.pattern for q in queries_for(queries, Mode.KRAFT, Role.COMBINED)] == [q.pattern for q in queries]
    for mode, role in ((None, Role.BROKER), (Mode.MIGRATION, Role.CONTROLLER), (Mode.KRAFT, Role.UNKNOWN)):
        assert queries_for(queries, mode, role) is queries
    assert queries_for(queries, Mode.KRAFT, Role.BROKER) is queries_for(queries, Mode.KRAFT, Role.BROKER)


def test_what_follows_the_controller_is_dormant_on_a_node_that_was_not_the_active_controller() -> None:
    """readings.queries_for(..., active_controller=False): the queries that follow the controller, and are
    expected on the node, marked `dormant`; on the active controller (and on a node not yet identified)
    unmarked. claims_active_controller reads ActiveControllerCount."""
    queries = plan_queries()
    for mode, role in ((Mode.ZOOKEEPER, Role.BROKER), (Mode.KRAFT, Role.CONTROLLER), (Mode.KRAFT, Role.COMBINED)):
        dormant = {q.pattern for q in queries_for(queries, mode, role, active_controller=False) if q.dormant}
        following = {q.pattern for q in queries if q.follows_controller}
        expected = {q.pattern for q in queries_for(queries, mode, role) if not q.unexpected}
        assert dormant == following & expected and dormant, (mode, role)
        assert not any(q.dormant for q in queries_for(queries, mode, role, active_controller=True))
    assert not any(q.dormant for q in queries_for(queries, Mode.KRAFT, Role.BROKER, active_controller=False))
    assert queries_for(queries, None, Role.UNKNOWN, active_controller=False) is queries

    active = "kafka.controller:type=KafkaController,name=ActiveControllerCount"
    assert claims_active_controller([reading(active, active, Value=1)])
    assert not claims_active_controller([reading(active, active, Value=0)])
    assert not claims_active_controller([reading(active, active, Value="1")])
    assert not claims_active_controller([])


def test_the_collectors_and_app_info_are_the_queries_registered_once_for_the_jvms_life() -> None:
    """MetricSpec.registered_once: the JVM's collectors (the platform's) and AppInfoParser's app-info (once, at
    the end of start-up, removed at shutdown): a client need not look them up again once found."""
    once = {q.pattern for q in plan_queries() if q.registered_once}
    assert once == {"java.lang:type=GarbageCollector,name=*", "kafka.server:type=app-info,id=*"}
