"""A cluster watched through the Admin API alone (health/admin.py): its health from its own answers."""

from __future__ import annotations

from types import MappingProxyType

from ctlplane.exporter.catalog import Mode, Role
from ctlplane.exporter.families import health_families, quorum_families
from ctlplane.exporter.health import HealthMemory, Lifecycle, evaluate
from ctlplane.exporter.health.model import Cause, ClusterHealth
from ctlplane.exporter.model import ClusterSnapshot, FleetSnapshot, Member, QuorumReplica, QuorumView
from ctlplane.exporter.thresholds import Thresholds

NOW = 1000.0


def kraft_answers(
    fenced: dict[int, bool] | None,
    fetched: dict[int, float],
    *,
    leader: int = 3001,
    epoch: int = 5,
    observers: tuple[int, ...] = (1, 2),
) -> QuorumView:
    """KRaft answers: voters 3001-3003, `observers` that last fetched `fetched[id]` seconds ago."""
    replicas = [QuorumReplica(v, True, 100, NOW, NOW) for v in (3001, 3002, 3003)]
    replicas += [QuorumReplica(o, False, 100, NOW - fetched[o], NOW - fetched[o]) for o in observers]
    members = [Member(v, Role.CONTROLLER) for v in (3001, 3002, 3003)]
    members += [Member(o, Role.BROKER, current=fetched[o] <= 30) for o in observers]
    members += [Member(b, Role.BROKER, "h") for b in (fenced or {})]
    return QuorumView(
        read_at=NOW,
        leader_id=leader,
        leader_epoch=epoch,
        high_watermark=100,
        replicas=tuple(replicas),
        fenced=None if fenced is None else MappingProxyType(fenced),
        registrations_error=None if fenced is not None else "UnsupportedVersionException: DescribeCluster v2",
        members=tuple(members),
    )


def zookeeper_answers(brokers: tuple[int, ...], controller: int | None) -> QuorumView:
    return QuorumView(
        read_at=NOW,
        error="DescribeQuorum unsupported",
        no_quorum=True,
        members=tuple(Member(b, Role.BROKER, "h") for b in brokers),
        controller_id=controller,
    )


def admin_rounds(*views: QuorumView) -> list[ClusterHealth]:
    memory, seen = HealthMemory(), []
    for sequence, view in enumerate(views, 1):
        snapshot = FleetSnapshot(sequence, NOW, 0.01, (ClusterSnapshot("c1", (), view, admin_only=True),))
        health, memory = evaluate(snapshot, memory, Thresholds())
        seen.append(health.clusters[0])
    return seen


def _states(cluster: ClusterHealth) -> dict[str, Lifecycle]:
    return {b.node: b.state for b in cluster.brokers}


def test_kraft_4_answers_name_the_active_controller_and_each_broker_fenced_or_not() -> None:
    (cluster,) = admin_rounds(kraft_answers({1: False, 2: True}, {1: 0.1, 2: 40}))
    assert cluster.mode is Mode.KRAFT
    assert (cluster.controller.node, cluster.controller.node_id, cluster.active_controllers) == (
        "controller-3001",
        3001,
        1,
    )
    assert _states(cluster) == {"broker-1": Lifecycle.ACTIVE, "broker-2": Lifecycle.FENCED}
    fenced = cluster.broker("broker-2")
    assert fenced is not None and fenced.cause is Cause.NO_NODE_METRICS and "cannot tell" in fenced.evidence
    assert all("the Admin API alone" in b.evidence and b.decided_by == "quorum" for b in cluster.brokers)


def test_the_answers_series_name_the_nodes_as_the_health_does_and_none_is_unwatched() -> None:
    view = kraft_answers({1: False, 2: True}, {1: 0.1, 2: 40})
    snapshot = FleetSnapshot(1, NOW, 0.01, (ClusterSnapshot("c1", (), view, admin_only=True),))
    health, _ = evaluate(snapshot, HealthMemory(), Thresholds())
    rows = {(r[0], r[2]) for f in [*health_families(health), *quorum_families(snapshot)] for r in f.rows}
    assert ("kafka_cluster_active_controllers", ("c1",)) in rows
    assert ("kafka_broker_lifecycle_state", ("c1", "broker-2", "broker", "FENCED")) in rows
    assert ("kafka_quorum_replica_lag_records", ("c1", "broker-1", "broker")) in rows
    assert not [name for name, _ in rows if name == "kafka_cluster_node_unwatched"]


def test_a_round_without_an_answer_says_no_controller_count_and_keeps_the_brokers_unread() -> None:
    answered = kraft_answers({1: False}, {1: 0.1}, observers=(1,))
    silent = QuorumView(read_at=NOW, error="the quorum did not answer within 3s")
    first, second = admin_rounds(answered, silent)
    assert first.active_controllers == 1 and first.controller.known
    assert not second.controller.known
    rows = [r for f in health_families_of(second) for r in f.rows if r[0] == "kafka_cluster_active_controllers"]
    assert rows == []
    assert _states(second) == {"broker-1": Lifecycle.UNREACHABLE}


def test_a_fenced_broker_stays_fenced_through_rounds_without_an_answer_and_an_active_one_turns_unreachable() -> None:
    # a hung broker's describeCluster can time out (seen on a loaded 4.3.1 run): reading FENCED as UNREACHABLE
    # for that round would restart its page's `for:`; a broker last ACTIVE is unknown, so a silent cluster pages
    answered = kraft_answers({1: False, 2: True}, {1: 0.1, 2: 40})
    silent = QuorumView(read_at=NOW, error="the quorum did not answer within 3s")
    _, second, third = admin_rounds(answered, silent, silent)
    for cluster in (second, third):
        assert _states(cluster) == {"broker-1": Lifecycle.UNREACHABLE, "broker-2": Lifecycle.FENCED}
        held = cluster.broker("broker-2")
        assert held is not None and held.cause is Cause.NO_NODE_METRICS and "no answer" in held.evidence


def health_families_of(cluster: ClusterHealth):  # type: ignore[no-untyped-def]
    from ctlplane.exporter.health import FleetHealth

    return health_families(FleetHealth((cluster,)))


def test_before_kafka_4_fetching_is_alive_and_a_broker_no_answer_names_any_more_stays_unreachable() -> None:
    rounds = admin_rounds(
        kraft_answers(None, {1: 0.1, 2: 0.2}),
        kraft_answers(None, {1: 0.1, 2: 45}),  # broker 2 stopped fetching: the leader still remembers it
        kraft_answers(None, {1: 0.1}, observers=(1,)),  # ... and then forgets it (after 5 minutes)
    )
    assert [_states(r).get("broker-2") for r in rounds] == [
        Lifecycle.ACTIVE,
        Lifecycle.UNREACHABLE,
        Lifecycle.UNREACHABLE,
    ]
    assert "fenced or not unknown" in rounds[0].brokers[0].evidence


def test_kraft_4_a_broker_unregistered_leaves_the_watched_set() -> None:
    """From 4.0 describeCluster lists every registered broker: one it no longer lists was unregistered."""
    first, second = admin_rounds(
        kraft_answers({1: False, 2: True}, {1: 0.1, 2: 40}), kraft_answers({1: False}, {1: 0.1}, observers=(1,))
    )
    assert set(_states(first)) == {"broker-1", "broker-2"}
    assert _states(second) == {"broker-1": Lifecycle.ACTIVE}


def test_a_new_quorum_leader_is_a_failover() -> None:
    rounds = admin_rounds(
        kraft_answers({1: False}, {1: 0.1}, observers=(1,)),
        kraft_answers({1: False}, {1: 0.1}, observers=(1,), leader=3002, epoch=6),
    )
    assert [r.controller.node for r in rounds] == ["controller-3001", "controller-3002"]
    assert rounds[-1].controller.failovers_total == 1
    no_leader = admin_rounds(kraft_answers({1: False}, {1: 0.1}, observers=(1,), leader=-1))
    assert no_leader[0].controller.known and no_leader[0].active_controllers == 0  # an election: it pages if it lasts


def test_zookeeper_mode_registered_brokers_and_the_controller_and_one_that_deregisters_is_fenced() -> None:
    first, second = admin_rounds(zookeeper_answers((1, 2, 3), 1), zookeeper_answers((1, 2), 1))
    assert first.mode is Mode.ZOOKEEPER
    assert (first.controller.node, first.active_controllers) == ("broker-1", 1)
    assert set(_states(first).values()) == {Lifecycle.ACTIVE}
    assert _states(second)["broker-3"] is Lifecycle.FENCED
    broker = second.broker("broker-3")
    assert broker is not None and "no longer registered" in broker.evidence


def test_a_discovering_cluster_before_its_first_node_is_read_is_not_watched_through_the_admin_api() -> None:
    """No node read yet is not the Admin API alone: a discovering cluster has none until its first answer,
    and a broker named ACTIVE then by describeCluster alone was never read (a stop started on that word
    was read as a crash: CI of 2026-11-28). Only the config says a cluster is watched so."""
    view = kraft_answers({1: False}, {1: 0.1}, observers=(1,))
    snapshot = FleetSnapshot(1, NOW, 0.01, (ClusterSnapshot("c1", (), view),))
    health, _ = evaluate(snapshot, HealthMemory(), Thresholds())
    assert health.clusters[0].brokers == () and health.clusters[0].mode is None
