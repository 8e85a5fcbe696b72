"""THE metric catalogue: every Kafka MBean attribute ctlplane reads, and the series it becomes.

One row per series. The scraper reads exactly these MBeans (nothing is discovered by regex), the
families render exactly these series, and docs/series.md's table, the alert rules, the Grafana panels and
the simulator are checked against this table by tests. Names and releases come from
shared/reference/kafka-mbeans.md and were confirmed against real 3.9 and 4.x brokers.

Conventions: base units (ms -> seconds through ``scale``), ``_total`` for counters, ``_ratio`` for
0..1 fractions. Kafka's "*Percent" idle metrics are already fractions in 0..1, so they keep scale 1.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType


class Kind(StrEnum):
    """How Kafka exposes the value, which decides the JMX attributes we read."""

    GAUGE = "gauge"  # Yammer Gauge: attribute Value
    METER = "meter"  # Yammer Meter: Count, OneMinuteRate, ...
    HISTOGRAM = "histogram"  # Yammer Histogram/Timer: Count, Mean, percentiles
    KAFKA_METRIC = "kafka-metric"  # org.apache.kafka.common.metrics: one attribute per metric, no name= key


class SeriesType(StrEnum):
    GAUGE = "gauge"
    COUNTER = "counter"
    SUMMARY = "summary"  # count, sum and 0.5/0.99 quantiles of a Yammer histogram
    STATE = "state"  # a string attribute: one series labelled with the string, value 1
    INFO = "info"  # string attributes become labels of a `_info` series


class Mode(StrEnum):
    ZOOKEEPER = "zookeeper"
    KRAFT = "kraft"
    MIGRATION = "migration"


class Role(StrEnum):
    BROKER = "broker"
    CONTROLLER = "controller"
    COMBINED = "combined"  # KRaft process.roles=broker,controller
    UNKNOWN = "unknown"  # never read yet


ZK = frozenset({Mode.ZOOKEEPER})
KRAFT = frozenset({Mode.KRAFT, Mode.MIGRATION})
ALL_MODES = frozenset(Mode)
BROKER = frozenset({Role.BROKER, Role.COMBINED})
CONTROLLER = frozenset({Role.CONTROLLER, Role.COMBINED})
ANY_ROLE = frozenset({Role.BROKER, Role.CONTROLLER, Role.COMBINED})

# Histogram attributes read for a SUMMARY series, and the quantile each percentile becomes.
HISTOGRAM_ATTRIBUTES = ("Count", "Mean", "50thPercentile", "99thPercentile")
HISTOGRAM_QUANTILES = (("0.5", "50thPercentile"), ("0.99", "99thPercentile"))

# Control-plane RPCs whose request metrics we keep (the rest of RequestMetrics is data plane).
CONTROL_RPCS = frozenset(
    {
        "LeaderAndIsr",  # ZK controller -> broker, until 3.9
        "UpdateMetadata",  # ZK controller -> broker, until 3.9
        "StopReplica",  # ZK controller -> broker, until 3.9
        "ControlledShutdown",
        "AlterPartition",  # broker -> controller, 3.2+
        "AlterIsr",  # the same RPC before 3.2 (2.7-3.1)
        "BrokerHeartbeat",  # KRaft broker -> controller
        "BrokerRegistration",  # KRaft broker -> controller
    }
)


def _frozen(mapping: Mapping[str, str] | None = None) -> Mapping[str, str]:
    return MappingProxyType(dict(mapping or {}))


def release_tuple(version: str) -> tuple[int, ...]:
    """(3, 6, 2) of "3.6.2"; (3, 6) of a line "3.6"."""
    return tuple(int(part) for part in version.split(".") if part.isdigit())


@dataclass(frozen=True)
class MetricSpec:
    """One series and the MBean attribute it is read from."""

    series: str
    mbean: str  # an ObjectName; a `*` value (e.g. `broker-id=*`) matches every registered value
    attribute: str  # the JMX attribute; for SUMMARY the Yammer histogram attributes are implied
    kind: Kind
    type: SeriesType
    help: str
    modes: frozenset[Mode]
    roles: frozenset[Role]
    since: str
    until: str | None = None  # last release that has it
    # First release whose KRaft nodes register it, where later than `since` (a ZooKeeper-mode MBean that
    # KRaft controllers took up later: UncleanLeaderElectionsPerSec, ControllerMetadataMetrics in 3.9).
    kraft_since: str | None = None
    scale: float = 1.0  # multiply to reach base units (ms -> s is 0.001)
    # Values outside are clamped to them. Every `_ratio` is a 0-1 fraction, and Kafka's idle meters
    # overshoot 1: KafkaRequestHandler.run marks a handler's idle time (idleTime / totalHandlerThreads on
    # one Yammer Meter) only when its receiveRequest(300) returns, so up to 300 ms of waiting is credited
    # at once to the tick it ends in, and the one-minute rate of a mostly idle pool reads above 1
    # (1.023 seen on Kafka 4.3.1). Served raw, it is not a fraction and breaks `1 - ratio` busy maths.
    bounds: tuple[float, float] | None = None
    labels: Mapping[str, str] = field(default_factory=_frozen)  # ObjectName key -> label name
    only: Mapping[str, frozenset[str]] = field(default_factory=lambda: MappingProxyType({}))
    # Present only when `control.plane.listener.name` is set; other brokers expose NaN/0 (KIP-291).
    needs_control_plane_listener: bool = False
    # Registered at run time as the controller's state moves, so the JMX client re-asks for it within a
    # round instead of trusting a minute-old "not here": ZooKeeper mode's per-broker queues, by whichever
    # broker wins an election, when it wins (ControllerChannelManager.addNewBroker on onControllerFailover;
    # seen on 2.8.2 after a failover); KRaft's per-broker heartbeat gauge, by the node that becomes the
    # active controller (ClusterControlManager.activate, 4.1+; seen on 4.1.1 after a failover), and the
    # per-broker registration state, when a broker registers (ControllerMetadataMetricsPublisher).
    follows_controller: bool = False
    # Registered once for the JVM's life (by the platform before Kafka starts, or by Kafka at the end of its
    # start-up and never removed): once a client has found its MBeans it need not look them up again on that
    # connection (a restart is a new connection). Found nothing, it looks again as for any other.
    registered_once: bool = False
    # Read on the slow tier: once per scrape.slow_interval_seconds, not every round, the last values served
    # between reads with the time they were read (docs/configuration.md "Scrape tiers"). For what no page
    # waits on and what changes slowly by nature: RequestMetrics' histograms are biased (RequestMetrics.java
    # `metricsGroup.newHistogram(TOTAL_TIME_MS, true, tags)`), i.e. Yammer 2.2's ExponentiallyDecayingSample
    # whose percentiles weigh the last ~5 minutes, and the one rule reading them rates over 10 minutes.
    slow: bool = False

    def registered_in(self, mode: Mode, version: str) -> bool:
        """Whether a node of `mode` on Kafka `version` ("3.6.2", or a line "3.6") registers the MBean, by the
        row's release range; `until` names a release line (3.9 covers 3.9.x)."""
        since = self.kraft_since if self.kraft_since and mode is not Mode.ZOOKEEPER else self.since
        current = release_tuple(version)
        if current[: len(release_tuple(since))] < release_tuple(since):
            return False
        return self.until is None or current[: len(release_tuple(self.until))] <= release_tuple(self.until)

    @property
    def attributes(self) -> tuple[str, ...]:
        if self.type is SeriesType.SUMMARY:
            return HISTOGRAM_ATTRIBUTES
        return (self.attribute,)

    @property
    def value_label(self) -> str:
        """The label that carries a STATE or INFO string value."""
        if self.type is SeriesType.STATE:
            return "state"
        return self.attribute.lower().replace("-", "_")

    @property
    def help_text(self) -> str:
        return f"{self.help} (JMX {self.mbean} {self.attribute})"


def _spec(
    series: str,
    mbean: str,
    attribute: str,
    kind: Kind,
    type_: SeriesType,
    help_: str,
    *,
    modes: frozenset[Mode],
    roles: frozenset[Role],
    since: str,
    until: str | None = None,
    kraft_since: str | None = None,
    scale: float = 1.0,
    labels: Mapping[str, str] | None = None,
    only: Mapping[str, frozenset[str]] | None = None,
    needs_listener: bool = False,
    follows_controller: bool = False,
    registered_once: bool = False,
    slow: bool = False,
) -> MetricSpec:
    return MetricSpec(
        series=series,
        mbean=mbean,
        attribute=attribute,
        kind=kind,
        type=type_,
        help=help_,
        modes=modes,
        roles=roles,
        since=since,
        until=until,
        kraft_since=kraft_since,
        scale=scale,
        bounds=(0.0, 1.0) if series.endswith("_ratio") else None,
        labels=_frozen(labels),
        only=MappingProxyType(dict(only or {})),
        needs_control_plane_listener=needs_listener,
        follows_controller=follows_controller,
        registered_once=registered_once,
        slow=slow,
    )


G, M, H, K = Kind.GAUGE, Kind.METER, Kind.HISTOGRAM, Kind.KAFKA_METRIC
GAUGE, COUNTER, SUMMARY, STATE, INFO = (
    SeriesType.GAUGE,
    SeriesType.COUNTER,
    SeriesType.SUMMARY,
    SeriesType.STATE,
    SeriesType.INFO,
)
MS = 0.001
RPC = {"request": "request"}

CATALOG: tuple[MetricSpec, ...] = (
    # --- node identity ------------------------------------------------------------------------
    # AppInfoParser registers an AppInfoMBean (attributes Version, CommitId, StartTimeMs) keyed by the
    # node id; the `type=app-info` MBean without id is a metrics group with lower-case attributes. Once a
    # JVM: at the end of KafkaServer.startup / in KafkaRaftServer.startup, removed only by their shutdown.
    _spec("kafka_node_info", "kafka.server:type=app-info,id=*", "Version", G, INFO,
          "Kafka release of the node; node_id is broker.id / node.id",
          modes=ALL_MODES, roles=ANY_ROLE, since="0.10", labels={"id": "node_id"}, registered_once=True),
    # The JVM's own start (RuntimeMXBean, registered by the platform before Kafka starts): a restart is a new
    # value, and discovery needs it to tell a controller's metric removed from one lost with its JVM.
    _spec("kafka_node_start_time_seconds", "java.lang:type=Runtime", "StartTime", G, GAUGE,
          "Unix time the node's JVM started (java.lang:type=Runtime StartTime)",
          modes=ALL_MODES, roles=ANY_ROLE, since="0.10", scale=MS),
    # The JVM's collectors (GarbageCollectorMXBean, one MBean per collector, registered by the platform): time
    # spent collecting, read every round (two or three MBeans in one query) so that a pause long enough to
    # stop a broker's heartbeats shows as a jump between two reads (health/gc.py, the `long_gc_pause` cause).
    # Kafka runs G1 (kafka-run-class.sh: -XX:+UseG1GC): "G1 Young Generation" and "G1 Old Generation" are
    # stop-the-world pauses; ZGC's and Shenandoah's "... Cycles" collectors count concurrent time instead.
    _spec("kafka_jvm_gc_collection_seconds_total", "java.lang:type=GarbageCollector,name=*", "CollectionTime", G,
          COUNTER, "Time the node's JVM spent in this collector since it started (collector: the MBean's name)",
          modes=ALL_MODES, roles=ANY_ROLE, since="0.10", scale=MS, labels={"name": "collector"},
          registered_once=True),
    # `ctlplane demo` serves this from its simulated nodes so nothing simulated passes for a real cluster.
    _spec("ctlplane_simulated_info", "ctlplane.demo:type=Simulator", "Scenario", G, INFO,
          "Present only on simulated nodes (ctlplane demo); the label is the running scenario",
          modes=ALL_MODES, roles=ANY_ROLE, since="0.10"),
    # --- KIP-291: the control-plane listener (ZooKeeper mode 2.2-3.9) ---------------------------
    _spec("kafka_control_plane_request_queue_size",
          "kafka.network:type=RequestChannel,name=ControlPlaneRequestQueueSize", "Value", G, GAUGE,
          "Requests waiting in the control-plane request queue (capacity 20)",
          modes=ZK, roles=BROKER, since="2.2", until="3.9", needs_listener=True),
    _spec("kafka_control_plane_response_queue_size",
          "kafka.network:type=RequestChannel,name=ControlPlaneResponseQueueSize", "Value", G, GAUGE,
          "Responses waiting in the control-plane response queues",
          modes=ZK, roles=BROKER, since="2.2", until="3.9", needs_listener=True),
    _spec("kafka_control_plane_network_processor_idle_ratio",
          "kafka.network:type=SocketServer,name=ControlPlaneNetworkProcessorAvgIdlePercent", "Value", G,
          GAUGE, "Fraction of time the control-plane network thread is idle",
          modes=ZK, roles=BROKER, since="2.2", until="3.9", needs_listener=True),
    _spec("kafka_control_plane_request_handler_idle_ratio",
          "kafka.server:type=KafkaRequestHandlerPool,name=ControlPlaneRequestHandlerAvgIdlePercent",
          "OneMinuteRate", M, GAUGE,
          "Fraction of time the control-plane request handler thread is idle, one-minute rate",
          modes=ZK, roles=BROKER, since="2.2", until="3.9", needs_listener=True),
    _spec("kafka_control_plane_expired_connections_killed_total",
          "kafka.network:type=SocketServer,name=ControlPlaneExpiredConnectionsKilledCount", "Value", G,
          COUNTER, "Control-plane connections closed because their re-authentication expired",
          modes=ZK, roles=BROKER, since="2.2", until="3.9", needs_listener=True),
    # --- the data-plane twins ------------------------------------------------------------------
    _spec("kafka_request_queue_size", "kafka.network:type=RequestChannel,name=RequestQueueSize", "Value",
          G, GAUGE, "Requests waiting in the data-plane request queue (on KRaft controllers: all requests)",
          modes=ALL_MODES, roles=ANY_ROLE, since="0.10"),
    _spec("kafka_response_queue_size", "kafka.network:type=RequestChannel,name=ResponseQueueSize",
          "Value", G, GAUGE, "Responses waiting in the data-plane response queues",
          modes=ALL_MODES, roles=ANY_ROLE, since="0.10"),
    _spec("kafka_network_processor_idle_ratio",
          "kafka.network:type=SocketServer,name=NetworkProcessorAvgIdlePercent", "Value", G, GAUGE,
          "Fraction of time the data-plane network threads are idle",
          modes=ALL_MODES, roles=ANY_ROLE, since="0.10"),
    _spec("kafka_request_handler_idle_ratio",
          "kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent", "OneMinuteRate",
          M, GAUGE, "Fraction of time the data-plane request handler threads are idle, one-minute rate",
          modes=ALL_MODES, roles=ANY_ROLE, since="0.10"),
    _spec("kafka_expired_connections_killed_total",
          "kafka.network:type=SocketServer,name=ExpiredConnectionsKilledCount", "Value", G, COUNTER,
          "Data-plane connections closed because their re-authentication expired",
          modes=ALL_MODES, roles=ANY_ROLE, since="2.2"),
    # --- controller ----------------------------------------------------------------------------
    _spec("kafka_controller_active", "kafka.controller:type=KafkaController,name=ActiveControllerCount",
          "Value", G, GAUGE, "1 if this node is the active controller",
          modes=ALL_MODES, roles=CONTROLLER | BROKER, since="0.10"),
    _spec("kafka_controller_offline_partitions",
          "kafka.controller:type=KafkaController,name=OfflinePartitionsCount", "Value", G, GAUGE,
          "Partitions without a leader (ZooKeeper mode: non-zero only on the active controller)",
          modes=ALL_MODES, roles=CONTROLLER | BROKER, since="0.10"),
    _spec("kafka_controller_global_partitions",
          "kafka.controller:type=KafkaController,name=GlobalPartitionCount", "Value", G, GAUGE,
          "Partitions in the cluster as the controller sees them",
          modes=ALL_MODES, roles=CONTROLLER | BROKER, since="1.0"),
    _spec("kafka_controller_global_topics", "kafka.controller:type=KafkaController,name=GlobalTopicCount",
          "Value", G, GAUGE, "Topics in the cluster as the controller sees them",
          modes=ALL_MODES, roles=CONTROLLER | BROKER, since="1.0"),
    _spec("kafka_controller_state", "kafka.controller:type=KafkaController,name=ControllerState", "Value",
          G, GAUGE, "ZooKeeper controller state machine value (0 Idle ... see ControllerState.scala)",
          modes=ZK, roles=BROKER, since="0.11", until="3.9"),
    _spec("kafka_controller_event_queue_size",
          "kafka.controller:type=ControllerEventManager,name=EventQueueSize", "Value", G, GAUGE,
          "Events waiting in the ZooKeeper controller's event queue",
          modes=ZK, roles=BROKER, since="2.0", until="3.9"),
    _spec("kafka_controller_event_queue_time_seconds",
          "kafka.controller:type=ControllerEventManager,name=EventQueueTimeMs", "", H, SUMMARY,
          "Time controller events wait in the event queue",
          modes=ALL_MODES, roles=CONTROLLER | BROKER, since="2.0", scale=MS),
    _spec("kafka_controller_event_queue_processing_time_seconds",
          "kafka.controller:type=ControllerEventManager,name=EventQueueProcessingTimeMs", "", H, SUMMARY,
          "Time the KRaft controller takes to process an event",
          modes=KRAFT, roles=CONTROLLER, since="2.8", scale=MS),
    _spec("kafka_controller_channel_total_queue_size",
          "kafka.controller:type=ControllerChannelManager,name=TotalQueueSize", "Value", G, GAUGE,
          "Requests queued by the ZooKeeper controller for all brokers",
          modes=ZK, roles=BROKER, since="0.11", until="3.9"),
    _spec("kafka_controller_channel_queue_size",
          "kafka.controller:type=ControllerChannelManager,name=QueueSize,broker-id=*", "Value", G, GAUGE,
          "Requests queued by the ZooKeeper controller for one broker",
          modes=ZK, roles=BROKER, since="0.11", until="3.9", labels={"broker-id": "broker"},
          follows_controller=True),
    _spec("kafka_controller_channel_queue_time_seconds",
          "kafka.controller:type=ControllerChannelManager,name=RequestRateAndQueueTimeMs,broker-id=*", "", H,
          SUMMARY, "Time requests (LeaderAndIsr, UpdateMetadata, StopReplica) wait in the ZooKeeper "
          "controller's queue for one broker (KIP-237)",
          modes=ZK, roles=BROKER, since="2.0", until="3.9", scale=MS, labels={"broker-id": "broker"},
          follows_controller=True),
    _spec("kafka_controller_unclean_leader_elections_total",
          "kafka.controller:type=ControllerStats,name=UncleanLeaderElectionsPerSec", "Count", M, COUNTER,
          "Leaders elected from out-of-sync replicas (data loss); KRaft controllers from 3.9",
          modes=ALL_MODES, roles=CONTROLLER | BROKER, since="0.10", kraft_since="3.9"),
    _spec("kafka_controller_controlled_shutdowns_total",
          "kafka.controller:type=ControllerStats,name=ControlledShutdownRateAndTimeMs", "Count", M, COUNTER,
          "ControlledShutdown requests the ZooKeeper-mode controller has handled, one per attempt of a stopping "
          "broker (ControllerState.ControlledShutdown's timer, made when the controller starts)",
          modes=ZK, roles=BROKER, since="1.0", until="3.9"),
    _spec("kafka_controller_elr_elections_total",
          "kafka.controller:type=ControllerStats,name=ElectionFromEligibleLeaderReplicasPerSec", "Count", M,
          COUNTER, "Leaders elected from the eligible leader replicas after the ISR emptied (KIP-966)",
          modes=KRAFT, roles=CONTROLLER, since="4.1"),
    _spec("kafka_controller_event_manager_idle_ratio",
          "kafka.controller:type=ControllerEventManager,name=AvgIdleRatio", "Value", G, GAUGE,
          "Fraction of time the KRaft controller's event-queue thread is idle (KAFKA-19467)",
          modes=KRAFT, roles=CONTROLLER, since="4.2"),
    _spec("kafka_controller_fenced_brokers", "kafka.controller:type=KafkaController,name=FencedBrokerCount",
          "Value", G, GAUGE, "Registered brokers the controller has fenced (always 0 in ZooKeeper mode)",
          modes=ALL_MODES, roles=CONTROLLER | BROKER, since="3.1"),
    _spec("kafka_controller_active_brokers", "kafka.controller:type=KafkaController,name=ActiveBrokerCount",
          "Value", G, GAUGE, "Unfenced brokers, including those in controlled shutdown",
          modes=ALL_MODES, roles=CONTROLLER | BROKER, since="3.1"),
    _spec("kafka_controller_broker_registration_state",
          "kafka.controller:type=KafkaController,name=BrokerRegistrationState,broker=*", "Value", G, GAUGE,
          "Controller's view of a broker: -1 unregistered, 10 fenced, 20 controlled shutdown, 30 active",
          modes=KRAFT, roles=CONTROLLER, since="4.1", labels={"broker": "broker"},
          follows_controller=True),
    _spec("kafka_controller_broker_heartbeat_age_seconds",
          "kafka.controller:type=KafkaController,name=TimeSinceLastHeartbeatReceivedMs,broker=*", "Value", G,
          GAUGE, "Time since the active controller last received a heartbeat from the broker (registered by "
          "the active controller only, when it becomes active; Kafka caps it at broker.session.timeout.ms)",
          modes=KRAFT, roles=CONTROLLER, since="4.1", scale=MS, labels={"broker": "broker"},
          follows_controller=True),
    _spec("kafka_controller_controlled_shutdown_brokers",
          "kafka.controller:type=KafkaController,name=ControlledShutdownBrokerCount", "Value", G, GAUGE,
          "Brokers in controlled shutdown", modes=KRAFT, roles=CONTROLLER, since="4.1"),
    _spec("kafka_controller_last_applied_record_offset",
          "kafka.controller:type=KafkaController,name=LastAppliedRecordOffset", "Value", G, GAUGE,
          "Offset of the last metadata record this controller applied",
          modes=KRAFT, roles=CONTROLLER, since="3.3"),
    _spec("kafka_controller_last_committed_record_offset",
          "kafka.controller:type=KafkaController,name=LastCommittedRecordOffset", "Value", G, GAUGE,
          "Offset of the last metadata record committed by the quorum",
          modes=KRAFT, roles=CONTROLLER, since="3.3"),
    _spec("kafka_controller_last_applied_record_timestamp_seconds",
          "kafka.controller:type=KafkaController,name=LastAppliedRecordTimestamp", "Value", G, GAUGE,
          "Append time of the last metadata record this controller applied",
          modes=KRAFT, roles=CONTROLLER, since="3.3", scale=MS),
    _spec("kafka_controller_last_applied_record_lag_seconds",
          "kafka.controller:type=KafkaController,name=LastAppliedRecordLagMs", "Value", G, GAUGE,
          "Now minus the append time of the last applied metadata record (~0 on the active controller)",
          modes=KRAFT, roles=CONTROLLER, since="3.3", scale=MS),
    _spec("kafka_controller_metadata_errors_total",
          "kafka.controller:type=KafkaController,name=MetadataErrorCount", "Value", G, COUNTER,
          "Errors the controller hit while loading or applying metadata",
          modes=KRAFT, roles=CONTROLLER, since="3.3"),
    _spec("kafka_controller_new_active_controllers_total",
          "kafka.controller:type=KafkaController,name=NewActiveControllersCount", "Value", G, COUNTER,
          "Times this controller has seen a new active controller elected (KIP-938)",
          modes=KRAFT, roles=CONTROLLER, since="3.6"),
    _spec("kafka_controller_timed_out_broker_heartbeats_total",
          "kafka.controller:type=KafkaController,name=TimedOutBrokerHeartbeatCount", "Value", G, COUNTER,
          "Broker heartbeats that timed out on the controller (KIP-938)",
          modes=KRAFT, roles=CONTROLLER, since="3.6"),
    _spec("kafka_controller_event_queue_operations_timed_out_total",
          "kafka.controller:type=KafkaController,name=EventQueueOperationsTimedOutCount", "Value", G,
          COUNTER, "Controller event-queue operations that timed out before they ran (KIP-938)",
          modes=KRAFT, roles=CONTROLLER, since="3.6"),
    _spec("kafka_controller_zk_migration_state",
          "kafka.controller:type=KafkaController,name=ZkMigrationState", "Value", G, GAUGE,
          "0 none, 1 migration, 2 pre-migration, 3 post-migration, 4 ZooKeeper (KIP-866)",
          modes=ALL_MODES, roles=CONTROLLER | BROKER, since="3.5", until="3.9"),
    _spec("kafka_controller_migrating_zk_brokers",
          "kafka.controller:type=KafkaController,name=MigratingZkBrokerCount", "Value", G, GAUGE,
          "ZooKeeper brokers registered with the KRaft quorum for a migration, not yet KRaft brokers (KIP-866)",
          modes=KRAFT, roles=CONTROLLER, since="3.6", until="3.9"),
    _spec("kafka_controller_zk_write_behind_lag_records",
          "kafka.controller:type=KafkaController,name=ZkWriteBehindLag", "Value", G, GAUGE,
          "Metadata records the active controller has not yet written to ZooKeeper in dual write (KIP-866); "
          "only with zookeeper.metadata.migration.enable",
          modes=frozenset({Mode.MIGRATION}), roles=CONTROLLER, since="3.6", until="3.9"),
    _spec("kafka_metadata_current_controller_id",
          "kafka.server:type=MetadataLoader,name=CurrentControllerId", "Value", G, GAUGE,
          "Node id of the active controller as this node knows it, -1 if unknown (KIP-1001)",
          modes=ALL_MODES, roles=ANY_ROLE, since="3.7"),
    # the metadata image each KRaft node loads and snapshots (KIP-938, KAFKA-15183: MetadataLoaderMetrics and
    # SnapshotEmitterMetrics, 3.6.0); every node writes its own snapshots, at least every
    # metadata.log.max.snapshot.interval.ms (1 h) while records arrive, and the controller appends a NoOpRecord
    # every metadata.max.idle.interval.ms (500 ms, KIP-835), so records always arrive
    _spec("kafka_metadata_snapshot_age_seconds",
          "kafka.server:type=SnapshotEmitter,name=LatestSnapshotGeneratedAgeMs", "Value", G, GAUGE,
          "Time since this node last wrote a metadata snapshot (since it started, before its first)",
          modes=KRAFT, roles=ANY_ROLE, since="3.6", scale=MS),
    _spec("kafka_metadata_snapshot_bytes",
          "kafka.server:type=SnapshotEmitter,name=LatestSnapshotGeneratedBytes", "Value", G, GAUGE,
          "Size of the last metadata snapshot this node wrote, 0 before its first",
          modes=KRAFT, roles=ANY_ROLE, since="3.6"),
    _spec("kafka_metadata_version_level",
          "kafka.server:type=MetadataLoader,name=CurrentMetadataVersion", "Value", G, GAUGE,
          "Feature level of the metadata.version this node's image has (MetadataVersion.featureLevel)",
          modes=KRAFT, roles=ANY_ROLE, since="3.6"),
    _spec("kafka_metadata_snapshot_loads_total",
          "kafka.server:type=MetadataLoader,name=HandleLoadSnapshotCount", "Value", G, COUNTER,
          "Metadata snapshots this node loaded whole (at start, or when it fell behind the log's start)",
          modes=KRAFT, roles=ANY_ROLE, since="3.6"),
    _spec("kafka_metadata_loader_idle_ratio", "kafka.server:type=MetadataLoader,name=AvgIdleRatio", "Value", G,
          GAUGE, "Fraction of time the node's metadata loader thread is idle (low: it cannot keep up with the log)",
          modes=KRAFT, roles=ANY_ROLE, since="4.2"),
    _spec("kafka_metadata_feature_level",
          "kafka.server:type=MetadataLoader,name=FinalizedLevel,featureName=*", "Value", G, GAUGE,
          "Finalized level of each feature (metadata.version, kraft.version, group.version, ...) in this "
          "node's image (KIP-1180)",
          modes=KRAFT, roles=ANY_ROLE, since="4.2", labels={"featureName": "feature"}),
    # --- broker lifecycle and KRaft metadata -----------------------------------------------------
    _spec("kafka_broker_offline_log_directories", "kafka.log:type=LogManager,name=OfflineLogDirectoryCount",
          "Value", G, GAUGE, "Log directories of the broker that failed (KIP-112); a KRaft node whose metadata "
          "log directory fails stops instead",
          modes=ALL_MODES, roles=BROKER, since="1.0"),
    _spec("kafka_broker_state", "kafka.server:type=KafkaServer,name=BrokerState", "Value", G, GAUGE,
          "BrokerState: 0 not running, 1 starting, 2 recovery, 3 running, 6 pending controlled "
          "shutdown, 7 shutting down (stays 3 after the controller fences a running KRaft broker)",
          modes=ALL_MODES, roles=BROKER, since="0.10"),
    # What a clean stop would leave: Kafka flags a KRaft broker's controlled shutdown only while it leads
    # partitions (BrokerHeartbeatManager.calculateNextBrokerState: no leaderships -> SHUTDOWN_NOW, fenced
    # like a crash), so ctlplane/exporter/health/ reads the last count a vanished broker reported.
    _spec("kafka_broker_leader_partitions", "kafka.server:type=ReplicaManager,name=LeaderCount", "Value", G,
          GAUGE, "Partitions this broker leads (ReplicaManager LeaderCount)",
          modes=ALL_MODES, roles=BROKER, since="0.10"),
    # Whether a broker may be restarted now (health/restart.py): each leader counts its partitions whose ISR is
    # below, or exactly at, the topic's min.insync.replicas (Partition.isUnderMinIsr / isAtMinIsr; the latter
    # against min(min ISR, replication factor) since 3.x), so the sum over the brokers is the cluster's
    _spec("kafka_broker_under_min_isr_partitions", "kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount",
          "Value", G, GAUGE, "Partitions this broker leads whose ISR is below min.insync.replicas (KIP-164)",
          modes=ALL_MODES, roles=BROKER, since="1.0"),
    _spec("kafka_broker_at_min_isr_partitions", "kafka.server:type=ReplicaManager,name=AtMinIsrPartitionCount",
          "Value", G, GAUGE,
          "Partitions this broker leads whose ISR is exactly min.insync.replicas: one more replica lost and "
          "acks=all writes fail (KIP-427)",
          modes=ALL_MODES, roles=BROKER, since="2.3"),
    _spec("kafka_broker_last_applied_record_offset", "kafka.server:type=broker-metadata-metrics",
          "last-applied-record-offset", K, GAUGE, "Offset of the last metadata record the broker applied",
          modes=KRAFT, roles=BROKER, since="3.3"),
    _spec("kafka_broker_last_applied_record_timestamp_seconds", "kafka.server:type=broker-metadata-metrics",
          "last-applied-record-timestamp", K, GAUGE,
          "Append time of the last metadata record the broker applied",
          modes=KRAFT, roles=BROKER, since="3.3", scale=MS),
    _spec("kafka_broker_last_applied_record_lag_seconds", "kafka.server:type=broker-metadata-metrics",
          "last-applied-record-lag-ms", K, GAUGE,
          "Now minus the append time of the last metadata record the broker applied",
          modes=KRAFT, roles=BROKER, since="3.3", scale=MS),
    _spec("kafka_broker_metadata_load_errors_total", "kafka.server:type=broker-metadata-metrics",
          "metadata-load-error-count", K, COUNTER, "Errors loading metadata on the broker",
          modes=KRAFT, roles=BROKER, since="3.3"),
    _spec("kafka_broker_metadata_apply_errors_total", "kafka.server:type=broker-metadata-metrics",
          "metadata-apply-error-count", K, COUNTER, "Errors applying metadata deltas on the broker",
          modes=KRAFT, roles=BROKER, since="3.3"),
    # --- the KRaft metadata quorum (raft-metrics, on controllers and broker observers) ------------
    _spec("kafka_raft_state", "kafka.server:type=raft-metrics", "current-state", K, STATE,
          "Raft role of this node: leader, candidate, follower, unattached, observer; voted until 3.9; "
          "prospective, prospective-voted and unattached-voted from 4.0 (KIP-996)",
          modes=KRAFT, roles=ANY_ROLE, since="2.8"),
    _spec("kafka_raft_current_leader", "kafka.server:type=raft-metrics", "current-leader", K, GAUGE,
          "Node id of the quorum leader (the active controller), -1 if unknown",
          modes=KRAFT, roles=ANY_ROLE, since="2.8"),
    _spec("kafka_raft_current_epoch", "kafka.server:type=raft-metrics", "current-epoch", K, GAUGE,
          "Quorum epoch; it rises with every controller election", modes=KRAFT, roles=ANY_ROLE, since="2.8"),
    _spec("kafka_raft_high_watermark", "kafka.server:type=raft-metrics", "high-watermark", K, GAUGE,
          "Metadata log high watermark (next offset to commit), -1 if unknown",
          modes=KRAFT, roles=ANY_ROLE, since="2.8"),
    _spec("kafka_raft_log_end_offset", "kafka.server:type=raft-metrics", "log-end-offset", K, GAUGE,
          "Metadata log end offset on this node", modes=KRAFT, roles=ANY_ROLE, since="2.8"),
    _spec("kafka_raft_commit_latency_seconds", "kafka.server:type=raft-metrics", "commit-latency-avg", K,
          GAUGE, "Average time to commit a metadata batch, over the metrics window",
          modes=KRAFT, roles=ANY_ROLE, since="2.8", scale=MS),
    # the voter set of a dynamic quorum (KIP-853; in the jars from 4.0.1 on, not in 3.9.2's): every node
    # counts the voters it knows; the leader alone counts the observers it heard from in the last 5 minutes
    # (LeaderState) and says whether a voter change (add-controller, remove-controller) is not committed yet
    _spec("kafka_raft_voters", "kafka.server:type=raft-metrics", "number-of-voters", K, GAUGE,
          "Voters of the metadata quorum as this node knows the voter set",
          modes=KRAFT, roles=ANY_ROLE, since="4.0"),
    _spec("kafka_raft_observers", "kafka.server:type=raft-metrics", "number-of-observers", K, GAUGE,
          "Observers (brokers, and controllers outside the voter set) the quorum leader heard from in the last "
          "5 minutes; on the leader only",
          modes=KRAFT, roles=CONTROLLER, since="4.0"),
    _spec("kafka_raft_uncommitted_voter_change", "kafka.server:type=raft-metrics", "uncommitted-voter-change",
          K, GAUGE, "1 while a change of the voter set is appended but not committed; on the leader only",
          modes=KRAFT, roles=CONTROLLER, since="4.0"),
    _spec("kafka_controller_ignored_static_voters",
          "kafka.controller:type=KafkaController,name=IgnoredStaticVoters", "Value", G, GAUGE,
          "1 if controller.quorum.voters is set but the controller ignores it (its quorum is dynamic, "
          "kraft.version 1: the voter set is in the metadata log)",
          modes=KRAFT, roles=CONTROLLER, since="4.0"),
    _spec("kafka_broker_ignored_static_voters", "kafka.server:type=broker-metadata-metrics",
          "ignored-static-voters", K, GAUGE,
          "1 if controller.quorum.voters is set but the broker ignores it (its quorum is dynamic)",
          modes=KRAFT, roles=BROKER, since="4.0"),
    # --- ZooKeeper session of ZK-mode brokers -----------------------------------------------------
    _spec("kafka_zookeeper_expires_total",
          "kafka.server:type=SessionExpireListener,name=ZooKeeperExpiresPerSec", "Count", M, COUNTER,
          "ZooKeeper session expiries of the broker", modes=ZK, roles=BROKER, since="0.10", until="3.9"),
    _spec("kafka_zookeeper_disconnects_total",
          "kafka.server:type=SessionExpireListener,name=ZooKeeperDisconnectsPerSec", "Count", M, COUNTER,
          "ZooKeeper disconnects of the broker", modes=ZK, roles=BROKER, since="0.10", until="3.9"),
    _spec("kafka_zookeeper_session_state",
          "kafka.server:type=SessionExpireListener,name=SessionState", "Value", G, STATE,
          "State of the broker's ZooKeeper session (CONNECTED when healthy; a broker is alive only while it "
          "holds its session: KafkaZkClient.registerBroker writes an ephemeral znode)",
          modes=ZK, roles=BROKER, since="1.0", until="3.9"),
    # --- request metrics of the control-plane RPCs -----------------------------------------------
    _spec("kafka_request_queue_time_seconds",
          "kafka.network:type=RequestMetrics,name=RequestQueueTimeMs,request=*", "", H, SUMMARY,
          "Time a control-plane RPC waits in the request queue", modes=ALL_MODES, roles=ANY_ROLE,
          since="0.10", scale=MS, labels=RPC, only={"request": CONTROL_RPCS}, slow=True),
    _spec("kafka_request_total_time_seconds",
          "kafka.network:type=RequestMetrics,name=TotalTimeMs,request=*", "", H, SUMMARY,
          "Total time to serve a control-plane RPC", modes=ALL_MODES, roles=ANY_ROLE,
          since="0.10", scale=MS, labels=RPC, only={"request": CONTROL_RPCS}, slow=True),
    _spec("kafka_requests_total",
          "kafka.network:type=RequestMetrics,name=RequestsPerSec,request=*,version=*", "Count", M, COUNTER,
          "Control-plane RPCs received, all API versions", modes=ALL_MODES, roles=ANY_ROLE, since="2.0",
          labels=RPC, only={"request": CONTROL_RPCS}),
)  # fmt: skip

SPECS_BY_SERIES: Mapping[str, MetricSpec] = MappingProxyType({spec.series: spec for spec in CATALOG})

# A node's JVM start time: a new value is a new process (a restart between two reads), for the health model's
# memory (health/lifecycle.py, health/gc.py) and discovery's departures alike
START_TIME = SPECS_BY_SERIES["kafka_node_start_time_seconds"].series

# The slow tier (MetricSpec.slow), one definition for what is read and what is served as read earlier: an
# MBean pattern is read on it only if every row reading that pattern is slow (one read serves them all),
# and a series is slow exactly when its pattern is, so a series read every round is never also served old.
SLOW_MBEANS: frozenset[str] = frozenset(s.mbean for s in CATALOG if s.slow) - frozenset(
    s.mbean for s in CATALOG if not s.slow
)
SLOW_SERIES: frozenset[str] = frozenset(spec.series for spec in CATALOG if spec.mbean in SLOW_MBEANS)

# Series the exporter derives or adds itself (rendered in families.py, not read from one MBean).
DERIVED_SERIES: Mapping[str, str] = MappingProxyType(
    {
        "kafka_control_plane_listener_enabled": "1 if the broker has a dedicated control-plane listener "
        "(control.plane.listener.name, KIP-291), 0 if not; ZooKeeper-mode brokers only",
        "ctlplane_up": "1 if the node's JMX was read in the last round, or its page (too large for a round) is "
        "read at its own pace and its last one served; 0 if not",
        "ctlplane_last_read_age_seconds": "Seconds between the node's last successful read and the served snapshot "
        "(since ctlplane began watching it, before any): a node read at its own pace serves its last page",
        "ctlplane_credentials_refused": "1 if the node's JMX or metrics endpoint refused ctlplane's credentials at its "
        "last read (a JMX login refused, HTTP 401/403): ctlplane is blind to the node by its own configuration, "
        "not by a fault of the node; 0 if not",
        "ctlplane_scrape_duration_seconds": "Time the last JMX read of the node took",
        "ctlplane_scrape_errors_total": "Failed JMX reads of the node since ctlplane started",
        "ctlplane_round_duration_seconds": "Time the last scrape round of every node took",
        "ctlplane_rounds_woken_total": "Rounds started before their time because an active controller's fencing "
        "gauges changed between rounds (scrape.fencing_poll_seconds)",
        "ctlplane_snapshot_timestamp_seconds": "Unix time at which the served snapshot was taken",
        "ctlplane_snapshot_age_seconds": "Age of the served snapshot when this page was rendered",
        "ctlplane_build_info": "ctlplane's version, and the Kafka client (kafka-clients) it carries for the quorum's "
        "view and discovery",
        "ctlplane_dashboard_info": "1, with the address people open the dashboard at (dashboard.public_url): "
        "the alert rules link a page to the broker's page there",
        "ctlplane_history_write_errors_total": "History flushes that failed to write (a full or read-only disk); "
        "their rows are kept for the next flush",
        "ctlplane_history_rows_dropped_total": "History rows dropped because the buffer kept across failed "
        "flushes was full (history.max_buffered_rows)",
        "ctlplane_history_buffered_rows": "History rows waiting for the next flush",
        "ctlplane_config_last_reload_successful": "1 if the last config reload (SIGHUP, POST /-/reload) was "
        "applied, 0 if the file failed its checks and the running config stayed",
        "ctlplane_config_last_reload_success_timestamp_seconds": "Unix time of the last config applied (the "
        "start, or the last reload that passed)",
        "ctlplane_config_reload_failures_total": "Config reloads refused because the file failed its checks",
        "ctlplane_discovered_nodes": "Nodes of the cluster that discovery watches (found from the cluster's "
        "answers, the listed nodes not counted)",
        "ctlplane_discovery_forgotten_nodes_total": "Discovered nodes no longer watched on positive evidence "
        "that they left the cluster (reason: unregistered, voter_removed, clean_shutdown, moved)",
        "ctlplane_history_compaction_errors_total": "History compactions that stopped on a directory or could "
        "not start (an unreadable file, a read-only archive); the files are kept as they were",
        "ctlplane_history_last_flush_timestamp_seconds": "Unix time of the last history flush that wrote every "
        "buffered row",
    }
)


# Series computed by ctlplane/exporter/health/ from a snapshot (and a few earlier ones).
HEALTH_SERIES: Mapping[str, str] = MappingProxyType(
    {
        "kafka_cluster_mode_info": "The cluster's mode: zookeeper, kraft or migration (ZkMigrationState)",
        "kafka_cluster_migration_phase": "1 for the ZooKeeper -> KRaft migration phase the KRaft controllers "
        "report (PRE_MIGRATION, MIGRATION, POST_MIGRATION; ZkMigrationState, KIP-866), 0 for the others",
        "kafka_cluster_active_controllers": "Nodes claiming to be the active controller (ActiveControllerCount=1); "
        "healthy is exactly 1",
        "kafka_cluster_reachable_controllers": "Controller-capable nodes ctlplane could read this round",
        "kafka_controller_info": "The active controller (KRaft: the claimant with the highest raft epoch)",
        "kafka_controller_failovers_total": "Changes of the active controller's identity or epoch seen by ctlplane",
        "kafka_controller_last_failover_timestamp_seconds": "When ctlplane last saw the active controller change",
        "kafka_broker_lifecycle_state": "1 for the broker's current KIP-631 lifecycle state (INITIAL, FENCED, "
        "ACTIVE, SHUTDOWN) or UNREACHABLE, 0 for the others",
        "kafka_broker_metadata_lag_records": "KRaft: active controller's LastCommittedRecordOffset minus the "
        "broker's last-applied-record-offset, or where its JMX does not answer, the quorum leader's log end "
        "offset minus the broker's (kafka_broker_metadata_lag_source_info); ZooKeeper: requests queued for the "
        "broker by the controller",
        "kafka_broker_metadata_lag_seconds": "KRaft: now minus the append time of the broker's last applied "
        "metadata record (none before its first image), or where its JMX does not answer, the time since the "
        "quorum's leader last saw it caught up; ZooKeeper: how long the active controller's requests "
        "for the broker waited in its queue since the last round (KIP-237)",
        "kafka_broker_metadata_lag_source_info": "1 for where the broker's metadata lag figures came from: jmx (its "
        "applied offset and record time), quorum (its fetched log end offset and last caught-up time as the quorum's "
        "leader saw them, describeMetadataQuorum, where the broker's JMX did not answer and did not refuse)",
        "kafka_broker_fenced_unplanned": "1 if the broker is FENCED and no planned stop reads the same: a KRaft "
        "broker whose process runs (BrokerState RUNNING) yet is fenced, or one gone while leading partitions on a "
        "Kafka 4.1+ cluster, whose controller would have flagged its controlled shutdown, or a ZooKeeper-mode "
        "broker gone and deregistered while the same controller served no ControlledShutdown request since it was "
        "last ACTIVE; 0 otherwise (KRaft before 4.1, a KRaft broker that led nothing, a ZooKeeper-mode broker "
        "that lost its session, a controller change: a clean stop could read FENCED there too)",
        "kafka_broker_fault_cause": "1 for why a broker is not ACTIVE or not read (cause: process_gone, "
        "hung_or_isolated, cut_off_from_controller, long_gc_pause, controller_overloaded, zookeeper_session_lost, "
        "controlled_shutdown, starting, jmx_unreachable, jmx_auth_failed, unknown); absent for an ACTIVE broker "
        "with nothing wrong to name",
        "kafka_node_safe_to_restart": "1 if the node may be restarted now without losing availability: a broker "
        "when every other broker is ACTIVE and no partition is offline, below or at min.insync.replicas (the "
        "leaders' UnderMinIsr/AtMinIsrPartitionCount, the controller's OfflinePartitionsCount); a KRaft voter when "
        "the quorum keeps a caught-up majority without it; 0 otherwise",
        "kafka_node_restart_blocked": "1 for why a node may not be restarted now (reason: not_active, "
        "another_broker_not_active, isr_counts_unread, offline_partitions, under_min_isr, at_min_isr, "
        "quorum_unread, quorum_majority); absent where it may",
        "kafka_broker_metadata_stale": "1 if the broker's metadata lag is over the configured thresholds, or frozen",
        "kafka_broker_metadata_frozen": "1 if the broker's applied metadata offset has not moved for N scrapes "
        "while the quorum committed more",
        "kafka_broker_views_disagree": "1 if the quorum's own view (Admin API) decided the broker's state against "
        "what the broker's JMX said (a partition between ctlplane and the node, or a fenced broker that looks "
        "fine), 0 if they agree; clusters with the quorum's view only",
        "kafka_cluster_controller_views_disagree": "1 if the nodes whose JMX claims the active controller are not "
        "exactly the quorum's leader (a zombie controller, or its JMX unreachable); clusters with the quorum's view "
        "only",
        "kafka_controller_raft_out_of_step_seconds": "KRaft: how long the controller has been out of step with the "
        "quorum: its raft state (kafka_raft_state) outside leader and follower, or, where the quorum's view "
        "answers, a follower the leader has not seen caught up (4.0+: a voter cut off from the others cycles "
        "between follower and prospective, KIP-996); 0 in step. An election takes seconds: minutes is a "
        "controller that cannot reach the quorum's leader or win a vote",
        "kafka_quorum_voters": "KRaft: voters of the metadata quorum (describeMetadataQuorum; without it, the "
        "voters' own count, number-of-voters, or the KRaft controllers ctlplane reads whose raft state is not "
        "observer)",
        "kafka_quorum_voter_info": "KRaft: 1 for each voter of the metadata quorum, by node id and metadata "
        "directory id (describeMetadataQuorum, 3.9+ for the directory; KIP-853); node is the watched node with "
        "that id, else controller-<id>. Without the quorum's view: the controllers whose raft state is not observer",
        "kafka_controller_observer_seconds": "KRaft: how long the controller process has run outside the voter "
        "set (an observer controller: formatted with --no-initial-controllers and not yet added with "
        "kafka-metadata-quorum add-controller, or removed); 0 for a voter",
        "kafka_quorum_voters_caught_up": "KRaft: voters the quorum leader saw reach its log end within "
        "health.quorum_caught_up_seconds (the leader counted; without describeMetadataQuorum, controllers whose "
        "JMX answers with raft state leader or follower)",
        "kafka_quorum_spare_voters": "KRaft: voters caught up beyond the majority the quorum needs: how many more "
        "can fail before it cannot commit; 0 is no spare, below 0 no majority caught up",
        "kafka_cluster_fenced_brokers_unnamed": "KRaft: brokers the active controller counts fenced "
        "(FencedBrokerCount) that no kafka_broker_lifecycle_state of ctlplane shows FENCED, INITIAL or SHUTDOWN: "
        "a broker ctlplane does not watch (not listed, not discovered), or watches but cannot read",
        "kafka_cluster_reading_unknown": "1 for each judgement no source served the evidence for this round "
        "(`reading`: quorum_spare_voters, zookeeper_sessions), with the evidence it `lacks`: its alerts cannot fire, "
        "so it is unknown, never healthy",
        "kafka_control_plane_saturated": "1 if the control-plane request queue is near its capacity of 20 or its "
        "threads are nearly never idle (KIP-291)",
    }
)


# Series of the metadata quorum's own view (Admin API describeMetadataQuorum, KIP-836;
# ctlplane/exporter/sources/admin/client.py), for clusters with bootstrap_servers or bootstrap_controllers. Per
# replica: labels cluster, node (the configured node with that node id, else the id), role (controller for a
# voter, broker for an observer).
QUORUM_SERIES: Mapping[str, str] = MappingProxyType(
    {
        "ctlplane_quorum_up": "1 if the cluster's metadata quorum answered describeMetadataQuorum this round",
        "ctlplane_quorum_refused": "1 if the cluster refused the Admin client's credentials (authentication failed) "
        "or its principal's rights (not authorised: an ACL missing) this round: no quorum view, discovery, canary "
        "or restart safety until the operator fixes them; 0 if not",
        "kafka_cluster_node_unwatched": "1 for each node the cluster's answers name this round (describeCluster, "
        "the quorum's voters and observers) that ctlplane does not read: not listed and not discovered (or its "
        "JMX address rule gives none), or listed but never read",
        "kafka_cluster_node_unknown": "1 for each node ctlplane reads whose own node id the cluster's answers "
        "(describeCluster, the quorum's voters and observers) do not name this round: listed under the wrong "
        "cluster, or its JMX address reaches another cluster's node",
        "kafka_quorum_leader_id": "Node id of the quorum leader (the active controller), by the quorum's view",
        "kafka_quorum_leader_epoch": "Epoch of the quorum leader",
        "kafka_quorum_high_watermark": "High watermark of the metadata log (the first uncommitted offset)",
        "kafka_quorum_replica_log_end_offset": "The replica's metadata log end offset, as the leader last saw it",
        "kafka_quorum_replica_lag_records": "The leader's log end offset minus the replica's (the Lag column of "
        "kafka-metadata-quorum.sh describe --replication)",
        "kafka_quorum_replica_last_fetch_age_seconds": "Time since the replica last fetched from the leader",
        "kafka_quorum_replica_last_caught_up_age_seconds": "Time since the replica last caught up with the "
        "leader's log end offset",
        "kafka_broker_fenced": "1 if the controller has the registered broker fenced, 0 if not "
        "(describeCluster with includeFencedBrokers, KIP-1073: brokers of Kafka 4.0+, through bootstrap_servers)",
    }
)


# Series of the metadata canary (ctlplane/exporter/sources/admin/canary.py; docs/canary.md), for clusters with
# `canary` configured: a topic ctlplane creates at an interval, and each broker asked for it until it serves it.
CANARY_SERIES: Mapping[str, str] = MappingProxyType(
    {
        "kafka_broker_metadata_canary_propagation_seconds": "Time from ctlplane asking for a canary topic to the "
        "broker naming it in a Metadata answer (from its own metadata cache): the control plane's propagation, "
        "end to end, to within 0.1 s",
        "kafka_broker_metadata_canary_unserved_seconds": "How long the broker has answered Metadata requests "
        "without the canary's latest change (0 once it serves it): stale metadata whatever its own figures say",
        "ctlplane_canary_changes_total": "Canary changes made (topics created) since the exporter started",
        "ctlplane_canary_errors_total": "Canary steps that failed, by reason (client, not_authorized, authentication, "
        "timeout, rejected, describe_cluster, failed)",
        "ctlplane_canary_last_change_timestamp_seconds": "Unix time ctlplane last asked for a canary change",
    }
)


def all_series_names() -> frozenset[str]:
    """Every series name ctlplane can emit, with the suffixes a summary adds."""
    names = set(DERIVED_SERIES) | set(HEALTH_SERIES) | set(QUORUM_SERIES) | set(CANARY_SERIES)
    names.update(f"kafka_broker_metadata_canary_propagation_seconds_{part}" for part in ("bucket", "count", "sum"))
    for spec in CATALOG:
        names.add(spec.series)
        if spec.type is SeriesType.SUMMARY:
            names.update({f"{spec.series}_count", f"{spec.series}_sum"})
    return frozenset(names)
