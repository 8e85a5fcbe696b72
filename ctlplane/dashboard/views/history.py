"""The history page: the Spark pipeline's tables."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from dash import html
from dash.development.base_component import Component

from ctlplane.dashboard.source import HistoryData, Table
from ctlplane.dashboard.views.alerts import WAITING_NOTICE_SECONDS
from ctlplane.dashboard.views.common import format_duration

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
