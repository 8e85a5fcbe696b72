"""The frame around every page: the status line and the navigation."""

from __future__ import annotations

from dash import dcc
from dash.development.base_component import Component

from ctlplane.dashboard.views.common import format_duration
from ctlplane.exporter.health import FleetHealth
from ctlplane.exporter.state import Observation


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
