"""The self-contained HTML report: Plotly charts (with plotly.js inlined) over the daily tables."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from datetime import date, datetime, time, timedelta
from typing import Any

import plotly.graph_objects as go  # type: ignore[import-untyped]  # plotly ships no type information
from plotly.offline import get_plotlyjs  # type: ignore[import-untyped]  # plotly ships no type hints

from ctlplane.pipeline.rules import Kind

Row = Mapping[str, Any]


def _figure_html(figure: go.Figure) -> str:
    return str(figure.to_html(full_html=False, include_plotlyjs=False))


def _episodes_by_kind(daily: Sequence[Row]) -> go.Figure:
    figure = go.Figure()
    x = [f"{r['date']} {r['cluster']}" for r in daily]
    for kind in Kind:
        figure.add_bar(name=kind.value, x=x, y=[r[kind.value] for r in daily])
    figure.update_layout(barmode="stack", title="Episodes per day and cluster, by kind", yaxis_title="episodes")
    return figure


DAY_MS = 86_400_000


def _day_axis(days: Sequence[date]) -> dict[str, Any]:
    """A time axis in whole days: half a day of room either side of the first and last (one day alone would
    otherwise be drawn a millisecond wide, 23:59:59.999 to 00:00:00.001), a tick a day over two weeks or less,
    dates without a time of day."""
    first, last = min(days), max(days)
    axis: dict[str, Any] = {
        "type": "date",
        "range": [
            (datetime.combine(first, time()) - timedelta(hours=12)).isoformat(),
            (datetime.combine(last, time()) + timedelta(hours=12)).isoformat(),
        ],
        "tickformat": "%Y-%m-%d",
    }
    if (last - first).days <= 14:
        axis["dtick"] = DAY_MS
    return axis


def _per_cluster_lines(daily: Sequence[Row], column: str, title: str, unit: str) -> go.Figure:
    figure = go.Figure()
    for cluster in sorted({r["cluster"] for r in daily}):
        rows = [r for r in daily if r["cluster"] == cluster]
        figure.add_scatter(
            name=cluster, x=[str(r["date"]) for r in rows], y=[r[column] for r in rows], mode="lines+markers"
        )
    figure.update_layout(title=title, yaxis_title=unit)
    if daily:
        figure.update_layout(xaxis=_day_axis([_as_date(r["date"]) for r in daily]))
    return figure


def _as_date(value: object) -> date:
    # the daily table's date column: a date from Spark, its ISO text from a reader that kept strings
    return value if isinstance(value, date) else date.fromisoformat(str(value))


def _table(rows: Sequence[Row], columns: Sequence[str]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(_cell(r[c]))}</td>" for c in columns) + "</tr>" for r in rows)
    # a table wider than the window scrolls in its own box: the page and its charts keep the window's width
    return f"<div class='table'><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def render_report(daily: Sequence[Row], worst: Sequence[Row]) -> str:
    """One HTML page that needs no network: the charts' JavaScript is embedded."""
    charts = [
        _episodes_by_kind(daily),
        _per_cluster_lines(daily, "mttr_minutes", "Mean time to recover (episodes, churn excluded)", "minutes"),
        _per_cluster_lines(daily, "max_lag_records", "Worst metadata lag per day", "records"),
        _per_cluster_lines(daily, "unreachable_ratio", "Share of node scrapes that failed", "ratio"),
    ]
    summary_columns = ["date", "cluster", "episodes", *(k.value for k in Kind), "mttr_minutes", "max_lag_records"]
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>ctlplane control-plane history</title>"
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;font-size:13px}"
        "td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}div.table{overflow-x:auto}</style>"
        f"<script type='text/javascript'>{get_plotlyjs()}</script></head><body>"
        "<h1>Control-plane history</h1>"
        + "".join(_figure_html(chart) for chart in charts)
        + "<h2>Daily summary</h2>"
        + _table(daily, summary_columns)
        + "<h2>Worst nodes per day</h2>"
        + _table(worst, ["date", "cluster", "rank", "node", "episodes", "episode_minutes"])
        + "</body></html>"
    )
