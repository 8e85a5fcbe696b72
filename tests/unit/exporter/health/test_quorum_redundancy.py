"""The quorum's redundancy (#36): its voters, those caught up with the leader, and how many more can fail
before it has no majority - from the leader's word where the quorum answers, else from the controllers' JMX."""

from __future__ import annotations

from dataclasses import replace

from ctlplane.exporter.families import health_families
from ctlplane.exporter.health import HealthMemory, evaluate
from ctlplane.exporter.health.model import Redundancy
from ctlplane.exporter.http.jsonapi import health_from_dict, health_to_dict
from ctlplane.exporter.model import ClusterSnapshot, FleetSnapshot, NodeSnapshot, QuorumReplica, QuorumView
from ctlplane.exporter.thresholds import Thresholds
from tests.unit.exporter.builders import kraft_broker, kraft_controller, node

AT = 1_000.0


def _view(*caught_up_ago: float | None, leader: int = 1) -> QuorumView:
    """Voters 1, 2, 3, ... caught up that many seconds before the answer (None: never)."""
    replicas = tuple(
        QuorumReplica(i, True, 500, AT - (ago or 0.0), None if ago is None else AT - ago)
        for i, ago in enumerate(caught_up_ago, start=1)
    )
    return QuorumView(read_at=AT, leader_id=leader, leader_epoch=3, high_watermark=500, replicas=replicas)


def _health(nodes: tuple[NodeSnapshot, ...], quorum: QuorumView | None = None) -> Redundancy | None:
    snapshot = FleetSnapshot(1, AT, 0.01, (ClusterSnapshot("c1", nodes, quorum),))
    health, _ = evaluate(snapshot, HealthMemory(), Thresholds())
    return health.clusters[0].redundancy


def _controller(name: str, node_id: int, state: str = "follower", up: bool = True) -> NodeSnapshot:
    read = kraft_controller(name, node_id, active=state == "leader", up=up)
    raft = {
        ("kafka_raft_state", (("state", s),)): float(s == state) for s in {"leader", "follower", "candidate", state}
    }
    return node(
        name,
        {**{s.series: s.value for s in read.samples if not s.labels}, **raft},
        role=read.role,
        node_id=node_id,
        up=up,
    )


NODES = (_controller("c1", 1, "leader"), _controller("c2", 2), _controller("c3", 3), kraft_broker("b1", 101))


def test_three_voters_caught_up_survive_one_failure_and_one_behind_leaves_no_spare() -> None:
    assert _health(NODES, _view(0.0, 0.4, 1.0)) == Redundancy(3, 3, "quorum")
    assert Redundancy(3, 3, "quorum").spare == 1
    # a voter the leader has not seen at its log end for longer than quorum_caught_up_seconds: stopped, hung,
    # or cut off from the leader; its own JMX is not asked
    behind = _health(NODES, _view(0.0, 0.4, 25.0))
    assert behind == Redundancy(3, 2, "quorum") and behind.spare == 0
    # the leader is caught up by definition; a voter never caught up is not
    assert _health(NODES, _view(None, None, 0.2)) == Redundancy(3, 2, "quorum")
    assert Redundancy(5, 2, "quorum").spare == -1  # no majority caught up: the quorum cannot commit


def test_a_voter_whose_jmx_alone_is_blocked_still_counts_when_the_quorum_answers() -> None:
    blocked = (*NODES[:2], _controller("c3", 3, up=False), NODES[3])
    assert _health(blocked, _view(0.0, 0.4, 1.0)) == Redundancy(3, 3, "quorum")


def test_without_the_quorums_view_the_controllers_raft_state_decides() -> None:
    assert _health(NODES) == Redundancy(3, 3, "jmx")
    electing = (NODES[0], _controller("c2", 2, "candidate"), _controller("c3", 3, up=False), NODES[3])
    assert _health(electing) == Redundancy(3, 1, "jmx")
    # no controller read at all: nothing to say, rather than a quorum of 0
    assert _health((_controller("c1", 1, up=False), NODES[3])) is None


def test_redundancy_is_served_per_cluster_and_travels_through_the_json_api() -> None:
    snapshot = FleetSnapshot(1, AT, 0.01, (ClusterSnapshot("c1", NODES, _view(0.0, 0.4, 25.0)),))
    health, _ = evaluate(snapshot, HealthMemory(), Thresholds())
    served = {f.name: f.rows for f in health_families(health)}
    assert [row[3] for row in served["kafka_quorum_voters"]] == [3.0]
    assert [row[3] for row in served["kafka_quorum_voters_caught_up"]] == [2.0]
    assert [(row[2], row[3]) for row in served["kafka_quorum_spare_voters"]] == [(("c1",), 0.0)]
    again = health_from_dict(health_to_dict(health, snapshot))
    assert again.clusters[0].redundancy == Redundancy(3, 2, "quorum")


def test_a_controller_out_of_step_counts_from_its_first_such_round_through_unread_ones_until_back_in_step() -> None:
    # (raft state of c3, or None: its JMX did not answer) per round, 15 s apart
    readings = ("follower", "candidate", "prospective", None, "prospective", "follower")
    memory = HealthMemory()
    seen: list[tuple[str, float] | None] = []
    for i, state in enumerate(readings):
        at = AT + 15 * i
        c3 = _controller("c3", 3, state or "follower", up=state is not None)
        snapshot = FleetSnapshot(i + 1, at, 0.01, (ClusterSnapshot("c1", (*NODES[:2], c3, NODES[3])),))
        health, memory = evaluate(snapshot, memory, Thresholds())
        found = [e for e in health.clusters[0].elections if e.node == "c3"]
        seen.append((found[0].state, found[0].out_of_step_seconds) if found else None)
    assert seen == [("follower", 0.0), ("candidate", 0.0), ("prospective", 15.0), None, ("prospective", 45.0),
                    ("follower", 0.0)]  # fmt: skip
    # the brokers (observers) are no voters; the series has no state label, so one election is one alert
    assert {e.node for e in health.clusters[0].elections} == {"c1", "c2", "c3"}
    served = {f.name: f.rows for f in health_families(health)}
    assert {row[2] for row in served["kafka_controller_raft_out_of_step_seconds"]} == {
        ("c1", "c1", "controller"),
        ("c1", "c2", "controller"),
        ("c1", "c3", "controller"),
    }


def test_a_follower_cut_off_on_4x_flaps_between_follower_and_prospective_and_its_clock_runs() -> None:
    # Kafka 4.3.1, c3 partitioned from the other voters: its own raft state alternates follower / prospective
    # every few seconds (KIP-996), the leader last saw it caught up when the cut began (AT)
    readings = ("follower", "prospective", "follower", "follower", "prospective", "follower")
    memory = HealthMemory()
    seen = []
    for i, state in enumerate(readings):
        at = AT + 15 * (i + 1)
        view = replace(_view(0.0, 0.4, None), read_at=at)
        view = replace(
            view,
            replicas=tuple(
                replace(r, last_caught_up_at=at) if r.replica_id != 3 else replace(r, last_caught_up_at=AT)
                for r in view.replicas
            ),
        )
        if i == 3:
            view = QuorumView(read_at=at, error="describeMetadataQuorum timed out")  # a round without the view
        c3 = _controller("c3", 3, state)
        snapshot = FleetSnapshot(i + 1, at, 0.01, (ClusterSnapshot("c1", (*NODES[:2], c3, NODES[3]), view),))
        health, memory = evaluate(snapshot, memory, Thresholds())
        seen.append(next(e.out_of_step_seconds for e in health.clusters[0].elections if e.node == "c3"))
    # behind from the first round on (15 s > quorum_caught_up_seconds); the round without the view keeps the clock
    assert seen == [0.0, 15.0, 30.0, 45.0, 60.0, 75.0]
    # healed: caught up again, in step
    view = replace(_view(0.0, 0.4, 1.0), read_at=AT + 120)
    view = replace(view, replicas=tuple(replace(r, last_caught_up_at=AT + 119) for r in view.replicas))
    snapshot = FleetSnapshot(9, AT + 120, 0.01, (ClusterSnapshot("c1", NODES[:3] + NODES[3:], view),))
    health, memory = evaluate(snapshot, memory, Thresholds())
    assert next(e.out_of_step_seconds for e in health.clusters[0].elections if e.node == "c3") == 0.0
