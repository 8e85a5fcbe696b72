"""The alerts page: what Alertmanager (or Prometheus) says is firing, and how to connect one."""

from __future__ import annotations

from dash import html
from dash.development.base_component import Component

from ctlplane.dashboard.source import Alert, AlertsResult
from ctlplane.dashboard.views.common import DASH, LEVEL_COLOURS, PAGING_SEVERITIES, Level, badge, data, format_duration

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
        **data(alert=alert.name),
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
