"""Cluster health as a pure function of snapshots: the active controller, broker lifecycle, metadata
freshness and control-plane saturation.

`evaluate(snapshot, memory, thresholds)` returns the health of every cluster and the small memory the
next evaluation needs (last controller identity, failover count, recent metadata offsets). The memory
is an immutable value: the caller (HealthTracker) only stores what it is given back.

Its parts: model (the values), controller, lifecycle, metadata and quorum (what each reading says), decision
(the one place a broker's state is decided from them); here, the round that puts them together."""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from types import MappingProxyType

from ctlplane.exporter.catalog import Mode
from ctlplane.exporter.health.admin import admin_brokers, admin_controller
from ctlplane.exporter.health.canary import with_canary
from ctlplane.exporter.health.cause import TIMED_OUT_HEARTBEATS
from ctlplane.exporter.health.control_plane import control_plane_listener
from ctlplane.exporter.health.controller import (
    MIGRATION_PHASES,
    controller_view,
    controller_views_disagree,
    find_active_controller,
    migration_phase,
)
from ctlplane.exporter.health.decision import decide_brokers
from ctlplane.exporter.health.gc import gc_read
from ctlplane.exporter.health.lifecycle import (
    broker_lifecycle,
    fenced_unnamed,
    is_broker,
    just_running,
    registration_state,
    running_start,
    shutdown_baselines,
)
from ctlplane.exporter.health.metadata import is_frozen, is_stale, metadata_lag
from ctlplane.exporter.health.model import (
    BROKER_STATE_NAMES,
    REGISTRATION_STATES,
    BrokerHealth,
    Cause,
    ClusterHealth,
    ClusterMemory,
    ControllerView,
    FleetHealth,
    HealthMemory,
    Lifecycle,
    Redundancy,
    VoterSet,
    last_reads,
)
from ctlplane.exporter.health.quorum import elections, quorum_lag, quorum_redundancy, voter_set
from ctlplane.exporter.health.restart import restart_safety
from ctlplane.exporter.health.unknown import unknown_readings
from ctlplane.exporter.model import ClusterSnapshot, Failure, FleetSnapshot, NodeSnapshot
from ctlplane.exporter.thresholds import Thresholds

__all__ = [
    "BROKER_STATE_NAMES",
    "MIGRATION_PHASES",
    "REGISTRATION_STATES",
    "BrokerHealth",
    "Cause",
    "ClusterHealth",
    "ControllerView",
    "FleetHealth",
    "HealthMemory",
    "Lifecycle",
    "evaluate",
    "evaluate_cluster",
    "find_active_controller",
]

log = logging.getLogger(__name__)


def evaluate_cluster(
    cluster: ClusterSnapshot, memory: ClusterMemory, thresholds: Thresholds, now: float
) -> tuple[ClusterHealth, ClusterMemory]:
    """One cluster's health from its snapshot and what the last round left: the active controller
    (controller.py), each broker's first reading and metadata freshness (`_first_readings`), the one decision
    on every broker's state and cause (decision.py), the quorum's health (quorum.py), and the memory the next
    round needs."""
    if cluster.admin_only:
        return _evaluate_admin_only(cluster, memory, thresholds, now)
    controller, active, memory = controller_view(cluster, memory, now)
    mode = cluster.mode
    first, registered, offsets, waits = _first_readings(cluster, active, memory, thresholds, now)
    decided = decide_brokers(cluster, active, first, registered, memory, thresholds)
    kraft = mode is not Mode.ZOOKEEPER
    voters, out_of_step = elections(cluster, memory.out_of_step_since, now, thresholds) if kraft else ((), {})
    quorum = _quorum_half(cluster, memory, thresholds, now, kraft)
    known = {node.node for node in cluster.nodes}
    final = with_canary(decided.brokers, cluster.canary, thresholds, now)
    memory = replace(
        memory,
        offsets=MappingProxyType({k: v for k, v in offsets.items() if k in known}),
        queue_waits=MappingProxyType({k: v for k, v in waits.items() if k[1] in known}),
        states=MappingProxyType({b.node: b.state for b in final}),
        broker_state_read=frozenset(n.node for n in cluster.nodes if n.up and n.has("kafka_broker_state")),
        running_since=MappingProxyType(last_reads(cluster.nodes, memory.running_since, known, running_start)),
        gc_seconds=MappingProxyType(last_reads(cluster.nodes, memory.gc_seconds, known, gc_read)),
        gc_paused=MappingProxyType(decided.gc_paused),
        leading=decided.leading,
        unplanned=frozenset(b.node for b in final if b.fenced_unplanned),
        timed_out_heartbeats=_timed_out_heartbeats(active, memory.timed_out_heartbeats),
        shutdown_baselines=MappingProxyType(shutdown_baselines(final, memory, decided.shutdown_requests, known)),
        out_of_step_since=MappingProxyType(out_of_step),
        observer_since=MappingProxyType(quorum.observer_since),
    )
    health = ClusterHealth(
        cluster.name,
        mode,
        controller,
        final,
        now,
        migration_phase=migration_phase(cluster, active),
        quorum_leader_id=quorum.leader_id,
        controller_views_disagree=controller_views_disagree(cluster, controller),
        fenced_unnamed=fenced_unnamed(cluster, active, final),
        redundancy=quorum.redundancy,
        elections=voters,
        voter_set=quorum.voter_set,
        restart=restart_safety(
            cluster,
            final,
            active,
            quorum.redundancy,
            quorum.voter_set,
            now=now,
            counts_max_age_seconds=thresholds.restart_counts_max_age_seconds,
        ),
        unknown=unknown_readings(cluster, quorum.redundancy),
    )
    return health, memory


@dataclass(frozen=True)
class _QuorumHalf:
    """What a KRaft cluster's quorum says of itself, the same whether its nodes are read or not."""

    voter_set: VoterSet | None
    observer_since: dict[str, float]
    redundancy: Redundancy | None
    leader_id: int | None  # where the quorum answered this round


def _quorum_half(
    cluster: ClusterSnapshot, memory: ClusterMemory, thresholds: Thresholds, now: float, kraft: bool
) -> _QuorumHalf:
    members, observer_since = voter_set(cluster, memory.observer_since, now, thresholds) if kraft else (None, {})
    view = cluster.quorum
    return _QuorumHalf(
        members,
        observer_since,
        quorum_redundancy(cluster, thresholds) if kraft else None,
        view.leader_id if view is not None and view.up else None,
    )


_Offsets = dict[str, tuple[tuple[float, float], ...]]
_Waits = dict[tuple[str, str], tuple[float, float, float]]


def _quorum_lag(cluster: ClusterSnapshot, node: NodeSnapshot) -> tuple[float | None, float | None, str | None]:
    """A broker's metadata lag by the quorum's word, where its JMX cannot say but the process may be there
    (hung, or cut off from ctlplane). Not for a refused connection: a stopped broker serves no metadata, and
    the leader would report a cleanly stopped one ever further behind for minutes, a page for no fault."""
    lag_records, lag_seconds = quorum_lag(cluster.quorum, node.node_id)
    return lag_records, lag_seconds, "quorum" if lag_records is not None or lag_seconds is not None else None


def _first_readings(
    cluster: ClusterSnapshot, active: NodeSnapshot | None, memory: ClusterMemory, thresholds: Thresholds, now: float
) -> tuple[list[BrokerHealth], frozenset[str], _Offsets, _Waits]:
    """Every broker's first reading (lifecycle.broker_lifecycle) with its metadata freshness and control-plane
    load; the brokers a controller gave a registration state for; every node's recent metadata offsets and
    queue waits, for the memory."""
    offsets = dict(memory.offsets)
    waits = dict(memory.queue_waits)
    brokers = []
    registered = set()
    for node in cluster.nodes:
        # a migrating cluster has ZooKeeper-mode and KRaft brokers side by side: each is read by its own kind
        node_mode = node.mode if node.mode is not None else cluster.mode
        lag_records, lag_seconds, applied, committed = metadata_lag(node, active, node_mode, waits, now)
        lag_source = "jmx" if lag_records is not None or lag_seconds is not None else None
        if not node.up and node.failure is not Failure.GONE and node_mode is not Mode.ZOOKEEPER:
            lag_records, lag_seconds, lag_source = _quorum_lag(cluster, node)
        if applied is not None and committed is not None:
            offsets[node.node] = (
                *offsets.get(node.node, ())[-thresholds.metadata_frozen_scrapes :],
                (applied, committed),
            )
        frozen = is_frozen(offsets.get(node.node, ()), thresholds.metadata_frozen_scrapes) if node.up else False
        if not is_broker(node):
            continue
        registration = registration_state(active, cluster, node)
        if registration is not None:
            registered.add(node.node)
        state, evidence = broker_lifecycle(
            node,
            registration,
            memory.states.get(node.node),
            node.node in memory.broker_state_read,
            just_running(node, memory.running_since),
        )
        listener, queue_ratio, saturated = control_plane_listener(node, thresholds)
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
                stale=is_stale(node_mode, lag_records, lag_seconds, frozen, thresholds),
                frozen=frozen,
                control_plane_listener=listener,
                control_plane_queue_ratio=queue_ratio,
                control_plane_saturated=saturated,
            )
        )
    return brokers, frozenset(registered), offsets, waits


def _evaluate_admin_only(
    cluster: ClusterSnapshot, memory: ClusterMemory, thresholds: Thresholds, now: float
) -> tuple[ClusterHealth, ClusterMemory]:
    """No node read: the cluster's own answers alone (health/admin.py), the quorum's health as for any cluster."""
    controller, memory = admin_controller(cluster, memory, now)
    admin_said, memory = admin_brokers(cluster, memory, thresholds)
    brokers = with_canary(admin_said, cluster.canary, thresholds, now)
    mode = cluster.mode
    kraft = mode is Mode.KRAFT
    quorum = _quorum_half(cluster, memory, thresholds, now, kraft)
    memory = replace(
        memory,
        states=MappingProxyType({b.node: b.state for b in brokers}),
        observer_since=MappingProxyType(quorum.observer_since),
    )
    health = ClusterHealth(
        cluster.name,
        mode,
        controller,
        brokers,
        now,
        quorum_leader_id=quorum.leader_id,
        redundancy=quorum.redundancy,
        voter_set=quorum.voter_set,
        restart=restart_safety(
            cluster,
            brokers,
            None,
            quorum.redundancy,
            quorum.voter_set,
            now=now,
            counts_max_age_seconds=thresholds.restart_counts_max_age_seconds,
        ),
    )
    return health, memory


def _timed_out_heartbeats(active: NodeSnapshot | None, last: tuple[str, float] | None) -> tuple[str, float] | None:
    """What the memory keeps of the active controller's TimedOutBrokerHeartbeatCount: this round's reading,
    or the last one while no controller answers."""
    count = active.value(TIMED_OUT_HEARTBEATS) if active is not None and active.up else None
    return (active.node, count) if active is not None and count is not None else last


def _unevaluated(cluster: ClusterSnapshot, memory: ClusterMemory, now: float, error: str) -> ClusterHealth:
    controller = ControllerView((), None, None, None, memory.failovers_total, memory.last_failover_at, 0)
    return ClusterHealth(cluster.name, None, controller, (), now, error)


def evaluate(snapshot: FleetSnapshot, memory: HealthMemory, thresholds: Thresholds) -> tuple[FleetHealth, HealthMemory]:
    clusters = []
    memories = {}
    for cluster in snapshot.clusters:
        previous = memory.clusters.get(cluster.name, ClusterMemory())
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
