"""Scrape rounds: read every node in parallel, build one immutable FleetSnapshot per round.

A slow, dead or vanished node becomes an error value for that node only. A read that has not answered
by the round's timeout is reported as down and left to finish (or fail on its RMI timeout) in the
background; the node is not read again until it returns, so a stalled node holds one worker at most.
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
from exporter.model import ClusterSnapshot, FleetSnapshot, MBeanQuery, NodeSnapshot, RawReading
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
    in_flight: Future[tuple[list[RawReading], float]] | None = None


def _clear_in_flight(memory: _NodeMemory) -> Callable[[Future[tuple[list[RawReading], float]]], None]:
    def clear(_: Future[tuple[list[RawReading], float]]) -> None:
        memory.in_flight = None

    return clear


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

    def _read(self, target: Target) -> tuple[list[RawReading], float]:
        started = time.perf_counter()
        readings = self.client.read(target.endpoint, self.queries)
        return readings, time.perf_counter() - started

    def scrape_once(self) -> FleetSnapshot:
        taken_at = self.clock()
        started = time.perf_counter()
        fresh: dict[Target, Future[tuple[list[RawReading], float]]] = {}
        for target in self.targets:
            memory = self._memory[target]
            if memory.in_flight is None:
                future = self._pool.submit(self._read, target)
                memory.in_flight = future
                # may run at once if the read already finished: keep our own reference to the future
                future.add_done_callback(_clear_in_flight(memory))
                fresh[target] = future
        wait(list(fresh.values()), timeout=self.timeout_seconds)
        nodes = [self._node_snapshot(target, fresh.get(target), taken_at) for target in self.targets]
        snapshot = _assemble(
            self.targets,
            nodes,
            sequence=self._latest.sequence + 1,
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
        self, target: Target, future: Future[tuple[list[RawReading], float]] | None, taken_at: float
    ) -> NodeSnapshot:
        memory = self._memory[target]
        error: str | None = None
        if future is None:
            error = "previous read still running (node stalled?)"
        elif not future.done():
            error = f"no answer within {self.timeout_seconds:g}s"
        else:
            exc = future.exception()
            if isinstance(exc, JmxError):
                error = str(exc)
            elif exc is not None:
                log.error("unexpected failure reading %s/%s", target.cluster, target.node, exc_info=exc)
                error = f"{type(exc).__name__}: {exc}"
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
            )
        assert future is not None
        readings, duration = future.result()
        samples = samples_from_readings(readings)
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
            duration,
            None,
            memory.errors_total,
            taken_at,
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
