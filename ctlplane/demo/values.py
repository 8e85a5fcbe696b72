"""The value model: what every served MBean attribute reads at time t, a pure function of
(shape, script, seed, t).

Steady state: the quorum commits ~4 metadata records a second and every node applies them within a
second; idle ratios and queue lengths wobble smoothly around plausible levels. Scenarios change the
few values ctlplane's health model (ctlplane/exporter/health/) derives its verdicts from.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from ctlplane.demo.scenarios import Scenario, ScenarioChange, Segment, segments, time_in
from ctlplane.demo.served import (
    HISTOGRAM_ATTRIBUTES,
    METER_ATTRIBUTES,
    SIMULATED_COLLECTORS,
    SIMULATED_FEATURE_LEVELS,
    ServedMBean,
    served_mbeans,
)
from ctlplane.demo.shapes import ClusterSpec, NodeSpec
from ctlplane.exporter.catalog import Kind, MetricSpec, Mode

Value = int | float | str
NodeValues = dict[str, dict[str, Value]]  # object name -> attribute -> value

COMMIT_RATE = 4.0  # metadata records committed per second (no-op records every 500 ms, plus changes)
STALE_LAG_PHASE = 5.0  # stale-metadata: seconds applying at half speed before the broker freezes
BACKLOG_QUEUE = 17  # control-plane-backlog: requests queued, of a capacity of 20
# RPCs per second each node receives in steady state
RPC_RATES = {
    "LeaderAndIsr": 0.05,
    "UpdateMetadata": 0.1,
    "StopReplica": 0.01,
    "ControlledShutdown": 0.001,
    "AlterPartition": 0.2,
    "BrokerHeartbeat": 1.5,
    "BrokerRegistration": 0.001,
}
# BrokerState and ControllerState are Byte gauges in Kafka (jmxquery cannot read them; JPype can).
BYTE_SERIES = frozenset({"kafka_broker_state", "kafka_controller_state"})
SIMULATED_SERIES = "ctlplane_simulated_info"  # served only once the catalogue has a row for it


@dataclass(frozen=True)
class Meter:
    count: int
    rate: float


@dataclass(frozen=True)
class Histogram:
    count: int
    mean: float


def wobble(seed: int, key: str, t: float) -> float:
    """A smooth, deterministic wiggle in [-1, 1] with its own phase and period for every key."""
    digest = zlib.crc32(f"{seed}/{key}".encode())
    phase = digest / 2**32 * 2 * math.pi
    period = 20.0 + digest % 41
    return math.sin(2 * math.pi * t / period + phase)


def _around(seed: int, key: str, t: float, level: float, spread: float, low: float = 0.0, high: float = 1.0) -> float:
    return min(high, max(low, level + spread * wobble(seed, key, t)))


def _small_int(seed: int, key: str, t: float, top: int) -> int:
    return round(top * (wobble(seed, key, t) + 1) / 2)


@dataclass(frozen=True)
class ClusterMoment:
    """Everything about a cluster at one instant that its nodes' values depend on."""

    cluster: ClusterSpec
    history: tuple[Segment, ...]
    seed: int
    origin: float
    t: float

    @cached_property
    def now(self) -> Segment:
        return self.history[-1]

    @cached_property
    def elapsed(self) -> float:
        """Seconds since the current scenario started."""
        return self.t - self.now.start

    def targets(self, scenario: Scenario, node: NodeSpec) -> bool:
        return self.now.scenario is scenario and self.now.target == node.name

    @cached_property
    def target_id(self) -> str | None:
        target = self.cluster.node(self.now.target or "")
        return None if target is None else str(target.node_id)

    @cached_property
    def fenced(self) -> int:
        return 1 if self.now.scenario is Scenario.FENCED_BROKER else 0

    def committed(self) -> int:
        return self._committed

    @cached_property
    def _committed(self) -> int:
        """The quorum's committed offset: it advances except while no controller leads."""
        leaderless = time_in(self.history, Scenario.NO_ACTIVE_CONTROLLER)
        return 1000 + self.seed % 500 + math.floor(COMMIT_RATE * (self.t - self.origin - leaderless))

    def key(self, node: NodeSpec, what: str) -> str:
        return f"{self.cluster.name}/{node.name}/{what}"


def _is_leader(m: ClusterMoment, node: NodeSpec) -> bool:
    return m.now.leader is not None and m.now.leader.name == node.name


def _claims(m: ClusterMoment, node: NodeSpec) -> bool:
    return _is_leader(m, node) or (m.now.stale_leader is not None and m.now.stale_leader.name == node.name)


def _applied_lag(m: ClusterMoment, node: NodeSpec) -> tuple[int, float]:
    """(last applied offset, seconds since that record was appended) of a broker or controller."""
    committed = m.committed()
    if m.targets(Scenario.STALE_METADATA, node):
        # applying at half speed for a while, then not at all: the lag grows, then the offset freezes
        behind = min(m.elapsed, STALE_LAG_PHASE) / 2 + max(0.0, m.elapsed - STALE_LAG_PHASE)
        return committed - math.floor(behind * COMMIT_RATE), behind
    if m.now.stale_leader is not None and m.now.stale_leader.name == node.name:
        behind = m.elapsed  # the deposed leader stopped learning new records
        return committed - math.floor(behind * COMMIT_RATE), behind
    if _is_leader(m, node):
        return committed, _around(m.seed, m.key(node, "lag"), m.t, 0.02, 0.02, 0.0, 1.0)
    behind_records = _small_int(m.seed, m.key(node, "behind"), m.t, 2)
    return committed - behind_records, behind_records / COMMIT_RATE + 0.05


def _histogram(m: ClusterMoment, node: NodeSpec, what: str, rate: float, mean_ms: float) -> Histogram:
    count = math.floor(rate * (m.t - m.origin)) + 10
    return Histogram(count, _around(m.seed, m.key(node, what), m.t, mean_ms, mean_ms * 0.3, 0.0, math.inf))


def _meter(m: ClusterMoment, node: NodeSpec, what: str, rate: float) -> Meter:
    return Meter(math.floor(rate * (m.t - m.origin)), rate)


def _idle(m: ClusterMoment, node: NodeSpec, what: str, level: float, spread: float) -> float:
    return _around(m.seed, m.key(node, what), m.t, level, spread)


def _registration_fenced(m: ClusterMoment, broker_id: str) -> bool:
    return m.now.scenario is Scenario.FENCED_BROKER and m.target_id == broker_id


def _zk_channel_queue(m: ClusterMoment, broker_id: str) -> int:
    if m.now.scenario is Scenario.STALE_METADATA and m.target_id == broker_id:
        return min(60, 4 + math.floor(3 * m.elapsed))  # requests pile up for a broker that stopped reading
    return 0


def _series_value(
    m: ClusterMoment, node: NodeSpec, spec: MetricSpec, keys: Mapping[str, str]
) -> Value | Meter | Histogram:
    """The reading of one catalogue row on one node (a scalar, a Meter or a Histogram): from the first part of
    the value model that has a rule for its series (each answers None for the series it has none for)."""
    for part in _VALUE_PARTS:
        value = part(m, node, spec.series, keys)
        if value is not None:
            return value
    raise KeyError(f"the value model has no rule for catalogue series {spec.series}")


def _plane_value(
    m: ClusterMoment, node: NodeSpec, series: str, keys: Mapping[str, str]
) -> Value | Meter | Histogram | None:
    """The node itself and its request planes: the KIP-291 control plane beside the data plane."""
    s, t = m.seed, m.t
    backlog = m.targets(Scenario.CONTROL_PLANE_BACKLOG, node)
    match series:
        case "kafka_node_info":
            return node.version
        case "kafka_node_start_time_seconds":
            return float(math.floor(m.origin * 1000))  # milliseconds, as RuntimeMXBean.getStartTime
        case "kafka_jvm_gc_collection_seconds_total":
            # milliseconds, as GarbageCollectorMXBean.getCollectionTime: a young collection's few ms now and then
            share = SIMULATED_COLLECTORS[keys["name"]]
            return float(math.floor(share * 1000 * (t - m.origin)))
        case "ctlplane_simulated_info":
            return m.now.scenario.value
        case "kafka_control_plane_request_queue_size":
            return BACKLOG_QUEUE + _small_int(s, m.key(node, "cpq"), t, 3) if backlog else 0
        case "kafka_control_plane_response_queue_size":
            return 2 + _small_int(s, m.key(node, "cpr"), t, 3) if backlog else 0
        case "kafka_control_plane_network_processor_idle_ratio":
            return _idle(m, node, "cpnet", 0.3, 0.1) if backlog else _idle(m, node, "cpnet", 0.97, 0.02)
        case "kafka_control_plane_request_handler_idle_ratio":
            idle = _idle(m, node, "cph", 0.02, 0.015) if backlog else _idle(m, node, "cph", 0.96, 0.03)
            return Meter(math.floor(0.9e9 * (t - m.origin)), idle)
        case "kafka_control_plane_expired_connections_killed_total":
            return float(math.floor(time_in(m.history, Scenario.EXPIRED_CONTROL_PLANE_CONNECTIONS, target=node.name)))
        case "kafka_request_queue_size":
            return _small_int(s, m.key(node, "rq"), t, 2)
        case "kafka_response_queue_size":
            return _small_int(s, m.key(node, "rsq"), t, 1)
        case "kafka_network_processor_idle_ratio":
            return _idle(m, node, "net", 0.85, 0.08)
        case "kafka_request_handler_idle_ratio":
            return Meter(math.floor(0.85e9 * (t - m.origin)), _idle(m, node, "rh", 0.9, 0.06))
        case "kafka_expired_connections_killed_total":
            return 0.0
        case "kafka_request_queue_time_seconds":
            return _histogram(m, node, f"rqt/{keys['request']}", RPC_RATES[keys["request"]], 800.0 if backlog else 0.1)
        case "kafka_request_total_time_seconds":
            return _histogram(m, node, f"rtt/{keys['request']}", RPC_RATES[keys["request"]], 1200.0 if backlog else 2.0)
        case "kafka_requests_total":
            return _meter(m, node, f"rps/{keys['request']}", RPC_RATES[keys["request"]])
        case _:
            return None


def _controller_value(
    m: ClusterMoment, node: NodeSpec, series: str, keys: Mapping[str, str]
) -> Value | Meter | Histogram | None:
    """The controller: its claim, partitions and topics, its event queue, ZooKeeper mode's channel."""
    s, t = m.seed, m.t
    leader = _claims(m, node)
    zk = node.mode is Mode.ZOOKEEPER
    event_backlog = m.now.scenario is Scenario.CONTROLLER_EVENT_QUEUE_BACKLOG and _is_leader(m, node)
    topics = 20 + s % 10
    match series:
        case "kafka_controller_active":
            return 1 if leader else 0
        case "kafka_controller_offline_partitions":
            return 0
        case "kafka_controller_global_partitions":
            return topics * 6 if leader or not zk else 0
        case "kafka_controller_global_topics":
            return topics if leader or not zk else 0
        case "kafka_controller_state":
            return 2 if event_backlog else 0  # 2 BrokerChange: a long-running event; 0 Idle
        case "kafka_controller_event_queue_size":
            if event_backlog:
                return min(400, 40 + math.floor(10 * m.elapsed))
            return _small_int(s, m.key(node, "eq"), t, 1) if leader else 0
        case "kafka_controller_event_queue_time_seconds":
            return _histogram(m, node, "eqt", 2.0, 2500.0 if event_backlog else 0.4)
        case "kafka_controller_event_queue_processing_time_seconds":
            return _histogram(m, node, "eqp", 2.0, 800.0 if event_backlog else 1.5)
        case "kafka_controller_channel_total_queue_size":
            return sum(_zk_channel_queue(m, str(b.node_id)) for b in m.cluster.brokers) if leader else 0
        case "kafka_controller_channel_queue_size":
            return _zk_channel_queue(m, keys["broker-id"]) if leader else 0
        case "kafka_controller_channel_queue_time_seconds":
            # Kafka keeps sum / count exactly (Yammer Histogram), so the mean stays put; a broker that stopped
            # reading gets no request sent: its count stops while its queue grows
            stuck = m.now.scenario is Scenario.STALE_METADATA and m.target_id == keys["broker-id"]
            sent_until = m.t - m.elapsed if stuck else m.t
            return Histogram(math.floor(2.0 * max(0.0, sent_until - m.origin)) + 10, 1.0)
        case "kafka_controller_unclean_leader_elections_total":
            return Meter(0, 0.0)
        case "kafka_controller_event_manager_idle_ratio":
            return _idle(m, node, "cem", 0.02, 0.01) if event_backlog else _idle(m, node, "cem", 0.9, 0.05)
        case _:
            return None


def _registration_value(
    m: ClusterMoment, node: NodeSpec, series: str, keys: Mapping[str, str]
) -> Value | Meter | Histogram | None:
    """Registrations and the metadata log as the controllers keep them."""
    s, t = m.seed, m.t
    leader = _claims(m, node)
    zk = node.mode is Mode.ZOOKEEPER
    match series:
        case "kafka_zookeeper_session_state":
            return "CONNECTED"
        case "kafka_controller_fenced_brokers":
            return m.fenced
        case "kafka_controller_active_brokers":
            return len(m.cluster.brokers) - m.fenced if leader or not zk else 0
        case "kafka_controller_broker_registration_state":
            return 10 if _registration_fenced(m, keys["broker"]) else 30
        case "kafka_controller_broker_heartbeat_age_seconds":
            # ms since the broker's last heartbeat (sent every 2 s); a fenced broker's stopped 9 s
            # (broker.session.timeout.ms) before it was fenced. Served on every controller, like
            # BrokerRegistrationState, although Kafka registers it only on the active one.
            if _registration_fenced(m, keys["broker"]):
                return round(9000 + 1000 * m.elapsed)
            return _small_int(s, m.key(node, f"hb/{keys['broker']}"), t, 2000)
        case "kafka_controller_controlled_shutdown_brokers":
            return 0
        case "kafka_controller_last_applied_record_offset":
            return _applied_lag(m, node)[0]
        case "kafka_controller_last_committed_record_offset":
            # a deposed leader still claiming knows only what was committed before it was cut off
            return _applied_lag(m, node)[0] if m.now.stale_leader == node else m.committed()
        case "kafka_controller_last_applied_record_timestamp_seconds":
            return round((t - _applied_lag(m, node)[1]) * 1000)
        case "kafka_controller_last_applied_record_lag_seconds":
            return round(_applied_lag(m, node)[1] * 1000)
        case "kafka_controller_metadata_errors_total":
            return 0
        case "kafka_controller_new_active_controllers_total":
            return m.now.elections
        case "kafka_controller_timed_out_broker_heartbeats_total":
            # KIP-938 counts heartbeats that timed out in the controller's queue; a fencing after the
            # session expires leaves it unchanged (seen on Kafka 4.3.1).
            return math.floor(0.5 * time_in(m.history, Scenario.HEARTBEAT_TIMEOUTS, leader=node.name))
        case "kafka_controller_event_queue_operations_timed_out_total":
            return math.floor(0.5 * time_in(m.history, Scenario.CONTROLLER_EVENT_QUEUE_BACKLOG, leader=node.name))
        case "kafka_controller_zk_migration_state":
            return 4  # ZK: a ZooKeeper-mode cluster with no migration
        case "kafka_metadata_current_controller_id":
            return m.now.leader.node_id if m.now.leader is not None else -1
        case _:
            return None


def _broker_value(
    m: ClusterMoment, node: NodeSpec, series: str, keys: Mapping[str, str]
) -> Value | Meter | Histogram | None:
    """A broker's own state, leaderships and applied metadata."""
    t = m.t
    match series:
        case "kafka_broker_state":
            return 3  # RUNNING; a fenced KRaft broker keeps RUNNING (the controller knows better)
        case "kafka_broker_leader_partitions":
            # a fenced broker's leaderships move to other replicas (ReplicationControlManager.handleBrokerFenced)
            return 0 if _registration_fenced(m, str(node.node_id)) else 12
        case "kafka_broker_under_min_isr_partitions" | "kafka_broker_at_min_isr_partitions":
            # the simulated partitions keep an in-sync replica to spare (RF 3, min.insync.replicas 2) and no
            # scenario moves a replica out of sync: every broker reads safe to restart where nothing else blocks
            return 0
        case "kafka_broker_last_applied_record_offset":
            return float(_applied_lag(m, node)[0])
        case "kafka_broker_last_applied_record_timestamp_seconds":
            return float(round((t - _applied_lag(m, node)[1]) * 1000))
        case "kafka_broker_last_applied_record_lag_seconds":
            return float(round(_applied_lag(m, node)[1] * 1000))
        case "kafka_broker_metadata_load_errors_total" | "kafka_broker_metadata_apply_errors_total":
            return 0.0
        case _:
            return None


def _quorum_value(
    m: ClusterMoment, node: NodeSpec, series: str, keys: Mapping[str, str]
) -> Value | Meter | Histogram | None:
    """The raft quorum, metadata snapshots and features, ZooKeeper sessions."""
    s, t = m.seed, m.t
    topics = 20 + s % 10
    match series:
        case "kafka_raft_state":
            return _raft_state(m, node)
        case "kafka_raft_current_leader":
            if m.now.stale_leader is not None and m.now.stale_leader.name == node.name:
                return float(node.node_id)
            return float(m.now.leader.node_id) if m.now.leader is not None else -1.0
        case "kafka_raft_current_epoch":
            stale = m.now.stale_leader is not None and m.now.stale_leader.name == node.name
            return float(m.now.epoch - 1 if stale else m.now.epoch)
        case "kafka_raft_high_watermark":
            return float(_applied_lag(m, node)[0] + 1)
        case "kafka_raft_log_end_offset":
            return float(_applied_lag(m, node)[0] + 1)
        case "kafka_raft_commit_latency_seconds":
            if node not in m.cluster.controllers:
                return math.nan  # observers never commit
            return _around(s, m.key(node, "commit"), t, 4.0, 2.0, 0.5, math.inf)
        case "kafka_metadata_snapshot_age_seconds":
            # a snapshot per metadata.log.max.snapshot.interval.ms (1 h) on each node, offset per node
            return round(((t - m.origin + 97 * (node.node_id or 0)) % 3600.0) * 1000)
        case "kafka_metadata_snapshot_bytes":
            return 48_000 + 300 * topics
        case "kafka_metadata_version_level":
            return SIMULATED_FEATURE_LEVELS["metadataVersion"]
        case "kafka_metadata_snapshot_loads_total":
            return 0
        case "kafka_metadata_loader_idle_ratio":
            return _idle(m, node, "mli", 0.97, 0.01)
        case "kafka_metadata_feature_level":
            return SIMULATED_FEATURE_LEVELS[keys["featureName"]]
        case "kafka_controller_elr_elections_total" | "kafka_controller_controlled_shutdowns_total":
            return Meter(0, 0.0)  # no scenario stops a broker
        case "kafka_broker_offline_log_directories":
            return 0
        case "kafka_raft_voters":
            return float(len(m.cluster.controllers))  # a static quorum: its controllers are its voters
        case "kafka_raft_observers":
            # Kafka registers it on the leader only; the simulator serves every controller, 0 off the leader
            return float(len(m.cluster.brokers)) if _is_leader(m, node) else 0.0
        case "kafka_raft_uncommitted_voter_change":
            return 0.0
        case "kafka_controller_ignored_static_voters" | "kafka_broker_ignored_static_voters":
            return 0  # controller.quorum.voters set and used
        case "kafka_zookeeper_expires_total" | "kafka_zookeeper_disconnects_total":
            return Meter(0, 0.0)
        case _:
            return None


_VALUE_PARTS = (_plane_value, _controller_value, _registration_value, _broker_value, _quorum_value)


def _raft_state(m: ClusterMoment, node: NodeSpec) -> str:
    if node not in m.cluster.controllers:
        return "observer"
    if _claims(m, node):
        return "leader"
    if m.now.leader is None:
        # a vote is under way: the next controller in line is a candidate, the others voted for it
        controllers = m.cluster.controllers
        return "candidate" if controllers[m.now.epoch % len(controllers)] == node else "voted"
    return "follower"


def _attributes(kind: Kind, spec: MetricSpec, value: Value | Meter | Histogram) -> dict[str, Value]:
    if isinstance(value, Meter):
        rates = {name: value.rate for name in METER_ATTRIBUTES if name != "Count"}
        return {"Count": value.count, **rates}
    if isinstance(value, Histogram):
        mean = value.mean
        shape = {
            "Min": 0.2,
            "Max": 6.0,
            "Mean": 1.0,
            "StdDev": 0.8,
            "50thPercentile": 0.8,
            "75thPercentile": 1.2,
            "95thPercentile": 2.2,
            "98thPercentile": 2.8,
            "99thPercentile": 3.2,
            "999thPercentile": 5.0,
        }
        return {"Count": value.count, **{name: mean * shape[name] for name in HISTOGRAM_ATTRIBUTES if name != "Count"}}
    return {spec.attribute: value}


def moment_at(
    cluster: ClusterSpec, script: Sequence[ScenarioChange], *, seed: int, origin: float, t: float
) -> ClusterMoment:
    return ClusterMoment(cluster, tuple(segments(cluster, script, seed, origin, t)), seed, origin, t)


def node_values(m: ClusterMoment, node: NodeSpec, served: Sequence[ServedMBean]) -> NodeValues:
    values: NodeValues = {}
    for mbean in served:
        attributes: dict[str, Value] = {}
        keys = dict(mbean.keys)
        for spec in mbean.specs:
            attributes.update(_attributes(mbean.kind, spec, _series_value(m, node, spec, keys)))
        values[mbean.object_name] = attributes
    return values


def cluster_values(
    cluster: ClusterSpec,
    script: Sequence[ScenarioChange],
    *,
    seed: int,
    origin: float,
    t: float,
    served: Mapping[str, Sequence[ServedMBean]] | None = None,
) -> dict[str, NodeValues]:
    """Every node's MBean attribute values at unix time `t`; the same for the same arguments."""
    moment = moment_at(cluster, script, seed=seed, origin=origin, t=t)
    served = served if served is not None else {n.name: served_mbeans(n, cluster) for n in cluster.nodes}
    return {node.name: node_values(moment, node, served[node.name]) for node in cluster.nodes}
