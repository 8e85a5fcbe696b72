"""The simulator's mutable state, kept small: each cluster's scenario script, and a cache of the pure
value model's cluster moment per time bucket (the server publishes every node's values once per bucket).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ctlplane.demo.scenarios import Scenario, ScenarioChange, ScenarioError, current_change, resolve_change
from ctlplane.demo.served import ServedMBean, served_mbeans
from ctlplane.demo.shapes import ClusterSpec, NodeSpec
from ctlplane.demo.values import ClusterMoment, NodeValues, moment_at, node_values

# Values are computed for time buckets of this length: the server publishes them to Java once per
# bucket, so a scrape of a node's MBeans sees one consistent moment.
BUCKET_SECONDS = 0.5


@dataclass
class _Cached:
    bucket: float
    moment: ClusterMoment
    nodes: dict[str, NodeValues]


class Simulation:
    """Thread-safe: RMI threads read values while the control endpoint changes scenarios."""

    def __init__(
        self,
        clusters: Sequence[ClusterSpec],
        *,
        seed: int,
        origin: float | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.clusters = {cluster.name: cluster for cluster in clusters}
        self.seed = seed
        self.clock = clock
        self.origin = clock() if origin is None else origin
        self.served: dict[tuple[str, str], tuple[ServedMBean, ...]] = {
            (cluster.name, node.name): served_mbeans(node, cluster) for cluster in clusters for node in cluster.nodes
        }
        self._scripts: dict[str, tuple[ScenarioChange, ...]] = dict.fromkeys(self.clusters, ())
        self._lock = threading.Lock()
        self._cache: dict[str, _Cached] = {}

    def nodes(self) -> list[NodeSpec]:
        return [node for cluster in self.clusters.values() for node in cluster.nodes]

    def schedule(
        self, scenario: str, cluster: str | None = None, node: str | None = None, at: float | None = None
    ) -> tuple[str, ScenarioChange]:
        """Switch a cluster (by default the first one the scenario applies to) to a scenario at `at` (now)."""
        when = self.clock() if at is None else at
        candidates = [self.clusters[cluster]] if cluster in self.clusters else []
        if cluster is not None and not candidates:
            raise ScenarioError(f"no cluster {cluster!r}; known: {', '.join(self.clusters)}")
        errors = []
        for spec in candidates or list(self.clusters.values()):
            try:
                change = resolve_change(spec, scenario, node, when)
            except ScenarioError as exc:
                errors.append(str(exc))
                continue
            with self._lock:
                self._scripts[spec.name] = tuple(sorted([*self._scripts[spec.name], change], key=lambda c: c.at))
                self._cache.pop(spec.name, None)
            return spec.name, change
        raise ScenarioError("; ".join(errors))

    def script(self, cluster: str) -> tuple[ScenarioChange, ...]:
        with self._lock:
            return self._scripts[cluster]

    def current(self, cluster: str, t: float | None = None) -> ScenarioChange:
        change = current_change(self.script(cluster), self.clock() if t is None else t)
        return change or ScenarioChange(self.origin, Scenario.HEALTHY)

    def unreachable(self, t: float | None = None) -> set[tuple[str, str]]:
        """(cluster, node) pairs whose JMX port must refuse connections now."""
        down = set()
        for name in self.clusters:
            change = self.current(name, t)
            if change.scenario is Scenario.UNREACHABLE_BROKER and change.node is not None:
                down.add((name, change.node))
        return down

    def values(self, cluster: str, node: str, t: float | None = None) -> NodeValues:
        now = self.clock() if t is None else t
        bucket = math.floor(now / BUCKET_SECONDS) * BUCKET_SECONDS
        with self._lock:
            cached = self._cache.get(cluster)
            if cached is None or cached.bucket != bucket:
                spec = self.clusters[cluster]
                moment = moment_at(spec, self._scripts[cluster], seed=self.seed, origin=self.origin, t=bucket)
                cached = self._cache[cluster] = _Cached(bucket, moment, {})
        found = cached.nodes.get(node)
        if found is None:
            spec_node = self.clusters[cluster].node(node)
            assert spec_node is not None, f"unknown node {cluster}/{node}"
            found = node_values(cached.moment, spec_node, self.served[(cluster, node)])
            cached.nodes[node] = found  # a race computes the same values twice; both are equal
        return found

    def describe(self) -> dict[str, object]:
        clusters = {}
        for name, spec in self.clusters.items():
            change = self.current(name)
            clusters[name] = {
                "mode": spec.mode.value,
                "scenario": change.scenario.value,
                "node": change.node,
                "since": change.at,
                "script": [{"at": c.at, "scenario": c.scenario.value, "node": c.node} for c in self.script(name)],
            }
        return {
            "seed": self.seed,
            "origin": self.origin,
            "scenarios": [s.value for s in Scenario],
            "clusters": clusters,
        }
