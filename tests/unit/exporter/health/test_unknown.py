"""Readings no source serves the evidence for (issue #45): unknown, with what they lack, never healthy - a
cluster read through jmx_exporter's default naming has no raft current-state and no ZooKeeper SessionState
(Strings it drops)."""

from __future__ import annotations

from ctlplane.exporter.catalog import Mode, Role
from ctlplane.exporter.families import health_families
from ctlplane.exporter.health import FleetHealth, HealthMemory, evaluate
from ctlplane.exporter.health.model import ClusterHealth, UnknownReading
from ctlplane.exporter.health.unknown import SPARE_VOTERS, ZOOKEEPER_SESSIONS
from ctlplane.exporter.http.jsonapi import health_from_dict, health_to_dict
from ctlplane.exporter.model import ClusterSnapshot, FleetSnapshot, NodeSnapshot, QuorumReplica, QuorumView
from ctlplane.exporter.thresholds import Thresholds
from tests.unit.exporter.builders import kraft_broker, kraft_controller, node

AT = 1_000.0


def _health(*nodes: NodeSnapshot, quorum: QuorumView | None = None) -> ClusterHealth:
    snapshot = FleetSnapshot(1, AT, 0.01, (ClusterSnapshot("c1", nodes, quorum),))
    health, _ = evaluate(snapshot, HealthMemory(), Thresholds())
    return health.clusters[0]


def _with_raft_state(controller: NodeSnapshot, state: str) -> NodeSnapshot:
    values: dict[str | tuple[str, tuple[tuple[str, str], ...]], float] = {
        s.series: s.value for s in controller.samples if not s.labels
    }
    for s in ("leader", "follower"):
        values[("kafka_raft_state", (("state", s),))] = float(s == state)
    return node(controller.node, values, role=Role.CONTROLLER, node_id=controller.node_id)


LEADER = kraft_controller("c1", 1, active=True)
FOLLOWER = kraft_controller("c2", 2, active=False)
BROKER = kraft_broker("b1", 101)


def test_controllers_read_without_raft_state_leave_the_spare_voters_unknown_and_say_what_is_lacking() -> None:
    health = _health(LEADER, FOLLOWER, BROKER)
    assert health.redundancy is None
    assert health.unknown == (SPARE_VOTERS,)
    assert "kafka_raft_state" in SPARE_VOTERS.lacks and "bootstrap" in SPARE_VOTERS.lacks
    (family,) = [f for f in health_families(FleetHealth((health,))) if f.name == "kafka_cluster_reading_unknown"]
    assert [row[2:] for row in family.rows] == [(("c1", "quorum_spare_voters", SPARE_VOTERS.lacks), 1.0)]


def test_the_raft_state_or_the_quorums_view_makes_them_known() -> None:
    in_step = (_with_raft_state(LEADER, "leader"), _with_raft_state(FOLLOWER, "follower"), BROKER)
    assert _health(*in_step).unknown == ()
    replicas = (QuorumReplica(1, True, 500, AT, AT), QuorumReplica(2, True, 500, AT, AT))
    view = QuorumView(read_at=AT, leader_id=1, leader_epoch=3, high_watermark=500, replicas=replicas)
    answered = _health(LEADER, FOLLOWER, BROKER, quorum=view)
    assert answered.redundancy is not None and answered.unknown == ()


def test_no_controller_read_is_no_reading_attempted_not_an_unknown_one() -> None:
    down = kraft_controller("c1", 1, active=False, up=False)
    assert _health(down, BROKER).unknown == ()


def test_zookeeper_brokers_read_without_their_session_state_leave_the_sessions_unknown() -> None:
    def zk_broker(name: str, node_id: int, session: bool) -> NodeSnapshot:
        values: dict[str | tuple[str, tuple[tuple[str, str], ...]], float] = {"kafka_broker_state": 3.0}
        if session:
            values[("kafka_zookeeper_session_state", (("state", "CONNECTED"),))] = 1.0
        return node(name, values, mode=Mode.ZOOKEEPER, node_id=node_id)

    assert _health(zk_broker("b1", 1, False), zk_broker("b2", 2, False)).unknown == (ZOOKEEPER_SESSIONS,)
    assert _health(zk_broker("b1", 1, True), zk_broker("b2", 2, False)).unknown == ()


def test_the_json_api_carries_them_both_ways() -> None:
    health = _health(LEADER, FOLLOWER, BROKER)
    fleet = FleetHealth((health,))
    back = health_from_dict(health_to_dict(fleet, FleetSnapshot(1, AT, 0.01, ())))
    assert back.clusters[0].unknown == (UnknownReading(SPARE_VOTERS.reading, SPARE_VOTERS.lacks),)
