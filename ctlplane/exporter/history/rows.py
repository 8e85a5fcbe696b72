"""A round's observation as archive rows: every sample of every node, and the health series."""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type hints

from ctlplane.exporter.health import BrokerHealth, ClusterHealth
from ctlplane.exporter.history.table import (
    ACTIVE_CONTROLLERS_SERIES,
    LIFECYCLE_SERIES,
    UP_SERIES,
    RowBuffer,
    format_labels,
)
from ctlplane.exporter.model import NodeSnapshot
from ctlplane.exporter.state import Observation


def _micros(unix_seconds: float) -> int:
    return round(unix_seconds * 1_000_000)


def _add_node_rows(out: RowBuffer, ts: int, node: NodeSnapshot, state: str | None) -> None:
    role = node.role.value
    out.add(ts, node.cluster, node.node, role, UP_SERIES, "", 1.0 if node.served else 0.0, state)
    duration = node.scrape_duration_seconds
    out.add(ts, node.cluster, node.node, role, "ctlplane_scrape_duration_seconds", "", duration, state)
    if node.held:
        return  # its last page served again: archived once, in the round it was read
    for sample in node.samples:
        if sample.read_at is not None and sample.read_at != node.scraped_at:
            continue  # a slow-tier value served again between its reads: archived once, when it was read
        labels = format_labels(sample.labels)
        if not sample.parts:
            out.add(ts, node.cluster, node.node, role, sample.series, labels, sample.value, state)
            continue
        # A summary: count and sum as their own series, quantiles with a `quantile` label (as on /metrics).
        for part, value in sample.parts:
            if part in ("count", "sum"):
                out.add(ts, node.cluster, node.node, role, f"{sample.series}_{part}", labels, value, state)
            else:
                quantile = format_labels((*sample.labels, ("quantile", part)))
                out.add(ts, node.cluster, node.node, role, sample.series, quantile, value, state)


def _add_broker_health_rows(out: RowBuffer, ts: int, broker: BrokerHealth) -> None:
    state = broker.state.value
    role = broker.role.value

    def add(series: str, value: float, labels: str = "") -> None:
        out.add(ts, broker.cluster, broker.node, role, series, labels, value, state)

    add(LIFECYCLE_SERIES, 1.0, f"state={state}")
    # what the 15 s KafkaBrokerFenced rule pages on: `pipeline sweep --series kafka_broker_fenced_unplanned`
    add("kafka_broker_fenced_unplanned", 1.0 if broker.fenced_unplanned else 0.0)
    if broker.cause is not None:
        add("kafka_broker_fault_cause", 1.0, f"cause={broker.cause.value}")
    if broker.metadata_lag_records is not None:
        add("kafka_broker_metadata_lag_records", broker.metadata_lag_records)
    if broker.metadata_lag_seconds is not None:
        add("kafka_broker_metadata_lag_seconds", broker.metadata_lag_seconds)
    if broker.up:
        add("kafka_broker_metadata_stale", 1.0 if broker.stale else 0.0)
        add("kafka_broker_metadata_frozen", 1.0 if broker.frozen else 0.0)
    if broker.control_plane_listener:
        add("kafka_control_plane_saturated", 1.0 if broker.control_plane_saturated else 0.0)


def _add_cluster_health_rows(out: RowBuffer, ts: int, cluster: ClusterHealth) -> None:
    controller = cluster.controller

    def add(series: str, value: float, labels: str = "") -> None:
        out.add(ts, cluster.name, "", "", series, labels, value, None)

    add(ACTIVE_CONTROLLERS_SERIES, float(cluster.active_controllers))
    add("kafka_cluster_reachable_controllers", float(controller.reachable_controllers))
    add("kafka_controller_failovers_total", float(controller.failovers_total))
    if controller.node is not None:
        node_id = "" if controller.node_id is None else str(controller.node_id)
        add("kafka_controller_info", 1.0, format_labels((("node", controller.node), ("node_id", node_id))))


def observation_rows(observation: Observation, out: RowBuffer | None = None) -> RowBuffer:
    """Every sample of every node, plus the health series, stamped with the round's start time."""
    out = out if out is not None else RowBuffer.empty()
    snapshot = observation.snapshot
    ts = _micros(snapshot.taken_at)
    states = {
        (broker.cluster, broker.node): broker.state.value
        for cluster in observation.health.clusters
        for broker in cluster.brokers
    }
    for node in snapshot.nodes():
        _add_node_rows(out, ts, node, states.get((node.cluster, node.node)))
    for cluster in observation.health.clusters:
        _add_cluster_health_rows(out, ts, cluster)
        for broker in cluster.brokers:
            _add_broker_health_rows(out, ts, broker)
    return out


def rows_table(observations: Iterable[Observation]) -> pa.Table:
    """The archive rows of these observations as one Arrow table (used by tests and tools)."""
    out = RowBuffer.empty()
    for observation in observations:
        observation_rows(observation, out)
    return out.to_table()
