"""A broker's page: its row, and round by round for the window what its JMX, the controller and the quorum
said, as runs of rounds that read alike. It is where a page's `dashboard_url` leads: the evidence a person
reads to believe the page (or not)."""

from __future__ import annotations

from collections.abc import Sequence

from dash import dcc, html
from dash.development.base_component import Component

from ctlplane.dashboard.timeline import Event
from ctlplane.dashboard.trail import EvidenceRun
from ctlplane.dashboard.views.cluster import node_table, timeline_view
from ctlplane.dashboard.views.common import STATE_LEVELS, badge, data, format_duration, format_time
from ctlplane.exporter.health.cause import CAUSE_TEXT
from ctlplane.exporter.model import CANARY_BUCKETS, CanaryView, Failure
from ctlplane.exporter.state import Observation

RUN_COLUMNS = ("from", "to", "rounds", "state", "cause", "JMX", "decided by", "evidence (last round)")
JMX_SAID = {
    None: "answered",
    Failure.GONE: "refused",
    Failure.TIMEOUT: "timed out",
    Failure.AUTH: "credentials refused",
    Failure.OTHER: "failed",
}
DECIDED_BY = {"jmx": "its own JMX and the controller's", "quorum": "the quorum's view (Admin API)"}


def _run_row(run: EvidenceRun) -> Component:
    cause: list[Component | str] = ["-"]
    if run.cause is not None:
        cause = [html.Strong(CAUSE_TEXT[run.cause].phrase, className="cause"), f" ({run.cause.value})"]
    decided = DECIDED_BY.get(run.decided_by, run.decided_by) + (" (the views disagree)" if run.views_disagree else "")
    return html.Tr(
        [
            html.Td(format_time(run.first)),
            html.Td(format_time(run.last)),
            html.Td(str(run.rounds)),
            html.Td(badge(str(run.state), STATE_LEVELS[run.state])),
            html.Td(cause),
            html.Td(JMX_SAID.get(run.jmx_failure, str(run.jmx_failure))),
            html.Td(decided),
            html.Td(run.evidence, className="evidence"),
        ],
        className="evidence-run",
        **data(state=str(run.state), cause=run.cause.value if run.cause else ""),
    )


def evidence_runs(runs: Sequence[EvidenceRun]) -> Component:
    """Newest first: each run of rounds that read alike, with the last round's evidence."""
    if not runs:
        return html.P("no rounds in the window yet", className="empty")
    return html.Table(
        [html.Thead(html.Tr([html.Th(c) for c in RUN_COLUMNS])), html.Tbody([_run_row(r) for r in reversed(runs)])],
        className="evidence-runs",
    )


def _bucket_label(upper: float | None, lower: float | None) -> str:
    if upper is None:
        return f"over {lower:g} s"
    return f"≤ {upper:g} s" if lower is None else f"{lower:g}-{upper:g} s"


def canary_view(canary: CanaryView | None, node_id: int | None, now: float) -> Component | None:
    """The metadata canary's word on this broker (docs/canary.md): whether it serves the latest change, and
    how long each change it served took to reach it, as counts per bucket of the propagation histogram
    (kafka_broker_metadata_canary_propagation_seconds). None where the cluster has no canary."""
    if canary is None:
        return None
    answers = canary.broker(node_id)
    parts: list[Component] = [html.H3("Metadata canary")]
    if answers is None:
        parts.append(
            html.P("not asked yet: the canary has made no change since this broker was listed", className="empty")
        )
        return html.Div(parts, className="canary", **data(canary="unasked"))
    unserved = answers.unserved_seconds(now)
    if unserved is None:
        said, state = f"no answer: {answers.error or 'not reached'}", "unanswered"
    elif unserved > 0:
        said, state = f"answers without the latest change ({canary.topic}) for {format_duration(unserved)}", "behind"
    else:
        said, state = f"serves the latest change ({canary.topic})", "served"
    parts.append(html.P(said, className="canary-said"))
    served = answers.buckets[-1] if answers.buckets else 0
    if served:
        # cumulative counts per upper bound (+Inf last) -> how many changes fell in each bucket
        counts = [b - a for a, b in zip((0, *answers.buckets[:-1]), answers.buckets, strict=True)]
        uppers: list[float | None] = [*CANARY_BUCKETS, None]
        lowers: list[float | None] = [None, *CANARY_BUCKETS]
        shown = [
            (label, n)
            for label, n in ((_bucket_label(u, lo), n) for u, lo, n in zip(uppers, lowers, counts, strict=True))
            if n
        ]
        parts.append(
            html.Table(
                [
                    html.Thead(html.Tr([html.Th("served within"), *(html.Th(label) for label, _ in shown)])),
                    html.Tbody(html.Tr([html.Td(f"{served} changes, mean {answers.seconds_total / served:.2f} s"),
                                        *(html.Td(str(n)) for _, n in shown)])),
                ],
                className="canary-propagation",
            )
        )  # fmt: skip
    else:
        parts.append(html.P("no change served yet", className="empty"))
    return html.Div(parts, className="canary", **data(canary=state))


def broker_view(
    cluster: str,
    node: str,
    observation: Observation,
    runs: Sequence[EvidenceRun],
    events: Sequence[Event],
    now: float,
    url_prefix: str,
) -> Component:
    health = observation.health.cluster(cluster)
    snapshot = observation.snapshot.cluster(cluster)
    broker = health.broker(node) if health is not None else None
    back = dcc.Link(f"cluster {cluster}", href=f"{url_prefix}cluster/{cluster}")
    unread = snapshot is not None and snapshot.node(node) is None and not snapshot.admin_only
    if health is None or snapshot is None or broker is None or unread:
        return html.Div(
            [
                html.H2(node),
                html.P([f"No broker {node!r} in cluster {cluster!r} this round. ", back], className="empty"),
            ]
        )
    since = f" for {format_duration(now - runs[-1].first)}" if runs else ""
    return html.Div(
        [
            html.H2([f"{node} ", badge(str(broker.state), STATE_LEVELS[broker.state]), since]),
            html.P(["in ", back]),
            node_table(snapshot, health, only=node, taken_at=observation.snapshot.taken_at),
            html.H3("Round by round"),
            html.P(
                "What its JMX answered, who decided its state and why, for each run of rounds that read alike "
                "in the dashboard's window (dashboard.window_seconds), newest first.",
                className="hint",
            ),
            evidence_runs(runs),
            canary_view(snapshot.canary, broker.node_id, observation.snapshot.taken_at),
            timeline_view([e for e in events if e.node == node]),
        ],
        className="broker",
        **data(node=node),
    )
