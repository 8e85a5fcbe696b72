"""Builds the Grafana dashboards in grafana/dashboards/ from one declarative list of panels.

    python -m grafana.build           # rewrite the committed JSON
    python -m grafana.build --check   # exit 1 if the committed JSON differs from this builder's output

The JSON is generated rather than hand-edited so that the grid layout, the datasource variable,
the label filters and the mode markers stay uniform across ~60 panels; tests/unit/grafana checks
that the committed files equal this output, so the two can never drift apart.

Mode-specific panels (series that exist only in ZooKeeper mode or only in KRaft mode) carry a
machine-readable marker at the start of their description, ``[ZooKeeper only]`` or ``[KRaft only]``
(see ``MODE_MARKERS``/``panel_mode``), and show that text instead of "No data" on the other mode.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ctlplane.exporter.catalog import Mode
from ctlplane.exporter.thresholds import ALERTS, CONTROL_PLANE_QUEUE_CAPACITY, HEALTH

DASHBOARDS_DIR = Path(__file__).resolve().parent / "dashboards"
SCHEMA_VERSION = 39  # Grafana 10.4/11.x classic JSON model; newer Grafana migrates it on load
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
CLUSTER_UID = "ctlplane-cluster"
FLEET_UID = "ctlplane-fleet"

# Every threshold from its one home (ctlplane/exporter/thresholds.py): the health model's defaults colour a
# panel yellow, the alert rules' red.
CONTROL_PLANE_QUEUE_SATURATED = HEALTH.control_plane_queue_saturation_size
IDLE_SATURATED = HEALTH.control_plane_idle_saturation_ratio
METADATA_STALE_SECONDS = HEALTH.metadata_stale_seconds
METADATA_STALE_RECORDS = HEALTH.metadata_stale_records
ZK_CONTROLLER_QUEUE_STALE = HEALTH.zk_controller_queue_stale
GC_PAUSE_SECONDS = HEALTH.gc_pause_seconds  # the long_gc_pause cause
METADATA_ALERT_SECONDS = ALERTS.metadata_lag_alert_seconds  # KafkaBrokerMetadataStale
EVENT_QUEUE_WAIT_ALERT_SECONDS = ALERTS.event_queue_wait_alert_seconds  # KafkaControllerEventQueueBacklog
EVENT_QUEUE_SIZE_ALERT = ALERTS.event_queue_size_alert  # KafkaControllerEventQueueBacklog (ZooKeeper mode)
FAILOVERS_ALERT = ALERTS.controller_failovers_alert  # KafkaControllerChurn (in 30m)
HEARTBEAT_TIMEOUTS_ALERT = ALERTS.heartbeat_timeouts_alert  # KafkaControllerHeartbeatsTimedOut (in 15m)
SNAPSHOT_AGE_ALERT_SECONDS = ALERTS.snapshot_age_alert_seconds  # CtlplaneSnapshotStale
ROUND_DURATION_ALERT_SECONDS = ALERTS.round_duration_alert_seconds  # CtlplaneScrapeSlow
UPDATE_METADATA_ALERT_SECONDS = ALERTS.update_metadata_alert_seconds  # KafkaZkUpdateMetadataSlow (mean)

MODE_MARKERS: dict[Mode, str] = {Mode.ZOOKEEPER: "[ZooKeeper only]", Mode.KRAFT: "[KRaft only]"}
_NO_DATA = {Mode.ZOOKEEPER: "n/a: ZooKeeper mode only", Mode.KRAFT: "n/a: KRaft mode only"}

PanelType = Literal["timeseries", "stat"]
Steps = tuple[tuple[str, float | None], ...]

OK = (("green", None),)
NONE_IS_BAD = (("red", None), ("green", 1.0), ("red", 2.0))  # exactly one active controller
ANY_IS_BAD = (("green", None), ("red", 1.0))
SPARE_STEPS = (("red", None), ("orange", 0.0), ("green", 1.0))  # KafkaQuorumNoSpareVoter at 0 or less


def above(value: float) -> Steps:
    return (("green", None), ("red", value))


def warn_then_alert(warn: float, alert: float) -> Steps:
    """Yellow from the health model's (or a single event's) threshold, red from the alert rule's."""
    return (("green", None), ("yellow", warn), ("red", alert))


def below(value: float) -> Steps:
    return (("red", None), ("green", value))


@dataclass(frozen=True)
class Query:
    expr: str
    legend: str = ""


@dataclass(frozen=True)
class Panel:
    title: str
    description: str
    queries: tuple[Query, ...]
    unit: str
    type: PanelType = "timeseries"
    mode: Mode | None = None  # None: the panel has data in both ZooKeeper and KRaft mode
    steps: Steps = OK
    width: int = 12
    height: int = 8
    min: float | None = None
    max: float | None = None
    stack: bool = False
    text_mode: str = "value_and_name"
    decimals: int | None = None
    links: tuple[dict[str, str], ...] = ()


@dataclass(frozen=True)
class Row:
    title: str
    panels: tuple[Panel, ...]
    collapsed: bool = False


@dataclass(frozen=True)
class Dashboard:
    uid: str
    title: str
    description: str
    rows: tuple[Row, ...]
    cluster_multi: bool  # the fleet view selects many clusters, the drill-down exactly one
    tags: tuple[str, ...] = ("kafka", "ctlplane")
    links: tuple[dict[str, Any], ...] = field(default_factory=tuple)


def q(expr: str, legend: str = "") -> Query:
    return Query(expr, legend)


def ts(title: str, description: str, *queries: Query, unit: str, **kw: Any) -> Panel:
    return Panel(title, description, tuple(queries), unit, "timeseries", **kw)


def stat(title: str, description: str, *queries: Query, unit: str = "none", **kw: Any) -> Panel:
    return Panel(title, description, tuple(queries), unit, "stat", width=kw.pop("width", 4), height=4, **kw)


ZK, KRAFT = Mode.ZOOKEEPER, Mode.KRAFT
LAG_STEPS = warn_then_alert(METADATA_STALE_SECONDS, METADATA_ALERT_SECONDS)
FAILOVER_STEPS = warn_then_alert(1, FAILOVERS_ALERT)
HEARTBEAT_STEPS = warn_then_alert(1, HEARTBEAT_TIMEOUTS_ALERT)

# --------------------------------------------------------------------------- the cluster drill-down

# Label filters: one cluster, any selection of its nodes (allValue ".+").
C = 'cluster="$cluster"'
CN = 'cluster="$cluster", node=~"$node"'
RI = "[$__rate_interval]"

CLUSTER_ROWS = (
    Row("Controller", (
        stat("Active controllers", "Nodes claiming ActiveControllerCount=1. Healthy is exactly 1: 0 means no "
             "controller, 2+ a split brain (a paused old leader still claiming).",
             q(f"kafka_cluster_active_controllers{{{C}}}", "active"), steps=NONE_IS_BAD),
        stat("Active controller", "The node ctlplane believes is the active controller. KRaft: the claimant "
             "with the highest raft epoch, never the Metadata API's id (KAFKA-17404).",
             q(f"kafka_controller_info{{{C}}}", "{{node}} (id {{node_id}})"), text_mode="name", width=6),
        stat("Controller failovers", "Changes of the active controller seen by ctlplane in the last rate "
             "interval (identity or epoch).",
             q(f"sum(increase(kafka_controller_failovers_total{{{C}}}{RI}))", "failovers"),
             steps=FAILOVER_STEPS, decimals=0),
        stat("Reachable controllers", "Controller-capable nodes ctlplane could read this round.",
             q(f"kafka_cluster_reachable_controllers{{{C}}}", "reachable"), decimals=0),
        stat("Cluster mode", "zookeeper, kraft or migration (from ZkMigrationState and the MBeans present).",
             q(f"kafka_cluster_mode_info{{{C}}}", "{{mode}}"), text_mode="name", width=6),
        ts("Active controller claims per node", "ActiveControllerCount per node: one line at 1 is healthy; "
           "a line switching nodes is a failover, two at 1 a split brain.",
           q(f"kafka_controller_active{{{CN}}}", "{{node}}"), unit="none", steps=NONE_IS_BAD, min=0),
        ts("Active controllers and failovers", "Claimants over time, and failovers per rate interval.",
           q(f"kafka_cluster_active_controllers{{{C}}}", "active controllers"),
           q(f"sum(increase(kafka_controller_failovers_total{{{C}}}{RI}))", "failovers"),
           unit="none", steps=NONE_IS_BAD, min=0),
        ts("Quorum epoch and leader", "raft-metrics current-epoch (rises with every "
           "election) and current-leader (the quorum's active controller id) per node.",
           q(f"max(kafka_raft_current_epoch{{{CN}}})", "epoch"),
           q(f"max(kafka_raft_current_leader{{{CN}}})", "leader id"), unit="none", mode=KRAFT, decimals=0),
        stat("Spare voters", "Voters caught up beyond the majority the metadata quorum needs: how many more "
             "can fail before it cannot commit (KafkaQuorumNoSpareVoter warns at 0).",
             q(f"kafka_quorum_spare_voters{{{C}}}", "spare"), steps=SPARE_STEPS, decimals=0, mode=KRAFT),
        ts("Quorum voters", "The metadata quorum's voters, those the leader saw caught up, and the spare "
           "(describeMetadataQuorum; without it, the controllers' raft state).",
           q(f"kafka_quorum_voters{{{C}}}", "voters"),
           q(f"kafka_quorum_voters_caught_up{{{C}}}", "caught up"),
           q(f"kafka_quorum_spare_voters{{{C}}}", "spare"), unit="none", mode=KRAFT, decimals=0),
        ts("Controllers out of step and outside the voter set", "Per controller: how long it has been out of "
           "step with the quorum (KafkaControllerStuckInElection), and how long it has "
           "run outside the voter set, an observer controller (KafkaControllerNotVoter).",
           q(f"kafka_controller_raft_out_of_step_seconds{{{CN}}}", "{{node}} out of step"),
           q(f"kafka_controller_observer_seconds{{{CN}}}", "{{node}} outside the voter set"),
           unit="s", mode=KRAFT, min=0),
        ts("New active controllers (KIP-938)", "NewActiveControllersCount per "
           "controller, per rate interval.",
           q(f"increase(kafka_controller_new_active_controllers_total{{{CN}}}{RI})", "{{node}}"),
           unit="none", mode=KRAFT, steps=ANY_IS_BAD, min=0),
    )),
    Row("Brokers", (
        stat("Brokers not ACTIVE", "Brokers whose KIP-631 lifecycle state is INITIAL, FENCED, SHUTDOWN or "
             "UNREACHABLE.",
             q(f'sum(kafka_broker_lifecycle_state{{{C}, state!="ACTIVE"}})', "not active"),
             steps=ANY_IS_BAD, decimals=0),
        stat("Fenced brokers", "FencedBrokerCount of the controller (always 0 in ZooKeeper mode).",
             q(f"max(kafka_controller_fenced_brokers{{{C}}})", "fenced"), steps=ANY_IS_BAD, decimals=0),
        stat("Active brokers", "ActiveBrokerCount of the controller: unfenced brokers.",
             q(f"max(kafka_controller_active_brokers{{{C}}})", "active"), decimals=0),
        stat("Broker lifecycle", "Each broker's current lifecycle state (ctlplane's health model).",
             q(f"kafka_broker_lifecycle_state{{{CN}}} == 1", "{{node}}: {{state}}"), text_mode="name", width=12),
        ts("Brokers by lifecycle state", "How many brokers are in each KIP-631 state; anything but ACTIVE "
           "deserves a look.",
           q(f"sum by (state) (kafka_broker_lifecycle_state{{{CN}}})", "{{state}}"),
           unit="none", stack=True, min=0, decimals=0),
        ts("BrokerState per broker", "kafka.server BrokerState: 3 RUNNING, 2 RECOVERY, 6 pending controlled "
           "shutdown, 7 shutting down. A fenced KRaft broker stays at 3.",
           q(f"kafka_broker_state{{{CN}}}", "{{node}}"), unit="none", min=0, decimals=0),
        ts("GC pause time per node", "Seconds each node's JVM spent in stop-the-world garbage collection per "
           "rate interval (java.lang GarbageCollector CollectionTime; concurrent '... Cycles' collectors left "
           "out). A pause past broker.session.timeout.ms fences a broker: ctlplane names the cause long_gc_pause "
           f"from {GC_PAUSE_SECONDS:g} s between two reads while it stays fenced.",
           q(f'sum by (node) (increase(kafka_jvm_gc_collection_seconds_total{{{CN}, collector!~".* Cycles"}}{RI}))',
             "{{node}}"), unit="s", steps=above(GC_PAUSE_SECONDS), min=0),
        ts("Broker heartbeat timeouts", "TimedOutBrokerHeartbeatCount per controller, "
           "per rate interval: brokers that missed their session and were fenced.",
           q(f"increase(kafka_controller_timed_out_broker_heartbeats_total{{{CN}}}{RI})", "{{node}}"),
           unit="none", mode=KRAFT, steps=HEARTBEAT_STEPS, min=0),
        ts("ZooKeeper session expiries and disconnects", "Per broker, per rate interval.",
           q(f"increase(kafka_zookeeper_expires_total{{{CN}}}{RI})", "{{node}} expiries"),
           q(f"increase(kafka_zookeeper_disconnects_total{{{CN}}}{RI})", "{{node}} disconnects"),
           unit="none", mode=ZK, steps=ANY_IS_BAD, min=0),
    )),
    Row("Watched nodes", (
        stat("Nodes read", "Nodes ctlplane reads in this cluster: listed, found through DNS and discovered "
             "from the cluster's answers.",
             q(f"count(ctlplane_up{{{C}}})", "read"), decimals=0),
        stat("Discovered", "Nodes discovery watches (docs/configuration.md \"Watching your own clusters\"); 0 without "
             "discovery.",
             q(f"sum(ctlplane_discovered_nodes{{{C}}}) or vector(0)", "discovered"), decimals=0),
        stat("Not watched", "Nodes the cluster's answers name that no node ctlplane reads is (their ids: "
             "kafka_cluster_node_unwatched; alert KafkaNodeUnwatched).",
             q(f"count(kafka_cluster_node_unwatched{{{C}}} == 1) or vector(0)", "not watched"),
             steps=ANY_IS_BAD, decimals=0),
        stat("Read, not in the cluster", "Nodes ctlplane reads whose own node id the cluster's answers do "
             "not name: listed under the wrong cluster (kafka_cluster_node_unknown; alert KafkaNodeNotInCluster).",
             q(f"count(kafka_cluster_node_unknown{{{C}}} == 1) or vector(0)", "unknown"),
             steps=ANY_IS_BAD, decimals=0),
        stat("Fenced, no name", "Brokers the controller counts fenced that ctlplane cannot name "
             "(kafka_cluster_fenced_brokers_unnamed; pages as KafkaFencedBrokerUnnamed).",
             q(f"max(kafka_cluster_fenced_brokers_unnamed{{{C}}}) or vector(0)", "fenced, no name"),
             steps=ANY_IS_BAD, decimals=0),
        stat("Nodes that left", "Discovered nodes no longer watched on evidence that they left the cluster, "
             "in the last rate interval (ctlplane_discovery_forgotten_nodes_total; the log says which).",
             q(f"sum(increase(ctlplane_discovery_forgotten_nodes_total{{{C}}}{RI})) or vector(0)", "left"),
             decimals=0),
    )),
    Row("Metadata freshness", (
        stat("Stale brokers", "Brokers whose metadata lag is over the thresholds, or frozen.",
             q(f"sum(kafka_broker_metadata_stale{{{C}}})", "stale"), steps=ANY_IS_BAD, decimals=0, width=6),
        stat("Frozen brokers", "Brokers whose applied metadata offset has not moved for several scrapes while "
             "the quorum committed more.",
             q(f"sum(kafka_broker_metadata_frozen{{{C}}})", "frozen"), steps=ANY_IS_BAD, decimals=0, width=6),
        stat("Worst metadata lag", "The largest lag of any broker, in seconds (KRaft: applied-record age; "
             "ZooKeeper: how long the controller's requests for the broker waited).",
             q(f"max(kafka_broker_metadata_lag_seconds{{{CN}}})", "seconds"), unit="s",
             steps=LAG_STEPS, width=6),
        stat("Worst metadata lag (records)", "KRaft: committed offset minus the broker's applied offset. "
             "ZooKeeper: requests the controller has queued for the broker.",
             q(f"max(kafka_broker_metadata_lag_records{{{CN}}})", "records"),
             steps=above(METADATA_STALE_RECORDS), width=6, decimals=0),
        ts("Metadata lag (records)", "KRaft: the active controller's LastCommittedRecordOffset minus the "
           f"broker's last-applied-record-offset (stale at {METADATA_STALE_RECORDS:g}). ZooKeeper: requests "
           f"the controller has queued for the broker (stale at {ZK_CONTROLLER_QUEUE_STALE:g}).",
           q(f"kafka_broker_metadata_lag_records{{{CN}}}", "{{node}}"),
           unit="none", steps=above(METADATA_STALE_RECORDS), min=0),
        ts("Metadata lag (seconds)", f"KRaft: now minus the append time of the last metadata record each node "
           "applied. ZooKeeper: how long the active controller's requests for the broker waited in its queue "
           f"(KIP-237). Stale at {METADATA_STALE_SECONDS:g} s, alert at {METADATA_ALERT_SECONDS:g} s.",
           q(f"kafka_broker_metadata_lag_seconds{{{CN}}}", "{{node}}"),
           unit="s", steps=LAG_STEPS, min=0),
        ts("Stale and frozen brokers", "1 while a broker is stale (lag over the thresholds) or frozen.",
           q(f"kafka_broker_metadata_stale{{{CN}}}", "{{node}} stale"),
           q(f"kafka_broker_metadata_frozen{{{CN}}}", "{{node}} frozen"),
           unit="bool_yes_no", steps=ANY_IS_BAD, min=0, max=1),
        ts("Metadata offsets", "The quorum's committed offset against each node's "
           "applied offset; a flat line under a rising one is a frozen broker.",
           q(f"max(kafka_controller_last_committed_record_offset{{{C}}})", "committed (quorum)"),
           q(f"kafka_broker_last_applied_record_offset{{{CN}}}", "{{node}} applied"),
           q(f"kafka_controller_last_applied_record_offset{{{CN}}}", "{{node}} applied"),
           unit="none", mode=KRAFT, decimals=0),
        ts("Metadata errors", "Errors loading or applying metadata, per rate interval.",
           q(f"increase(kafka_broker_metadata_load_errors_total{{{CN}}}{RI})", "{{node}} load"),
           q(f"increase(kafka_broker_metadata_apply_errors_total{{{CN}}}{RI})", "{{node}} apply"),
           q(f"increase(kafka_controller_metadata_errors_total{{{CN}}}{RI})", "{{node}} controller"),
           unit="none", mode=KRAFT, steps=ANY_IS_BAD, min=0),
    )),
    Row("KIP-291 control plane vs data plane", (
        stat("Control-plane listener", "1 if the broker has a dedicated control-plane "
             "listener (control.plane.listener.name, KIP-291).",
             q(f"kafka_control_plane_listener_enabled{{{CN}}}", "{{node}}"), unit="bool_yes_no", mode=ZK,
             width=12),
        stat("Control plane saturated", "Brokers whose control-plane queue is near its "
             "capacity of 20 or whose control-plane threads are nearly never idle.",
             q(f"sum(kafka_control_plane_saturated{{{C}}})", "saturated"), mode=ZK, steps=ANY_IS_BAD,
             decimals=0, width=12),
        ts("Control-plane request queue", f"Requests waiting for the control-plane handler "
           f"(capacity {CONTROL_PLANE_QUEUE_CAPACITY}, saturated at {CONTROL_PLANE_QUEUE_SATURATED:g}).",
           q(f"kafka_control_plane_request_queue_size{{{CN}}}", "{{node}}"), unit="none", mode=ZK,
           steps=above(CONTROL_PLANE_QUEUE_SATURATED), min=0, max=CONTROL_PLANE_QUEUE_CAPACITY),
        ts("Data-plane request queue", "Requests waiting for the data-plane handlers (on KRaft controllers: "
           "every request).",
           q(f"kafka_request_queue_size{{{CN}}}", "{{node}}"), unit="none", min=0),
        ts("Control-plane response queue", "Responses waiting to be sent on the "
           "control-plane listener.",
           q(f"kafka_control_plane_response_queue_size{{{CN}}}", "{{node}}"), unit="none", mode=ZK, min=0),
        ts("Data-plane response queue", "Responses waiting to be sent on the data-plane listeners.",
           q(f"kafka_response_queue_size{{{CN}}}", "{{node}}"), unit="none", min=0),
        ts("Control-plane network processor idle", f"Fraction of time the control-plane "
           f"network thread is idle (saturated below {IDLE_SATURATED:.0%}).",
           q(f"kafka_control_plane_network_processor_idle_ratio{{{CN}}}", "{{node}}"), unit="percentunit",
           mode=ZK, steps=below(IDLE_SATURATED), min=0, max=1),
        ts("Data-plane network processor idle", "Fraction of time the data-plane network threads are idle.",
           q(f"kafka_network_processor_idle_ratio{{{CN}}}", "{{node}}"), unit="percentunit",
           steps=below(IDLE_SATURATED), min=0, max=1),
        ts("Control-plane request handler idle", f"Fraction of time the control-plane "
           f"request handler thread is idle, one-minute rate (saturated below {IDLE_SATURATED:.0%}).",
           q(f"kafka_control_plane_request_handler_idle_ratio{{{CN}}}", "{{node}}"), unit="percentunit",
           mode=ZK, steps=below(IDLE_SATURATED), min=0, max=1),
        ts("Data-plane request handler idle", "Fraction of time the data-plane request handler threads are "
           "idle, one-minute rate.",
           q(f"kafka_request_handler_idle_ratio{{{CN}}}", "{{node}}"), unit="percentunit",
           steps=below(IDLE_SATURATED), min=0, max=1),
        ts("Control-plane expired connections", "Control-plane connections closed "
           "because their re-authentication expired, per second.",
           q(f"rate(kafka_control_plane_expired_connections_killed_total{{{CN}}}{RI})", "{{node}}"),
           unit="cps", mode=ZK, min=0),
        ts("Data-plane expired connections", "Data-plane connections closed because their re-authentication "
           "expired, per second.",
           q(f"rate(kafka_expired_connections_killed_total{{{CN}}}{RI})", "{{node}}"), unit="cps", min=0),
    )),
    Row("Controller queues", (
        ts("Controller event queue size", "Events waiting in the ZooKeeper controller's "
           f"event queue (non-zero only on the active controller; alert over {EVENT_QUEUE_SIZE_ALERT:g}).",
           q(f"kafka_controller_event_queue_size{{{CN}}}", "{{node}}"), unit="none", mode=ZK,
           steps=above(EVENT_QUEUE_SIZE_ALERT), min=0),
        ts("Controller event queue time", f"Time controller events wait in the event "
           f"queue, p99 and p50 (alert: mean wait over {EVENT_QUEUE_WAIT_ALERT_SECONDS:g} s).",
           q(f'kafka_controller_event_queue_time_seconds{{{CN}, quantile="0.99"}}', "{{node}} p99"),
           q(f'kafka_controller_event_queue_time_seconds{{{CN}, quantile="0.5"}}', "{{node}} p50"),
           unit="s", steps=above(EVENT_QUEUE_WAIT_ALERT_SECONDS), min=0),
        ts("Controller-to-broker queues", f"Requests (LeaderAndIsr, UpdateMetadata, "
           "StopReplica) the ZooKeeper controller has queued for each broker, and in total "
           f"(a broker is stale at {ZK_CONTROLLER_QUEUE_STALE:g}).",
           q(f"max by (broker) (kafka_controller_channel_queue_size{{{C}}})", "to broker {{broker}}"),
           q(f"max(kafka_controller_channel_total_queue_size{{{C}}})", "total"),
           unit="none", mode=ZK, steps=above(ZK_CONTROLLER_QUEUE_STALE), min=0),
        ts("Controller event processing time", "Time the KRaft controller takes to "
           "process an event, p99 and p50.",
           q(f'kafka_controller_event_queue_processing_time_seconds{{{CN}, quantile="0.99"}}', "{{node}} p99"),
           q(f'kafka_controller_event_queue_processing_time_seconds{{{CN}, quantile="0.5"}}', "{{node}} p50"),
           unit="s", mode=KRAFT, min=0),
        ts("Event-queue operations timed out", "Controller event-queue operations that "
           "timed out before they ran, per rate interval (KIP-938).",
           q(f"increase(kafka_controller_event_queue_operations_timed_out_total{{{CN}}}{RI})", "{{node}}"),
           unit="none", mode=KRAFT, steps=ANY_IS_BAD, min=0),
        ts("Raft commit latency", "Average time to commit a metadata batch.",
           q(f"kafka_raft_commit_latency_seconds{{{CN}}} > 0", "{{node}}"), unit="s", mode=KRAFT, min=0),
    )),
    Row("Control RPC latency", (
        ts("Control RPC total time p99", "Total time to serve each control-plane RPC (ZooKeeper: "
           "LeaderAndIsr, UpdateMetadata, StopReplica; KRaft: BrokerHeartbeat, BrokerRegistration; both: "
           "AlterPartition, ControlledShutdown), p99 per node.",
           q(f'kafka_request_total_time_seconds{{{CN}, quantile="0.99"}}', "{{node}} {{request}}"),
           unit="s", min=0),
        ts("Control RPC queue time p99", "Time each control-plane RPC waits in the request queue, p99 per node.",
           q(f'kafka_request_queue_time_seconds{{{CN}, quantile="0.99"}}', "{{node}} {{request}}"),
           unit="s", min=0),
        ts("Control RPC total time p50", f"Median total time of each control-plane RPC per node: the typical "
           f"cost, where p99 shows the outliers (alert: UpdateMetadata mean over {UPDATE_METADATA_ALERT_SECONDS:g} s).",
           q(f'kafka_request_total_time_seconds{{{CN}, quantile="0.5"}}', "{{node}} {{request}}"),
           unit="s", steps=above(UPDATE_METADATA_ALERT_SECONDS), min=0),
        ts("Control RPC rate", "Control-plane RPCs received per second, all API versions.",
           q(f"sum by (request) (rate(kafka_requests_total{{{CN}}}{RI}))", "{{request}}"), unit="reqps", min=0),
    )),
    Row("ctlplane", (
        stat("Nodes read", "Share of this cluster's nodes ctlplane read in its last round.",
             q(f"avg(ctlplane_up{{{C}}})", "read"), unit="percentunit", steps=below(1.0), width=6),
        stat("Snapshot age", "Age of the snapshot served by the ctlplane that watches this cluster.",
             q(f"max(ctlplane_snapshot_age_seconds and on (instance, job) ctlplane_up{{{C}}})", "age"),
             unit="s", steps=above(SNAPSHOT_AGE_ALERT_SECONDS), width=6),
        stat("JMX read errors", "Failed JMX reads of this cluster's nodes per rate interval.",
             q(f"sum(increase(ctlplane_scrape_errors_total{{{C}}}{RI}))", "errors"), steps=ANY_IS_BAD,
             decimals=0, width=6),
        stat("ctlplane version", "Version of the ctlplane that watches this cluster.",
             q(f"max by (version) (ctlplane_build_info and on (instance, job) ctlplane_up{{{C}}})",
               "{{version}}"), text_mode="name", width=6),
        ts("ctlplane up per node", "1 if ctlplane read the node's JMX in its last round.",
           q(f"ctlplane_up{{{CN}}}", "{{node}}"), unit="bool_yes_no", steps=below(1.0), min=0, max=1),
        ts("JMX read duration", f"Time the last JMX read of each node took, and the whole round "
           f"(alert: round over {ROUND_DURATION_ALERT_SECONDS:g} s).",
           q(f"ctlplane_scrape_duration_seconds{{{CN}}}", "{{node}}"),
           q(f"max(ctlplane_round_duration_seconds and on (instance, job) ctlplane_up{{{C}}})", "round"),
           unit="s", steps=above(ROUND_DURATION_ALERT_SECONDS), min=0),
        ts("Snapshot age and JMX read errors", "Snapshot age (seconds) and failed JMX reads per rate interval.",
           q(f"max(ctlplane_snapshot_age_seconds and on (instance, job) ctlplane_up{{{C}}})", "snapshot age"),
           q(f"sum(increase(ctlplane_scrape_errors_total{{{CN}}}{RI}))", "read errors"),
           unit="s", min=0),
    )),
)  # fmt: skip

# --------------------------------------------------------------------------- the fleet overview

# Label filters: any selection of clusters (allValue ".+") and nodes.
F = 'cluster=~"$cluster"'
FN = 'cluster=~"$cluster", node=~"$node"'
TO_CLUSTER = (
    {
        "title": "Open ${__field.labels.cluster}",
        "url": f"/d/{CLUSTER_UID}?var-cluster=${{__field.labels.cluster}}&${{datasource:queryparam}}",
    },
)

FLEET_ROWS = (
    Row("Fleet", (
        stat("Clusters", "Clusters ctlplane watches in the selection.",
             q(f"count(kafka_cluster_active_controllers{{{F}}})", "clusters"), decimals=0),
        stat("Clusters without one active controller", "Clusters with 0 or 2+ active controllers.",
             q(f"sum(kafka_cluster_active_controllers{{{F}}} != bool 1)", "clusters"),
             steps=ANY_IS_BAD, decimals=0),
        stat("Brokers not ACTIVE", "Brokers in INITIAL, FENCED, SHUTDOWN or UNREACHABLE.",
             q(f'sum(kafka_broker_lifecycle_state{{{FN}, state!="ACTIVE"}})', "brokers"),
             steps=ANY_IS_BAD, decimals=0),
        stat("Stale brokers", "Brokers whose metadata is over the lag thresholds or frozen.",
             q(f"sum(kafka_broker_metadata_stale{{{FN}}})", "brokers"), steps=ANY_IS_BAD, decimals=0),
        stat("Nodes ctlplane cannot read", "Nodes whose JMX read failed in the last round.",
             q(f"sum(1 - ctlplane_up{{{FN}}})", "nodes"), steps=ANY_IS_BAD, decimals=0),
        stat("Failovers", "Controller failovers seen in the last rate interval, all selected clusters.",
             q(f"sum(increase(kafka_controller_failovers_total{{{F}}}{RI}))", "failovers"),
             steps=FAILOVER_STEPS, decimals=0),
        stat("Active controllers by cluster", "Exactly 1 is healthy. Click a cluster to drill down.",
             q(f"kafka_cluster_active_controllers{{{F}}}", "{{cluster}}"), steps=NONE_IS_BAD, width=12,
             links=TO_CLUSTER),
        stat("Mode by cluster", "zookeeper, kraft or migration.",
             q(f"kafka_cluster_mode_info{{{F}}}", "{{cluster}}: {{mode}}"), text_mode="name", width=12,
             links=TO_CLUSTER),
    )),
    Row("Controllers and brokers", (
        ts("Active controllers by cluster", "Claimants of ActiveControllerCount=1 per cluster.",
           q(f"kafka_cluster_active_controllers{{{F}}}", "{{cluster}}"), unit="none", steps=NONE_IS_BAD,
           min=0, decimals=0, links=TO_CLUSTER),
        ts("Controller failovers by cluster", "Failovers per rate interval.",
           q(f"sum by (cluster) (increase(kafka_controller_failovers_total{{{F}}}{RI}))", "{{cluster}}"),
           unit="none", steps=FAILOVER_STEPS, min=0, links=TO_CLUSTER),
        ts("Brokers by lifecycle state", "Brokers per KIP-631 state and cluster.",
           q(f"sum by (cluster, state) (kafka_broker_lifecycle_state{{{FN}}})", "{{cluster}} {{state}}"),
           unit="none", stack=True, min=0, decimals=0, links=TO_CLUSTER),
        ts("Fenced brokers by cluster", "The controller's FencedBrokerCount per cluster.",
           q(f"max by (cluster) (kafka_controller_fenced_brokers{{{F}}})", "{{cluster}}"),
           unit="none", steps=ANY_IS_BAD, min=0, decimals=0, links=TO_CLUSTER),
        ts("Broker heartbeat timeouts by cluster", "TimedOutBrokerHeartbeatCount "
           "per rate interval, all controllers.",
           q(f"sum by (cluster) (increase(kafka_controller_timed_out_broker_heartbeats_total{{{FN}}}{RI}))",
             "{{cluster}}"), unit="none", mode=KRAFT, steps=HEARTBEAT_STEPS, min=0, links=TO_CLUSTER),
        ts("Controller event queue time p99 by cluster", "Worst p99 wait in the controller event queue.",
           q(f'max by (cluster) (kafka_controller_event_queue_time_seconds{{{FN}, quantile="0.99"}})',
             "{{cluster}}"), unit="s", steps=above(EVENT_QUEUE_WAIT_ALERT_SECONDS), min=0, links=TO_CLUSTER),
    )),
    Row("Metadata freshness", (
        ts("Worst metadata lag (seconds) by cluster", f"The largest broker lag per "
           f"cluster (stale at {METADATA_STALE_SECONDS:g} s, alert at {METADATA_ALERT_SECONDS:g} s).",
           q(f"max by (cluster) (kafka_broker_metadata_lag_seconds{{{FN}}})", "{{cluster}}"),
           unit="s", steps=LAG_STEPS, min=0, links=TO_CLUSTER),
        ts("Worst metadata lag (records) by cluster", "KRaft: committed minus applied offset; ZooKeeper: "
           "requests queued by the controller for the broker.",
           q(f"max by (cluster) (kafka_broker_metadata_lag_records{{{FN}}})", "{{cluster}}"),
           unit="none", steps=above(METADATA_STALE_RECORDS), min=0, links=TO_CLUSTER),
        ts("Stale and frozen brokers by cluster", "Brokers flagged stale or frozen.",
           q(f"sum by (cluster) (kafka_broker_metadata_stale{{{FN}}})", "{{cluster}} stale"),
           q(f"sum by (cluster) (kafka_broker_metadata_frozen{{{FN}}})", "{{cluster}} frozen"),
           unit="none", steps=ANY_IS_BAD, min=0, decimals=0, links=TO_CLUSTER),
    )),
    Row("KIP-291 control plane", (
        ts("Control-plane request queue by cluster", f"Deepest control-plane request queue "
           f"(capacity {CONTROL_PLANE_QUEUE_CAPACITY}) next to the deepest data-plane queue.",
           q(f"max by (cluster) (kafka_control_plane_request_queue_size{{{FN}}})", "{{cluster}} control plane"),
           q(f"max by (cluster) (kafka_request_queue_size{{{FN}}})", "{{cluster}} data plane"),
           unit="none", mode=ZK, steps=above(CONTROL_PLANE_QUEUE_SATURATED), min=0, links=TO_CLUSTER),
        ts("Least idle control-plane thread by cluster", "The lowest idle ratio of the "
           "control-plane network and handler threads, next to the data-plane handlers.",
           q(f"min by (cluster) (kafka_control_plane_network_processor_idle_ratio{{{FN}}})",
             "{{cluster}} control-plane network"),
           q(f"min by (cluster) (kafka_control_plane_request_handler_idle_ratio{{{FN}}})",
             "{{cluster}} control-plane handler"),
           q(f"min by (cluster) (kafka_request_handler_idle_ratio{{{FN}}})", "{{cluster}} data-plane handler"),
           unit="percentunit", mode=ZK, steps=below(IDLE_SATURATED), min=0, max=1, links=TO_CLUSTER),
        ts("Saturated control planes by cluster", "Brokers whose control plane is "
           "saturated.",
           q(f"sum by (cluster) (kafka_control_plane_saturated{{{FN}}})", "{{cluster}}"),
           unit="none", mode=ZK, steps=ANY_IS_BAD, min=0, decimals=0, links=TO_CLUSTER),
        ts("Expired connections by cluster", "Connections closed because re-authentication expired, per "
           "second (control and data plane).",
           q(f"sum by (cluster) (rate(kafka_expired_connections_killed_total{{{FN}}}{RI}))", "{{cluster}}"),
           unit="cps", min=0, links=TO_CLUSTER),
    )),
    Row("Control RPC latency", (
        ts("Control RPC total time p99 by cluster", "Worst p99 total time of each control-plane RPC.",
           q(f'max by (cluster, request) (kafka_request_total_time_seconds{{{FN}, quantile="0.99"}})',
             "{{cluster}} {{request}}"), unit="s", min=0, links=TO_CLUSTER),
        ts("Control RPC rate by cluster", "Control-plane RPCs per second.",
           q(f"sum by (cluster, request) (rate(kafka_requests_total{{{FN}}}{RI}))", "{{cluster}} {{request}}"),
           unit="reqps", min=0, links=TO_CLUSTER),
    )),
    Row("ctlplane", (
        ts("Nodes read by cluster", "Share of each cluster's nodes ctlplane read in its last round.",
           q(f"avg by (cluster) (ctlplane_up{{{FN}}})", "{{cluster}}"), unit="percentunit",
           steps=below(1.0), min=0, max=1, links=TO_CLUSTER),
        ts("Slowest JMX read by cluster", "The slowest node read of each cluster.",
           q(f"max by (cluster) (ctlplane_scrape_duration_seconds{{{FN}}})", "{{cluster}}"), unit="s", min=0,
           links=TO_CLUSTER),
        ts("Snapshot age and round duration", "Per ctlplane instance that watches the selected clusters.",
           q(f"max by (instance) (ctlplane_snapshot_age_seconds and on (instance, job) ctlplane_up{{{F}}})",
             "{{instance}} snapshot age"),
           q(f"max by (instance) (ctlplane_round_duration_seconds and on (instance, job) ctlplane_up{{{F}}})",
             "{{instance}} round"), unit="s", steps=above(SNAPSHOT_AGE_ALERT_SECONDS), min=0),
    )),
)  # fmt: skip

DASHBOARDS = (
    Dashboard(
        FLEET_UID,
        "Kafka control plane: fleet",
        "Every Kafka cluster ctlplane watches: controllers, broker lifecycle, metadata freshness, KIP-291.",
        FLEET_ROWS,
        cluster_multi=True,
        links=({"title": "Cluster drill-down", "type": "link", "icon": "dashboard",
                "url": f"/d/{CLUSTER_UID}", "includeVars": False, "keepTime": True, "targetBlank": False,
                "asDropdown": False, "tags": [], "tooltip": ""},),
    ),
    Dashboard(
        CLUSTER_UID,
        "Kafka control plane: cluster",
        "One Kafka cluster's control plane: controller, brokers, metadata freshness, KIP-291 queues next to "
        "their data-plane twins, controller queues, control RPC latency and ctlplane's own health.",
        CLUSTER_ROWS,
        cluster_multi=False,
        links=({"title": "Fleet", "type": "link", "icon": "dashboard", "url": f"/d/{FLEET_UID}",
                "includeVars": False, "keepTime": True, "targetBlank": False, "asDropdown": False,
                "tags": [], "tooltip": ""},),
    ),
)  # fmt: skip


# --------------------------------------------------------------------------- rendering


def _thresholds(steps: Steps) -> dict[str, Any]:
    return {"mode": "absolute", "steps": [{"color": color, "value": value} for color, value in steps]}


def _field_config(panel: Panel) -> dict[str, Any]:
    defaults: dict[str, Any] = {
        "unit": panel.unit,
        "thresholds": _thresholds(panel.steps),
        "color": {"mode": "thresholds" if panel.type == "stat" else "palette-classic"},
        "mappings": [],
    }
    if panel.unit == "bool_yes_no":
        defaults["mappings"] = [{"type": "value", "options": {"0": {"text": "no"}, "1": {"text": "yes"}}}]
    for key in ("min", "max", "decimals"):
        if getattr(panel, key) is not None:
            defaults[key] = getattr(panel, key)
    if panel.mode is not None:
        defaults["noValue"] = _NO_DATA[panel.mode]
    if panel.links:
        defaults["links"] = [dict(link) for link in panel.links]
    if panel.type == "timeseries":
        defaults["custom"] = {
            "drawStyle": "line",
            "lineWidth": 1,
            "fillOpacity": 20 if panel.stack else 0,
            "showPoints": "never",
            "spanNulls": False,
            "stacking": {"mode": "normal" if panel.stack else "none", "group": "A"},
            # Draw the alert threshold only when the panel has one; a single green step means none.
            "thresholdsStyle": {"mode": "line+area" if len(panel.steps) > 1 else "off"},
        }
    return {"defaults": defaults, "overrides": []}


def _options(panel: Panel) -> dict[str, Any]:
    if panel.type == "stat":
        return {
            "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            "orientation": "auto",
            "textMode": panel.text_mode,
            "colorMode": "background" if len(panel.steps) > 1 else "none",
            "graphMode": "none",
            "justifyMode": "auto",
            "showPercentChange": False,
            "wideLayout": True,
        }
    return {
        "legend": {"displayMode": "list", "placement": "bottom", "showLegend": True, "calcs": []},
        "tooltip": {"mode": "multi", "sort": "desc"},
    }


def _description(panel: Panel) -> str:
    marker = MODE_MARKERS.get(panel.mode) if panel.mode is not None else None
    if marker is not None and not panel.description.startswith(marker):
        return f"{marker} {panel.description}"
    return panel.description


def _panel_json(panel: Panel, panel_id: int, x: int, y: int) -> dict[str, Any]:
    return {
        "id": panel_id,
        "type": panel.type,
        "title": panel.title,
        "description": _description(panel),
        "datasource": dict(DATASOURCE),
        "gridPos": {"h": panel.height, "w": panel.width, "x": x, "y": y},
        "fieldConfig": _field_config(panel),
        "options": _options(panel),
        "targets": [
            {
                "datasource": dict(DATASOURCE),
                "refId": chr(ord("A") + index),
                "expr": query.expr,
                "legendFormat": query.legend or "__auto",
                "range": True,
                "instant": False,
                "editorMode": "code",
            }
            for index, query in enumerate(panel.queries)
        ],
    }


def _layout(rows: Sequence[Row]) -> Iterator[dict[str, Any]]:
    """Rows of panels packed left to right on Grafana's 24-column grid."""
    panel_id = 0
    y = 0
    for row in rows:
        panel_id += 1
        yield {
            "id": panel_id,
            "type": "row",
            "title": row.title,
            "collapsed": row.collapsed,
            "gridPos": {"h": 1, "w": 24, "x": 0, "y": y},
            "panels": [],
        }
        y += 1
        x = 0
        line_height = 0
        for panel in row.panels:
            if x + panel.width > 24:
                y += line_height
                x, line_height = 0, 0
            panel_id += 1
            yield _panel_json(panel, panel_id, x, y)
            x += panel.width
            line_height = max(line_height, panel.height)
        y += line_height


def _variables(dashboard: Dashboard) -> list[dict[str, Any]]:
    cluster_filter = 'cluster=~"$cluster"'
    return [
        {
            "type": "datasource",
            "name": "datasource",
            "label": "Data source",
            "query": "prometheus",
            "current": {},
            "hide": 0,
            "includeAll": False,
            "multi": False,
            "options": [],
            "refresh": 1,
            "regex": "",
        },
        {
            "type": "query",
            "name": "cluster",
            "label": "Cluster",
            "datasource": dict(DATASOURCE),
            "definition": "label_values(ctlplane_up, cluster)",
            "query": {"qryType": 1, "query": "label_values(ctlplane_up, cluster)", "refId": "cluster"},
            "current": {},
            "hide": 0,
            "includeAll": dashboard.cluster_multi,
            "multi": dashboard.cluster_multi,
            **({"allValue": ".+"} if dashboard.cluster_multi else {}),
            "options": [],
            "refresh": 2,  # on time-range change: clusters come and go
            "regex": "",
            "sort": 1,
        },
        {
            "type": "query",
            "name": "node",
            "label": "Node",
            "datasource": dict(DATASOURCE),
            "definition": f"label_values(ctlplane_up{{{cluster_filter}}}, node)",
            "query": {
                "qryType": 1,
                "query": f"label_values(ctlplane_up{{{cluster_filter}}}, node)",
                "refId": "node",
            },
            "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
            "hide": 0,
            "includeAll": True,
            "multi": True,
            "allValue": ".+",
            "options": [],
            "refresh": 2,
            "regex": "",
            "sort": 1,
        },
    ]


def _annotations() -> dict[str, Any]:
    return {
        "list": [
            {
                "builtIn": 1,
                "datasource": {"type": "grafana", "uid": "-- Grafana --"},
                "enable": True,
                "hide": True,
                "iconColor": "rgba(0, 211, 255, 1)",
                "name": "Annotations & Alerts",
                "type": "dashboard",
            },
            {
                "datasource": dict(DATASOURCE),
                "enable": True,
                "hide": False,
                "iconColor": "red",
                "name": "Firing alerts",
                # Alerts without a cluster label (ctlplane itself down) are shown on every selection.
                "expr": 'ALERTS{alertstate="firing", cluster=~"$cluster|"}',
                "step": "30s",
                "titleFormat": "{{alertname}}",
                "textFormat": "{{cluster}} {{node}} {{severity}}",
                "tagKeys": "severity,cluster",
                "useValueForTime": False,
            },
        ]
    }


def dashboard_json(dashboard: Dashboard) -> dict[str, Any]:
    return {
        "uid": dashboard.uid,
        "title": dashboard.title,
        "description": dashboard.description,
        "tags": list(dashboard.tags),
        "schemaVersion": SCHEMA_VERSION,
        "version": 1,
        "editable": True,
        "graphTooltip": 1,
        "fiscalYearStartMonth": 0,
        "liveNow": False,
        "refresh": "30s",
        "time": {"from": "now-1h", "to": "now"},
        "timepicker": {},
        "timezone": "browser",
        "weekStart": "",
        "links": [dict(link) for link in dashboard.links],
        "annotations": _annotations(),
        "templating": {"list": _variables(dashboard)},
        "panels": list(_layout(dashboard.rows)),
    }


def render(dashboard: Dashboard) -> str:
    return json.dumps(dashboard_json(dashboard), indent=2, ensure_ascii=False) + "\n"


def outputs() -> dict[Path, str]:
    return {DASHBOARDS_DIR / f"{dashboard.uid}.json": render(dashboard) for dashboard in DASHBOARDS}


# --------------------------------------------------------------------------- helpers shared with the tests

_MARKER_RE = re.compile(r"^\[(ZooKeeper|KRaft) only\]")


def panel_mode(panel: dict[str, Any]) -> Mode | None:
    """The mode a panel's description marks it for, None for panels that chart both modes."""
    match = _MARKER_RE.match(str(panel.get("description", "")))
    if match is None:
        return None
    return Mode.ZOOKEEPER if match.group(1) == "ZooKeeper" else Mode.KRAFT


_PROMQL_KEYWORDS = frozenset(
    {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset",
     "inf", "nan"}
)  # fmt: skip
_STRING_RE = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
# Numbers and durations (0.99, 1h, 1e3) are matched first so their letters are not read as names.
_TOKEN_RE = re.compile(r"\d[\w.]*|[A-Za-z_:][A-Za-z0-9_:]*")


def promql_series(expr: str) -> set[str]:
    """Metric names an expression selects (not functions, keywords, label names or durations)."""
    text = _STRING_RE.sub('""', expr)
    text = re.sub(r"\{[^}]*\}", " ", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", " ", text)  # range selectors
    # label lists of grouping and vector matching modifiers
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    names = set()
    for match in _TOKEN_RE.finditer(text):
        name = match.group(0)
        if name[0].isdigit():
            continue
        rest = text[match.end() :].lstrip()
        if rest.startswith("(") or name.lower() in _PROMQL_KEYWORDS:
            continue  # a function call or an operator keyword
        names.add(name)
    return names


def iter_panels(dashboard: dict[str, Any]) -> Iterable[dict[str, Any]]:
    """Every non-row panel, including panels nested in collapsed rows."""
    for panel in dashboard["panels"]:
        if panel["type"] == "row":
            yield from panel.get("panels", [])
        else:
            yield panel


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="fail if the committed JSON is out of date")
    args = parser.parse_args(argv)
    stale = []
    for path, text in outputs().items():
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(path.name)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        sys.stdout.write(f"wrote {path}\n")
    if stale:
        sys.stderr.write(f"out of date (run python -m grafana.build): {', '.join(stale)}\n")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
