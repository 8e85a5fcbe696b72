"""The voter set of a KRaft quorum and the observer controllers beside it (#36, KIP-853): from the quorum's
own view where it answers (ids and directory ids), else from the controllers' raft state."""

from __future__ import annotations

from dataclasses import replace

from ctlplane.exporter.catalog import Role
from ctlplane.exporter.families import health_families
from ctlplane.exporter.health import HealthMemory, evaluate
from ctlplane.exporter.health.model import ClusterHealth, QuorumMember, Redundancy
from ctlplane.exporter.http.jsonapi import health_from_dict, health_to_dict
from ctlplane.exporter.model import ClusterSnapshot, FleetSnapshot, Member, NodeSnapshot, QuorumReplica, QuorumView
from ctlplane.exporter.thresholds import Thresholds
from tests.unit.exporter.builders import kraft_broker, kraft_controller, node

AT = 1_000.0
DIRS = {1: "dir-one", 2: "dir-two", 3: "dir-three", 4: "dir-four"}


def _controller(
    name: str, node_id: int, state: str = "follower", up: bool = True, voters: int | None = None
) -> NodeSnapshot:
    read = kraft_controller(name, node_id, active=state == "leader", up=up)
    values: dict[str | tuple[str, tuple[tuple[str, str], ...]], float] = {
        **{s.series: s.value for s in read.samples if not s.labels},
        **{("kafka_raft_state", (("state", s),)): float(s == state) for s in {"leader", "follower", "observer", state}},
    }
    if voters is not None:
        values["kafka_raft_voters"] = float(voters)
    return node(name, values, role=read.role, node_id=node_id, up=up)


def _view(
    voters: tuple[int, ...], observers: dict[int, float], controllers: tuple[int, ...], at: float = AT
) -> QuorumView:
    """Voters caught up now; observers (id -> seconds since their last fetch); `controllers`: the ids
    describeCluster through bootstrap.controllers names."""
    replicas = tuple(QuorumReplica(i, True, 500, at, at, DIRS.get(i)) for i in voters) + tuple(
        QuorumReplica(i, False, 500, at - ago, at - ago, DIRS.get(i)) for i, ago in observers.items()
    )
    members = tuple(Member(i, Role.CONTROLLER) for i in controllers)
    return QuorumView(read_at=at, leader_id=voters[0], leader_epoch=3, high_watermark=500, replicas=replicas,
                      members=members)  # fmt: skip


NODES = (
    _controller("c1", 1, "leader"),
    _controller("c2", 2),
    _controller("c3", 3),
    _controller("c4", 4, "observer"),
    kraft_broker("b1", 101),
)


def _rounds(*snapshots: tuple[tuple[NodeSnapshot, ...], QuorumView | None]) -> list[ClusterHealth]:
    memory, out = HealthMemory(), []
    for i, (nodes, view) in enumerate(snapshots):
        snapshot = FleetSnapshot(i + 1, AT + 15 * i, 0.01, (ClusterSnapshot("c1", nodes, view),))
        health, memory = evaluate(snapshot, memory, Thresholds())
        out.append(health.clusters[0])
    return out


def test_the_quorum_names_its_voters_with_their_directories_and_an_added_controller_not_yet_a_voter() -> None:
    view = _view((1, 2, 3), {4: 0.3, 101: 0.2}, controllers=(1, 2, 3, 4))
    (health,) = _rounds((NODES, view))
    assert health.voter_set is not None and health.voter_set.source == "quorum"
    assert [(m.node, m.node_id, m.directory_id) for m in health.voter_set.voters] == [
        ("c1", 1, "dir-one"),
        ("c2", 2, "dir-two"),
        ("c3", 3, "dir-three"),
    ]
    # controller 4 fetches as an observer (formatted with --no-initial-controllers, not added yet); the
    # broker observer is no controller
    assert health.voter_set.observers == (QuorumMember("c4", 4, Role.CONTROLLER, "dir-four", False, 0.0),)
    assert health.redundancy == Redundancy(3, 3, "quorum")


def test_an_observer_controller_counts_its_time_outside_the_voter_set_until_it_is_added() -> None:
    outside = _view((1, 2, 3), {4: 0.3}, controllers=(1, 2, 3, 4))
    added = _view((1, 2, 3, 4), {}, controllers=(1, 2, 3, 4))
    healths = _rounds((NODES, outside), (NODES, outside), (NODES, outside), (NODES, added))
    seconds = [{m.node: m.observer_seconds for m in h.voter_set.members if not m.voter} for h in healths if h.voter_set]
    assert seconds == [{"c4": 0.0}, {"c4": 15.0}, {"c4": 30.0}, {}]
    assert [len(h.voter_set.voters) for h in healths if h.voter_set] == [3, 3, 3, 4]


def test_a_controller_the_quorum_has_not_heard_from_lately_is_not_called_running() -> None:
    # the leader remembers an observer for 5 minutes after its last fetch (LeaderState): silent for a minute
    # is a stopped one (a removed controller shut down), not one to promote
    (health,) = _rounds((NODES[:3] + NODES[4:], _view((1, 2, 3), {4: 60.0}, controllers=(1, 2, 3, 4))))
    assert health.voter_set is not None and health.voter_set.observers == ()


def test_an_unwatched_observer_controller_is_named_as_discovery_would() -> None:
    (health,) = _rounds((NODES[:3] + NODES[4:], _view((1, 2, 3), {7: 0.1}, controllers=(1, 2, 3, 7))))
    assert health.voter_set is not None
    assert [(m.node, m.role) for m in health.voter_set.observers] == [("controller-7", Role.CONTROLLER)]


def test_without_the_quorums_view_raft_state_observer_is_an_observer_controller_and_no_voter() -> None:
    (health,) = _rounds((NODES, None))
    assert health.voter_set is not None and health.voter_set.source == "jmx"
    assert [m.node for m in health.voter_set.voters] == ["c1", "c2", "c3"]
    assert [m.node for m in health.voter_set.observers] == ["c4"]
    # before #36's fix the observer counted as a fourth voter, and the quorum looked one spare richer
    assert health.redundancy == Redundancy(3, 3, "jmx")
    # the voters' own count (number-of-voters, 4.0+) covers a voter ctlplane does not watch
    counted = (
        *(_controller(n.node, n.node_id or 0, "leader" if n.node == "c1" else "follower", voters=5) for n in NODES[:3]),
        NODES[3],
    )
    (health,) = _rounds((counted, None))
    assert health.redundancy == Redundancy(5, 3, "jmx") and health.redundancy.spare == 0


def test_no_controller_read_is_no_voter_set_rather_than_an_empty_one() -> None:
    (health,) = _rounds(((_controller("c1", 1, up=False), NODES[4]), None))
    assert health.voter_set is None


def test_the_voter_set_and_the_observer_time_are_served() -> None:
    view = _view((1, 2, 3), {4: 0.3}, controllers=(1, 2, 3, 4))
    memory = HealthMemory()
    for i in range(3):
        snapshot = FleetSnapshot(i + 1, AT + 15 * i, 0.01, (ClusterSnapshot("c1", NODES, view),))
        health, memory = evaluate(snapshot, memory, Thresholds())
    served = {f.name: f.rows for f in health_families(health)}
    assert sorted(row[2] for row in served["kafka_quorum_voter_info"]) == [
        ("c1", "c1", "1", "dir-one"),
        ("c1", "c2", "2", "dir-two"),
        ("c1", "c3", "3", "dir-three"),
    ]
    assert sorted((row[2], row[3]) for row in served["kafka_controller_observer_seconds"]) == [
        (("c1", "c1", "controller"), 0.0),
        (("c1", "c2", "controller"), 0.0),
        (("c1", "c3", "controller"), 0.0),
        (("c1", "c4", "controller"), 30.0),
    ]


def test_each_voter_says_whether_it_is_caught_up_with_the_leader() -> None:
    behind = replace(_view((1, 2, 3), {}, controllers=(1, 2, 3)), read_at=AT + 25)  # the leader's answer, 25 s on
    behind = replace(
        behind,
        replicas=tuple(replace(r, last_caught_up_at=AT + 25) if r.replica_id == 2 else r for r in behind.replicas),
    )
    (health,) = _rounds((NODES[:3] + NODES[4:], behind))
    assert health.voter_set is not None
    # the leader is caught up by definition; voter 3 last reached its log end 25 s before the answer
    assert [(m.node, m.caught_up) for m in health.voter_set.voters] == [("c1", True), ("c2", True), ("c3", False)]
    (health,) = _rounds(((_controller("c1", 1, "leader"), _controller("c2", 2, "candidate"), NODES[2]), None))
    assert health.voter_set is not None
    assert [(m.node, m.caught_up) for m in health.voter_set.voters] == [("c1", True), ("c2", False), ("c3", True)]


def test_the_voter_set_travels_through_the_json_api() -> None:
    snapshot = FleetSnapshot(1, AT, 0.01, (ClusterSnapshot("c1", NODES, _view((1, 2, 3), {4: 0.3}, (1, 2, 3, 4))),))
    health, _ = evaluate(snapshot, HealthMemory(), Thresholds())
    back = health_from_dict(health_to_dict(health, snapshot))
    assert back.clusters[0].voter_set == health.clusters[0].voter_set
