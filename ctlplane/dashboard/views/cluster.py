"""The cluster page: the controller card, the node table, what is not watched, the graphs and the timeline."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from dash import dcc, html
from dash.development.base_component import Component

from ctlplane.dashboard.source import AlertsResult
from ctlplane.dashboard.timeline import EVENT_SEVERITY, Event, EventKind, rolls
from ctlplane.dashboard.trail import ClusterTrail, Line
from ctlplane.dashboard.views.common import (
    DASH,
    LEVEL_COLOURS,
    MODE_NAMES,
    STATE_LEVELS,
    Figure,
    Level,
    assess_cluster,
    badge,
    data,
    format_duration,
    format_number,
    format_ratio,
    format_time,
    iso,
    lag_cell,
)
from ctlplane.exporter.catalog import Role
from ctlplane.exporter.health import BrokerHealth, ClusterHealth
from ctlplane.exporter.health.model import QuorumMember, Redundancy, RestartSafety, VoterSet
from ctlplane.exporter.model import ClusterSnapshot, Failure, NodeSnapshot
from ctlplane.exporter.state import Observation


def _redundancy_text(redundancy: Redundancy) -> str:
    """ "3 voters, 2 caught up: no spare voter" - what KafkaQuorumNoSpareVoter warns of, in the card."""
    spare = redundancy.spare
    verdict = (
        f"survives {spare} more voter failure{'s' if spare > 1 else ''}"
        if spare > 0
        else "no spare voter"
        if spare == 0
        else "no majority caught up"
    )
    source = "" if redundancy.source == "quorum" else " (from the controllers' JMX)"
    return f"{redundancy.voters} voters, {redundancy.caught_up} caught up: {verdict}{source}"


def _voter_facts(voters: VoterSet) -> list[tuple[str, str]]:
    """The voter set ("101 (dir mvAHqnKg…), 102 …") and the observer controllers beside it, for the card."""

    def named(member: QuorumMember) -> str:
        details = [f"id {member.node_id}"] if member.node_id is not None else []
        if member.directory_id:
            details.append(f"dir {member.directory_id[:8]}…")
        return f"{member.node} ({', '.join(details)})" if details else member.node

    def voter(member: QuorumMember) -> str:
        return named(member) + (" behind" if member.caught_up is False else "")

    facts = [("voters", ", ".join(voter(m) for m in voters.voters) or "none")]
    if voters.observers:
        facts.append(
            (
                "observer controllers",
                "; ".join(
                    f"{named(m)} outside the voter set for {format_duration(m.observer_seconds)}"
                    for m in voters.observers
                )
                + " (kafka-metadata-quorum add-controller adds one)",
            )
        )
    return facts


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
        *((("quorum", _redundancy_text(cluster.redundancy)),) if cluster.redundancy is not None else ()),
        *(_voter_facts(cluster.voter_set) if cluster.voter_set is not None else ()),
        ("epoch", format_number(controller.epoch) if controller.epoch is not None else "not exposed"),
        ("claimants", ", ".join(controller.claimants) or "none"),
        ("reachable controllers", str(controller.reachable_controllers)),
        ("failovers seen", str(controller.failovers_total)),
        (
            "last failover",
            f"{format_duration(now - controller.last_failover_at)} ago ({iso(controller.last_failover_at)} UTC)"
            if controller.last_failover_at is not None
            else "none seen",
        ),
    ]
    history = [e for e in events if e.cluster == cluster.name and e.kind in (
        EventKind.ELECTION, EventKind.NO_CONTROLLER, EventKind.SPLIT_BRAIN, EventKind.CONTROLLER_RESTORED,
        EventKind.VOTER_ADDED, EventKind.VOTER_REMOVED)]  # fmt: skip
    return html.Div(
        [
            html.H3("Active controller"),
            html.Div(
                identity,
                className=f"controller-identity level-{assessment}",
                style={"backgroundColor": LEVEL_COLOURS[assessment]},
                **data(controller=controller.node or ""),
            ),
            html.Dl([item for key, value in facts for item in (html.Dt(key), html.Dd(value))]),
            html.H4("Failovers and voter changes (this window)"),
            html.Ul([html.Li(f"{format_time(e.at)} {e.detail}") for e in history[:20]])
            if history
            else html.P("no controller or voter changes in the window"),
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
    "restart now",
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
    if not node.served:  # a node read at its own pace: its last page's
        return None
    value = node.value(series)
    if value is None and node.role is Role.CONTROLLER:
        value = node.value(twin)
    return value


def _restart_cell(answer: RestartSafety | None) -> Component:
    """May it be restarted now (ctlplane/exporter/health/restart.py): yes, or wait and why. Plain text, not a
    badge: the row's one badge is its lifecycle state."""
    if answer is None:
        return html.Td(DASH, className="restart")
    if answer.safe:
        return html.Td("yes", className="restart", title=answer.reason)
    why = (answer.blocker or "").replace("_", " ")
    return html.Td(
        [html.Strong("wait", className="restart-wait"), f": {why}"], className="restart", title=answer.reason
    )


def _read_cell(node: NodeSnapshot | None, taken_at: float | None) -> Component:
    """Whether this round read the node ("paced": its page takes longer than a round, its last one shown;
    "REFUSED": it answered and refused ctlplane's credentials) and, where not, the age of its last successful
    read."""
    if node is None:
        return html.Td(DASH, className="read")
    text = "yes" if node.up else "paced" if node.held else "REFUSED" if node.failure is Failure.AUTH else "NO"
    if not node.up and taken_at is not None and node.last_read_at is not None:
        text += f", read {format_duration(taken_at - node.last_read_at)} ago"
    return html.Td(text, className="read", title=node.error or "")


def _flags(broker: BrokerHealth) -> list[Component]:
    """A broker's warnings beside its state: stale or frozen metadata, a saturated control plane, the views
    disagreeing."""
    flags: list[Component] = []
    behind = broker.canary_unserved_seconds
    if broker.stale and behind:
        # the metadata canary's change unserved (docs/canary.md): how long, beside the word
        flags.append(badge(f"STALE (canary {behind:.0f} s)", Level.WARN, canary="behind"))
    elif broker.stale:
        flags.append(badge("STALE", Level.WARN))
    if broker.frozen:
        flags.append(badge("FROZEN", Level.WARN))
    if broker.control_plane_saturated:
        flags.append(badge("SATURATED", Level.WARN))
    if broker.views_disagree:
        # the quorum's view decided against the node's own JMX (docs/configuration.md "The quorum's view")
        flags.append(badge("VIEWS DISAGREE", Level.WARN, views_disagree="true"))
    return flags


def _identity_and_state(
    node: NodeSnapshot | None, broker: BrokerHealth | None
) -> tuple[str, Role, int | None, str, Level, str]:
    """A row's node label, role and id, and its state, level and evidence: a broker's from its health, a
    controller's from whether it answered."""
    if broker is not None:
        state, level, evidence = str(broker.state), STATE_LEVELS[broker.state], broker.evidence
        return broker.node, broker.role, broker.node_id, state, level, evidence
    assert node is not None, "a row of a node read or of a broker's health"
    if not node.up:
        return node.node, node.role, node.node_id, "UNREACHABLE", Level.CRITICAL, f"JMX: {node.error}"
    return node.node, node.role, node.node_id, "CONTROLLER", Level.OK, "controller-only node (no broker lifecycle)"


def _node_row(
    cluster: str,
    node: NodeSnapshot | None,
    broker: BrokerHealth | None,
    active: str | None,
    url_prefix: str | None,
    restart: RestartSafety | None = None,
    taken_at: float | None = None,
) -> Component:
    """A node's row; `node` None for a broker watched through the Admin API alone (its health is all there is
    of it). `taken_at`: the snapshot's time, which the age of a node's last read is counted to."""
    label, node_role, node_id, state, level, evidence = _identity_and_state(node, broker)
    role = [html.Span(node_role.value, className="role")]
    if label == active:
        role.append(badge("active controller", Level.OK, active_controller="true"))
    flags: list[Component] = _flags(broker) if broker is not None else []
    queues = [control_plane_value(node, series, twin) if node is not None else None for series, twin in CP_TWINS]
    source = broker.metadata_lag_source if broker is not None else None
    cause = broker.cause if broker is not None else None
    # the cause first, in words (ctlplane/exporter/health/cause.py), then the evidence it rests on
    why: list[Component | str] | str = (
        [html.Strong(cause.value.replace("_", " "), className="cause"), ": ", evidence] if cause else evidence
    )
    name: Component | str = label + (f" (id {node_id})" if node_id is not None else "")
    if broker is not None and url_prefix is not None:
        name = dcc.Link(name, href=f"{url_prefix}cluster/{cluster}/broker/{label}")
    return html.Tr(
        [
            html.Td(name, className="node"),
            html.Td(role, className="role-cell"),
            html.Td(badge(state, level), className="state"),
            html.Td(why, className="evidence"),
            lag_cell(format_number(broker.metadata_lag_records if broker else None), source),
            lag_cell(format_number(broker.metadata_lag_seconds if broker else None, digits=1), source),
            html.Td(flags or DASH),
            html.Td(format_number(queues[0])),
            html.Td(format_number(queues[1])),
            html.Td(format_ratio(queues[2])),
            html.Td(format_ratio(queues[3])),
            _restart_cell(restart),
            _read_cell(node, taken_at),
        ],
        className=f"node-row level-{level}",
        style={"backgroundColor": LEVEL_COLOURS[level]},
        **data(
            node=label,
            role=node_role.value,
            state=state,
            cause=cause.value if cause else "",
            restart="" if restart is None else "safe" if restart.safe else restart.blocker or "",
        ),
    )


def node_table(
    snapshot: ClusterSnapshot,
    health: ClusterHealth,
    url_prefix: str | None = None,
    only: str | None = None,
    taken_at: float | None = None,
) -> Component:
    """Every node of the cluster (`only`: that one): brokers with their lifecycle, controllers with their
    identity. With `url_prefix`, a broker's name links to its page; with `taken_at` (the fleet snapshot's
    time), an unread node's row says how old its last read is."""
    listed: list[tuple[str, NodeSnapshot | None, BrokerHealth | None]] = (
        # the Admin API alone: no node read, the cluster's word on each broker
        [(broker.node, None, broker) for broker in health.brokers]
        if snapshot.admin_only
        else [(node.node, node, health.broker(node.node)) for node in snapshot.nodes]
    )
    rows = [
        _node_row(
            snapshot.name, node, broker, health.controller.node, url_prefix, health.restart_answer(name), taken_at
        )
        for name, node, broker in listed
        if only is None or name == only
    ]
    # in a box of its own that scrolls where the window is narrower than the table: the page keeps its width
    table = html.Table(
        [html.Thead(html.Tr([html.Th(c) for c in NODE_COLUMNS])), html.Tbody(rows)],
        className="node-table",
    )
    return html.Div(table, className="table-scroll")


def watch_gaps(snapshot: ClusterSnapshot, health: ClusterHealth) -> Component | None:
    """What the cluster has that ctlplane does not read, and what it reads that the cluster does not have
    (docs/configuration.md "No node unwatched"); None when there is neither."""
    rows = [
        html.Li(
            f"node id {member.node_id} ({member.role.value}{f', {member.host}' if member.host else ''}): named by "
            "the cluster, not read by ctlplane (not listed, or its JMX address rule does not reach it)",
            **data(gap="unwatched"),
        )
        for member in snapshot.unwatched()
    ]
    rows += [
        html.Li(
            f"{node.node} (id {node.node_id}, {node.address}): read by ctlplane, but the cluster's answers do not "
            f"name node id {node.node_id} (another cluster's node?)",
            **data(gap="unknown"),
        )
        for node in snapshot.unknown()
    ]
    if health.fenced_unnamed:
        rows.append(
            html.Li(
                f"the controller counts {health.fenced_unnamed} fenced broker(s) that no node ctlplane reads is",
                **data(gap="fenced-unnamed"),
            )
        )
    rows += [
        html.Li(f"{unknown.words}: unknown, no source serves {unknown.lacks}", **data(gap="unread"))
        for unknown in health.unknown
    ]
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
        "x": [iso(at) for at, _ in points],
        "y": [value for _, value in points],
        "line": {"dash": dash},
        "yaxis": yaxis,
    }


# A graph's plot area in pixels, and a row of its legend below it: the legend is given room of its own (two
# entries a row, what a graph half as wide as a 1280-pixel window fits), so it never covers the time axis
PLOT_HEIGHT, LEGEND_ROW = 220, 20


def _figure(title: str, traces: list[Figure], yaxis: dict[str, Any], extra: dict[str, Any] | None = None) -> Figure:
    """A time chart: UTC clock times on the x axis (the section says UTC), the legend below the axis in a band
    sized by its entries, and margins that grow to fit every axis' tick labels (a second y axis' too)."""
    if not traces:
        return _empty_figure(title, "no samples in the window")
    legend = LEGEND_ROW * math.ceil(len(traces) / 2)
    layout: dict[str, Any] = {
        "title": {"text": title},
        # the first and last time labels stand clear of the y axes' lowest labels at the plot's corners
        "xaxis": {
            "type": "date",
            # clock times; milliseconds where the ticks are closer than a second (a window of a round or two)
            "tickformatstops": [
                {"dtickrange": [None, 1000], "value": "%H:%M:%S.%L"},
                {"dtickrange": [1000, None], "value": "%H:%M:%S"},
            ],
            "automargin": True,
            "ticklabelstandoff": 8,
        },
        "yaxis": {**yaxis, "automargin": True},
        "height": PLOT_HEIGHT + 80 + legend,
        "margin": {"l": 60, "r": 20, "t": 40, "b": 40 + legend},
        # in the plot area's units: 30 px under it, below the tick labels
        "legend": {"orientation": "h", "x": 0, "xanchor": "left", "y": -30 / PLOT_HEIGHT, "yanchor": "top"},
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
        {
            "yaxis2": {
                "title": {"text": "seconds"},
                "overlaying": "y",
                "side": "right",
                "rangemode": "tozero",
                "automargin": True,
            }
        },
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
            **data(kind=str(e.kind), node=e.node or ""),
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
            html.P("Times in UTC.", className="graphs-note"),
            html.Div(
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
            ),
        ]
    )


def cluster_view(
    name: str,
    observation: Observation,
    events: Sequence[Event],
    alerts: AlertsResult,
    now: float,
    url_prefix: str | None = None,
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
            node_table(snapshot, health, url_prefix, taken_at=observation.snapshot.taken_at),
            *([gaps] if (gaps := watch_gaps(snapshot, health)) is not None else []),
            timeline_view(rolls(own_events)),
        ],
        className="cluster",
    )
