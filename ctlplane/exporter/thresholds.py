"""Every threshold of ctlplane, defined once.

- `Thresholds`: the health model's (ctlplane/exporter/health/). The config's `health:` section starts from
  these defaults (ctlplane/exporter/config/__init__.py `HealthConfig`), and the Spark pipeline's episode rules too.
- `AlertThresholds`: the alert rules'. alerts/*.rules.yml are written from alerts/source/*.rules.yml, where
  each threshold is a `[[name]]` of `rule_values()` (python -m tools.alert_rules; a test fails if the two
  differ or if a rule compares with a number that is not one of these).

The Grafana dashboards (grafana/build.py) colour their panels with both. The rule files carry the defaults:
a `health:` section that changes a threshold changes what the exporter computes (its stale, frozen and
saturated flags), not the rules' own comparisons.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

# ControlPlaneRequestQueueSize counts requests in a queue of fixed capacity 20 (KIP-291: `queued.max.requests`
# does not apply to the control-plane channel; kafka.network.SocketServer makes it `new RequestChannel(20,
# ControlPlaneAcceptor.MetricPrefix, ...)`). A fact of Kafka's, beside the thresholds that are shares of it.
CONTROL_PLANE_QUEUE_CAPACITY = 20

# How often Prometheus scrapes ctlplane, as shipped (deploy/'s PodMonitor and the chart, the manual's
# prometheus.yml, the paging test's Prometheus): 5 s, a third of a round, so a round woken by a fencing
# (scrape.fencing_poll_seconds) reaches Prometheus within seconds (docs/alerts.md "How fast a page comes").
# The page is made once per round and served from memory to every scrape in between.
PROMETHEUS_SCRAPE_SECONDS = 5.0


def _threshold(default: float, means: str) -> Any:
    """A field with its default and what it decides (docs/alerts.md's table is written from `means`)."""
    return field(default=default, metadata={"means": means})


@dataclass(frozen=True)
class Thresholds:
    """The health model's thresholds: the defaults of the config's `health:` section."""

    metadata_stale_seconds: float = _threshold(
        15.0, "a broker's metadata is stale from this lag in seconds (`kafka_broker_metadata_stale`)"
    )
    metadata_stale_records: float = _threshold(
        1000.0, "... or from this lag in records (KRaft); KafkaBrokerMetadataLagRecords pages above it for 5m"
    )
    metadata_frozen_scrapes: int = _threshold(
        3, "frozen: the applied offset did not move for this many rounds while the quorum committed"
    )
    zk_controller_queue_stale: float = _threshold(
        10.0,
        "ZooKeeper mode: this many requests queued for a broker at its controller is stale metadata "
        "(KafkaZkBrokerMetadataBacklog pages from it for 5m)",
    )
    control_plane_queue_saturation_ratio: float = _threshold(
        0.8,
        "the control-plane listener is saturated at this share of its fixed-size queue "
        "(KafkaControlPlaneRequestQueueBacklog)",
    )
    control_plane_idle_saturation_ratio: float = _threshold(
        0.1,
        "... or below this idle ratio of its threads (KafkaControlPlaneThreadsSaturated, "
        "KafkaKRaftControllerSaturated)",
    )
    gc_pause_seconds: float = _threshold(
        3.0,
        "a broker fenced while its JVM runs, that spent this many seconds collecting garbage between two reads, "
        "was fenced by a GC pause (cause `long_gc_pause`; Kafka's broker.session.timeout.ms is 9 s by default)",
    )
    quorum_caught_up_seconds: float = _threshold(
        10.0,
        "a KRaft voter counts as caught up while the quorum leader saw it reach the leader's log end within "
        "this many seconds (`kafka_quorum_spare_voters`, KafkaQuorumNoSpareVoter)",
    )
    restart_counts_max_age_seconds: float = _threshold(
        60.0,
        "a broker read at its own pace (a large page, its last one served) counts with its page's ISR counts in "
        "the restart answers while that page is no older than this many seconds; older, every broker waits "
        "(`isr_counts_unread`). Kafka itself takes a lagging follower out of the ISR only after "
        "replica.lag.time.max.ms (30 s by default since 2.5, KIP-537: ReplicationConfigs in 4.3.1's jar)",
    )

    @property
    def control_plane_queue_saturation_size(self) -> float:
        return self.control_plane_queue_saturation_ratio * CONTROL_PLANE_QUEUE_CAPACITY


@dataclass(frozen=True)
class AlertThresholds:
    """The alert rules' own thresholds."""

    metadata_lag_alert_seconds: float = _threshold(30.0, "KafkaBrokerMetadataStale: metadata lag in seconds")
    metadata_canary_alert_seconds: float = _threshold(
        30.0, "KafkaBrokerMetadataCanaryUnserved: seconds a broker answers without the metadata canary's change"
    )
    controller_failovers_alert: float = _threshold(
        4.0, "KafkaControllerChurn: failovers in 30m (`>=`: increase() extrapolates)"
    )
    heartbeat_timeouts_alert: float = _threshold(1.0, "KafkaControllerHeartbeatsTimedOut: timed-out heartbeats in 15m")
    raft_out_of_step_alert_seconds: float = _threshold(
        30.0,
        "KafkaControllerStuckInElection: a controller's raft state outside leader/follower this long (an "
        "election takes about controller.quorum.election.timeout.ms, 1 s, plus its backoff)",
    )
    observer_controller_alert_seconds: float = _threshold(
        600.0,
        "KafkaControllerNotVoter: a controller process running outside the voter set this long (adding one by "
        "hand takes minutes: format, start, catch up, `kafka-metadata-quorum add-controller`)",
    )
    metadata_snapshot_age_alert_seconds: float = _threshold(
        10800.0,
        "KafkaMetadataSnapshotOverdue: seconds since a KRaft node last wrote a metadata snapshot (3 x "
        "metadata.log.max.snapshot.interval.ms's default of 1 h: raise it with that setting)",
    )
    event_queue_wait_alert_seconds: float = _threshold(
        1.0, "KafkaControllerEventQueueBacklog: the controller's mean event-queue wait over 5m, seconds"
    )
    event_queue_size_alert: float = _threshold(
        100.0, "KafkaControllerEventQueueBacklog: events queued (ZooKeeper-mode controllers)"
    )
    event_manager_idle_alert_ratio: float = _threshold(
        0.05, "KafkaControllerEventQueueBacklog: the KRaft controller's event thread idle below this"
    )
    update_metadata_alert_seconds: float = _threshold(
        0.5, "KafkaZkUpdateMetadataSlow: mean UpdateMetadata time over 10m, seconds"
    )
    snapshot_age_alert_seconds: float = _threshold(
        60.0, "CtlplaneSnapshotStale: age of ctlplane's latest round (~4 default intervals), seconds"
    )
    round_duration_alert_seconds: float = _threshold(
        12.0, "CtlplaneScrapeSlow: one round's duration (0.8 of the default interval), seconds"
    )


HEALTH = Thresholds()
ALERTS = AlertThresholds()


def _number(value: float) -> str:
    """As a rule writes it: 30, 0.1, 1000 (never 30.0)."""
    return f"{value:g}"


def rule_values(health: Thresholds = HEALTH, alerts: AlertThresholds = ALERTS) -> dict[str, str]:
    """Every `[[name]]` the rule sources may use, as the rules write the number."""
    values: dict[str, float] = {**asdict(health), **asdict(alerts)}
    values["control_plane_queue_capacity"] = CONTROL_PLANE_QUEUE_CAPACITY
    values["control_plane_queue_saturation_size"] = health.control_plane_queue_saturation_size
    values["control_plane_queue_saturation_percent"] = health.control_plane_queue_saturation_ratio * 100
    values["control_plane_idle_saturation_percent"] = health.control_plane_idle_saturation_ratio * 100
    # the churn rule's words: more than this many failovers in 30 minutes is churn
    values["controller_failovers_churn"] = alerts.controller_failovers_alert - 1
    return {name: _number(value) for name, value in values.items()}
