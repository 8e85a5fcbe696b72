"""Hand-built snapshots, health and observations for the dashboard's view tests."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

import plotly.utils  # type: ignore[import-untyped]  # plotly ships no type information
from dash.development.base_component import Component

from ctlplane.dashboard.trail import ClusterTrail, Trail
from ctlplane.exporter.catalog import Mode, Role
from ctlplane.exporter.health import BrokerHealth, ClusterHealth, ControllerView, FleetHealth, Lifecycle
from ctlplane.exporter.model import ClusterSnapshot, FleetSnapshot, NodeSnapshot, Sample
from ctlplane.exporter.state import Observation

T0 = 1_700_000_000.0


def node(
    name: str,
    role: Role = Role.BROKER,
    *,
    cluster: str = "c1",
    node_id: int | None = 1,
    up: bool = True,
    at: float = T0,
    mode: Mode = Mode.KRAFT,
    **values: float,
) -> NodeSnapshot:
    samples = tuple(Sample(series, (), value) for series, value in values.items())
    return NodeSnapshot(
        cluster,
        name,
        f"127.0.0.1:{9000 + (node_id or 0)}",
        role,
        mode,
        node_id,
        "4.3.1",
        up,
        0.01,
        None if up else "connection refused",
        0 if up else 1,
        at,
        samples,
    )


def broker(
    name: str,
    state: Lifecycle = Lifecycle.ACTIVE,
    *,
    cluster: str = "c1",
    node_id: int | None = 1,
    lag_records: float | None = 0.0,
    lag_seconds: float | None = 0.1,
    stale: bool = False,
    frozen: bool = False,
    listener: bool | None = None,
    saturated: bool = False,
) -> BrokerHealth:
    up = state is not Lifecycle.UNREACHABLE
    evidence = "controller BrokerRegistrationState=30" if up else "JMX: connection refused"
    if state is Lifecycle.FENCED:
        evidence = "controller BrokerRegistrationState=10"
    return BrokerHealth(
        cluster,
        name,
        Role.BROKER,
        node_id,
        up,
        state,
        evidence,
        lag_records if up else None,
        lag_seconds if up else None,
        stale,
        frozen,
        listener,
        None,
        saturated,
    )


def controller(
    claimants: tuple[str, ...] = ("ctl-1",),
    *,
    node_id: int | None = 100,
    epoch: float | None = 5.0,
    failovers: int = 0,
    last_failover_at: float | None = None,
    reachable: int = 1,
) -> ControllerView:
    active = max(claimants) if claimants else None
    return ControllerView(claimants, active, node_id if active else None, epoch, failovers, last_failover_at, reachable)


def cluster_health(
    name: str = "c1",
    brokers: tuple[BrokerHealth, ...] = (),
    view: ControllerView | None = None,
    mode: Mode | None = Mode.KRAFT,
    at: float = T0,
) -> ClusterHealth:
    return ClusterHealth(name, mode, view or controller(), brokers, at)


def observation(
    clusters: tuple[tuple[ClusterSnapshot, ClusterHealth], ...], *, at: float = T0, sequence: int = 1
) -> Observation:
    return Observation(
        FleetSnapshot(sequence, at, 0.1, tuple(c for c, _ in clusters)),
        FleetHealth(tuple(h for _, h in clusters)),
    )


def trail_of(window: Sequence[Observation], cluster: str = "c1") -> ClusterTrail:
    """What the dashboard keeps of `window` for one cluster (rounds numbered 1, 2, ... in order)."""
    trail = Trail()
    for sequence, item in enumerate(window, start=1):
        trail.add(replace(item, snapshot=replace(item.snapshot, sequence=sequence)))
    return trail.cluster(cluster)


def as_dict(component: Component | Any) -> Any:
    """A component tree as plain JSON data, the form Dash sends to the browser."""
    return json.loads(json.dumps(component, cls=plotly.utils.PlotlyJSONEncoder))


def texts(tree: Any) -> Iterator[str]:
    """The visible text of a component tree (string children), depth first."""
    if isinstance(tree, str):
        yield tree
    elif isinstance(tree, dict):
        yield from texts(tree.get("props", {}).get("children"))
    elif isinstance(tree, list):
        for value in tree:
            yield from texts(value)


def find(tree: Any, **props: Any) -> list[dict[str, Any]]:
    """Every component in the tree whose props include all of `props`."""
    found: list[dict[str, Any]] = []
    if isinstance(tree, dict):
        if "props" in tree and all(tree["props"].get(k) == v for k, v in props.items()):
            found.append(tree)
        for value in tree.values():
            found.extend(find(value, **props))
    elif isinstance(tree, list):
        for value in tree:
            found.extend(find(value, **props))
    return found
