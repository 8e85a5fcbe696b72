"""A cluster watched through the Admin API alone: no node's own metrics, only what the cluster answers about
itself (describeCluster, describeMetadataQuorum: ClusterSnapshot.quorum). For a managed service that opens
nothing else, and what it cannot see is said in each broker's evidence (docs/sources.md, "The Admin API
alone").

What the answers give, by mode and release:
- KRaft: the active controller is the quorum's leader (the controller that leads the metadata log is the
  active one, QuorumController.QuorumMetaLogListener.handleLeaderChange), with its epoch. Brokers are the
  quorum's observers and describeCluster's nodes; fenced or not is asked only of brokers of Kafka 4.0+
  (includeFencedBrokers, KIP-1073): before, describeCluster leaves fenced brokers out
  (KRaftMetadataCache.getAliveBrokerNodes) and only the leader's last fetch from a broker says it is alive.
- ZooKeeper mode: describeCluster's brokers are those registered now (their /brokers/ids znode is ephemeral,
  KafkaZkClient.registerBroker), and its controller is the active controller (KafkaApis.handleDescribeCluster,
  ZkCachedControllerId). A broker that leaves that list crashed, hung past its session, was cut off or
  stopped: the answers cannot tell which.
No answer tells a controlled shutdown from a crash (BrokerState and the controller's inControlledShutdown
are JMX-only), so a broker stopped on purpose reads as fenced and pages as one.
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from ctlplane.exporter.catalog import Mode, Role
from ctlplane.exporter.health.controller import with_leader
from ctlplane.exporter.health.metadata import is_stale
from ctlplane.exporter.health.model import BrokerHealth, Cause, ClusterMemory, ControllerView, Lifecycle
from ctlplane.exporter.health.quorum import QUORUM_FETCHING_SECONDS, quorum_lag
from ctlplane.exporter.model import ClusterSnapshot, Member, QuorumView, member_label, merged
from ctlplane.exporter.thresholds import Thresholds

NOT_READ = "no node metrics (the Admin API alone)"


def admin_controller(
    cluster: ClusterSnapshot, memory: ClusterMemory, now: float
) -> tuple[ControllerView, ClusterMemory]:
    """The active controller as the answers name it: the quorum's leader (KRaft), describeCluster's
    controller (ZooKeeper mode); unknown (`known` False) where this round has no answer that says."""
    view = cluster.quorum
    members = merged(view.members) if view is not None else {}
    leader: int | None = None
    epoch: float | None = None
    known = False
    if view is not None and view.up and view.leader_id is not None:
        known = True
        leader = view.leader_id if view.leader_id >= 0 else None  # -1: an election under way
        epoch = float(view.leader_epoch) if view.leader_epoch is not None else None
    elif view is not None and view.no_quorum and view.members_error is None:
        known = True
        leader = view.controller_id
    node = None
    if leader is not None:
        node = member_label(members.get(leader, Member(leader, Role.CONTROLLER if view and view.up else Role.BROKER)))
        memory = with_leader(memory, node, epoch, now)
    controller = ControllerView(
        claimants=(node,) if node is not None else (),
        node=node,
        node_id=leader,
        epoch=epoch,
        failovers_total=memory.failovers_total,
        last_failover_at=memory.last_failover_at,
        reachable_controllers=0,  # none is read: what the count says of every other cluster
        known=known,
    )
    return controller, memory


def admin_brokers(
    cluster: ClusterSnapshot, memory: ClusterMemory, thresholds: Thresholds
) -> tuple[list[BrokerHealth], ClusterMemory]:
    """Every broker the answers name, and every one they named before where no answer lists every
    registered broker (a broker leaves a KRaft cluster only when unregistered, which only Kafka 4.0+'s
    describeCluster shows), each decided from what the answers give (the module's docstring)."""
    view = cluster.quorum
    answered = view is not None and (view.up or view.no_quorum)
    named: dict[int, Member] = dict(memory.admin_brokers)
    members = merged(view.members) if view is not None else {}
    if view is not None and answered:
        now_named = {
            node_id: member
            for node_id, member in members.items()
            if member.current and member.role in (Role.BROKER, Role.COMBINED)
        }
        named = now_named if view.fenced is not None else {**named, **now_named}
    brokers = []
    for node_id, member in sorted(named.items()):
        if view is None or not answered:
            state, evidence = _unanswered(memory.states.get(member_label(member)))
        else:
            state, evidence = _decided(view, node_id, node_id in members, thresholds)
        records, seconds = quorum_lag(view, node_id) if view is not None and not view.no_quorum else (None, None)
        lag = records is not None or seconds is not None
        brokers.append(
            BrokerHealth(
                cluster=cluster.name,
                node=member_label(member),
                role=member.role,
                node_id=node_id,
                up=False,
                state=state,
                evidence=evidence,
                metadata_lag_records=records,
                metadata_lag_seconds=seconds,
                stale=lag and is_stale(Mode.KRAFT, records, seconds, False, thresholds),
                frozen=False,
                control_plane_listener=None,
                control_plane_queue_ratio=None,
                control_plane_saturated=False,
                decided_by="quorum",
                metadata_lag_source="quorum" if lag else None,
                cause=None if state is Lifecycle.ACTIVE else Cause.NO_NODE_METRICS,
            )
        )
    return brokers, replace(memory, admin_brokers=MappingProxyType(named))


def _unanswered(last: Lifecycle | None) -> tuple[Lifecycle, str]:
    """A broker in a round the cluster did not answer: FENCED as last answered (as lifecycle.held_fenced holds a
    broker through a round with no controller's word: reading it UNREACHABLE would restart its page's `for:`),
    else UNREACHABLE, so a cluster that stays silent pages."""
    if last is Lifecycle.FENCED:
        return Lifecycle.FENCED, f"no answer from the cluster this round; FENCED as it last answered; {NOT_READ}"
    return Lifecycle.UNREACHABLE, f"no answer from the cluster this round; {NOT_READ}"


def _decided(view: QuorumView, node_id: int, listed: bool, thresholds: Thresholds) -> tuple[Lifecycle, str]:
    """One broker's state from one round's answers (`listed`: some answer names it), with what they could not
    say."""
    if view.no_quorum:
        if listed:
            return Lifecycle.ACTIVE, f"registered (describeCluster names it); {NOT_READ}"
        return Lifecycle.FENCED, (
            "no longer registered (describeCluster names it no more): crashed, hung past its ZooKeeper session, "
            f"cut off or stopped, which the answers cannot tell apart; {NOT_READ}"
        )
    replica = view.replica(node_id)
    fetched = view.age(replica.last_fetch_at) if replica is not None else None
    caught_up = view.age(replica.last_caught_up_at) if replica is not None else None
    heard = "never heard from" if fetched is None else f"last fetched {fetched:.0f}s ago"
    said = f"quorum: {heard}, " + ("never caught up" if caught_up is None else f"caught up {caught_up:.0f}s ago")
    fenced = view.fenced.get(node_id) if view.fenced is not None else None
    if fenced is True:
        return Lifecycle.FENCED, (
            f"fenced (describeCluster); {said}; a crash, a hang, a cut-off or a controlled shutdown: the answers "
            f"cannot tell which; {NOT_READ}"
        )
    if fenced is False:
        return Lifecycle.ACTIVE, f"unfenced (describeCluster); {said}; {NOT_READ}"
    alive = (
        fetched is not None
        and fetched < QUORUM_FETCHING_SECONDS
        and caught_up is not None
        and caught_up < thresholds.metadata_stale_seconds
    )
    unlisted = view.registrations_error or "fenced brokers are listed by brokers of Kafka 4.0+ (KIP-1073)"
    if alive:
        return Lifecycle.ACTIVE, f"fetching metadata: {said}; fenced or not unknown: {unlisted}; {NOT_READ}"
    return Lifecycle.UNREACHABLE, f"not fetching metadata: {said}; fenced or not unknown: {unlisted}; {NOT_READ}"
