"""What every page shares: levels and their colours, formatting, badges, the simulated-cluster banner and a
cluster's assessment."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from dash import html
from dash.development.base_component import Component

from ctlplane.dashboard.source import Alert
from ctlplane.exporter.catalog import Mode
from ctlplane.exporter.health import ClusterHealth, Lifecycle
from ctlplane.exporter.model import ClusterSnapshot, FleetSnapshot

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


def iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%S")


def format_number(value: float | None, unit: str = "", digits: int = 0) -> str:
    if value is None or not math.isfinite(value):
        return DASH
    return f"{value:.{digits}f}{unit}"


def format_ratio(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return DASH
    return f"{value * 100:.0f}%"


def data(**attributes: str) -> dict[str, Any]:
    """HTML data-* attributes for a Dash component: `**data(node="b1", lag_source="jmx")` gives `data-node` and
    `data-lag-source`. Dash accepts any data-* prop at run time, but its generated signatures name none, so an
    unpacked `dict[str, str]` is checked against every typed prop (n_clicks, hidden...): these go in as Any."""
    return {f"data-{name.replace('_', '-')}": value for name, value in attributes.items()}


def lag_cell(text: str, source: str | None) -> html.Td:
    """A metadata lag figure, saying where it came from: where JMX could not say it is the quorum leader's
    view of what the broker fetched (docs/configuration.md "The quorum's view")."""
    if source is None:
        return html.Td(text)
    extra = data(lag_source=source)
    if source != "jmx":
        extra["title"] = "from the quorum's view (describeMetadataQuorum): JMX could not say"
    return html.Td(text, **extra)


def badge(text: str, level: Level, **flags: str) -> html.Span:
    """A coloured label; `flags` become data-* attributes (`active_controller="true"`)."""
    return html.Span(
        text, className=f"badge level-{level}", style={"backgroundColor": LEVEL_COLOURS[level]}, **data(**flags)
    )


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
    if cluster.redundancy is not None and cluster.redundancy.spare <= 0:
        reasons.append((Level.WARN, "the metadata quorum has no spare voter"))
    if cluster.fenced_unnamed:
        # the controller counts fenced brokers ctlplane cannot name (KafkaFencedBrokerUnnamed pages after its for:)
        reasons.append((Level.WARN, f"{cluster.fenced_unnamed} fenced broker(s) ctlplane cannot name"))
    for unknown in cluster.unknown:
        # no source serves its evidence: unknown, never healthy (health/unknown.py)
        reasons.append((Level.UNKNOWN, f"{unknown.words} unknown"))
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
