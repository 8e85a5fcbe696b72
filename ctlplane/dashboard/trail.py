"""What the dashboard keeps of past rounds: the plotted series, downsampled, the timeline's events, and each
broker's evidence as runs of rounds that read alike (a broker's page shows them: the evidence behind a page).

Whole snapshots are not kept: one 1,000-node snapshot with its health is ~18 MB, so an hour of them at a
15 s interval would be ~4 GB. A `Trail` folds each observation into the few numbers per node the cluster
page plots (`PLOTTED`) and the events `TimelineFold` derives, both bounded in time (`window_seconds`) and
in size (`max_points` per line, `max_events` per cluster), and drops the observation.

Downsampling: a line keeps at most one point per `window_seconds / max_points` (10 s for the defaults);
readings that fall in the same bucket are merged into the worse of the two (the larger queue or lag, the
smaller idle ratio), so a short spike is still drawn.
"""

from __future__ import annotations

import bisect
import math
import threading
from array import array
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from ctlplane.dashboard.timeline import Event, TimelineFold
from ctlplane.exporter.health import BrokerHealth, Cause, Lifecycle
from ctlplane.exporter.model import Failure, NodeSnapshot
from ctlplane.exporter.state import Observation

NAN = math.nan


def _worse_high(old: float, new: float) -> float:
    return new if math.isnan(old) else old if math.isnan(new) else max(old, new)


def _worse_low(old: float, new: float) -> float:
    return new if math.isnan(old) else old if math.isnan(new) else min(old, new)


def event_queue_p99(node: NodeSnapshot) -> float | None:
    for sample in node.series_samples("kafka_controller_event_queue_time_seconds"):
        return dict(sample.parts).get("0.99")
    return None


@dataclass(frozen=True)
class Plotted:
    """One plotted quantity: how to read it, and which of two readings is worse."""

    key: str
    worse: Callable[[float, float], float]
    of_node: Callable[[NodeSnapshot], float | None] | None = None  # read from the node's snapshot ...
    of_broker: Callable[[BrokerHealth], float | None] | None = None  # ... or from its broker health


def _sample(series: str) -> Callable[[NodeSnapshot], float | None]:
    return lambda node: node.value(series) if node.up else None


# Everything the cluster page draws (ctlplane/dashboard/views.py names these keys); nothing else is kept.
PLOTTED = (
    *(
        Plotted(series, worse, of_node=_sample(series))
        for series, worse in (
            ("kafka_control_plane_request_queue_size", _worse_high),
            ("kafka_control_plane_response_queue_size", _worse_high),
            ("kafka_request_queue_size", _worse_high),
            ("kafka_response_queue_size", _worse_high),
            ("kafka_control_plane_request_handler_idle_ratio", _worse_low),
            ("kafka_control_plane_network_processor_idle_ratio", _worse_low),
            ("kafka_request_handler_idle_ratio", _worse_low),
            ("kafka_network_processor_idle_ratio", _worse_low),
        )
    ),
    Plotted("event_queue_p99_seconds", _worse_high, of_node=lambda node: event_queue_p99(node) if node.up else None),
    Plotted("metadata_lag_records", _worse_high, of_broker=lambda broker: broker.metadata_lag_records),
    Plotted("metadata_lag_seconds", _worse_high, of_broker=lambda broker: broker.metadata_lag_seconds),
)
NODE_PLOTTED = tuple((p.key, p.of_node, p.worse) for p in PLOTTED if p.of_node is not None)
BROKER_PLOTTED = tuple((p.key, p.of_broker, p.worse) for p in PLOTTED if p.of_broker is not None)


class _Line:
    """One node's points of one plotted quantity; NaN marks a round without a value (a gap)."""

    __slots__ = ("times", "values")

    def __init__(self) -> None:
        self.times = array("d")
        self.values = array("d")


@dataclass(frozen=True)
class Line:
    """A copy of a line for a page to draw: times (epoch seconds) and values, None where there was none."""

    times: tuple[float, ...]
    values: tuple[float | None, ...]


@dataclass(frozen=True)
class EvidenceRun:
    """Consecutive rounds in which a broker read alike: its state and cause, what its JMX did (None: it
    answered; else how it failed), and which view decided the state. `evidence` is the last round's words."""

    first: float  # taken_at of the run's first round
    last: float  # and of its last
    rounds: int
    state: Lifecycle
    cause: Cause | None
    jmx_failure: Failure | None
    decided_by: str  # "jmx" (the nodes' own word) or "quorum" (the quorum's view, Admin API)
    views_disagree: bool
    evidence: str

    def same_reading(self, other: EvidenceRun) -> bool:
        return (self.state, self.cause, self.jmx_failure, self.decided_by, self.views_disagree) == (
            other.state,
            other.cause,
            other.jmx_failure,
            other.decided_by,
            other.views_disagree,
        )


@dataclass(frozen=True)
class ClusterTrail:
    """One cluster's plotted lines (key -> node -> line), its events in the window, newest first, and each
    broker's evidence runs in the window, oldest first."""

    lines: Mapping[str, Mapping[str, Line]]
    events: tuple[Event, ...]
    runs: Mapping[str, tuple[EvidenceRun, ...]] = field(default_factory=dict)

    def lines_of(self, key: str) -> Mapping[str, Line]:
        return self.lines.get(key, {})


EMPTY_TRAIL = ClusterTrail({}, ())


class Trail:
    """The bounded past of every cluster, fed one observation per round; safe to read while it is fed."""

    def __init__(
        self, window_seconds: float = 3600.0, max_points: int = 360, max_events: int = 1000, max_runs: int = 120
    ) -> None:
        if window_seconds <= 0 or max_points < 1 or max_events < 1 or max_runs < 1:
            raise ValueError("window_seconds, max_points, max_events and max_runs must be positive")
        self.window_seconds = window_seconds
        self.bucket_seconds = window_seconds / max_points
        self.max_events = max_events
        self.max_runs = max_runs  # per broker: a broker that flaps every round keeps its latest runs
        self._lines: dict[str, dict[tuple[str, str], _Line]] = {}  # cluster -> (key, node) -> line
        self._events: dict[str, deque[Event]] = {}
        # cluster -> broker -> its runs, oldest first; a steady broker costs one run whatever the window
        self._runs: dict[str, dict[str, deque[EvidenceRun]]] = {}
        self._fold = TimelineFold()
        self._lock = threading.Lock()

    def add(self, observation: Observation) -> None:
        """Fold one round in (rounds arrive in order; a repeated or older round is ignored)."""
        at = observation.snapshot.taken_at
        with self._lock:
            if not self._fold.accepts(observation):
                return
            for event in self._fold.add(observation):
                self._events.setdefault(event.cluster, deque(maxlen=self.max_events)).append(event)
            for cluster in observation.snapshot.clusters:
                lines = self._lines.setdefault(cluster.name, {})
                for node in cluster.nodes:
                    for key, of_node, worse in NODE_PLOTTED:
                        self._append(lines, (key, node.node), at, of_node(node), worse)
            for health in observation.health.clusters:
                lines = self._lines.setdefault(health.name, {})
                snapshot = observation.snapshot.cluster(health.name)
                runs = self._runs.setdefault(health.name, {})
                for broker in health.brokers:
                    for key, of_broker, worse in BROKER_PLOTTED:
                        self._append(lines, (key, broker.node), at, of_broker(broker), worse)
                    read = snapshot.node(broker.node) if snapshot is not None else None
                    failure = None if read is None or read.up else (read.failure or Failure.OTHER)
                    self._add_run(runs, broker, failure, at)
            self._trim(at - self.window_seconds)

    def _add_run(
        self, runs: dict[str, deque[EvidenceRun]], broker: BrokerHealth, failure: Failure | None, at: float
    ) -> None:
        run = EvidenceRun(
            at, at, 1, broker.state, broker.cause, failure, broker.decided_by, broker.views_disagree, broker.evidence
        )
        kept = runs.setdefault(broker.node, deque(maxlen=self.max_runs))
        if kept and kept[-1].same_reading(run):
            kept[-1] = replace(kept[-1], last=at, rounds=kept[-1].rounds + 1, evidence=broker.evidence)
        else:
            kept.append(run)

    def _append(
        self,
        lines: dict[tuple[str, str], _Line],
        where: tuple[str, str],
        at: float,
        value: float | None,
        worse: Callable[[float, float], float],
    ) -> None:
        number = NAN if value is None or not math.isfinite(value) else float(value)
        line = lines.get(where)
        if line is None:
            if math.isnan(number):
                return  # a line starts at its first value: nodes without the series cost nothing
            line = lines[where] = _Line()
        if line.times and math.floor(line.times[-1] / self.bucket_seconds) == math.floor(at / self.bucket_seconds):
            line.times[-1] = at
            line.values[-1] = worse(line.values[-1], number)
        else:
            line.times.append(at)
            line.values.append(number)

    def _trim(self, cutoff: float) -> None:
        for cluster, lines in list(self._lines.items()):
            for where, line in list(lines.items()):
                if line.times[0] < cutoff:
                    keep = bisect.bisect_left(line.times, cutoff)
                    del line.times[:keep]
                    del line.values[:keep]
                if not line.times or (math.isnan(line.values[-1]) and _empty(line)):
                    del lines[where]  # nothing left to draw
            if not lines:
                del self._lines[cluster]
        for cluster, events in list(self._events.items()):
            while events and events[0].at < cutoff:
                events.popleft()
            if not events:
                del self._events[cluster]
        for cluster, brokers in list(self._runs.items()):
            for node, runs in list(brokers.items()):
                while runs and runs[0].last < cutoff:
                    runs.popleft()
                if not runs:
                    del brokers[node]
            if not brokers:
                del self._runs[cluster]

    def cluster(self, name: str) -> ClusterTrail:
        """A copy of one cluster's lines and events, for one page render."""
        with self._lock:
            lines: dict[str, dict[str, Line]] = {}
            for (key, node), line in self._lines.get(name, {}).items():
                values = tuple(None if math.isnan(v) else v for v in line.values)
                lines.setdefault(key, {})[node] = Line(tuple(line.times), values)
            events = tuple(reversed(self._events.get(name, ())))
            runs = {node: tuple(kept) for node, kept in self._runs.get(name, {}).items()}
        return ClusterTrail(lines, events, runs)


def _empty(line: _Line) -> bool:
    return all(math.isnan(v) for v in line.values)
