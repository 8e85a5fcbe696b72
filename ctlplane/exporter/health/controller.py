"""Which node is the active controller (never the Metadata API's answer in KRaft), its epoch floor,
failovers and a ZooKeeper-to-KRaft migration's phase."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType

from ctlplane.exporter.catalog import Mode
from ctlplane.exporter.health.model import ClusterMemory, ControllerView
from ctlplane.exporter.model import ClusterSnapshot, NodeSnapshot

EPOCH_FLOOR_ROUNDS = 40


def controller_nodes(cluster: ClusterSnapshot) -> list[NodeSnapshot]:
    return [n for n in cluster.nodes if n.up and n.has("kafka_controller_active")]


def _claimants(cluster: ClusterSnapshot) -> list[NodeSnapshot]:
    claimants = [n for n in controller_nodes(cluster) if n.value("kafka_controller_active") == 1.0]
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


def migration_phase(cluster: ClusterSnapshot, active: NodeSnapshot | None) -> str | None:
    """The phase the KRaft controllers report: the active one's, else any KRaft controller's."""
    series = "kafka_controller_zk_migration_state"
    kraft = [n for n in controller_nodes(cluster) if n.mode is not Mode.ZOOKEEPER and n.has(series)]
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


def _next_epoch_floor(cluster: ClusterSnapshot, memory: ClusterMemory) -> ClusterMemory:
    current = _quorum_epoch(cluster)
    if current is None:
        return memory
    if memory.epoch_floor is None or current >= memory.epoch_floor:
        return replace(memory, epoch_floor=current, epoch_floor_unseen_rounds=0)
    unseen = memory.epoch_floor_unseen_rounds + 1
    if unseen >= EPOCH_FLOOR_ROUNDS:
        return replace(memory, epoch_floor=current, epoch_floor_unseen_rounds=0)
    return replace(memory, epoch_floor_unseen_rounds=unseen)


def controller_view(
    cluster: ClusterSnapshot, memory: ClusterMemory, now: float
) -> tuple[ControllerView, NodeSnapshot | None, ClusterMemory]:
    active = find_active_controller(cluster, memory.epoch_floor)
    memory = _next_epoch_floor(cluster, memory)
    epoch = _quorum_epoch(cluster) if cluster.mode in (Mode.KRAFT, Mode.MIGRATION) else None
    if active is not None and active.value("kafka_raft_current_epoch") is not None:
        epoch = active.value("kafka_raft_current_epoch")
    if active is not None:
        memory = with_leader(memory, active.node, epoch, now)
    view = ControllerView(
        claimants=tuple(sorted(n.node for n in _claimants(cluster))),
        node=active.node if active else None,
        node_id=active.node_id if active else None,
        epoch=epoch,
        failovers_total=memory.failovers_total,
        last_failover_at=memory.last_failover_at,
        reachable_controllers=len(controller_nodes(cluster)),
    )
    return view, active, memory


def with_leader(memory: ClusterMemory, node: str, epoch: float | None, now: float) -> ClusterMemory:
    """The memory with this round's active controller, a failover counted where it is a new identity or the
    same node re-elected in a later epoch. An epoch bump with no known leader (a failed vote) is not counted
    until a leader is known again."""
    if memory.leader is not None and (node, epoch) != memory.leader:
        earlier_epoch = memory.leader[1]
        if node != memory.leader[0] or (epoch is not None and earlier_epoch is not None and epoch > earlier_epoch):
            memory = replace(memory, failovers_total=memory.failovers_total + 1, last_failover_at=now)
    return replace(memory, leader=(node, epoch))


def controller_views_disagree(cluster: ClusterSnapshot, controller: ControllerView) -> bool:
    """The quorum names a leader, and the nodes whose JMX claims the active controller are not just it."""
    view = cluster.quorum
    if view is None or not view.up or view.leader_id is None or view.leader_id < 0:
        return False
    ids = {n.node: n.node_id for n in cluster.nodes}
    return {ids.get(name) for name in controller.claimants} != {view.leader_id}
