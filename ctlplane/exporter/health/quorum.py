"""The metadata quorum's own word (describeMetadataQuorum, describeCluster) where a broker's JMX does not answer."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TypeGuard

from ctlplane.exporter.catalog import Mode, Role
from ctlplane.exporter.health.model import (
    BrokerHealth,
    ElectionState,
    Lifecycle,
    QuorumMember,
    Redundancy,
    VoterSet,
)
from ctlplane.exporter.model import (
    OBSERVER_HEARD_WITHIN_SECONDS,
    ClusterSnapshot,
    NodeSnapshot,
    QuorumReplica,
    QuorumView,
)
from ctlplane.exporter.thresholds import Thresholds


def quorum_lag(view: QuorumView | None, node_id: int | None) -> tuple[float | None, float | None]:
    """(lag records, lag seconds) of one node as the quorum's leader sees it: its log end offset behind the
    leader's, and the time since it last caught up (describeMetadataQuorum, KIP-836). This is the log the
    broker fetched, not the image it applied; it stands in where the broker's JMX does not answer, and it
    keeps counting for a broker that stopped fetching: the leader keeps an observer it has not heard from
    for five minutes (LeaderState.clearInactiveObservers, OBSERVER_SESSION_TIMEOUT_MS)."""
    if view is None or not view.up or node_id is None:
        return None, None
    replica = view.replica(node_id)
    if replica is None:
        return None, None
    records = view.lag_records(replica)
    return (None if records is None else float(max(0, records))), view.age(replica.last_caught_up_at)


# A broker observer long-polls the leader for metadata without pause (KafkaRaftClient's fetch loop), so a
# live one has fetched within a few seconds; a crashed or frozen one stops at once.
QUORUM_FETCHING_SECONDS = 5.0


def _quorum_word(
    cluster: ClusterSnapshot, active: NodeSnapshot | None, node_id: int | None, gone: bool, thresholds: Thresholds
) -> tuple[Lifecycle, str] | None:
    """What the quorum's own view says of a broker, where it says enough to decide.

    Fenced or not comes from describeCluster (KIP-1073, through bootstrap_servers on 4.0+), the registration
    the controller keeps. Alive comes from describeMetadataQuorum: a replica fetching from the leader within
    QUORUM_FETCHING_SECONDS and caught up within metadata_stale_seconds. Alive alone is not unfenced (a
    fenced broker keeps fetching): ACTIVE needs describeCluster's unfenced, or the active controller's
    FencedBrokerCount saying no broker is fenced. A refused JMX connection (`gone`) is a process that is not
    there: the quorum's word, seconds old, does not bring it back."""
    view = cluster.quorum
    if view is None or not view.up or node_id is None:
        return None
    replica = view.replica(node_id)
    fetched = view.age(replica.last_fetch_at) if replica is not None else None
    caught_up = view.age(replica.last_caught_up_at) if replica is not None else None
    said = "never caught up" if caught_up is None else f"caught up {caught_up:.0f}s ago"
    alive = (
        not gone
        and fetched is not None
        and fetched < QUORUM_FETCHING_SECONDS
        and caught_up is not None
        and caught_up < thresholds.metadata_stale_seconds
    )
    fenced = None if view.fenced is None else view.fenced.get(node_id)
    if fenced is True:
        return Lifecycle.FENCED, f"quorum: fenced (describeCluster), {said}"
    if fenced is False and alive:
        return Lifecycle.ACTIVE, f"quorum: unfenced (describeCluster), fetching, {said}"
    count = active.value("kafka_controller_fenced_brokers") if active is not None else None
    if fenced is None and alive and count == 0:
        return Lifecycle.ACTIVE, f"quorum: fetching, {said}, and controller FencedBrokerCount=0"
    return None


def with_quorum(
    cluster: ClusterSnapshot, active: NodeSnapshot | None, broker: BrokerHealth, gone: bool, thresholds: Thresholds
) -> BrokerHealth:
    """The quorum's view first, where it decides (docs/configuration.md "The quorum's view"). It never overrides a
    broker starting up (INITIAL: a registering broker is fenced until it catches up, KIP-631) or shutting
    down (SHUTDOWN rests on evidence of a controlled shutdown, which a fenced flag does not have)."""
    word = _quorum_word(cluster, active, broker.node_id, gone, thresholds)
    if word is None or broker.state in (Lifecycle.INITIAL, Lifecycle.SHUTDOWN):
        return broker
    state, said = word
    if state is broker.state:
        return replace(broker, evidence=f"{broker.evidence}; {said}", decided_by="quorum")
    return replace(
        broker,
        state=state,
        evidence=f"{said}; its own JMX says {broker.state.value}: {broker.evidence}",
        decided_by="quorum",
        views_disagree=True,
    )


# raft `current-state`s of a voter in step with its leader (kafka_raft_state; the others are elections)
IN_STEP = frozenset({"leader", "follower"})
# raft states of a node that is not a voter: a broker's, and a controller's of a dynamic quorum before it is
# added or after it is removed (KIP-853: KafkaRaftClient runs it as an observer while the voter set lacks it)
NOT_A_VOTER = frozenset({"observer"})


def _answered(view: QuorumView | None) -> TypeGuard[QuorumView]:
    """The quorum's view answered this round with a leader (not a ZooKeeper-mode cluster's brokers)."""
    return view is not None and view.up and not view.no_quorum and view.leader_id is not None


def _caught_up(view: QuorumView, replica: QuorumReplica, thresholds: Thresholds) -> bool:
    """A voter the leader saw reach its log end within health.quorum_caught_up_seconds (the leader itself is)."""
    age = view.age(replica.last_caught_up_at)
    return replica.replica_id == view.leader_id or (age is not None and age <= thresholds.quorum_caught_up_seconds)


def kraft_controllers(cluster: ClusterSnapshot) -> list[NodeSnapshot]:
    """The watched nodes that take part in the KRaft quorum (controllers and combined nodes of a KRaft or a
    migrating cluster), read this round or not."""
    return [
        n
        for n in cluster.nodes
        if n.role in (Role.CONTROLLER, Role.COMBINED) and (n.mode or cluster.mode) in (Mode.KRAFT, Mode.MIGRATION)
    ]


def quorum_redundancy(cluster: ClusterSnapshot, thresholds: Thresholds) -> Redundancy | None:
    """The quorum's voters and how many are caught up. From the leader's own word where the quorum answered
    (describeMetadataQuorum: LeaderState.updateFollowerState moves a voter's lastCaughtUpTimestamp each time
    its fetch reaches the leader's log end, so a voter that stopped, hangs or is cut off falls behind within
    seconds, while one whose JMX port alone is blocked does not); otherwise from the KRaft controllers
    ctlplane reads: a voter is caught up when its JMX answers and its raft state is leader or follower."""
    view = cluster.quorum
    if _answered(view):
        voters = [r for r in view.replicas if r.voter]
        if voters:
            caught_up = [r for r in voters if _caught_up(view, r, thresholds)]
            return Redundancy(len(voters), len(caught_up), "quorum")
    controllers = kraft_controllers(cluster)
    states = {n.node: n.state("kafka_raft_state") for n in controllers if n.up}
    if not any(states.values()):
        return None  # no controller read, or none that says its raft state: nothing to count, never 0
    in_step = [n for n in controllers if states.get(n.node) in IN_STEP]
    # an observer controller is no voter; the voters' own count (number-of-voters, 4.0+) covers voters
    # ctlplane does not watch
    counted = [n for n in controllers if states.get(n.node) not in NOT_A_VOTER]
    said = [v for n in in_step if (v := n.value("kafka_raft_voters")) is not None]
    return Redundancy(int(max(said)) if said else len(counted), len(in_step), "jmx")


def _controller_label(cluster: ClusterSnapshot, node_id: int) -> tuple[str, Role]:
    """The watched node with that id (its label and role), else discovery's default name for a controller."""
    for node in cluster.nodes:
        if node.node_id == node_id:
            return node.node, node.role
    return f"controller-{node_id}", Role.CONTROLLER


def voter_set(
    cluster: ClusterSnapshot, since: Mapping[str, float], now: float, thresholds: Thresholds
) -> tuple[VoterSet | None, dict[str, float]]:
    """The quorum's voters and the observer controllers beside them, with how long each of those has run
    outside the voter set; and the `since` memory for the next round (a voter again, or a controller not seen
    running, is forgotten).

    From describeMetadataQuorum where it answered: its voters (id and directory id), and as observer
    controllers the observers that fetched lately (OBSERVER_HEARD_WITHIN_SECONDS: the leader remembers a
    silent one for 5 minutes) which describeCluster through bootstrap.controllers names as controllers, or
    which ctlplane watches as controllers. Otherwise from the controllers' own JMX: raft state `observer`
    on a controller is an observer controller (KafkaRaftClient runs a node outside the voter set as one),
    any other controller a voter."""
    view = cluster.quorum
    members: list[QuorumMember] = []
    running_observers: set[str] = set()
    if _answered(view):
        source = "quorum"
        for replica in view.replicas:
            node, role = _controller_label(cluster, replica.replica_id)
            if replica.voter:
                caught_up = _caught_up(view, replica, thresholds)
                members.append(
                    QuorumMember(node, replica.replica_id, role, replica.directory_id, True, caught_up=caught_up)
                )
        voter_ids = {m.node_id for m in members}
        controller_ids = {m.node_id for m in view.members if m.role in (Role.CONTROLLER, Role.COMBINED)} | {
            n.node_id for n in cluster.nodes if n.role in (Role.CONTROLLER, Role.COMBINED)
        }
        for replica in view.replicas:
            fetched = view.age(replica.last_fetch_at)
            if replica.voter or replica.replica_id in voter_ids or replica.replica_id not in controller_ids:
                continue
            if fetched is not None and fetched <= OBSERVER_HEARD_WITHIN_SECONDS:
                node, role = _controller_label(cluster, replica.replica_id)
                running_observers.add(node)
                members.append(QuorumMember(node, replica.replica_id, role, replica.directory_id, False))
    else:
        source = "jmx"
        controllers = [
            n
            for n in cluster.nodes
            if n.role in (Role.CONTROLLER, Role.COMBINED) and (n.mode or cluster.mode) is not Mode.ZOOKEEPER
        ]
        states = {n.node: n.state("kafka_raft_state") for n in controllers if n.up}
        if not any(states.values()):
            return None, {}  # no controller said its raft state: no voter set to tell, never an empty one
        for n in controllers:
            observer = states.get(n.node) in NOT_A_VOTER
            if observer:
                running_observers.add(n.node)
            in_step = None if observer else states.get(n.node) in IN_STEP
            members.append(QuorumMember(n.node, n.node_id, n.role, None, not observer, caught_up=in_step))
    kept = {node: since.get(node, now) for node in running_observers}
    ordered = sorted(members, key=lambda m: (not m.voter, m.node_id if m.node_id is not None else -1, m.node))
    final = tuple(replace(m, observer_seconds=max(0.0, now - kept[m.node])) if m.node in kept else m for m in ordered)
    return VoterSet(final, source), kept


def elections(
    cluster: ClusterSnapshot, since: Mapping[str, float], now: float, thresholds: Thresholds
) -> tuple[tuple[ElectionState, ...], dict[str, float]]:
    """Each KRaft controller read this round, with how long it has been out of step with the quorum; and the
    `since` memory for the next round (a controller not read keeps its start, so an unanswered round does not
    restart an election's clock; one back in step is forgotten).

    In step is raft state leader or follower, and, where the quorum's view answered, a follower the leader saw
    caught up within health.quorum_caught_up_seconds. The second half is what tells a follower cut off from
    the other voters on Kafka 4.0+: it goes prospective when its fetch times out and back to follower of the
    leader it knew when its pre-vote election times out (KIP-996; seen on 4.3.1 as a cycle of ~3 s,
    "transition to FollowerState ... from ProspectiveState(epoch=1, leaderId=...)"), so its own raft state
    reads follower in most rounds while the leader never hears from it."""
    view = cluster.quorum
    answered = _answered(view)
    behind = (
        {r.replica_id for r in view.replicas if r.voter and not _caught_up(view, r, thresholds)}
        if view is not None and answered
        else set()
    )
    states: list[ElectionState] = []
    kept = dict(since)
    for node in cluster.nodes:
        if node.role not in (Role.CONTROLLER, Role.COMBINED) or not node.up:
            continue
        state = node.state("kafka_raft_state")
        if state is None or state in NOT_A_VOTER:
            continue
        if state in IN_STEP and node.node_id not in behind:
            if view is not None and not answered and node.node in kept:
                # the quorum's view is configured but did not answer: its raft state alone cannot say a follower
                # is back in step (see above), so its clock neither stops nor restarts this round
                states.append(ElectionState(node.node, node.role, state, max(0.0, now - kept[node.node])))
                continue
            kept.pop(node.node, None)
            states.append(ElectionState(node.node, node.role, state, 0.0))
        else:
            started = kept.setdefault(node.node, now)
            states.append(ElectionState(node.node, node.role, state, max(0.0, now - started)))
    known = {node.node for node in cluster.nodes}
    return tuple(states), {name: at for name, at in kept.items() if name in known}
