"""Pure views: observations, alerts and pipeline outputs in; Dash component trees and figure dicts out.

Nothing here reads a clock, a socket or a file: `now` and the link prefix are arguments, so every view is
tested by comparing the tree it builds.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from dash import dcc, html
from dash.development.base_component import Component

from ctlplane.dashboard.source import Alert, AlertsResult, HistoryData, Table
from ctlplane.dashboard.timeline import EVENT_SEVERITY, Event, EventKind
from ctlplane.dashboard.trail import ClusterTrail, Line
from ctlplane.exporter.catalog import Mode, Role
from ctlplane.exporter.health import BrokerHealth, ClusterHealth, FleetHealth, Lifecycle
from ctlplane.exporter.model import ClusterSnapshot, FleetSnapshot, NodeSnapshot
from ctlplane.exporter.state import Observation

Figure = dict[str, Any]


class Level(StrEnum):
    OK = "ok"
    WARN = "warn"
    CRITICAL = "critical"
    UNKNOWN = "unknown"


# Colour says health before text does: every row and badge carries its level's colour.
LEVEL_COLOURS = {
    Level.OK: "#d8f3dc",
    Level.WARN: "#ffe8a3",
    Level.CRITICAL: "#ffb3b3",
    Level.UNKNOWN: "#e0e0e0",
}
STATE_LEVELS = {
    Lifecycle.ACTIVE: Level.OK,
    Lifecycle.INITIAL: Level.WARN,
    Lifecycle.SHUTDOWN: Level.WARN,
    Lifecycle.FENCED: Level.CRITICAL,
    Lifecycle.UNREACHABLE: Level.CRITICAL,
}
LIFECYCLE_ORDER = (Lifecycle.ACTIVE, Lifecycle.INITIAL, Lifecycle.FENCED, Lifecycle.SHUTDOWN, Lifecycle.UNREACHABLE)
MODE_NAMES = {Mode.ZOOKEEPER: "ZooKeeper", Mode.KRAFT: "KRaft", Mode.MIGRATION: "migration"}
PAGING_SEVERITIES = frozenset({"critical", "page"})
DASH = "—"


def _rank(level: Level) -> int:
    return (Level.OK, Level.UNKNOWN, Level.WARN, Level.CRITICAL).index(level)


def worst(levels: Iterable[Level]) -> Level:
    return max(levels, key=_rank, default=Level.OK)


# --- formatting --------------------------------------------------------------------------------------


def format_duration(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def format_time(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%H:%M:%S")


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%S")


def format_number(value: float | None, unit: str = "", digits: int = 0) -> str:
    if value is None or not math.isfinite(value):
        return DASH
    return f"{value:.{digits}f}{unit}"


def format_ratio(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return DASH
    return f"{value * 100:.0f}%"


def _lag_cell(text: str, source: str | None) -> html.Td:
    """A metadata lag figure, saying where it came from: where JMX could not say it is the quorum leader's
    view of what the broker fetched (docs/configuration.md "The quorum's view")."""
    if source is None:
        return html.Td(text)
    extra = {"data-lag-source": source}
    if source != "jmx":
        extra["title"] = "from the quorum's view (describeMetadataQuorum): JMX could not say"
    return html.Td(text, **extra)  # type: ignore[arg-type]  # data-* props: accepted at run time


def badge(text: str, level: Level, **extra: str) -> html.Span:
    return html.Span(
        text,
        className=f"badge level-{level}",
        style={"backgroundColor": LEVEL_COLOURS[level]},
        **extra,  # type: ignore[arg-type]  # data-* props are accepted at run time, not in the stubs
    )


# --- simulated clusters (`ctlplane demo`) ---------------------------------------------------------------

SIMULATED_SERIES = "ctlplane_simulated_info"  # served only by the simulator's nodes; label: the scenario


def simulated_scenarios(cluster: ClusterSnapshot | None) -> tuple[str, ...]:
    """The scenarios a simulated cluster's nodes report; () for a real cluster."""
    if cluster is None:
        return ()
    return tuple(
        sorted({dict(s.labels).get("scenario", "?") for n in cluster.nodes for s in n.series_samples(SIMULATED_SERIES)})
    )


def simulation_banner(snapshot: FleetSnapshot) -> Component | None:
    simulated = [(c.name, simulated_scenarios(c)) for c in snapshot.clusters]
    simulated = [(name, scenarios) for name, scenarios in simulated if scenarios]
    if not simulated:
        return None
    text = "SIMULATED, not real Kafka: " + ", ".join(f"{name} (scenario {', '.join(sc)})" for name, sc in simulated)
    return html.Div(text, className="simulated-banner", style={"backgroundColor": LEVEL_COLOURS[Level.WARN]})


# --- cluster assessment --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Assessment:
    level: Level
    reasons: tuple[str, ...]


def assess_cluster(cluster: ClusterHealth, firing: Sequence[Alert] = (), observed: bool = True) -> Assessment:
    """The cluster's level and the reasons for it, worst first."""
    if not observed:
        return Assessment(Level.UNKNOWN, ("waiting for the first scrape",))
    reasons: list[tuple[Level, str]] = []
    all_down = (
        bool(cluster.brokers)
        and not cluster.controller.reachable_controllers
        and all(b.state is Lifecycle.UNREACHABLE for b in cluster.brokers)
    )
    if all_down:
        reasons.append((Level.CRITICAL, "all nodes unreachable"))
    elif cluster.active_controllers == 0:
        reasons.append((Level.CRITICAL, "no active controller"))
    elif cluster.active_controllers > 1:
        reasons.append((Level.CRITICAL, f"split brain: {', '.join(cluster.controller.claimants)} claim control"))
    counts = Counter(b.state for b in cluster.brokers)
    for state in (Lifecycle.FENCED, Lifecycle.UNREACHABLE, Lifecycle.INITIAL, Lifecycle.SHUTDOWN):
        if counts[state] and not (all_down and state is Lifecycle.UNREACHABLE):
            reasons.append((STATE_LEVELS[state], f"{counts[state]} {state.lower()}"))
    if cluster.fenced_unnamed:
        # the controller counts fenced brokers ctlplane cannot name (KafkaFencedBrokerUnnamed pages after its for:)
        reasons.append((Level.WARN, f"{cluster.fenced_unnamed} fenced broker(s) ctlplane cannot name"))
    stale = [b.node for b in cluster.brokers if b.stale]
    if stale:
        reasons.append((Level.WARN, f"stale metadata: {', '.join(stale)}"))
    saturated = [b.node for b in cluster.brokers if b.control_plane_saturated]
    if saturated:
        reasons.append((Level.WARN, f"control plane saturated: {', '.join(saturated)}"))
    if firing:
        paging = any(a.severity in PAGING_SEVERITIES for a in firing)
        reasons.append((Level.CRITICAL if paging else Level.WARN, f"{len(firing)} alert(s) firing"))
    reasons.sort(key=lambda r: -_rank(r[0]))
    return Assessment(worst(level for level, _ in reasons), tuple(text for _, text in reasons))


# --- fleet page ------------------------------------------------------------------------------------------


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
                **{"data-cluster": cluster.name, "data-level": str(assessment.level)},  # type: ignore[arg-type]
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


# --- cluster page -----------------------------------------------------------------------------------------


def controller_card(cluster: ClusterHealth, events: Sequence[Event], now: float) -> Component:
    controller = cluster.controller
    assessment = Level.CRITICAL if cluster.active_controllers != 1 else Level.OK
    identity = (
        f"{controller.node}" + (f" (id {controller.node_id})" if controller.node_id is not None else "")
        if controller.node
        else "no active controller"
    )
    facts = [
        ("mode", MODE_NAMES[cluster.mode] if cluster.mode else "unknown"),
        *((("migration phase", cluster.migration_phase),) if cluster.migration_phase else ()),
        *(
            (
                (
                    "quorum's leader",
                    f"id {cluster.quorum_leader_id}"
                    + (" (the nodes' JMX says otherwise)" if cluster.controller_views_disagree else ""),
                ),
            )
            if cluster.quorum_leader_id is not None
            else ()
        ),
        ("epoch", format_number(controller.epoch) if controller.epoch is not None else "not exposed"),
        ("claimants", ", ".join(controller.claimants) or "none"),
        ("reachable controllers", str(controller.reachable_controllers)),
        ("failovers seen", str(controller.failovers_total)),
        (
            "last failover",
            f"{format_duration(now - controller.last_failover_at)} ago ({_iso(controller.last_failover_at)} UTC)"
            if controller.last_failover_at is not None
            else "none seen",
        ),
    ]
    history = [e for e in events if e.cluster == cluster.name and e.kind in (
        EventKind.ELECTION, EventKind.NO_CONTROLLER, EventKind.SPLIT_BRAIN, EventKind.CONTROLLER_RESTORED)]  # fmt: skip
    return html.Div(
        [
            html.H3("Active controller"),
            html.Div(
                identity,
                className=f"controller-identity level-{assessment}",
                style={"backgroundColor": LEVEL_COLOURS[assessment]},
                **{"data-controller": controller.node or ""},  # type: ignore[arg-type]
            ),
            html.Dl([item for key, value in facts for item in (html.Dt(key), html.Dd(value))]),
            html.H4("Failover history (this window)"),
            html.Ul([html.Li(f"{format_time(e.at)} {e.detail}") for e in history[:20]])
            if history
            else html.P("no controller changes in the window"),
        ],
        className="controller-card",
    )


NODE_COLUMNS = (
    "node",
    "role",
    "state",
    "evidence",
    "lag (records)",
    "lag (s)",
    "stale / frozen",
    "cp request queue",
    "cp response queue",
    "handler idle",
    "network idle",
    "up",
)

# KIP-291 series and their data-plane twins. A KRaft controller-only node serves nothing but control-plane
# traffic on its own listener, so its data-plane series are its control-plane figures.
CP_TWINS = (
    ("kafka_control_plane_request_queue_size", "kafka_request_queue_size"),
    ("kafka_control_plane_response_queue_size", "kafka_response_queue_size"),
    ("kafka_control_plane_request_handler_idle_ratio", "kafka_request_handler_idle_ratio"),
    ("kafka_control_plane_network_processor_idle_ratio", "kafka_network_processor_idle_ratio"),
)


def control_plane_value(node: NodeSnapshot, series: str, twin: str) -> float | None:
    if not node.up:
        return None
    value = node.value(series)
    if value is None and node.role is Role.CONTROLLER:
        value = node.value(twin)
    return value


def _node_row(node: NodeSnapshot, broker: BrokerHealth | None, active: str | None) -> Component:
    if broker is not None:
        state, level, evidence = str(broker.state), STATE_LEVELS[broker.state], broker.evidence
    elif not node.up:
        state, level, evidence = "UNREACHABLE", Level.CRITICAL, f"JMX: {node.error}"
    else:
        state, level, evidence = "CONTROLLER", Level.OK, "controller-only node (no broker lifecycle)"
    role = [html.Span(node.role.value, className="role")]
    if node.node == active:
        role.append(badge("active controller", Level.OK, **{"data-active-controller": "true"}))
    flags = []
    if broker is not None and broker.stale:
        flags.append(badge("STALE", Level.WARN))
    if broker is not None and broker.frozen:
        flags.append(badge("FROZEN", Level.WARN))
    if broker is not None and broker.control_plane_saturated:
        flags.append(badge("SATURATED", Level.WARN))
    if broker is not None and broker.views_disagree:
        # the quorum's view decided against the node's own JMX (docs/configuration.md "The quorum's view")
        flags.append(badge("VIEWS DISAGREE", Level.WARN, **{"data-views-disagree": "true"}))
    queues = [control_plane_value(node, series, twin) for series, twin in CP_TWINS]
    source = broker.metadata_lag_source if broker is not None else None
    return html.Tr(
        [
            html.Td(node.node + (f" (id {node.node_id})" if node.node_id is not None else ""), className="node"),
            html.Td(role, className="role-cell"),
            html.Td(badge(state, level), className="state"),
            html.Td(evidence, className="evidence"),
            _lag_cell(format_number(broker.metadata_lag_records if broker else None), source),
            _lag_cell(format_number(broker.metadata_lag_seconds if broker else None, digits=1), source),
            html.Td(flags or DASH),
            html.Td(format_number(queues[0])),
            html.Td(format_number(queues[1])),
            html.Td(format_ratio(queues[2])),
            html.Td(format_ratio(queues[3])),
            html.Td("yes" if node.up else "NO"),
        ],
        className=f"node-row level-{level}",
        style={"backgroundColor": LEVEL_COLOURS[level]},
        **{"data-node": node.node, "data-role": node.role.value, "data-state": state},  # type: ignore[arg-type]
    )


def node_table(snapshot: ClusterSnapshot, health: ClusterHealth) -> Component:
    """Every node of the cluster: brokers with their lifecycle, controllers with their identity."""
    rows = [_node_row(node, health.broker(node.node), health.controller.node) for node in snapshot.nodes]
    return html.Table(
        [html.Thead(html.Tr([html.Th(c) for c in NODE_COLUMNS])), html.Tbody(rows)],
        className="node-table",
    )


def watch_gaps(snapshot: ClusterSnapshot, health: ClusterHealth) -> Component | None:
    """What the cluster has that ctlplane does not read, and what it reads that the cluster does not have
    (docs/configuration.md "No node unwatched"); None when there is neither."""
    rows = [
        html.Li(
            f"node id {member.node_id} ({member.role.value}{f', {member.host}' if member.host else ''}): named by "
            "the cluster, not read by ctlplane (not listed, or its JMX address rule does not reach it)",
            **{"data-gap": "unwatched"},  # type: ignore[arg-type]
        )
        for member in snapshot.unwatched()
    ]
    rows += [
        html.Li(
            f"{node.node} (id {node.node_id}, {node.address}): read by ctlplane, but the cluster's answers do not "
            f"name node id {node.node_id} (another cluster's node?)",
            **{"data-gap": "unknown"},  # type: ignore[arg-type]
        )
        for node in snapshot.unknown()
    ]
    if health.fenced_unnamed:
        rows.append(
            html.Li(
                f"the controller counts {health.fenced_unnamed} fenced broker(s) that no node ctlplane reads is",
                **{"data-gap": "fenced-unnamed"},  # type: ignore[arg-type]
            )
        )
    if not rows:
        return None
    return html.Div([html.H3("Not watched"), html.Ul(rows)], className="watch-gaps")


def _empty_figure(title: str, message: str) -> Figure:
    return {
        "data": [],
        "layout": {
            "title": {"text": title},
            "annotations": [
                {"text": message, "showarrow": False, "xref": "paper", "yref": "paper", "x": 0.5, "y": 0.5}
            ],
            "xaxis": {"visible": False},
            "yaxis": {"visible": False},
            "height": 300,
        },
    }


def _line(name: str, points: Sequence[tuple[float, float | None]], dash: str = "solid", yaxis: str = "y") -> Figure:
    return {
        "type": "scatter",
        "mode": "lines+markers",
        "name": name,
        "x": [_iso(at) for at, _ in points],
        "y": [value for _, value in points],
        "line": {"dash": dash},
        "yaxis": yaxis,
    }


def _figure(title: str, traces: list[Figure], yaxis: dict[str, Any], extra: dict[str, Any] | None = None) -> Figure:
    if not traces:
        return _empty_figure(title, "no samples in the window")
    layout: dict[str, Any] = {
        "title": {"text": title},
        "xaxis": {"type": "date", "title": {"text": "UTC"}},
        "yaxis": yaxis,
        "height": 300,
        "margin": {"l": 50, "r": 20, "t": 40, "b": 40},
        "legend": {"orientation": "h"},
        "uirevision": title,  # keep zoom across live refreshes
    }
    layout.update(extra or {})
    return {"data": traces, "layout": layout}


def _traces(lines: Mapping[str, Line], label: str = "", dash: str = "solid", yaxis: str = "y") -> list[Figure]:
    """One trace per node that has a value in the window."""
    return [
        _line(f"{node} {label}".strip(), tuple(zip(line.times, line.values, strict=True)), dash, yaxis)
        for node, line in lines.items()
        if any(value is not None for value in line.values)
    ]


def _series_traces(trail: ClusterTrail, rows: Sequence[tuple[str, str, str]]) -> list[Figure]:
    """One line per node and (label, series, dash) row: a control-plane series beside its data-plane twin."""
    return [trace for label, series, dash in rows for trace in _traces(trail.lines_of(series), label, dash)]


def queue_figure(trail: ClusterTrail) -> Figure:
    traces = _series_traces(trail, (
        ("control-plane request", "kafka_control_plane_request_queue_size", "solid"),
        ("control-plane response", "kafka_control_plane_response_queue_size", "solid"),
        ("data-plane request", "kafka_request_queue_size", "dot"),
        ("data-plane response", "kafka_response_queue_size", "dot"),
    ))  # fmt: skip
    return _figure("Request/response queues: control plane (solid) vs data plane (dotted)", traces,
                   {"title": {"text": "queued"}, "rangemode": "tozero"})  # fmt: skip


def idle_figure(trail: ClusterTrail) -> Figure:
    traces = _series_traces(trail, (
        ("cp handler idle", "kafka_control_plane_request_handler_idle_ratio", "solid"),
        ("cp network idle", "kafka_control_plane_network_processor_idle_ratio", "solid"),
        ("dp handler idle", "kafka_request_handler_idle_ratio", "dot"),
        ("dp network idle", "kafka_network_processor_idle_ratio", "dot"),
    ))  # fmt: skip
    return _figure("Idle ratios: control plane (solid) vs data plane (dotted)", traces,
                   {"title": {"text": "idle"}, "range": [0, 1.05], "tickformat": ".0%"})  # fmt: skip


def lag_figure(trail: ClusterTrail) -> Figure:
    traces = _traces(trail.lines_of("metadata_lag_records"), "records")
    traces += _traces(trail.lines_of("metadata_lag_seconds"), "seconds", "dot", "y2")
    return _figure(
        "Metadata lag per broker: records (solid) and seconds (dotted)",
        traces,
        {"title": {"text": "records behind"}, "rangemode": "tozero"},
        {"yaxis2": {"title": {"text": "seconds"}, "overlaying": "y", "side": "right", "rangemode": "tozero"}},
    )


def event_queue_figure(trail: ClusterTrail) -> Figure:
    traces = _traces(trail.lines_of("event_queue_p99_seconds"))
    return _figure("Controller event-queue time, p99", traces, {"title": {"text": "seconds"}, "rangemode": "tozero"})


def timeline_view(events: Sequence[Event], limit: int = 50) -> Component:
    if not events:
        return html.Div([html.H3("Timeline"), html.P("no control-plane events in the window", className="empty")],
                        className="timeline")  # fmt: skip
    items = [
        html.Li(
            [
                html.Span(format_time(e.at), className="at"),
                badge(str(e.kind), Level(EVENT_SEVERITY[e.kind])),
                html.Span(e.node or "cluster", className="who"),
                html.Span(e.detail, className="detail"),
            ],
            className=f"event event-{e.kind}",
            **{"data-kind": str(e.kind), "data-node": e.node or ""},  # type: ignore[arg-type]
        )
        for e in events[:limit]
    ]
    more = [html.P(f"... and {len(events) - limit} earlier events")] if len(events) > limit else []
    return html.Div([html.H3("Timeline"), html.Ul(items, className="events"), *more], className="timeline")


GRAPH_TYPE = "live-graph"  # pattern-matching id type of the cluster page's graphs, refreshed in place


def cluster_figures(trail: ClusterTrail) -> tuple[tuple[str, Figure], ...]:
    return (
        ("queues", queue_figure(trail)),
        ("idle", idle_figure(trail)),
        ("lag", lag_figure(trail)),
        ("event-queue", event_queue_figure(trail)),
    )


def graphs_view(figures: Sequence[tuple[str, Figure]]) -> Component:
    return html.Div(
        [
            dcc.Graph(
                id={"type": GRAPH_TYPE, "key": key},
                figure=figure,
                config={"displaylogo": False},
                className=f"graph graph-{key}",
            )
            for key, figure in figures
        ],
        className="graphs",
    )


def cluster_view(
    name: str,
    observation: Observation,
    events: Sequence[Event],
    alerts: AlertsResult,
    now: float,
) -> Component:
    """The cluster page's text: verdict, controller card, node table and timeline (graphs come separately)."""
    health = observation.health.cluster(name)
    snapshot = observation.snapshot.cluster(name)
    if health is None or snapshot is None:
        return html.Div(
            [html.H2(name), html.P(f"No cluster named {name!r} in the exporter's config.", className="empty")]
        )
    firing = alerts.firing(name)
    assessment = assess_cluster(health, firing, observation.snapshot.sequence > 0)
    own_events = [e for e in events if e.cluster == name]
    return html.Div(
        [
            html.H2([f"{name} ", badge(assessment.level.upper(), assessment.level)]),
            html.P("; ".join(assessment.reasons) or "healthy", className="reasons"),
            controller_card(health, own_events, now),
            html.H3("Nodes"),
            node_table(snapshot, health),
            *([gaps] if (gaps := watch_gaps(snapshot, health)) is not None else []),
            timeline_view(own_events),
        ],
        className="cluster",
    )


# --- alerts page -----------------------------------------------------------------------------------------

CONNECT_ALERTS = (
    "No Alertmanager or Prometheus is connected. Set `dashboard.alerts_url` in the ctlplane config "
    "(or pass `--alerts-url URL` to `ctlplane dashboard`) to an Alertmanager (reads /api/v2/alerts) "
    "or Prometheus (reads /api/v1/alerts) base URL, e.g. http://localhost:9093."
)


def _alert_row(alert: Alert, now: float) -> Component:
    level = Level.CRITICAL if alert.severity in PAGING_SEVERITIES else Level.WARN
    if alert.state in ("resolved", "suppressed"):
        level = Level.OK if alert.state == "resolved" else Level.UNKNOWN
    where = ", ".join(f"{k}={alert.labels[k]}" for k in ("cluster", "node", "broker") if k in alert.labels)
    since = format_duration(now - alert.starts_at) + " ago" if alert.starts_at is not None else DASH
    return html.Tr(
        [
            html.Td(badge(alert.state.upper(), level)),
            html.Td(alert.name),
            html.Td(alert.severity or DASH),
            html.Td(where or DASH),
            html.Td(alert.summary),
            html.Td(since),
            html.Td(html.A("runbook", href=alert.runbook_url, target="_blank") if alert.runbook_url else "no runbook"),
        ],
        className=f"alert-row level-{level}",
        style={"backgroundColor": LEVEL_COLOURS[level]},
        **{"data-alert": alert.name},  # type: ignore[arg-type]
    )


# A background read (alerts, pipeline outputs) is mentioned on the page once it has taken this long, so a
# normal refresh does not flicker.
WAITING_NOTICE_SECONDS = 2.0

ALERT_COLUMNS = ("state", "alert", "severity", "where", "summary", "since", "runbook")


def alerts_view(alerts: AlertsResult, now: float) -> Component:
    if alerts.url is None:
        return html.Div([html.H2("Alerts"), html.P(CONNECT_ALERTS, className="connect")], className="alerts")
    header = html.P(
        f"From {alerts.api or 'unknown API'} at {alerts.url}"
        + (f", read {format_duration(now - alerts.fetched_at)} ago" if alerts.fetched_at is not None else "")
    )
    parts: list[Component] = [html.H2("Alerts"), header]
    waiting = None if alerts.waiting_since is None else now - alerts.waiting_since
    if waiting is not None and (alerts.fetched_at is None or waiting >= WAITING_NOTICE_SECONDS):
        parts.append(html.P(f"Waiting {format_duration(waiting)} for {alerts.url} to answer"
                            + ("" if alerts.fetched_at is None else "; showing the last answer"),
                            className="alerts-waiting"))  # fmt: skip
    if alerts.error:
        parts.append(html.P(f"Could not read alerts: {alerts.error}", className="error",
                            style={"backgroundColor": LEVEL_COLOURS[Level.CRITICAL]}))  # fmt: skip
    for title, rows in (("Active", alerts.active), ("Recently resolved", alerts.recent)):
        parts.append(html.H3(f"{title} ({len(rows)})"))
        parts.append(
            html.Table(
                [
                    html.Thead(html.Tr([html.Th(c) for c in ALERT_COLUMNS])),
                    html.Tbody([_alert_row(a, now) for a in rows]),
                ],
                className="alerts-table",
            )
            if rows
            else html.P("none", className="empty")
        )
    return html.Div(parts, className="alerts")


# --- history page ----------------------------------------------------------------------------------------

PIPELINE_COMMANDS = (
    "ctlplane pipeline episodes --archive ARCHIVE_DIR --out HISTORY_DIR",
    "ctlplane pipeline sweep    --archive ARCHIVE_DIR --out HISTORY_DIR",
    "ctlplane pipeline report   --archive ARCHIVE_DIR --out HISTORY_DIR",
)


def _table(table: Table, limit: int) -> Component:
    return html.Table(
        [
            html.Thead(html.Tr([html.Th(c) for c in table.columns])),
            html.Tbody([html.Tr([html.Td(_cell(v)) for v in row]) for row in table.rows[:limit]]),
        ],
        className="history-table",
    )


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return "" if value is None else str(value)


def history_view(history: HistoryData, now: float, limit: int = 500) -> Component:
    parts: list[Component] = [html.H2("History")]
    reading = None if history.reading_since is None else now - history.reading_since
    if reading is not None and (history.read_at is None or reading >= WAITING_NOTICE_SECONDS):
        parts.append(html.P(f"Reading pipeline outputs under {history.directory} for {format_duration(reading)}"
                            + ("" if history.read_at is None else "; showing the last read"),
                            className="history-reading"))  # fmt: skip
        if history.read_at is None:
            return html.Div(parts, className="history")
    if history.episodes is None and history.sweep is None and history.daily is None:
        where = (
            f"No pipeline outputs under {history.directory} (expected episodes/, sweep/ or report/daily/)."
            if history.directory
            else "No history directory configured (`dashboard.history_dir` or `--history-dir`)."
        )
        parts += [html.P(where), html.P("Make them with the Spark pipeline:"),
                  html.Pre("\n".join(PIPELINE_COMMANDS), className="command")]  # fmt: skip
    if history.episodes is not None:
        parts += [html.H3(f"Episodes ({len(history.episodes.rows)})"), _table(history.episodes, limit)]
    if history.sweep is not None:
        parts += [html.H3(f"Threshold sweep ({len(history.sweep.rows)} rows)"), _table(history.sweep, limit)]
    if history.daily is not None:
        parts += [html.H3(f"Daily summary ({len(history.daily.rows)} rows)"), _table(history.daily, limit)]
    if history.errors:
        parts += [html.H3("Unreadable files"), html.Ul([html.Li(e) for e in history.errors])]
    return html.Div(parts, className="history")


# --- frame ----------------------------------------------------------------------------------------------


def status_line(
    observation: Observation, now: float, refresh_ms: int, error: str | None = None, exporters: int = 1
) -> str:
    """The footer: how old the round is, and what is wrong with the exporter(s) the page reads.

    With several exporters (a sharded fleet) the round numbers are theirs summed, so only the oldest
    round's age is shown, and `error` names the exporter it is about."""
    snapshot = observation.snapshot
    if snapshot.sequence == 0:
        text = "waiting for the first scrape round"
    elif exporters > 1:
        text = f"scrape rounds of {exporters} exporters, the oldest {format_duration(now - snapshot.taken_at)} old"
    else:
        text = f"scrape round #{snapshot.sequence}, {format_duration(now - snapshot.taken_at)} old"
    text += f" · refreshing every {refresh_ms / 1000:g} s"
    if not error:
        return text
    return text + (f" · {error}" if exporters > 1 else f" · exporter unreachable: {error}")


def nav_links(health: FleetHealth, prefix: str = "/") -> list[Component]:
    links: list[Component] = [dcc.Link("Fleet", href=prefix, className="nav")]
    links += [dcc.Link(c.name, href=f"{prefix}cluster/{c.name}", className="nav cluster-nav") for c in health.clusters]
    links += [dcc.Link("Alerts", href=f"{prefix}alerts", className="nav"),
              dcc.Link("History", href=f"{prefix}history", className="nav")]  # fmt: skip
    return links
