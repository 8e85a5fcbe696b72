"""Cluster health as a pure function of snapshots: the active controller, broker lifecycle, metadata
freshness and control-plane saturation.

`evaluate(snapshot, memory, thresholds)` returns the health of every cluster and the small memory the
next evaluation needs (last controller identity, failover count, recent metadata offsets). The memory
is an immutable value: the caller (HealthTracker) only stores what it is given back.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from types import MappingProxyType

from exporter.catalog import Mode, Role
from exporter.model import ClusterSnapshot, Failure, FleetSnapshot, NodeSnapshot

# ControlPlaneRequestQueueSize counts requests in a queue of fixed capacity 20 (KIP-291:
# `queued.max.requests` does not apply to the control-plane channel).
CONTROL_PLANE_QUEUE_CAPACITY = 20


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
BROKER_STATE_NAMES: Mapping[float, str] = MappingProxyType(
    {0.0: "NOT_RUNNING", 1.0: "STARTING", 2.0: "RECOVERY", 3.0: "RUNNING", 6.0: "PENDING_CONTROLLED_SHUTDOWN",
     7.0: "SHUTTING_DOWN", 127.0: "UNKNOWN"}
)  # fmt: skip


@dataclass(frozen=True)
class Thresholds:
    """Defaults documented in README ("Health thresholds")."""

    metadata_stale_seconds: float = 15.0
    metadata_stale_records: float = 1000.0
    metadata_frozen_scrapes: int = 3
    zk_controller_queue_stale: float = 10.0
    control_plane_queue_saturation_ratio: float = 0.8
    control_plane_idle_saturation_ratio: float = 0.1


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


@dataclass(frozen=True)
class HealthMemory:
    clusters: Mapping[str, _ClusterMemory] = field(default_factory=lambda: MappingProxyType({}))


def _controllers(cluster: ClusterSnapshot) -> list[NodeSnapshot]:
    return [n for n in cluster.nodes if n.up and n.has("kafka_controller_active")]


def _claimants(cluster: ClusterSnapshot) -> list[NodeSnapshot]:
    return [n for n in _controllers(cluster) if n.value("kafka_controller_active") == 1.0]


def find_active_controller(cluster: ClusterSnapshot) -> NodeSnapshot | None:
    """The node that is the active controller, even during a split brain.

    KRaft: among the nodes claiming ActiveControllerCount=1, the one with the highest raft epoch (a
    paused old leader keeps claiming until it learns the new epoch). Never the Metadata API's controller
    id, which is a random broker in KRaft (KAFKA-17404). ZooKeeper mode: the single claimant.
    """
    claimants = _claimants(cluster)
    if not claimants:
        return None
    return max(claimants, key=lambda n: (n.value("kafka_raft_current_epoch") or -1.0, -(n.node_id or 0)))


def _quorum_epoch(cluster: ClusterSnapshot) -> float | None:
    epochs = [v for n in cluster.nodes if n.up and (v := n.value("kafka_raft_current_epoch")) is not None]
    return max(epochs) if epochs else None


def _controller_view(
    cluster: ClusterSnapshot, memory: _ClusterMemory, now: float
) -> tuple[ControllerView, _ClusterMemory]:
    active = find_active_controller(cluster)
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
    return view, memory


def _is_broker(node: NodeSnapshot) -> bool:
    if node.role in (Role.BROKER, Role.COMBINED):
        return True
    # Never read: show it as a broker unless configuration or an earlier read said otherwise.
    return node.role is Role.UNKNOWN


def _lifecycle(
    node: NodeSnapshot, registration: float | None, mode: Mode | None, previous: Lifecycle | None
) -> tuple[Lifecycle, str]:
    """The broker's state from the controller's registration, its own BrokerState and its last state."""
    controller_says = REGISTRATION_STATES.get(registration) if registration is not None else None
    if not node.up:
        if previous is Lifecycle.SHUTDOWN:
            # After a controlled shutdown the controller fences the departed broker; that is the expected
            # end of a shutdown, not a fencing incident, until the process comes back.
            return Lifecycle.SHUTDOWN, f"after controlled shutdown; JMX: {node.error}"
        if controller_says is Lifecycle.FENCED and previous is Lifecycle.ACTIVE and node.failure is Failure.GONE:
            # Kafka 4.3 leaves no trace that tells a completed controlled shutdown from a crash: both end
            # fenced, with the same heartbeat age and no TimedOutBrokerHeartbeatCount change. A short
            # shutdown easily falls between two scrapes. What differs from a hung or partitioned broker
            # (the fencing that needs a page) is that no process listens any more; a crash still pages
            # through ctlplane_up (KafkaBrokerUnreachable).
            return Lifecycle.SHUTDOWN, f"process stopped and fenced (shut down or crashed); JMX: {node.error}"
        if controller_says in (Lifecycle.FENCED, Lifecycle.SHUTDOWN, Lifecycle.INITIAL):
            # The quorum's view is the truth about the broker; our failed read is secondary evidence.
            return controller_says, f"controller registration state {controller_says}; JMX: {node.error}"
        return Lifecycle.UNREACHABLE, f"JMX: {node.error}"
    broker_state = node.value("kafka_broker_state")
    name = BROKER_STATE_NAMES.get(broker_state, f"{broker_state:g}") if broker_state is not None else None
    if broker_state in (6.0, 7.0) or (broker_state == 0.0 and previous is not None):
        # The broker knows it is shutting down before the controller's registration says so; NOT_RUNNING
        # after it has been seen running is the end of a shutdown (at start-up it precedes STARTING).
        return Lifecycle.SHUTDOWN, f"BrokerState={name}"
    if broker_state is None and previous in (Lifecycle.ACTIVE, Lifecycle.SHUTDOWN):
        # A stopping KRaft broker unregisters BrokerState first, then the controller fences it while its
        # JMX still answers for a moment (seen on Kafka 4.3.1): that is a shutdown, not a fencing.
        return Lifecycle.SHUTDOWN, "BrokerState unregistered: the broker is shutting down"
    if controller_says is Lifecycle.FENCED and broker_state == 1.0:
        return Lifecycle.INITIAL, f"controller BrokerRegistrationState={registration:g}; BrokerState=STARTING"
    if controller_says is not None:
        return controller_says, f"controller BrokerRegistrationState={registration:g}"
    if broker_state is None:
        return Lifecycle.INITIAL, "no BrokerState yet"
    if broker_state == 3.0:
        return Lifecycle.ACTIVE, f"BrokerState={name}"
    if broker_state == 2.0 and mode in (Mode.KRAFT, Mode.MIGRATION):
        # KRaft RECOVERY: caught up on metadata, waiting for the controller to unfence it.
        return Lifecycle.FENCED, f"BrokerState={name} (caught up, not yet unfenced)"
    return Lifecycle.INITIAL, f"BrokerState={name}"


def _registration(active: NodeSnapshot | None, node: NodeSnapshot) -> float | None:
    if active is None or node.node_id is None:
        return None
    return active.value("kafka_controller_broker_registration_state", broker=str(node.node_id))


def _infer_fenced(
    cluster: ClusterSnapshot,
    active: NodeSnapshot | None,
    brokers: list[BrokerHealth],
) -> list[BrokerHealth]:
    """Before Kafka 4.1 the controller says only how many brokers are fenced, not which.

    A running broker keeps BrokerState=RUNNING after being fenced, so when FencedBrokerCount > 0 and the
    stale or unreachable brokers number exactly that many, they are the fenced ones.
    """
    if active is None or active.has("kafka_controller_broker_registration_state"):
        return brokers
    fenced = active.value("kafka_controller_fenced_brokers")
    if not fenced or cluster.mode not in (Mode.KRAFT, Mode.MIGRATION):
        return brokers
    suspects = [b for b in brokers if b.state is Lifecycle.UNREACHABLE or (b.state is Lifecycle.ACTIVE and b.stale)]
    if len(suspects) != int(fenced):
        return brokers
    return [
        replace(b, state=Lifecycle.FENCED, evidence=f"controller FencedBrokerCount={fenced:g}; {b.evidence}")
        if b in suspects
        else b
        for b in brokers
    ]


def _metadata_lag(
    node: NodeSnapshot, active: NodeSnapshot | None, mode: Mode | None
) -> tuple[float | None, float | None, float | None, float | None]:
    """(lag records, lag seconds, applied offset, committed offset) for one node."""
    if not node.up:
        return None, None, None, None
    if mode is Mode.ZOOKEEPER:
        # No metadata log: the controller's queue of requests for this broker is the backlog.
        if active is None or node.node_id is None:
            return None, None, None, None
        queued = active.value("kafka_controller_channel_queue_size", broker=str(node.node_id))
        return queued, None, None, None
    applied = node.value("kafka_broker_last_applied_record_offset")
    lag_seconds = node.value("kafka_broker_last_applied_record_lag_seconds")
    if applied is None:  # a controller-only node
        applied = node.value("kafka_controller_last_applied_record_offset")
        lag_seconds = node.value("kafka_controller_last_applied_record_lag_seconds")
    committed = active.value("kafka_controller_last_committed_record_offset") if active else None
    lag_records = max(0.0, committed - applied) if committed is not None and applied is not None else None
    return lag_records, lag_seconds, applied, committed


def _frozen(history: Sequence[tuple[float, float]], scrapes: int) -> bool:
    """Applied offset unchanged for `scrapes` consecutive reads while the committed offset moved on."""
    if len(history) < scrapes + 1:
        return False
    window = history[-(scrapes + 1) :]
    applied = {a for a, _ in window}
    return len(applied) == 1 and window[-1][1] > window[0][1] and window[-1][1] > window[-1][0]


def evaluate_cluster(
    cluster: ClusterSnapshot, memory: _ClusterMemory, thresholds: Thresholds, now: float
) -> tuple[ClusterHealth, _ClusterMemory]:
    controller, memory = _controller_view(cluster, memory, now)
    active = find_active_controller(cluster)
    mode = cluster.mode
    offsets = dict(memory.offsets)
    brokers = []
    for node in cluster.nodes:
        lag_records, lag_seconds, applied, committed = _metadata_lag(node, active, mode)
        if applied is not None and committed is not None:
            offsets[node.node] = (
                *offsets.get(node.node, ())[-thresholds.metadata_frozen_scrapes :],
                (applied, committed),
            )
        frozen = _frozen(offsets.get(node.node, ()), thresholds.metadata_frozen_scrapes) if node.up else False
        if not _is_broker(node):
            continue
        if mode is Mode.ZOOKEEPER:
            stale = lag_records is not None and lag_records >= thresholds.zk_controller_queue_stale
        else:
            stale = (
                frozen
                or (lag_seconds is not None and lag_seconds >= thresholds.metadata_stale_seconds)
                or (lag_records is not None and lag_records >= thresholds.metadata_stale_records)
            )
        state, evidence = _lifecycle(node, _registration(active, node), mode, memory.states.get(node.node))
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
                stale=stale,
                frozen=frozen,
                control_plane_listener=listener,
                control_plane_queue_ratio=queue_ratio,
                control_plane_saturated=saturated,
            )
        )
    known = {node.node for node in cluster.nodes}
    final = tuple(_infer_fenced(cluster, active, brokers))
    memory = replace(
        memory,
        offsets=MappingProxyType({k: v for k, v in offsets.items() if k in known}),
        states=MappingProxyType({b.node: b.state for b in final}),
    )
    health = ClusterHealth(cluster.name, mode, controller, final, now)
    return health, memory


def evaluate(snapshot: FleetSnapshot, memory: HealthMemory, thresholds: Thresholds) -> tuple[FleetHealth, HealthMemory]:
    clusters = []
    memories = {}
    for cluster in snapshot.clusters:
        previous = memory.clusters.get(cluster.name, _ClusterMemory())
        health, memories[cluster.name] = evaluate_cluster(cluster, previous, thresholds, snapshot.taken_at)
        clusters.append(health)
    return FleetHealth(tuple(clusters)), HealthMemory(MappingProxyType(memories))
