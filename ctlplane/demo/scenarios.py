"""Fault scenarios and their scripts: which scenario a cluster is in at any moment, and the control history.

A cluster's script is a time-ordered tuple of `ScenarioChange`s. Everything the simulator serves is a
pure function of (shape, script, seed, t), so a scenario replays identically for a seed, and counters
that rise during a scenario are integrals over the script's segments (they never go backwards).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum

from ctlplane.demo.shapes import ClusterSpec, NodeSpec
from ctlplane.exporter.catalog import Mode


class Scenario(StrEnum):
    HEALTHY = "healthy"
    FENCED_BROKER = "fenced-broker"
    UNREACHABLE_BROKER = "unreachable-broker"
    STALE_METADATA = "stale-metadata"
    CONTROLLER_FAILOVER = "controller-failover"
    NO_ACTIVE_CONTROLLER = "no-active-controller"
    TWO_ACTIVE_CONTROLLERS = "two-active-controllers"
    CONTROL_PLANE_BACKLOG = "control-plane-backlog"
    EXPIRED_CONTROL_PLANE_CONNECTIONS = "expired-control-plane-connections"
    HEARTBEAT_TIMEOUTS = "heartbeat-timeouts"
    CONTROLLER_EVENT_QUEUE_BACKLOG = "controller-event-queue-backlog"


BOTH = frozenset({Mode.ZOOKEEPER, Mode.KRAFT})
# KIP-631 fencing and broker heartbeats exist only in KRaft; the KIP-291 listener only in ZooKeeper mode.
SCENARIO_MODES: dict[Scenario, frozenset[Mode]] = {
    Scenario.HEALTHY: BOTH,
    Scenario.FENCED_BROKER: frozenset({Mode.KRAFT}),
    Scenario.UNREACHABLE_BROKER: BOTH,
    Scenario.STALE_METADATA: BOTH,
    Scenario.CONTROLLER_FAILOVER: BOTH,
    Scenario.NO_ACTIVE_CONTROLLER: BOTH,
    Scenario.TWO_ACTIVE_CONTROLLERS: BOTH,
    Scenario.CONTROL_PLANE_BACKLOG: frozenset({Mode.ZOOKEEPER}),
    Scenario.EXPIRED_CONTROL_PLANE_CONNECTIONS: frozenset({Mode.ZOOKEEPER}),
    Scenario.HEARTBEAT_TIMEOUTS: frozenset({Mode.KRAFT}),
    Scenario.CONTROLLER_EVENT_QUEUE_BACKLOG: BOTH,
}
# Scenarios aimed at one broker; the others act on the cluster (or its active controller).
BROKER_TARGETED = frozenset(
    {
        Scenario.FENCED_BROKER,
        Scenario.UNREACHABLE_BROKER,
        Scenario.STALE_METADATA,
        Scenario.CONTROL_PLANE_BACKLOG,
        Scenario.EXPIRED_CONTROL_PLANE_CONNECTIONS,
    }
)


class ScenarioError(ValueError):
    """A scenario that cannot apply to the named cluster or node."""


@dataclass(frozen=True)
class ScenarioChange:
    at: float  # unix time from which the scenario holds
    scenario: Scenario
    node: str | None = None  # target node name, for broker-targeted scenarios


def resolve_change(cluster: ClusterSpec, scenario: str, node: str | None, at: float) -> ScenarioChange:
    """Validate a requested scenario for a cluster and pick its default target node."""
    try:
        chosen = Scenario(scenario)
    except ValueError:
        raise ScenarioError(f"unknown scenario {scenario!r}; known: {', '.join(s.value for s in Scenario)}") from None
    if cluster.mode not in SCENARIO_MODES[chosen]:
        raise ScenarioError(f"{chosen} does not apply to {cluster.mode.value}-mode cluster {cluster.name}")
    if node is not None:
        target = cluster.node(node)
        if target is None:
            raise ScenarioError(f"cluster {cluster.name} has no node {node!r}")
        if chosen in BROKER_TARGETED and target not in cluster.brokers and chosen is not Scenario.UNREACHABLE_BROKER:
            raise ScenarioError(f"{chosen} needs a broker; {node} is a {target.role.value}")
        return ScenarioChange(at, chosen, node)
    if chosen in BROKER_TARGETED:
        return ScenarioChange(at, chosen, cluster.brokers[-1].name)
    return ScenarioChange(at, chosen, None)


def current_change(script: Sequence[ScenarioChange], t: float) -> ScenarioChange | None:
    """The change in force at `t` (the script is ordered by time)."""
    active = None
    for change in script:
        if change.at > t:
            break
        active = change
    return active


@dataclass(frozen=True)
class Segment:
    """A stretch of time with one scenario and one controller arrangement."""

    start: float
    end: float
    scenario: Scenario
    target: str | None
    leader: NodeSpec | None  # the active controller (the highest epoch if two claim)
    stale_leader: NodeSpec | None  # split brain: an old leader still claiming, one epoch behind
    epoch: int
    elections: int  # leader elections so far (NewActiveControllersCount)


def _initial_leader_index(cluster: ClusterSpec, seed: int) -> int:
    return seed % len(cluster.controllers)


def segments(
    cluster: ClusterSpec, script: Sequence[ScenarioChange], seed: int, origin: float, t: float
) -> Iterator[Segment]:
    """Fold the script up to `t` into segments; leader, epoch and elections change only at boundaries.

    controller-failover moves leadership to the next controller (epoch + 1, one election);
    no-active-controller leaves the quorum leaderless (a vote raises the epoch) and elects the next
    controller when it ends; two-active-controllers elects a new leader while the old one keeps claiming.
    """
    controllers = cluster.controllers
    index = _initial_leader_index(cluster, seed)
    epoch = 3 + seed % 5
    elections = 1
    scenario, target, start = Scenario.HEALTHY, None, origin
    stale: NodeSpec | None = None
    leaderless = False
    changes = [c for c in script if origin <= c.at <= t]
    for change in [*changes, None]:
        end = t if change is None else change.at
        if end > start or change is None:
            leader = None if leaderless else controllers[index]
            yield Segment(start, max(start, end), scenario, target, leader, stale, epoch, elections)
        if change is None:
            return
        # leave the previous scenario
        if leaderless:
            index = (index + 1) % len(controllers)
            epoch += 1
            elections += 1
            leaderless = False
        stale = None
        # enter the next one
        if change.scenario is Scenario.CONTROLLER_FAILOVER:
            index = (index + 1) % len(controllers)
            epoch += 1
            elections += 1
        elif change.scenario is Scenario.NO_ACTIVE_CONTROLLER:
            leaderless = True
            epoch += 1
        elif change.scenario is Scenario.TWO_ACTIVE_CONTROLLERS:
            stale = controllers[index]
            index = (index + 1) % len(controllers)
            epoch += 1
            elections += 1
        scenario, target, start = change.scenario, change.node, change.at


def time_in(
    history: Sequence[Segment], scenario: Scenario, *, target: str | None = None, leader: str | None = None
) -> float:
    """Seconds spent in `scenario` (aimed at `target`, while `leader` led) over the history."""
    return sum(
        s.end - s.start
        for s in history
        if s.scenario is scenario
        and (target is None or s.target == target)
        and (leader is None or (s.leader is not None and s.leader.name == leader))
    )


def parse_script(text: str) -> list[tuple[float, str, str | None, str | None]]:
    """`SECONDS:SCENARIO[@CLUSTER[/NODE]]`, comma-separated -> (offset, scenario, cluster, node) tuples."""
    steps = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        offset, sep, rest = item.partition(":")
        if not sep:
            raise ScenarioError(f"script step {item!r}: expected SECONDS:SCENARIO[@CLUSTER[/NODE]]")
        try:
            seconds = float(offset)
        except ValueError:
            raise ScenarioError(f"script step {item!r}: {offset!r} is not a number of seconds") from None
        name, _, where = rest.partition("@")
        cluster, _, node = where.partition("/")
        steps.append((seconds, name, cluster or None, node or None))
    return sorted(steps, key=lambda step: step[0])
