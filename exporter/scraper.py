"""Scrape rounds: read every node in parallel, build one immutable FleetSnapshot per round.

A slow, dead or vanished node becomes an error value for that node only. A read that has not answered
by the round's timeout is reported as down and left to finish (or fail on its RMI timeout) in the
background; the node is not read again until it returns, so a stalled node holds one worker at most.

Overload degrades, it does not collapse: a node has at most one read queued or running, so the pool's
queue never holds a stale read ahead of a newer one, and a read that finishes after its round's deadline
is kept and served by the next snapshot (its `scraped_at` says when it was taken) instead of discarded.
When reads cost more than a round, each snapshot carries the nodes whose reads completed since the
previous one, not 0 up.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

from exporter.catalog import Mode, Role
from exporter.jmx.base import Endpoint, JmxClient, JmxError
from exporter.model import ClusterSnapshot, Failure, FleetSnapshot, MBeanQuery, NodeSnapshot, RawReading
from exporter.readings import identify, plan_queries, samples_from_readings

log = logging.getLogger(__name__)

SnapshotListener = Callable[[FleetSnapshot], object]


@dataclass(frozen=True)
class Target:
    cluster: str
    node: str
    endpoint: Endpoint
    role_hint: Role = Role.UNKNOWN


@dataclass
class _NodeMemory:
    """What survives between rounds: counters and the last identity, shown while the node is down."""

    errors_total: int = 0
    role: Role = Role.UNKNOWN
    mode: Mode | None = None
    node_id: int | None = None
    version: str | None = None
    # The node's one read: queued, running, or finished but not yet in a snapshot. Only the scrape thread
    # touches it (future.done() is checked there; no completion callbacks racing with the round).
    read: Future[_Read] | None = None
    read_round: int = 0  # the round that submitted `read`


@dataclass(frozen=True)
class _Read:
    readings: list[RawReading]
    duration: float  # seconds the JMX read took, queueing excluded
    started_at: float  # clock() when the read began: the snapshot's scraped_at for the node


def empty_snapshot(targets: Sequence[Target], now: float) -> FleetSnapshot:
    """What is served before the first round ends: every node known, none read yet."""
    return _assemble(
        targets,
        [
            NodeSnapshot(
                t.cluster,
                t.node,
                t.endpoint.address,
                t.role_hint,
                None,
                None,
                None,
                False,
                0.0,
                "not read yet",
                0,
                now,
            )
            for t in targets
        ],
        sequence=0,
        taken_at=now,
        duration=0.0,
    )


def _assemble(
    targets: Sequence[Target],
    nodes: Sequence[NodeSnapshot],
    *,
    sequence: int,
    taken_at: float,
    duration: float,
) -> FleetSnapshot:
    clusters: dict[str, list[NodeSnapshot]] = {}
    for target in targets:
        clusters.setdefault(target.cluster, [])
    for node in nodes:
        clusters[node.cluster].append(node)
    return FleetSnapshot(
        sequence=sequence,
        taken_at=taken_at,
        round_duration_seconds=duration,
        clusters=tuple(ClusterSnapshot(name, tuple(members)) for name, members in clusters.items()),
    )


class Scraper:
    def __init__(
        self,
        targets: Sequence[Target],
        client: JmxClient,
        *,
        interval_seconds: float,
        timeout_seconds: float,
        workers: int,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.targets = tuple(targets)
        self.client = client
        self.interval_seconds = interval_seconds
        self.timeout_seconds = timeout_seconds
        self.clock = clock
        self.queries: tuple[MBeanQuery, ...] = plan_queries()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="jmx")
        self._memory = {target: _NodeMemory(errors_total=0, role=target.role_hint) for target in self.targets}
        self._latest = empty_snapshot(self.targets, clock())
        self._listeners: list[SnapshotListener] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def latest(self) -> FleetSnapshot:
        return self._latest

    def subscribe(self, listener: SnapshotListener) -> None:
        """Call `listener` with every new snapshot, in the scrape thread (keep it quick)."""
        self._listeners.append(listener)

    def _read(self, target: Target) -> _Read:
        started_at = self.clock()
        started = time.perf_counter()
        readings = self.client.read(target.endpoint, self.queries)
        return _Read(readings, time.perf_counter() - started, started_at)

    def scrape_once(self) -> FleetSnapshot:
        taken_at = self.clock()
        started = time.perf_counter()
        sequence = self._latest.sequence + 1
        late: dict[Target, Future[_Read]] = {}
        fresh: list[Future[_Read]] = []
        for target in self.targets:
            memory = self._memory[target]
            if memory.read is not None and memory.read.done():
                # finished after its round's deadline: served by this snapshot unless a newer read finishes
                late[target] = memory.read
                memory.read = None
            if memory.read is None:
                memory.read = self._pool.submit(self._read, target)
                memory.read_round = sequence
                fresh.append(memory.read)
            # else a read from an earlier round is still queued or running: not doubled, and not waited for
            # (a stalled node's would hold every round to the timeout), but used if it is done by the end
        wait(fresh, timeout=self.timeout_seconds)
        nodes = [self._node_snapshot(target, late.get(target), taken_at, sequence) for target in self.targets]
        snapshot = _assemble(
            self.targets,
            nodes,
            sequence=sequence,
            taken_at=taken_at,
            duration=time.perf_counter() - started,
        )
        self._latest = snapshot
        for listener in self._listeners:
            try:
                listener(snapshot)
            except Exception:
                log.exception("snapshot listener failed; the snapshot is still served")
        return snapshot

    def _node_snapshot(
        self, target: Target, late: Future[_Read] | None, taken_at: float, sequence: int
    ) -> NodeSnapshot:
        memory = self._memory[target]
        future = memory.read
        error: str | None = None
        failure = Failure.TIMEOUT  # unless the read failed with a reason of its own
        if future is not None and future.done():
            memory.read = None  # consumed: the next round reads the node again
        elif late is not None:
            future = late
        elif future is None or future.running():
            error = (
                f"no answer within {self.timeout_seconds:g}s"
                if memory.read_round == sequence
                else "previous read still running (node stalled?)"
            )
        else:
            error = (
                "read still queued (more reads than workers can do per round)"
                if memory.read_round == sequence
                else "previous read still queued (more reads than workers can do per round)"
            )
        if error is None and future is not None:
            exc = JmxError("read cancelled (scraper stopping)") if future.cancelled() else future.exception()
            if isinstance(exc, JmxError):
                error, failure = str(exc), exc.failure
            elif exc is not None:
                log.error("unexpected failure reading %s/%s", target.cluster, target.node, exc_info=exc)
                error, failure = f"{type(exc).__name__}: {exc}", Failure.OTHER
        if error is not None:
            memory.errors_total += 1
            return NodeSnapshot(
                target.cluster,
                target.node,
                target.endpoint.address,
                memory.role,
                memory.mode,
                memory.node_id,
                memory.version,
                False,
                self.timeout_seconds if future is not None and not future.done() else 0.0,
                error,
                memory.errors_total,
                taken_at,
                failure=failure,
            )
        assert future is not None
        read = future.result()
        samples = samples_from_readings(read.readings)
        identity = identify(samples)
        if identity.role is not Role.UNKNOWN:
            memory.role, memory.mode = identity.role, identity.mode
        memory.node_id = identity.node_id if identity.node_id is not None else memory.node_id
        memory.version = identity.version or memory.version
        return NodeSnapshot(
            target.cluster,
            target.node,
            target.endpoint.address,
            memory.role,
            memory.mode,
            memory.node_id,
            memory.version,
            True,
            read.duration,
            None,
            memory.errors_total,
            read.started_at,
            samples,
        )

    def run_forever(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self.scrape_once()
            except Exception:
                log.exception("scrape round failed; serving the previous snapshot")
            self._stop.wait(max(0.0, self.interval_seconds - (time.monotonic() - started)))

    def start(self) -> None:
        self._thread = threading.Thread(target=self.run_forever, name="scraper", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.timeout_seconds + 5)
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.client.close()
