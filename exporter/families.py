"""Prometheus families as a pure function of a FleetSnapshot, and their exposition.

Example output (one ZooKeeper-mode broker with the control-plane listener):

    kafka_control_plane_request_queue_size{cluster="zk-3.9",node="broker-1",role="broker"} 0.0
    kafka_control_plane_listener_enabled{cluster="zk-3.9",node="broker-1",role="broker"} 1.0
    ctlplane_up{cluster="zk-3.9",node="broker-1",role="broker"} 1.0
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
    SummaryMetricFamily,
)
from prometheus_client.exposition import choose_encoder
from prometheus_client.samples import Sample as PromSample

from exporter.catalog import CATALOG, DERIVED_SERIES, HEALTH_SERIES, Mode, SeriesType
from exporter.health import FleetHealth, Lifecycle
from exporter.model import FleetSnapshot, NodeSnapshot
from exporter.readings import LISTENER_EVIDENCE

NODE_LABELS = ("cluster", "node", "role")


def control_plane_listener_enabled(node: NodeSnapshot) -> bool | None:
    """Whether a ZooKeeper-mode broker has the KIP-291 listener; None where the question is moot.

    The ControlPlane* queue gauges are registered only with `control.plane.listener.name` set, while the
    SocketServer ControlPlane* gauges are registered regardless (NaN / 0), so the queue is the evidence.
    """
    if not node.up or node.mode is not Mode.ZOOKEEPER:
        return None
    return node.has(LISTENER_EVIDENCE)


def _node_labels(node: NodeSnapshot) -> list[str]:
    return [node.cluster, node.node, node.role.value]


def render_families(snapshot: FleetSnapshot, health: FleetHealth | None = None, version: str = "dev") -> list[Metric]:
    """Every series for this snapshot, fresh objects each call (no state shared between scrapes)."""
    families: list[Metric] = []
    nodes = list(snapshot.nodes())
    for spec in CATALOG:
        extra = sorted(set(spec.labels.values()))
        if spec.type in (SeriesType.STATE, SeriesType.INFO):
            extra = sorted({*extra, spec.value_label})
        names = [*NODE_LABELS, *extra]
        family: CounterMetricFamily | SummaryMetricFamily | GaugeMetricFamily
        if spec.type is SeriesType.COUNTER:
            family = CounterMetricFamily(spec.series, spec.help_text, labels=names)
        elif spec.type is SeriesType.SUMMARY:
            family = SummaryMetricFamily(spec.series, spec.help_text, labels=names)
        else:
            family = GaugeMetricFamily(spec.series, spec.help_text, labels=names)
        for node in nodes:
            if not node.up:
                continue
            for sample in node.series_samples(spec.series):
                labels = dict(sample.labels)
                values = [*_node_labels(node), *(labels.get(name, "") for name in extra)]
                if isinstance(family, SummaryMetricFamily):
                    parts = dict(sample.parts)
                    quantiles = [(q, v) for q, v in sample.parts if q not in ("count", "sum")]
                    _add_summary(family, values, parts["count"], parts["sum"], quantiles)
                else:
                    family.add_metric(values, sample.value)
        if family.samples:
            families.append(family)
    families.extend(_derived_families(snapshot, nodes, version))
    if health is not None:
        families.extend(health_families(health))
    return families


def health_families(health: FleetHealth) -> list[Metric]:
    """The health record as series: controller identity and failovers, lifecycle, freshness, saturation."""

    def gauge(name: str, labels: Sequence[str]) -> GaugeMetricFamily:
        return GaugeMetricFamily(name, HEALTH_SERIES[name], labels=list(labels))

    cluster_mode = gauge("kafka_cluster_mode_info", ["cluster", "mode"])
    active = gauge("kafka_cluster_active_controllers", ["cluster"])
    reachable = gauge("kafka_cluster_reachable_controllers", ["cluster"])
    info = gauge("kafka_controller_info", ["cluster", "node", "node_id"])
    failovers = CounterMetricFamily(
        "kafka_controller_failovers", HEALTH_SERIES["kafka_controller_failovers_total"], labels=["cluster"]
    )
    last_failover = gauge("kafka_controller_last_failover_timestamp_seconds", ["cluster"])
    lifecycle = gauge("kafka_broker_lifecycle_state", [*NODE_LABELS, "state"])
    lag_records = gauge("kafka_broker_metadata_lag_records", NODE_LABELS)
    lag_seconds = gauge("kafka_broker_metadata_lag_seconds", NODE_LABELS)
    stale = gauge("kafka_broker_metadata_stale", NODE_LABELS)
    frozen = gauge("kafka_broker_metadata_frozen", NODE_LABELS)
    saturated = gauge("kafka_control_plane_saturated", NODE_LABELS)
    for cluster in health.clusters:
        controller = cluster.controller
        if cluster.mode is not None:
            cluster_mode.add_metric([cluster.name, cluster.mode.value], 1.0)
        active.add_metric([cluster.name], float(cluster.active_controllers))
        reachable.add_metric([cluster.name], float(controller.reachable_controllers))
        if controller.node is not None:
            node_id = "" if controller.node_id is None else str(controller.node_id)
            info.add_metric([cluster.name, controller.node, node_id], 1.0)
        failovers.add_metric([cluster.name], float(controller.failovers_total))
        if controller.last_failover_at is not None:
            last_failover.add_metric([cluster.name], controller.last_failover_at)
        for broker in cluster.brokers:
            labels = [broker.cluster, broker.node, broker.role.value]
            for state in Lifecycle:
                lifecycle.add_metric([*labels, state.value], 1.0 if broker.state is state else 0.0)
            if broker.metadata_lag_records is not None:
                lag_records.add_metric(labels, broker.metadata_lag_records)
            if broker.metadata_lag_seconds is not None:
                lag_seconds.add_metric(labels, broker.metadata_lag_seconds)
            if broker.up:
                stale.add_metric(labels, 1.0 if broker.stale else 0.0)
                frozen.add_metric(labels, 1.0 if broker.frozen else 0.0)
            if broker.control_plane_listener:
                saturated.add_metric(labels, 1.0 if broker.control_plane_saturated else 0.0)
    families: list[Metric] = [
        cluster_mode,
        active,
        reachable,
        info,
        failovers,
        last_failover,
        lifecycle,
        lag_records,
        lag_seconds,
        stale,
        frozen,
        saturated,
    ]
    return [family for family in families if family.samples]


def _add_summary(
    family: SummaryMetricFamily,
    values: list[str],
    count: float,
    total: float,
    quantiles: Sequence[tuple[str, float]],
) -> None:
    # SummaryMetricFamily.add_metric has no quantiles; append the samples the exposition expects.
    family.add_metric(values, count, total)  # type: ignore[arg-type]  # annotated int, floats render fine
    names = family._labelnames
    for quantile, value in quantiles:
        labels = dict(zip(names, values, strict=True))
        labels["quantile"] = quantile
        family.samples.append(PromSample(family.name, labels, value))


def _gauge(name: str, labels: Sequence[str] = NODE_LABELS) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, DERIVED_SERIES[name], labels=list(labels))


def _derived_families(snapshot: FleetSnapshot, nodes: Sequence[NodeSnapshot], version: str) -> list[Metric]:
    up = _gauge("ctlplane_up")
    duration = _gauge("ctlplane_scrape_duration_seconds")
    errors = CounterMetricFamily(
        "ctlplane_scrape_errors", DERIVED_SERIES["ctlplane_scrape_errors_total"], labels=list(NODE_LABELS)
    )
    listener = _gauge("kafka_control_plane_listener_enabled")
    for node in nodes:
        labels = _node_labels(node)
        up.add_metric(labels, 1.0 if node.up else 0.0)
        duration.add_metric(labels, node.scrape_duration_seconds)
        errors.add_metric(labels, node.errors_total)
        enabled = control_plane_listener_enabled(node)
        if enabled is not None:
            listener.add_metric(labels, 1.0 if enabled else 0.0)
    round_duration = GaugeMetricFamily(
        "ctlplane_round_duration_seconds",
        DERIVED_SERIES["ctlplane_round_duration_seconds"],
        value=snapshot.round_duration_seconds,
    )
    timestamp = GaugeMetricFamily(
        "ctlplane_snapshot_timestamp_seconds",
        DERIVED_SERIES["ctlplane_snapshot_timestamp_seconds"],
        value=snapshot.taken_at,
    )
    build = GaugeMetricFamily("ctlplane_build_info", DERIVED_SERIES["ctlplane_build_info"], labels=["version"])
    build.add_metric([version], 1.0)
    families: list[Metric] = [up, duration, errors, round_duration, timestamp, build]
    if listener.samples:
        families.append(listener)
    return families


def snapshot_age_family(age_seconds: float) -> Metric:
    return GaugeMetricFamily(
        "ctlplane_snapshot_age_seconds", DERIVED_SERIES["ctlplane_snapshot_age_seconds"], value=age_seconds
    )


class _Families:
    """The minimal registry the prometheus_client encoders accept."""

    def __init__(self, families: Iterable[Metric]) -> None:
        self._families = list(families)

    def collect(self) -> Iterable[Metric]:
        return self._families


class MetricsPage:
    """Renders /metrics for the latest snapshot once per content type, then serves the cached bytes.

    Only the snapshot age is computed per request, so a scrape of /metrics does no JMX I/O and, after
    the first request for a snapshot, almost no work.
    """

    def __init__(self, version: str = "dev") -> None:
        self.version = version
        self._lock = threading.Lock()
        self._cache: dict[tuple[int, float, str], bytes] = {}

    def render(
        self, snapshot: FleetSnapshot, health: FleetHealth | None, accept: str | None, now: float
    ) -> tuple[bytes, str]:
        encoder, content_type = choose_encoder(accept or "")
        key = (snapshot.sequence, snapshot.taken_at, content_type)
        with self._lock:
            body = self._cache.get(key)
            if body is None:
                body = encoder(_Families(render_families(snapshot, health, self.version)))
                # keep only the newest snapshot's pages (one per content type)
                self._cache = {k: v for k, v in self._cache.items() if k[:2] == key[:2]}
                self._cache[key] = body
        age = encoder(_Families([snapshot_age_family(max(0.0, now - snapshot.taken_at))]))
        return age.removesuffix(b"# EOF\n") + body, content_type
