"""The fleet page: one row per cluster, worst first."""

from __future__ import annotations

from collections import Counter

from dash import dcc, html
from dash.development.base_component import Component

from ctlplane.dashboard.source import AlertsResult
from ctlplane.dashboard.views.common import (
    DASH,
    LEVEL_COLOURS,
    LIFECYCLE_ORDER,
    MODE_NAMES,
    STATE_LEVELS,
    Level,
    assess_cluster,
    badge,
    data,
    format_duration,
    simulated_scenarios,
)
from ctlplane.exporter.catalog import Mode
from ctlplane.exporter.health import ClusterHealth
from ctlplane.exporter.state import Observation


def _lifecycle_counts(cluster: ClusterHealth) -> Component:
    counts = Counter(b.state for b in cluster.brokers)
    if not counts:
        return html.Span("no brokers")
    return html.Span(
        [badge(f"{state} {counts[state]}", STATE_LEVELS[state]) for state in LIFECYCLE_ORDER if counts[state]]
    )


def _worst_lag(cluster: ClusterHealth) -> str:
    lagging = [b for b in cluster.brokers if b.metadata_lag_records is not None or b.metadata_lag_seconds is not None]
    if not lagging:
        return DASH
    top = max(lagging, key=lambda b: (b.metadata_lag_seconds or 0.0, b.metadata_lag_records or 0.0))
    parts = []
    if top.metadata_lag_records is not None:
        parts.append(f"{top.metadata_lag_records:g} rec")
    if top.metadata_lag_seconds is not None:
        parts.append(f"{top.metadata_lag_seconds:.1f} s")
    return f"{' / '.join(parts)} ({top.node})"


def _listener(cluster: ClusterHealth) -> str:
    flags = {b.control_plane_listener for b in cluster.brokers if b.control_plane_listener is not None}
    if not flags:
        # KRaft has no KIP-291 listener: controllers have their own listener by design.
        return "n/a (KRaft)" if cluster.mode in (Mode.KRAFT, Mode.MIGRATION) else DASH
    if flags == {True}:
        return "on"
    if flags == {False}:
        return "off"
    return "mixed"


def _controller_summary(cluster: ClusterHealth, now: float) -> Component:
    controller = cluster.controller
    if controller.node is None:
        return html.Span("none", className="missing")
    identity = controller.node + (f" (id {controller.node_id})" if controller.node_id is not None else "")
    since = (
        f"last failover {format_duration(now - controller.last_failover_at)} ago"
        if controller.last_failover_at is not None
        else "no failover seen"
    )
    return html.Span([html.Span(identity, className="controller"), html.Br(), html.Small(since)])


FLEET_COLUMNS = (
    "health",
    "cluster",
    "mode",
    "active controller",
    "brokers by state",
    "worst metadata lag",
    "control-plane listener",
    "alerts firing",
)


def fleet_view(observation: Observation, alerts: AlertsResult, now: float, prefix: str = "/") -> Component:
    """One row per cluster, coloured by its level."""
    observed = observation.snapshot.sequence > 0
    if not observation.health.clusters:
        return html.Div(
            [
                html.H2("Fleet"),
                html.P("No clusters configured: add clusters to the exporter's config.", className="empty"),
            ],
            className="fleet",
        )
    rows = []
    for cluster in observation.health.clusters:
        firing = alerts.firing(cluster.name)
        assessment = assess_cluster(cluster, firing, observed)
        rows.append(
            html.Tr(
                [
                    html.Td(badge(assessment.level.upper(), assessment.level), title="; ".join(assessment.reasons)),
                    html.Td(
                        [
                            dcc.Link(cluster.name, href=f"{prefix}cluster/{cluster.name}"),
                            *(
                                [badge("SIMULATED", Level.UNKNOWN)]
                                if simulated_scenarios(observation.snapshot.cluster(cluster.name))
                                else []
                            ),
                        ]
                    ),
                    html.Td(MODE_NAMES[cluster.mode] if cluster.mode else "unknown"),
                    html.Td(_controller_summary(cluster, now)),
                    html.Td(_lifecycle_counts(cluster)),
                    html.Td(_worst_lag(cluster)),
                    html.Td(_listener(cluster)),
                    html.Td(str(len(firing)) if alerts.url else DASH),
                ],
                className=f"cluster-row level-{assessment.level}",
                style={"backgroundColor": LEVEL_COLOURS[assessment.level]},
                **data(cluster=cluster.name, level=str(assessment.level)),
            )
        )
        if assessment.reasons and assessment.level is not Level.OK:
            rows.append(
                html.Tr(
                    html.Td("; ".join(assessment.reasons), colSpan=len(FLEET_COLUMNS), className="reasons"),
                    className="reasons-row",
                )
            )
    return html.Div(
        [
            html.H2("Fleet"),
            html.Table(
                [html.Thead(html.Tr([html.Th(c) for c in FLEET_COLUMNS])), html.Tbody(rows)],
                className="fleet-table",
            ),
        ],
        className="fleet",
    )
