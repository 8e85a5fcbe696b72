"""Cluster health as a pure function of snapshots: the active controller, broker lifecycle, metadata
freshness and control-plane saturation.

`evaluate(snapshot, memory, thresholds)` returns the health of every cluster and the small memory the
next evaluation needs (last controller identity, failover count, recent metadata offsets). The memory
is an immutable value: the caller (HealthTracker) only stores what it is given back.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from types import MappingProxyType

from ctlplane.exporter.catalog import Mode, Role
from ctlplane.exporter.model import ClusterSnapshot, Failure, FleetSnapshot, NodeSnapshot, QuorumView
from ctlplane.exporter.thresholds import CONTROL_PLANE_QUEUE_CAPACITY, Thresholds

log = logging.getLogger(__name__)


class Lifecycle(StrEnum):
    """KIP-631's broker lifecycle, plus UNREACHABLE when ctlplane cannot read the node."""

    INITIAL = "INITIAL"  # registering / catching up on metadata
    FENCED = "FENCED"
    ACTIVE = "ACTIVE"
    SHUTDOWN = "SHUTDOWN"  # controlled shutdown under way or done
    UNREACHABLE = "UNREACHABLE"


# BrokerRegistrationState values (metadata/.../controller/BrokerRegistrationState.java, Kafka 4.1+).
REGISTRATION_STATES: Mapping[float, Lifecycle] = MappingProxyType(
    {-1.0: Lifecycle.INITIAL, 10.0: Lifecycle.FENCED, 20.0: Lifecycle.SHUTDOWN, 30.0: Lifecycle.ACTIVE}
)
# BrokerState's numbers are the same on every release ctlplane claims: org.apache.kafka.metadata.BrokerState
# (2.8+) and KafkaServer.scala's BrokerStates before it (RunningAsBroker=3, RecoveringFromUncleanShutdown=2,
# PendingControlledShutdown=6, BrokerShuttingDown=7); ctlplane names them with the 2.8+ names everywhere.
BROKER_STATE_NAMES: Mapping[float, str] = MappingProxyType(
    {0.0: "NOT_RUNNING", 1.0: "STARTING", 2.0: "RECOVERY", 3.0: "RUNNING", 6.0: "PENDING_CONTROLLED_SHUTDOWN",
     7.0: "SHUTTING_DOWN", 127.0: "UNKNOWN"}
)  # fmt: skip


@dataclass(frozen=True)
class BrokerHealth:
    cluster: str
    node: str
    role: Role
    node_id: int | None
    up: bool
    state: Lifecycle
    evidence: str  # why this state, in words an operator can check
    metadata_lag_records: float | None
    metadata_lag_seconds: float | None
    stale: bool
    frozen: bool
    control_plane_listener: bool | None
    control_plane_queue_ratio: float | None
    control_plane_saturated: bool
    # Which view decided `state`: "jmx" (what the nodes say of themselves) or "quorum" (the quorum's own
    # view, Admin API, where the cluster has one and it says enough); `views_disagree` when the two differ.
    decided_by: str = "jmx"
    views_disagree: bool = False
    # Where the metadata lag figures came from: "jmx" (the broker's applied offset and record time, the
    # image it serves), "quorum" (what the quorum's leader last saw the broker fetch: describeMetadataQuorum,
    # where the broker's JMX did not answer but did not refuse either), or None (no figure).
    metadata_lag_source: str | None = None
    # FENCED with evidence that no planned stop reads the same (`_fenced_unplanned`): the alert rules page
    # on it sooner than on a FENCED that a clean stop or a restart could also explain.
    fenced_unplanned: bool = False


@dataclass(frozen=True)
class ControllerView:
    claimants: tuple[str, ...]  # nodes whose ActiveControllerCount is 1
    node: str | None  # the active controller's node label, if one is known
    node_id: int | None
    epoch: float | None  # KRaft quorum epoch; ZooKeeper mode does not expose the controller epoch
    failovers_total: int
    last_failover_at: float | None
    reachable_controllers: int


@dataclass(frozen=True)
class ClusterHealth:
    name: str
    mode: Mode | None
    controller: ControllerView
    brokers: tuple[BrokerHealth, ...]  # every node with the broker role (and unreachable ones)
    evaluated_at: float
    error: str | None = None  # set when this cluster's health could not be evaluated this round
    # ZooKeeper -> KRaft migration (KIP-866) as the KRaft controllers say: PRE_MIGRATION, MIGRATION,
    # POST_MIGRATION; None for a cluster born KRaft (NONE) or in ZooKeeper mode
    migration_phase: str | None = None
    # The quorum's own view (ClusterSnapshot.quorum): its leader, and whether the controllers' JMX claims
    # someone else (a zombie controller, or a partition between ctlplane and the nodes)
    quorum_leader_id: int | None = None
    controller_views_disagree: bool = False
    # KRaft: the brokers the active controller counts fenced (FencedBrokerCount) for which ctlplane names no
    # broker fenced: brokers it does not watch, or watches but cannot read. None where no controller says.
    fenced_unnamed: int | None = None

    @property
    def active_controllers(self) -> int:
        return len(self.controller.claimants)

    def broker(self, node: str) -> BrokerHealth | None:
        return next((b for b in self.brokers if b.node == node), None)


@dataclass(frozen=True)
class FleetHealth:
    clusters: tuple[ClusterHealth, ...]

    def cluster(self, name: str) -> ClusterHealth | None:
        return next((c for c in self.clusters if c.name == name), None)


@dataclass(frozen=True)
class _ClusterMemory:
    leader: tuple[str, float | None] | None = None  # (node label, epoch) of the last known controller
    failovers_total: int = 0
    last_failover_at: float | None = None
    # node -> recent (applied offset, committed offset) pairs, newest last
    offsets: Mapping[str, tuple[tuple[float, float], ...]] = field(default_factory=lambda: MappingProxyType({}))
    states: Mapping[str, Lifecycle] = field(default_factory=lambda: MappingProxyType({}))  # last lifecycle
    broker_state_read: frozenset[str] = frozenset()  # nodes whose last read had BrokerState
    leading: frozenset[str] = frozenset()  # brokers whose last answered read had LeaderCount > 0
    unplanned: frozenset[str] = frozenset()  # brokers last FENCED with the unplanned flag (_held_fenced)
    # The highest raft epoch seen: a claimant below it has been deposed, even when no node that knows the
    # newer epoch can be read this round. Forgotten after EPOCH_FLOOR_ROUNDS rounds in which every reachable
    # node reports less (a cluster rebuilt from scratch starts again at epoch 1).
    epoch_floor: float | None = None
    epoch_floor_unseen_rounds: int = 0
    # ZooKeeper mode: (active controller, broker) -> the controller's queue-time summary for that broker as
    # last read (count, sum of seconds) and when its queue last made progress (a request left it or it was empty)
    queue_waits: Mapping[tuple[str, str], tuple[float, float, float]] = field(
        default_factory=lambda: MappingProxyType({})
    )


@dataclass(frozen=True)
class HealthMemory:
    clusters: Mapping[str, _ClusterMemory] = field(default_factory=lambda: MappingProxyType({}))


EPOCH_FLOOR_ROUNDS = 40


def _controllers(cluster: ClusterSnapshot) -> list[NodeSnapshot]:
    return [n for n in cluster.nodes if n.up and n.has("kafka_controller_active")]


def _claimants(cluster: ClusterSnapshot) -> list[NodeSnapshot]:
    claimants = [n for n in _controllers(cluster) if n.value("kafka_controller_active") == 1.0]
    if cluster.mode is Mode.MIGRATION:
        # Before the KRaft controller takes over /controller (PRE_MIGRATION) the ZooKeeper brokers' own
        # controller still claims too (seen on 3.9.2): it leads the other quorum, not a second controller of
        # this one. From MIGRATION on every ZooKeeper broker says 0 (KafkaController.activeControllerId is
        # the KRaft controller's id, read from /controller).
        claimants = [n for n in claimants if n.mode is not Mode.ZOOKEEPER]
    return claimants


# ZkMigrationState (metadata/.../migration/ZkMigrationState.java); 4 (ZK) is every ZooKeeper broker's constant
# and 0 (NONE) a cluster born KRaft: neither is a migration phase.
MIGRATION_PHASES: Mapping[float, str] = MappingProxyType(
    {2.0: "PRE_MIGRATION", 1.0: "MIGRATION", 3.0: "POST_MIGRATION"}
)


def _migration_phase(cluster: ClusterSnapshot, active: NodeSnapshot | None) -> str | None:
    """The phase the KRaft controllers report: the active one's, else any KRaft controller's."""
    series = "kafka_controller_zk_migration_state"
    kraft = [n for n in _controllers(cluster) if n.mode is not Mode.ZOOKEEPER and n.has(series)]
    source = active if active is not None and active in kraft else next(iter(kraft), None)
    value = source.value(series) if source is not None else None
    return MIGRATION_PHASES.get(value) if value is not None else None


def find_active_controller(cluster: ClusterSnapshot, epoch_floor: float | None = None) -> NodeSnapshot | None:
    """The node that is the active controller, even during a split brain.

    KRaft: among the nodes claiming ActiveControllerCount=1, the one with the highest raft epoch (a
    paused old leader keeps claiming until it learns the new epoch). A claimant whose epoch is below the
    highest epoch any node reports (brokers observe the quorum too) or `epoch_floor` (the highest seen in
    earlier rounds) has been deposed by that later election and is never the active controller: Raft
    leaders are elected per epoch, and a leader of epoch e resigns as soon as it sees e+1
    (raft/.../KafkaRaftClient.java, transitionToFollower/Unattached on a higher epoch). Never the Metadata
    API's controller id, which is a random broker in KRaft (KAFKA-17404). ZooKeeper mode: the single
    claimant.
    """
    claimants = [n for n in _claimants(cluster) if not _raft_names_another_leader(n)]
    floor = max((e for e in (_quorum_epoch(cluster), epoch_floor) if e is not None), default=None)
    if floor is not None:
        claimants = [n for n in claimants if (epoch := n.value("kafka_raft_current_epoch")) is None or epoch >= floor]
    if not claimants:
        return None
    return max(claimants, key=lambda n: (n.value("kafka_raft_current_epoch") or -1.0, -(n.node_id or 0)))


def _raft_names_another_leader(node: NodeSnapshot) -> bool:
    """A claimant whose own raft client already follows someone else (or no one: an election) is deposed.

    The raft client updates current-leader/current-epoch in its own thread as soon as it learns a new epoch
    (KafkaRaftMetrics over QuorumState); the controller drops ActiveControllerCount only when its event
    queue runs handleLeaderChange -> renounce() (metadata/.../controller/QuorumController.java,
    QuorumMetaLogListener.handleLeaderChange), and it claims only once raft names it leader. So for a moment
    a resumed old leader claims at the new epoch, beside the real leader (seen on 3.9.2). Unknown ids or
    gauges (ZooKeeper mode has no raft) decide nothing.
    """
    leader = node.value("kafka_raft_current_leader")
    return leader is not None and node.node_id is not None and leader != float(node.node_id)


def _quorum_epoch(cluster: ClusterSnapshot) -> float | None:
    epochs = [v for n in cluster.nodes if n.up and (v := n.value("kafka_raft_current_epoch")) is not None]
    return max(epochs) if epochs else None


def _next_epoch_floor(cluster: ClusterSnapshot, memory: _ClusterMemory) -> _ClusterMemory:
    current = _quorum_epoch(cluster)
    if current is None:
        return memory
    if memory.epoch_floor is None or current >= memory.epoch_floor:
        return replace(memory, epoch_floor=current, epoch_floor_unseen_rounds=0)
    unseen = memory.epoch_floor_unseen_rounds + 1
    if unseen >= EPOCH_FLOOR_ROUNDS:
        return replace(memory, epoch_floor=current, epoch_floor_unseen_rounds=0)
    return replace(memory, epoch_floor_unseen_rounds=unseen)


def _controller_view(
    cluster: ClusterSnapshot, memory: _ClusterMemory, now: float
) -> tuple[ControllerView, NodeSnapshot | None, _ClusterMemory]:
    active = find_active_controller(cluster, memory.epoch_floor)
    memory = _next_epoch_floor(cluster, memory)
    epoch = _quorum_epoch(cluster) if cluster.mode in (Mode.KRAFT, Mode.MIGRATION) else None
    if active is not None and active.value("kafka_raft_current_epoch") is not None:
        epoch = active.value("kafka_raft_current_epoch")
    if active is not None:
        current = (active.node, epoch)
        if memory.leader is not None and current != memory.leader:
            # A new identity, or the same node re-elected in a later epoch. An epoch bump with no
            # known leader (a failed vote) is not counted until a leader is known again.
            earlier_epoch = memory.leader[1]
            if current[0] != memory.leader[0] or (
                epoch is not None and earlier_epoch is not None and epoch > earlier_epoch
            ):
                memory = replace(memory, failovers_total=memory.failovers_total + 1, last_failover_at=now)
        memory = replace(memory, leader=current)
    view = ControllerView(
        claimants=tuple(sorted(n.node for n in _claimants(cluster))),
        node=active.node if active else None,
        node_id=active.node_id if active else None,
        epoch=epoch,
        failovers_total=memory.failovers_total,
        last_failover_at=memory.last_failover_at,
        reachable_controllers=len(_controllers(cluster)),
    )
    return view, active, memory


def _is_broker(node: NodeSnapshot) -> bool:
    if node.role in (Role.BROKER, Role.COMBINED):
        return True
    # Never read: show it as a broker unless configuration or an earlier read said otherwise.
    return node.role is Role.UNKNOWN


# BrokerState values that happen only while a broker starts (BrokerState.java): STARTING while it loads logs
# and registers, RECOVERY (KRaft: caught up on metadata, waiting for the controller to unfence it; ZooKeeper
# mode: recovering logs after an unclean shutdown). Neither is a fencing incident, whatever the controller's
# registration says meanwhile (a registering broker is fenced until it catches up, KIP-631).
STARTING_BROKER_STATES = frozenset({1.0, 2.0})
SHUTTING_DOWN_BROKER_STATES = frozenset({6.0, 7.0})  # PENDING_CONTROLLED_SHUTDOWN, SHUTTING_DOWN


def _lifecycle(
    node: NodeSnapshot, registration: float | None, previous: Lifecycle | None, had_broker_state: bool = False
) -> tuple[Lifecycle, str]:
    """The broker's state from the controller's registration, its own BrokerState and its last state.

    A page must follow every crash and no restart, so SHUTDOWN needs evidence that the broker went through
    controlled shutdown: its own BrokerState, the controller's registration state, or BrokerState
    unregistered while its JMX still answered. A broker that vanished without such evidence crashed.
    """
    controller_says = REGISTRATION_STATES.get(registration) if registration is not None else None
    if not node.up:
        if previous is Lifecycle.SHUTDOWN:
            # After a controlled shutdown the controller fences the departed broker; that is the expected
            # end of a shutdown, not a fencing incident, until the process comes back.
            return Lifecycle.SHUTDOWN, f"after controlled shutdown; JMX: {node.error}"
        if controller_says is Lifecycle.SHUTDOWN:
            return Lifecycle.SHUTDOWN, f"controller BrokerRegistrationState={registration:g}; JMX: {node.error}"
        if controller_says is Lifecycle.FENCED:
            # No evidence of a controlled shutdown: a crash (process gone) or a hang / partition (timeout).
            what = "process gone" if node.failure is Failure.GONE else "hung"
            return Lifecycle.FENCED, (
                f"controller registration state FENCED, {what} without a controlled shutdown; JMX: {node.error}"
            )
        if controller_says is Lifecycle.INITIAL:
            return Lifecycle.INITIAL, f"controller registration state INITIAL; JMX: {node.error}"
        return Lifecycle.UNREACHABLE, f"JMX: {node.error}"
    broker_state = node.value("kafka_broker_state")
    name = BROKER_STATE_NAMES.get(broker_state, f"{broker_state:g}") if broker_state is not None else None
    said = f"; controller BrokerRegistrationState={registration:g}" if registration is not None else ""
    if broker_state in SHUTTING_DOWN_BROKER_STATES or (
        broker_state == 0.0 and previous in (Lifecycle.ACTIVE, Lifecycle.SHUTDOWN)
    ):
        # The broker knows it is shutting down before the controller's registration says so; NOT_RUNNING
        # after it has been seen running is the end of a shutdown (at start-up it precedes STARTING, also
        # when the broker comes back after a crash that ctlplane saw as FENCED or UNREACHABLE).
        return Lifecycle.SHUTDOWN, f"BrokerState={name}{said}"
    if broker_state is None and (previous is Lifecycle.SHUTDOWN or (previous is Lifecycle.ACTIVE and had_broker_state)):
        # A stopping KRaft broker unregisters BrokerState first, then the controller fences it while its
        # JMX still answers for a moment (seen on Kafka 4.3.1): that is a shutdown, not a fencing. Only
        # if the last read had BrokerState: a restarted broker can be ACTIVE by the controller's word
        # before ctlplane has read its BrokerState, and a missing MBean then is no shutdown.
        return Lifecycle.SHUTDOWN, "BrokerState unregistered: the broker is shutting down"
    if broker_state in STARTING_BROKER_STATES or broker_state == 0.0:  # NOT_RUNNING here: not yet started
        return Lifecycle.INITIAL, f"BrokerState={name} (starting up){said}"
    if controller_says is not None:
        return controller_says, f"controller BrokerRegistrationState={registration:g}"
    if broker_state is None:
        return Lifecycle.INITIAL, "no BrokerState yet"
    if broker_state == 3.0:
        return Lifecycle.ACTIVE, f"BrokerState={name}"
    return Lifecycle.INITIAL, f"BrokerState={name}"


def _controlled_shutdown_evidence(
    active: NodeSnapshot | None, brokers: list[BrokerHealth], gone: frozenset[str]
) -> list[BrokerHealth]:
    """Brokers gone and fenced with no sign of a shutdown, that the controller's count says shut down.

    The controller sets a registration's inControlledShutdown when a broker that still leads partitions
    asks to shut down, and fencing the broker afterwards leaves it set until the broker registers again
    (ClusterControlManager, BrokerRegistration; Kafka 4.1+ counts them in ControlledShutdownBrokerCount, while
    BrokerRegistrationState shows such a broker as FENCED because fenced wins). Only when the count covers
    every broker that could hold the flag is each of them known to have shut down on purpose; otherwise a
    crash could hide among them, and a crash must page.
    """
    count = active.value("kafka_controller_controlled_shutdown_brokers") if active is not None else None
    if count is None or not math.isfinite(count) or count <= 0:
        return brokers
    vanished = [b for b in brokers if b.node in gone and b.state is Lifecycle.FENCED]
    shutting_down = sum(1 for b in brokers if b.state is Lifecycle.SHUTDOWN)
    if not vanished or int(count) != shutting_down + len(vanished):
        return brokers
    return [
        replace(
            b,
            state=Lifecycle.SHUTDOWN,
            evidence=f"controller ControlledShutdownBrokerCount={count:g} covers it; {b.evidence}",
        )
        if b in vanished
        else b
        for b in brokers
    ]


def _zookeeper_deregistered(
    cluster: ClusterSnapshot, active: NodeSnapshot | None, brokers: list[BrokerHealth]
) -> list[BrokerHealth]:
    """ZooKeeper mode: brokers whose ZooKeeper session is gone and whom the controller dropped.

    A ZooKeeper-mode broker is alive for the cluster only while its ephemeral /brokers/ids/N exists, that is
    while it holds its ZooKeeper session (KIP-343). When ZooKeeper expires the session, the controller
    handles the broker's departure (KafkaController.onBrokerFailure): it moves leadership away and
    ControllerChannelManager.removeBroker drops its request queue, with the QueueSize,broker-id=N gauge.
    Meanwhile the broker's BrokerState stays RUNNING and its client keeps reconnecting (SessionState
    CONNECTING). That is fencing in all but name: FENCED. A session only disconnected for less than its
    timeout is still registered and the controller still has its queue, so both signs are required.
    """
    queue = "kafka_controller_channel_queue_size"
    if cluster.mode not in (Mode.ZOOKEEPER, Mode.MIGRATION) or active is None or not active.has(queue):
        return brokers
    nodes = {n.node: n for n in cluster.nodes}
    result = []
    for b in brokers:
        if nodes[b.node].mode is not Mode.ZOOKEEPER:  # a KRaft broker of a migrating cluster
            result.append(b)
            continue
        if (
            not b.up
            and b.state is Lifecycle.UNREACHABLE
            and b.node_id is not None
            and active.value(queue, broker=str(b.node_id)) is None
        ):
            # A crashed or hung broker: its session expired after zookeeper.session.timeout.ms, ZooKeeper
            # deleted /brokers/ids/N and the controller dropped it, so it is out of the live set, not merely
            # unreadable by ctlplane (whose own view of a healthy broker never removes the controller's queue).
            evidence = (
                f"the controller has no request queue for broker {b.node_id}: its ZooKeeper registration is gone "
                f"(KIP-343); {b.evidence}"
            )
            result.append(replace(b, state=Lifecycle.FENCED, evidence=evidence))
            continue
        session = _state_label(nodes[b.node], "kafka_zookeeper_session_state")
        if (
            b.up
            and b.state is Lifecycle.ACTIVE
            and b.node_id is not None
            and session not in (None, "CONNECTED")
            and active.value(queue, broker=str(b.node_id)) is None
        ):
            evidence = (
                f"ZooKeeper session {session} and the controller has no request queue for broker {b.node_id}: "
                f"not registered (KIP-343); {b.evidence}"
            )
            b = replace(b, state=Lifecycle.FENCED, evidence=evidence)
        result.append(b)
    return result


def _state_label(node: NodeSnapshot, series: str) -> str | None:
    """The string a STATE series carries (its `state` label where the value is 1), or None."""
    return next((dict(s.labels).get("state") for s in node.series_samples(series) if s.value == 1), None)


def _registration(active: NodeSnapshot | None, cluster: ClusterSnapshot, node: NodeSnapshot) -> float | None:
    """The controller's BrokerRegistrationState for `node`: the active controller's, else any controller's.

    Kafka creates the per-broker gauge only when a registration changes in a metadata delta, not when a
    controller loads a snapshot (ControllerMetadataMetricsPublisher), so after a controller restart the
    active one may lack it for brokers registered earlier; another controller that saw the change has it.
    """
    if node.node_id is None:
        return None
    broker = str(node.node_id)
    series = "kafka_controller_broker_registration_state"
    if active is not None and (value := active.value(series, broker=broker)) is not None:
        return value
    others = [n for n in _controllers(cluster) if n is not active and n.value(series, broker=broker) is not None]
    if not others:
        return None
    # the controller furthest along the metadata log knows the latest registration
    best = max(others, key=lambda n: n.value("kafka_controller_last_applied_record_offset") or -1.0)
    return best.value(series, broker=broker)


CANNOT_NAME_SHUTDOWN = " (this controller cannot name a controlled shutdown: a clean stop reads the same, Kafka < 4.1)"


def _infer_fenced(
    cluster: ClusterSnapshot,
    active: NodeSnapshot | None,
    brokers: list[BrokerHealth],
    registered: frozenset[str],
) -> list[BrokerHealth]:
    """Where the controller gives no per-broker registration state, it says only how many are fenced.

    `FencedBrokerCount` counts every registration with the fenced flag (ControllerMetadataMetrics): brokers
    that are starting (fenced until caught up), brokers gone after a controlled shutdown, and those known
    fenced by registration. The rest of the count is the brokers fenced without ctlplane knowing which: a
    running broker keeps BrokerState=RUNNING after being fenced, so when the stale or unreachable brokers
    number exactly that rest, they are the fenced ones.
    """
    if active is None or cluster.mode not in (Mode.KRAFT, Mode.MIGRATION):
        return brokers
    fenced = active.value("kafka_controller_fenced_brokers")
    if fenced is None or not math.isfinite(fenced) or fenced <= 0:
        return brokers
    unknown = [b for b in brokers if b.node not in registered]
    known_fenced = sum(1 for b in brokers if b.node in registered and b.state is Lifecycle.FENCED) + sum(
        1 for b in unknown if b.state is Lifecycle.INITIAL or (b.state is Lifecycle.SHUTDOWN and not b.up)
    )
    suspects = [b for b in unknown if b.state is Lifecycle.UNREACHABLE or (b.state is Lifecycle.ACTIVE and b.stale)]
    if not suspects or len(suspects) != int(fenced) - known_fenced:
        return brokers
    said = f"controller FencedBrokerCount={fenced:g}"
    # Before Kafka 4.1 (KAFKA-18666) no controller MBean names a controlled shutdown: a broker that stopped
    # cleanly is gone and fenced exactly like one that crashed, and a crash must page.
    unnamed = "" if active.has("kafka_controller_controlled_shutdown_brokers") else CANNOT_NAME_SHUTDOWN
    return [
        replace(b, state=Lifecycle.FENCED, evidence=f"{said}{'' if b.up else unnamed}; {b.evidence}")
        if b in suspects
        else b
        for b in brokers
    ]


def _fenced_unnamed(
    cluster: ClusterSnapshot, active: NodeSnapshot | None, brokers: Sequence[BrokerHealth]
) -> int | None:
    """FencedBrokerCount minus the brokers ctlplane already names fenced, so that a broker nobody listed (and
    nobody discovered) still pages when the controller fences it.

    The count is of registrations with the fenced flag (ControllerMetadataMetrics, KRaft only): a broker
    FENCED here, one starting (INITIAL: fenced until caught up, KIP-631) and one gone after a controlled
    shutdown are each one of them. Whatever remains is a fenced broker that no ctlplane series shows FENCED.
    """
    if active is None or cluster.mode not in (Mode.KRAFT, Mode.MIGRATION):
        return None
    count = active.value("kafka_controller_fenced_brokers")
    if count is None or not math.isfinite(count):
        return None
    named = sum(
        1
        for b in brokers
        if b.state in (Lifecycle.FENCED, Lifecycle.INITIAL) or (b.state is Lifecycle.SHUTDOWN and not b.up)
    )
    return max(0, int(count) - named)


def _fenced_unplanned(
    broker: BrokerHealth, node: NodeSnapshot, mode: Mode | None, names_shutdown: bool, led: bool
) -> bool:
    """FENCED, and no planned stop or restart reads the same, so a page need not wait out a restart.

    - A KRaft broker whose process runs (BrokerState RUNNING) yet is fenced: its heartbeats no longer reach
      the controller (cut off, or hung past broker.session.timeout.ms). Stopping or starting a broker shows
      its own BrokerState (PENDING_CONTROLLED_SHUTDOWN, STARTING, RECOVERY), never RUNNING while fenced.
    - A KRaft broker gone (JMX not answering) that led partitions when last read, on a cluster whose
      controller names controlled shutdowns (Kafka 4.1+, ControlledShutdownBrokerCount): a clean stop of a
      leader sets the registration's inControlledShutdown (BrokerHeartbeatManager.calculateNextBrokerState
      -> CONTROLLED_SHUTDOWN, ReplicationControlManager.handleBrokerInControlledShutdown), which ctlplane
      reads as SHUTDOWN, so FENCED here is a crash, a hang or a partition.
    Not: a broker that led nothing (Kafka grants it SHUTDOWN_NOW and fences it like a crash), any gone
    broker before Kafka 4.1 (KAFKA-18666), ZooKeeper mode (its session alerts name a lost registration).
    """
    if broker.state is not Lifecycle.FENCED or mode is Mode.ZOOKEEPER:
        return False
    if node.up:
        return node.value("kafka_broker_state") == 3.0
    return names_shutdown and led


def _fencing_word(cluster: ClusterSnapshot) -> bool:
    """Whether this round has a word on who is fenced: a controller read (its registration states or fenced
    count; in ZooKeeper mode the active controller's queues), or the brokers' describeCluster with fenced
    brokers listed (the quorum's view, 4.0+)."""
    return bool(_controllers(cluster)) or (cluster.quorum is not None and cluster.quorum.fenced is not None)


def _held_fenced(broker: BrokerHealth, memory: _ClusterMemory, fencing_word: bool) -> BrokerHealth | None:
    """A broker FENCED last round, gone still, in a round with no word on fencing (`_fencing_word`): FENCED
    as the controllers last said, with its unplanned flag; else None (the round decides).

    A round whose controller reads timed out (a loaded controller) says nothing either way, and reading the
    broker UNREACHABLE for it would restart the `for:` of its page."""
    if fencing_word or broker.up or broker.state is not Lifecycle.UNREACHABLE:
        return None
    if memory.states.get(broker.node) is not Lifecycle.FENCED:
        return None
    return replace(
        broker,
        state=Lifecycle.FENCED,
        evidence=f"FENCED at the controllers' last word: no controller was read this round; {broker.evidence}",
        fenced_unplanned=broker.node in memory.unplanned,
    )


def _loaded(offset: float | None) -> float | None:
    """Kafka reports -1 before a node has published its first metadata image: not loaded, never lag."""
    return offset if offset is not None and math.isfinite(offset) and offset >= 0 else None


def _metadata_lag(
    node: NodeSnapshot,
    active: NodeSnapshot | None,
    mode: Mode | None,
    waits: dict[tuple[str, str], tuple[float, float, float]],
    now: float,
) -> tuple[float | None, float | None, float | None, float | None]:
    """(lag records, lag seconds, applied offset, committed offset) for one node.

    ZooKeeper mode has no metadata log: the lag is the active controller's queue of requests for the
    broker, in requests and in how long they wait (`_zookeeper_queue_wait`, which updates `waits`).
    """
    if not node.up:
        return None, None, None, None
    if mode is Mode.ZOOKEEPER:
        if active is None or node.node_id is None:
            return None, None, None, None
        queued = active.value("kafka_controller_channel_queue_size", broker=str(node.node_id))
        return queued, _zookeeper_queue_wait(node, active, queued, waits, now), None, None
    prefix = "kafka_broker"
    if node.value("kafka_broker_last_applied_record_offset") is None:  # a controller-only node
        prefix = "kafka_controller"
    applied = _loaded(node.value(f"{prefix}_last_applied_record_offset"))
    lag_seconds = node.value(f"{prefix}_last_applied_record_lag_seconds")
    timestamp = node.value(f"{prefix}_last_applied_record_timestamp_seconds")
    if applied is None or (timestamp is not None and timestamp <= 0) or (lag_seconds is not None and lag_seconds < 0):
        # Before the first image the applied timestamp is 0 (or -1) and the lag is "now" (~1.7e9 s):
        # a placeholder, not 55 years of staleness (BrokerServerMetrics / ControllerMetadataMetrics).
        lag_seconds = None
    committed = _loaded(active.value("kafka_controller_last_committed_record_offset")) if active else None
    lag_records = max(0.0, committed - applied) if committed is not None and applied is not None else None
    return lag_records, lag_seconds, applied, committed


def _summary(node: NodeSnapshot, series: str, **labels: str) -> tuple[float, float] | None:
    """(count, sum) of a summary sample, or None."""
    sample = node.sample(series, **labels)
    if sample is None:
        return None
    parts = dict(sample.parts)
    count, total = parts.get("count"), parts.get("sum")
    if count is None or total is None or not (math.isfinite(count) and math.isfinite(total)):
        return None
    return count, total


def _zookeeper_queue_wait(
    node: NodeSnapshot,
    active: NodeSnapshot,
    queued: float | None,
    waits: dict[tuple[str, str], tuple[float, float, float]],
    now: float,
) -> float | None:
    """How long metadata requests for this broker have been waiting in the ZooKeeper controller's queue.

    ZooKeeper mode has no metadata log to lag behind; the active controller queues LeaderAndIsr,
    UpdateMetadata and StopReplica for each broker and times how long each waits before it is sent
    (`ControllerChannelManager RequestRateAndQueueTimeMs{broker-id}`, KIP-237, a Yammer Timer whose Mean
    is over the controller's lifetime). The recent wait is the mean over the requests sent since the last
    round (sum and count deltas); when none was sent while requests are queued, the queue is stuck and
    the wait is the time since it last made progress (at most one round more than the oldest request's).
    """
    if node.node_id is None:
        return None
    broker = str(node.node_id)
    summary = _summary(active, "kafka_controller_channel_queue_time_seconds", broker=broker)
    if summary is None:
        return None
    count, total = summary
    key = (active.node, node.node)
    previous = waits.get(key)
    if previous is None or count < previous[0]:  # first sight, or the controller's metrics restarted
        waits[key] = (count, total, now)
        return None
    last_count, last_total, progress_at = previous
    if count > last_count:
        waits[key] = (count, total, now)
        return max(0.0, (total - last_total) / (count - last_count))
    if not queued:
        waits[key] = (count, total, now)
        return 0.0
    return max(0.0, now - progress_at)


def _frozen(history: Sequence[tuple[float, float]], scrapes: int) -> bool:
    """Applied offset unchanged for `scrapes` consecutive reads while the committed offset moved on."""
    if len(history) < scrapes + 1:
        return False
    window = history[-(scrapes + 1) :]
    applied = {a for a, _ in window}
    return len(applied) == 1 and window[-1][1] > window[0][1] and window[-1][1] > window[-1][0]


def _quorum_lag(view: QuorumView | None, node_id: int | None) -> tuple[float | None, float | None]:
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


def _with_quorum(
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


def _controller_views_disagree(cluster: ClusterSnapshot, controller: ControllerView) -> bool:
    """The quorum names a leader, and the nodes whose JMX claims the active controller are not just it."""
    view = cluster.quorum
    if view is None or not view.up or view.leader_id is None or view.leader_id < 0:
        return False
    ids = {n.node: n.node_id for n in cluster.nodes}
    return {ids.get(name) for name in controller.claimants} != {view.leader_id}


def evaluate_cluster(
    cluster: ClusterSnapshot, memory: _ClusterMemory, thresholds: Thresholds, now: float
) -> tuple[ClusterHealth, _ClusterMemory]:
    controller, active, memory = _controller_view(cluster, memory, now)
    mode = cluster.mode
    offsets = dict(memory.offsets)
    waits = dict(memory.queue_waits)
    brokers = []
    registered = set()
    for node in cluster.nodes:
        # a migrating cluster has ZooKeeper-mode and KRaft brokers side by side: each is read by its own kind
        node_mode = node.mode if node.mode is not None else mode
        lag_records, lag_seconds, applied, committed = _metadata_lag(node, active, node_mode, waits, now)
        lag_source = "jmx" if lag_records is not None or lag_seconds is not None else None
        if not node.up and node.failure is not Failure.GONE and node_mode is not Mode.ZOOKEEPER:
            # its JMX cannot say, but the process may be there (hung, or cut off from ctlplane): the quorum
            # says. Not for a refused connection: a stopped broker serves no metadata, and the leader would
            # report a cleanly stopped one ever further behind for minutes, a page for no fault.
            lag_records, lag_seconds = _quorum_lag(cluster.quorum, node.node_id)
            lag_source = "quorum" if lag_records is not None or lag_seconds is not None else None
        if applied is not None and committed is not None:
            offsets[node.node] = (
                *offsets.get(node.node, ())[-thresholds.metadata_frozen_scrapes :],
                (applied, committed),
            )
        frozen = _frozen(offsets.get(node.node, ()), thresholds.metadata_frozen_scrapes) if node.up else False
        if not _is_broker(node):
            continue
        if node_mode is Mode.ZOOKEEPER:
            stale = (lag_records is not None and lag_records >= thresholds.zk_controller_queue_stale) or (
                lag_seconds is not None and lag_seconds >= thresholds.metadata_stale_seconds
            )
        else:
            stale = (
                frozen
                or (lag_seconds is not None and lag_seconds >= thresholds.metadata_stale_seconds)
                or (lag_records is not None and lag_records >= thresholds.metadata_stale_records)
            )
        registration = _registration(active, cluster, node)
        if registration is not None:
            registered.add(node.node)
        state, evidence = _lifecycle(
            node, registration, memory.states.get(node.node), node.node in memory.broker_state_read
        )
        queue = node.value("kafka_control_plane_request_queue_size") if node.up else None
        queue_ratio = queue / CONTROL_PLANE_QUEUE_CAPACITY if queue is not None else None
        idle = (
            [
                v
                for name in (
                    "kafka_control_plane_request_handler_idle_ratio",
                    "kafka_control_plane_network_processor_idle_ratio",
                )
                if (v := node.value(name)) is not None and math.isfinite(v)
            ]
            if queue is not None
            else []
        )
        saturated = (queue_ratio is not None and queue_ratio >= thresholds.control_plane_queue_saturation_ratio) or (
            any(v < thresholds.control_plane_idle_saturation_ratio for v in idle)
        )
        listener = None
        if node.up and node.mode is Mode.ZOOKEEPER:
            listener = queue is not None
        brokers.append(
            BrokerHealth(
                cluster=cluster.name,
                node=node.node,
                role=node.role,
                node_id=node.node_id,
                up=node.up,
                state=state,
                evidence=evidence,
                metadata_lag_records=lag_records,
                metadata_lag_seconds=lag_seconds,
                metadata_lag_source=lag_source,
                stale=stale,
                frozen=frozen,
                control_plane_listener=listener,
                control_plane_queue_ratio=queue_ratio,
                control_plane_saturated=saturated,
            )
        )
    known = {node.node for node in cluster.nodes}
    # gone (connection refused): fenced by the controller's registration or, where the controller has no
    # per-broker gauge (a 4.1+ controller restarted since the brokers registered), by FencedBrokerCount
    vanished = frozenset(n.node for n in cluster.nodes if n.failure is Failure.GONE)
    fenced = _zookeeper_deregistered(cluster, active, _infer_fenced(cluster, active, brokers, frozenset(registered)))
    decided = [
        _with_quorum(cluster, active, broker, broker.node in vanished, thresholds)
        for broker in _controlled_shutdown_evidence(active, fenced, vanished)
    ]
    nodes = {node.node: node for node in cluster.nodes}
    leading = set(memory.leading & known)
    for node in cluster.nodes:
        if node.up and (count := node.value("kafka_broker_leader_partitions")) is not None:
            (leading.add if count > 0 else leading.discard)(node.node)
    names_shutdown = active is not None and active.has("kafka_controller_controlled_shutdown_brokers")
    fencing_word = _fencing_word(cluster)  # once per round: it scans every node
    final = tuple(
        _held_fenced(broker, memory, fencing_word)
        or replace(
            broker,
            fenced_unplanned=_fenced_unplanned(
                broker,
                nodes[broker.node],
                nodes[broker.node].mode or mode,
                names_shutdown,
                broker.node in leading,
            ),
        )
        for broker in decided
    )
    memory = replace(
        memory,
        offsets=MappingProxyType({k: v for k, v in offsets.items() if k in known}),
        queue_waits=MappingProxyType({k: v for k, v in waits.items() if k[1] in known}),
        states=MappingProxyType({b.node: b.state for b in final}),
        broker_state_read=frozenset(n.node for n in cluster.nodes if n.up and n.has("kafka_broker_state")),
        leading=frozenset(leading),
        unplanned=frozenset(b.node for b in final if b.fenced_unplanned),
    )
    phase = _migration_phase(cluster, active)
    quorum = cluster.quorum
    health = ClusterHealth(
        cluster.name,
        mode,
        controller,
        final,
        now,
        migration_phase=phase,
        quorum_leader_id=quorum.leader_id if quorum is not None and quorum.up else None,
        controller_views_disagree=_controller_views_disagree(cluster, controller),
        fenced_unnamed=_fenced_unnamed(cluster, active, final),
    )
    return health, memory


def _unevaluated(cluster: ClusterSnapshot, memory: _ClusterMemory, now: float, error: str) -> ClusterHealth:
    controller = ControllerView((), None, None, None, memory.failovers_total, memory.last_failover_at, 0)
    return ClusterHealth(cluster.name, None, controller, (), now, error)


def evaluate(snapshot: FleetSnapshot, memory: HealthMemory, thresholds: Thresholds) -> tuple[FleetHealth, HealthMemory]:
    clusters = []
    memories = {}
    for cluster in snapshot.clusters:
        previous = memory.clusters.get(cluster.name, _ClusterMemory())
        try:
            health, memories[cluster.name] = evaluate_cluster(cluster, previous, thresholds, snapshot.taken_at)
        except Exception as exc:
            # One cluster's odd values must not blind the fleet: report this cluster as not evaluated (no
            # health series, the reason in /api/v1/health), keep its memory, and serve everyone else.
            log.exception("health of cluster %s could not be evaluated", cluster.name)
            memories[cluster.name] = previous
            health = _unevaluated(cluster, previous, snapshot.taken_at, f"{type(exc).__name__}: {str(exc)[:200]}")
        clusters.append(health)
    return FleetHealth(tuple(clusters)), HealthMemory(MappingProxyType(memories))
