"""Scrape rounds: read every node in parallel, build one immutable FleetSnapshot per round.

A slow, dead or vanished node becomes an error value for that node only. A read that has not answered
by the round's timeout is reported as down and left to finish (or fail on its RMI timeout) in the
background; the node is not read again until it returns, so a stalled node holds one worker at most.

Overload degrades, it does not collapse: a node has at most one read queued or running, so the pool's
queue never holds a stale read ahead of a newer one, and a read that finishes after its round's deadline
is kept and served by the next snapshot (its `scraped_at` says when it was taken) instead of discarded.
When reads cost more than a round, each snapshot carries the nodes whose reads completed since the
previous one, not 0 up.

A node whose large page (PACED_PAGE_BYTES) took longer than the scrape timeout twice in a row (a broker with
tens of thousands of partitions behind jmx_exporter, which collects every MBean before its first byte; once
could be a hang the node came back from) is *paced*: one read in flight, never abandoned and asked again, the
next started only a pause after it ended (PACE_PAUSE_SHARE, and the scraper's page interval), and meanwhile
each snapshot serves its last complete read with the time it was taken (NodeSnapshot.held), as long as the
read under way has not taken PACED_READ_SLACK times the last one; beyond that it is the node's error. A
paced node the controller was read fencing (`wake`) is read at once, its pause cut short. A large page not
paced whose read runs past the round's wait (usually inside it, late once on a loaded host) serves its last
read the same way, within the same slack. Once the controller was read fencing a node, its last page is no
longer served until a new one comes: a paced broker that hangs says its read is not answering.

Clusters share the workers without starving each other: each cluster has a lane holding at most its
share of the workers (worker_shares: two each, the rest by node count, together no more than the pool
when it has two per cluster), and reads beyond it wait in the lane, not in the pool's queue. A cluster
of hung nodes therefore holds only its own share, and every other cluster's reads still find free
workers. Within a cluster, a node whose last read timed out is read after its siblings and may hold all
but one of the cluster's workers, so a hung node cannot starve the healthy nodes beside it either.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from ctlplane.exporter.catalog import SLOW_SERIES, Mode, Role
from ctlplane.exporter.model import (
    CanaryView,
    ClusterSnapshot,
    Failure,
    FleetSnapshot,
    MBeanQuery,
    NodeSnapshot,
    QuorumView,
    RawReading,
    Sample,
)
from ctlplane.exporter.readings import (
    Identity,
    claims_active_controller,
    identify,
    plan_queries,
    queries_for,
    samples_from_readings,
)
from ctlplane.exporter.sources.base import CollectedReadings, NodeEndpoint, NodeSource, ReadError, ReadTimeouts
from ctlplane.exporter.subscribers import Subscribers

log = logging.getLogger(__name__)

# A round waits for a node whose last read timed out (a suspect) at most this long, or SUSPECT_READS_WAITED
# times its last successful read, if longer (a node far away), and never longer than the scrape timeout.
# A hung broker's read fails only on the RMI timeouts, a third of the scrape timeout each (ctlplane/wiring.py): held to
# that, every round (and with it every other node's fresh values, a controller's fencing of the hung broker)
# was published ~3.3 s late for as long as it hung (issue 16, time to page). A broker back from a hang
# answers a fresh connection's read in ~0.1-0.3 s (the fault-table recordings' round durations); if it is
# slower, its read is served by the next snapshot (a late read), so it is down one round longer, no more.
SUSPECT_WAIT_SECONDS = 1.0
SUSPECT_READS_WAITED = 3.0
# Successive complete pages longer than the scrape timeout that make a node paced: a hung node's one late
# answer after it resumes is not a large page, and its next read is fast again
PACED_AFTER_SLOW_PAGES = 2
# ...and only a page this large: a broker's own size makes it slow (~1 KB a partition in jmx_exporter's default
# naming: 1.9 MB at 1,000 partitions, 10.5 MB at 10,000, docs/benchmarks.md "Large brokers"), where a small
# page that is slow comes from a loaded host or a sick node and is read as any other node is
PACED_PAGE_BYTES = 4 * 1024 * 1024
# A paced node's next read starts at least this share of its last read's time after that read ended (and no
# sooner than the scraper's page_interval_seconds after it began): its exporter collects at most two thirds of
# the time for ctlplane however long its page takes (jmx_exporter collects on one thread, ~a core for the page's
# whole time), and a value served is at most ~1.5 page times old when the next page lands
PACE_PAUSE_SHARE = 0.5
# A paced node's read under way is waited for, its last read served meanwhile, until it has run this many
# times as long as the last one did (at least that plus the scrape timeout); longer, the node is not answering
# as it does (it hangs, or the page grew past what it was), and the read is the node's error until it ends
PACED_READ_SLACK = 2.0
# A round woken early (wake: the fencing watch read a change) starts at least this long after the one before
# started, so changes in quick succession cost a round a second at most
WOKEN_ROUND_GAP_SECONDS = 1.0

SnapshotSubscriber = Callable[[FleetSnapshot], object]


class QuorumSource(Protocol):
    """A cluster's metadata quorum (kafka_admin.QuorumReader)."""

    def read(self) -> QuorumView:
        """The quorum's view now: a value, also when the quorum did not answer."""
        ...

    def close(self) -> None: ...


class CanarySource(Protocol):
    """A cluster's metadata canary (sources/admin/canary.MetadataCanary): it runs on its own; a round takes what
    it knows now."""

    def view(self) -> CanaryView:
        """What the canary knows now, at once."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Target:
    cluster: str
    node: str
    endpoint: NodeEndpoint  # a JMX Endpoint or a MetricsEndpoint (ctlplane/exporter/sources/)
    role_hint: Role = Role.UNKNOWN
    # broker.id / node.id from the config: names the node before its JMX has answered (the quorum's view
    # describes replicas by id); what the node's own app-info says wins once read
    node_id: int | None = None


@dataclass
class _NodeMemory:
    """What survives between rounds: counters and the last identity, shown while the node is down."""

    errors_total: int = 0
    role: Role = Role.UNKNOWN
    mode: Mode | None = None
    node_id: int | None = None
    version: str | None = None
    active_controller: bool = False  # its last read said ActiveControllerCount 1 (readings.queries_for)
    # The node's one read: queued, running, or finished but not yet in a snapshot. Only the scrape thread
    # touches it (future.done() is checked there; no completion callbacks racing with the round).
    read: Future[_Read] | None = None
    read_round: int = 0  # the round that submitted `read`
    timed_out: bool = False  # the last read that finished failed as a timeout (the node may hang again)
    fenced: bool = False  # this round was woken with the controller fencing it (Scraper.wake): may hang too
    # the controller was read fencing it (Scraper.wake) since its last page: that page is no longer served
    # between pages (`_held`), so a paced node that hangs says its read is not answering, not its last page
    fenced_since_page: bool = False
    # seconds into the round when the fencing watch read the controller fencing this node while the round
    # still waited for its read, which it then stopped waiting for (Scraper._wait_for_reads); this round only
    cut_after: float | None = None

    @property
    def suspect(self) -> bool:
        """Read after its siblings and waited for SUSPECT_WAIT_SECONDS only (`_allowance`)."""
        return self.timed_out or self.fenced

    good_read_seconds: float = 0.0  # how long its last successful read took
    # When ctlplane last took its values (its last successful read, `_Read.started_at`), or began watching it
    last_read_at: float | None = None
    slow_pages: int = 0  # successive successful page reads longer than the scrape timeout
    # A large page's last read (PACED_PAGE_BYTES), its samples stamped with their time: served while the next is
    # due (paced) or under way past the round's wait (`_held`); None for any other node
    held: tuple[Sample, ...] | None = None
    next_read_at: float = 0.0  # perf_counter() before which a paced node's next read does not start
    read_submitted_at: float = 0.0  # perf_counter() when `read` was submitted
    # The slow tier's last values (stamped with their read time) and when they were read; cleared when the
    # node is down, so a node back (perhaps restarted: its histograms begin again) reads them at once
    slow_samples: tuple[Sample, ...] = ()
    slow_read_at: float | None = None  # for scheduling: the first read after down counts `slow_phase` earlier
    slow_phase: float = 0.0


@dataclass(frozen=True)
class _Read:
    readings: list[RawReading]
    duration: float  # seconds the JMX read took, queueing excluded
    # clock() when the values were taken, the snapshot's scraped_at for the node: when the read began, or a
    # page's first byte (sources.base.CollectedReadings)
    started_at: float
    ended: float  # perf_counter() when the read ended
    page_bytes: int  # a metrics endpoint page's size (sources.base.CollectedReadings); 0 for a JMX read
    slow: bool = True  # the slow tier's MBeans were read too
    active_controller: bool = False  # it read ActiveControllerCount 1 (readings.claims_active_controller)


def worker_shares(workers: int, sizes: Mapping[str, int]) -> dict[str, int]:
    """How many of `workers` each cluster (name -> node count) may hold at once.

    Every cluster gets two (or as many as it has nodes): one for its healthy nodes while another hangs,
    as a node never needs two (one read at a time). The rest go to the clusters with the fewest workers
    per node, up to one per node, and together the shares never exceed `workers`, so no cluster can take
    a worker from another. With fewer than two workers per cluster the shares overlap: a cluster still
    holds at most its two, but clusters with hung nodes together can delay the others.
    """
    shares = {name: min(2, size, workers) for name, size in sizes.items()}
    spare = workers - sum(shares.values())
    while spare > 0:
        hungry = [name for name in sizes if shares[name] < sizes[name]]
        if not hungry:
            break  # every node of every cluster can be read at once: the rest would sit idle
        neediest = min(hungry, key=lambda name: shares[name] / sizes[name])
        shares[neediest] += 1
        spare -= 1
    return shares


@dataclass
class _Waiting:
    run: Callable[[], _Read]
    future: Future[_Read]
    timed_out: bool


@dataclass
class _Lane:
    """One cluster's share of the pool: at most `slots` of its reads are in the pool at once.

    Reads beyond that wait here. Nodes whose last read timed out wait behind the others and hold at most
    slots - 1 (when the cluster has two or more), so one slot is always left for the healthy nodes.
    Completions run on pool threads, hence the lock; a waiting read's future stays pending (`queued`).
    """

    pool: ThreadPoolExecutor
    slots: int
    busy: int = 0
    busy_timed_out: int = 0
    waiting: list[_Waiting] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def submit(self, run: Callable[[], _Read], *, timed_out: bool) -> Future[_Read]:
        future: Future[_Read] = Future()
        with self.lock:
            self.waiting.append(_Waiting(run, future, timed_out))
            self._dispatch()
        return future

    def _next(self) -> _Waiting | None:
        for index, item in enumerate(self.waiting):
            if not item.timed_out:
                return self.waiting.pop(index)
        if self.waiting and self.busy_timed_out < max(1, self.slots - 1):
            return self.waiting.pop(0)
        return None

    def _dispatch(self) -> None:  # with self.lock held
        while self.busy < self.slots:
            item = self._next()
            if item is None:
                return
            try:
                started = self.pool.submit(self._run, item)
            except RuntimeError:  # the pool is shut down: the scraper is stopping
                item.future.cancel()
                continue
            self.busy += 1
            self.busy_timed_out += item.timed_out
            started.add_done_callback(functools.partial(_cancel_if_cancelled, item.future))

    def _run(self, item: _Waiting) -> None:
        try:
            if item.future.set_running_or_notify_cancel():
                try:
                    item.future.set_result(item.run())
                except BaseException as exc:  # the scrape thread reports it
                    item.future.set_exception(exc)
        finally:
            with self.lock:
                self.busy -= 1
                self.busy_timed_out -= item.timed_out
                self._dispatch()

    def resize(self, slots: int) -> None:
        with self.lock:
            self.slots = slots
            self._dispatch()

    def cancel_waiting(self) -> None:
        with self.lock:
            waiting, self.waiting = self.waiting, []
        for item in waiting:
            item.future.cancel()


def _cancel_if_cancelled(read: Future[_Read], started: Future[None]) -> None:
    # cancelled in the pool's queue by a shutdown: the read never ran, so its future is cancelled too
    if started.cancelled():
        read.cancel()


def empty_snapshot(targets: Sequence[Target], now: float, cluster_names: Sequence[str] = ()) -> FleetSnapshot:
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
                last_read_at=now,
            )
            for t in targets
        ],
        sequence=0,
        taken_at=now,
        duration=0.0,
        cluster_names=cluster_names,
    )


def _assemble(
    targets: Sequence[Target],
    nodes: Sequence[NodeSnapshot],
    *,
    sequence: int,
    taken_at: float,
    duration: float,
    quorums: Mapping[str, QuorumView] | None = None,
    cluster_names: Sequence[str] = (),
    admin_only: Collection[str] = (),
    canaries: Mapping[str, CanaryView] | None = None,
    woken_rounds_total: int = 0,
) -> FleetSnapshot:
    clusters: dict[str, list[NodeSnapshot]] = {name: [] for name in cluster_names}
    for target in targets:
        clusters.setdefault(target.cluster, [])
    for node in nodes:
        clusters[node.cluster].append(node)
    views = quorums or {}
    return FleetSnapshot(
        sequence=sequence,
        taken_at=taken_at,
        round_duration_seconds=duration,
        clusters=tuple(
            ClusterSnapshot(
                name,
                tuple(members),
                views.get(name),
                admin_only=name in admin_only,
                canary=(canaries or {}).get(name),
            )
            for name, members in clusters.items()
        ),
        woken_rounds_total=woken_rounds_total,
    )


def _quorum_answer(read: Future[QuorumView], read_round: int, sequence: int, timeout: float, now: float) -> QuorumView:
    """What a cluster's quorum read gives this round: its answer if done, else why not."""
    if not read.done():
        waited = "this round" if read_round == sequence else f"since round {read_round}"
        return QuorumView(read_at=now, error=f"the quorum did not answer within {timeout:g}s ({waited})")
    exc = read.exception()
    if exc is not None:  # a reader returns failures as values; anything else is a bug, still only this view's
        return QuorumView(read_at=now, error=f"quorum read failed: {exc!r}")
    return read.result()


@dataclass(frozen=True)
class ScrapePlan:
    """What a reload may change of the rounds (ScrapeConfig): their pace and how long a round waits for a
    node (the node sources' timeouts)."""

    interval_seconds: float
    reads: ReadTimeouts


class Scraper:
    def __init__(
        self,
        targets: Sequence[Target],
        client: NodeSource,
        *,
        interval_seconds: float,
        timeout_seconds: float,
        workers: int,
        clock: Callable[[], float] = time.time,
        quorum_sources: Mapping[str, QuorumSource] | None = None,
        slow_interval_seconds: float | None = None,
        page_interval_seconds: float = 0.0,
        page_timeout_seconds: float | None = None,
        admin_only: Collection[str] = (),
        canaries: Mapping[str, CanarySource] | None = None,
    ) -> None:
        self.targets = tuple(targets)
        # cluster -> its metadata canary (ClusterConfig.canary), running on its own thread
        self.canaries = dict(canaries or {})
        # clusters watched through their quorum source alone (ClusterSnapshot.admin_only)
        self.admin_only = frozenset(admin_only)
        # cluster -> its quorum's view (docs/configuration.md "The quorum's view"); a thread each, apart from the JMX
        # workers, so a quorum that does not answer never takes a node read's worker
        self.quorum_sources = dict(quorum_sources or {})
        self._quorum_pool = _quorum_pool(self.quorum_sources)
        self._quorum_reads: dict[str, tuple[Future[QuorumView], int]] = {}
        self.client = client
        page_timeout = page_timeout_seconds or timeout_seconds
        self._plan = ScrapePlan(interval_seconds, ReadTimeouts(timeout_seconds, page_timeout))  # configure replaces it
        self.clock = clock
        self.queries: tuple[MBeanQuery, ...] = plan_queries()
        # None: every MBean every round. Otherwise the slow tier's MBeans (MetricSpec.slow) are read when
        # a node's last slow read is this old, give or take half a round (rounds drift by their duration).
        self.slow_interval_seconds = slow_interval_seconds
        # a paced node's pages start at most this often (ScrapeConfig.page_interval_seconds)
        self.page_interval_seconds = page_interval_seconds
        self.fast_queries = (
            self.queries if slow_interval_seconds is None else tuple(query for query in self.queries if not query.slow)
        )
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="jmx")
        self.workers = workers
        # clusters served even with no node to read yet (every node to be discovered): their quorum's view
        self.cluster_names = tuple(dict.fromkeys([*(t.cluster for t in self.targets), *self.quorum_sources]))
        self._lanes: dict[str, _Lane] = {}
        self._memory: dict[Target, _NodeMemory] = {}
        self._pending_lock = threading.Lock()
        self._pending_targets: tuple[Target, ...] | None = None
        self._pending_sources: dict[str, QuorumSource] | None = None
        self._pending_admin_only: frozenset[str] = frozenset()
        self._place(self.targets)
        self._latest = empty_snapshot(self.targets, clock(), self.cluster_names)
        self._subscribers: Subscribers[FleetSnapshot] = Subscribers("snapshot")
        self._stop = threading.Event()
        self._wake = threading.Event()
        self.woken_rounds_total = 0  # rounds started early by `wake`
        # (cluster, node id) the controller was last read fencing (`wake`): each read next round as a suspect
        self._fenced_hint: set[tuple[str, int]] = set()
        self._round_changed: threading.Event | None = None  # wake(fenced): the round under way stops waiting
        self._thread: threading.Thread | None = None

    def latest(self) -> FleetSnapshot:
        return self._latest

    @property
    def plan(self) -> ScrapePlan:
        """The pace and timeouts in force (the constructor's, or the last configure's)."""
        return self._plan

    @property
    def interval_seconds(self) -> float:
        return self._plan.interval_seconds

    @property
    def timeout_seconds(self) -> float:
        return self._plan.reads.timeout_seconds

    def configure(self, plan: ScrapePlan) -> None:
        """A reload's pace and timeouts: the run loop's next wait and slow-tier due times, the next round's wait
        for its reads, and the node sources' next reads."""
        self._plan = plan
        self.client.configure(plan.reads)

    def set_targets(self, targets: Sequence[Target]) -> None:
        """Read these nodes from the next round on (discovery found some, a reload changed the list). A node
        kept keeps what ctlplane knows of it (counters, identity, a read under way); a node left out takes
        its memory with it. Safe from any thread: applied when the next round starts."""
        with self._pending_lock:
            self._pending_targets = tuple(targets)

    @property
    def targets_pending(self) -> bool:
        """Whether a set_targets is still to be applied (at the next round's start)."""
        with self._pending_lock:
            return self._pending_targets is not None

    def set_quorum_sources(self, sources: Mapping[str, QuorumSource], admin_only: Collection[str] = ()) -> None:
        """Ask these clusters' quorums from the next round on (a reload), `admin_only` of them watched through
        it alone. A source object kept is kept (its Admin client and its read under way); a source left out is
        closed once its read is done."""
        with self._pending_lock:
            self._pending_sources = dict(sources)
            self._pending_admin_only = frozenset(admin_only)

    def set_canaries(self, canaries: Mapping[str, CanarySource]) -> None:
        """Take these clusters' canaries from the next round on (a reload); one left out is closed."""
        dropped = [c for name, c in self.canaries.items() if canaries.get(name) is not c]
        self.canaries = dict(canaries)
        if dropped:
            threading.Thread(target=_close_all, args=(dropped,), name="canary-close", daemon=True).start()

    def _apply_pending(self) -> None:
        with self._pending_lock:
            targets, self._pending_targets = self._pending_targets, None
            sources, self._pending_sources = self._pending_sources, None
            admin_only = self._pending_admin_only
        if targets is not None and targets != self.targets:
            self._place(targets)
            self.targets = targets
        if sources is not None:
            dropped = [s for name, s in self.quorum_sources.items() if sources.get(name) is not s]
            self.quorum_sources = sources
            self.admin_only = admin_only
            self._quorum_reads = {c: r for c, r in self._quorum_reads.items() if c in sources}
            old_pool = self._quorum_pool
            self._quorum_pool = _quorum_pool(sources)
            if old_pool is not None:
                old_pool.shutdown(wait=False)  # reads under way finish; their results are still taken
            if dropped:
                # closing waits for a read under way: not in the round's thread
                threading.Thread(target=_close_all, args=(dropped,), name="quorum-close", daemon=True).start()
        names = [*(t.cluster for t in self.targets), *self.quorum_sources]
        self.cluster_names = tuple(dict.fromkeys(names))

    def _place(self, targets: Sequence[Target]) -> None:
        """Each cluster's share of the workers, and each node's memory (new ones start empty)."""
        sizes: dict[str, int] = {}
        for target in targets:
            sizes[target.cluster] = sizes.get(target.cluster, 0) + 1
        shares = worker_shares(self.workers, sizes)
        if sum(shares.values()) > self.workers:
            log.warning(
                "%d workers for %d clusters: fewer than two each, so hung nodes in some clusters can delay others",
                self.workers,
                len(sizes),
            )
        for name, slots in shares.items():
            lane = self._lanes.get(name)
            if lane is None:
                self._lanes[name] = _Lane(self._pool, slots)
            elif lane.slots != slots:
                lane.resize(slots)
        # Every node reads its slow tier in its first round; after that, each node's next slow read comes
        # early by its phase, so the nodes' slow reads spread over the rounds of a slow interval instead
        # of landing together in one round a minute (1,000 nodes: a round of ~11 s among rounds of ~7.5 s)
        rounds_per_slow = max(1, round((self.slow_interval_seconds or self.interval_seconds) / self.interval_seconds))
        self._memory = {
            target: self._memory.get(target)
            or _NodeMemory(
                errors_total=0,
                last_read_at=self.clock(),
                role=target.role_hint,
                node_id=target.node_id,
                slow_phase=(index % rounds_per_slow) * self.interval_seconds,
            )
            for index, target in enumerate(targets)
        }

    def subscribe(self, subscriber: SnapshotSubscriber) -> None:
        """Call `subscriber` with every new snapshot, in the scrape thread (keep it quick)."""
        self._subscribers.add(subscriber)

    def _read(self, target: Target, slow: bool) -> _Read:
        started_at = self.clock()
        started = time.perf_counter()
        memory = self._memory[target]
        tier = self.queries if slow else self.fast_queries
        queries = queries_for(tier, memory.mode, memory.role, memory.active_controller)
        readings = self.client.read(target.endpoint, queries)
        # a page's values were collected by its first byte (CollectedReadings), a JMX read's as it begins
        page = readings if isinstance(readings, CollectedReadings) else CollectedReadings([], 0.0)
        started_at += page.collected_after
        active = claims_active_controller(readings)
        dormant = [query for query in queries if query.dormant] if active else []
        if dormant:
            # Elected since its last read: what follows the controller (its request queues, its brokers'
            # registration gauges) is asked again now as an active controller's, so the round that first
            # reads it active reads them too; a client looks such a query up afresh
            asked = {query.pattern for query in dormant}
            awake = [replace(query, dormant=False) for query in dormant]
            readings = [r for r in readings if r.pattern not in asked] + self.client.read(target.endpoint, awake)
        ended = time.perf_counter()
        return _Read(readings, ended - started, started_at, ended, page.page_bytes, slow, active)

    def _slow_due(self, memory: _NodeMemory, now: float) -> bool:
        if self.slow_interval_seconds is None or memory.slow_read_at is None:
            return True
        return now - memory.slow_read_at >= self.slow_interval_seconds - self.interval_seconds / 2

    def scrape_once(self, wait_seconds: float | None = None) -> FleetSnapshot:
        """One round. It waits `timeout_seconds` for the reads it started, or `wait_seconds` (a one-shot
        caller's: with no next round to serve a late answer, it may wait as long as a read may run)."""
        waited = self.timeout_seconds if wait_seconds is None else wait_seconds
        self._apply_pending()
        taken_at = self.clock()
        started = time.perf_counter()
        sequence = self._latest.sequence + 1
        late, fresh, suspects = self._start_reads(taken_at, sequence)
        quorum_reads = self._submit_quorum_reads(sequence)
        pending: list[Future[Any]] = [*fresh, *(read for read, _ in quorum_reads.values())]
        self._wait_for_reads(pending, waited, started, sequence)
        for allowance, read in sorted(suspects, key=lambda suspect: suspect[0]):
            wait([read], timeout=max(0.0, allowance - (time.perf_counter() - started)))
        nodes = [self._node_snapshot(target, late.get(target), taken_at, sequence) for target in self.targets]
        now = self.clock()
        quorums = {
            cluster: _quorum_answer(read, read_round, sequence, waited, now)
            for cluster, (read, read_round) in quorum_reads.items()
        }
        snapshot = _assemble(
            self.targets,
            nodes,
            sequence=sequence,
            taken_at=taken_at,
            duration=time.perf_counter() - started,
            quorums=quorums,
            cluster_names=self.cluster_names,
            admin_only=self.admin_only,
            canaries={cluster: canary.view() for cluster, canary in self.canaries.items()},
            woken_rounds_total=self.woken_rounds_total,
        )
        self._latest = snapshot
        if log.isEnabledFor(logging.DEBUG):
            _log_round(snapshot, nodes)
        self._subscribers.notify(snapshot)
        return snapshot

    def _wait_for_reads(self, pending: Sequence[Future[Any]], waited: float, started: float, sequence: int) -> None:
        """Wait up to `waited` seconds from `started` for `pending`, but no longer for the read of a broker the
        fencing watch reads the controller fencing meanwhile (`wake`). The first round after a broker hangs
        has no reason to suspect it and waits for its RMI timeouts (~6.7 s); the controller's fencing,
        published by the next round, would wait behind it. One event for the whole round (set by the last
        read to finish, or by `wake`), not a wait per finished read: a fleet's round finishes ~1,000 reads."""
        left = {future for future in pending if not future.done()}
        if not left:  # nothing to wait for (every node a suspect, or no node to read)
            return
        changed, lock = threading.Event(), threading.Lock()

        def finished(future: Future[Any]) -> None:
            with lock:
                left.discard(future)
                if not left:
                    changed.set()

        with self._pending_lock:
            self._round_changed = changed
        try:
            for future in list(left):
                future.add_done_callback(finished)  # at once for a read done since
            deadline = started + waited
            while changed.wait(max(0.0, deadline - time.perf_counter())):
                with lock:
                    if not left:
                        return
                changed.clear()
                with self._pending_lock:
                    fenced = set(self._fenced_hint)  # kept: the next round reads them as suspects too
                cut = self._stop_waiting_for(fenced, sequence, time.perf_counter() - started)
                with lock:
                    left.difference_update(cut)
                    if not left:
                        return
        finally:
            with self._pending_lock:
                self._round_changed = None

    def _stop_waiting_for(
        self, fenced: Collection[tuple[str, int]], sequence: int, elapsed: float
    ) -> set[Future[_Read]]:
        """This round's reads of the brokers in `fenced`, no longer waited for (`_NodeMemory.cut_after`)."""
        cut = set()
        for target in self.targets:
            memory = self._memory[target]
            if (target.cluster, memory.node_id) in fenced and memory.read is not None and memory.read_round == sequence:
                memory.fenced, memory.cut_after, memory.fenced_since_page = True, elapsed, True
                cut.add(memory.read)
        return cut

    def _start_reads(
        self, taken_at: float, sequence: int
    ) -> tuple[dict[Target, Future[_Read]], list[Future[_Read]], list[tuple[float, Future[_Read]]]]:
        """Start the round's reads: the reads that finished after their round's deadline (served unless a newer
        one finishes), the fresh reads the round waits for, and the reads of nodes that timed out last time
        with how long each may be waited for."""
        late: dict[Target, Future[_Read]] = {}
        fresh: list[Future[_Read]] = []
        suspects: list[tuple[float, Future[_Read]]] = []
        due: list[Target] = []
        with self._pending_lock:
            fenced, self._fenced_hint = self._fenced_hint, set()
        for target in self.targets:
            memory = self._memory[target]
            memory.fenced = (target.cluster, memory.node_id) in fenced  # this round only (`wake`)
            memory.fenced_since_page = memory.fenced_since_page or memory.fenced
            memory.cut_after = None
            if memory.read is not None and memory.read.done():
                # finished after its round's deadline: served by this snapshot unless a newer read finishes
                late[target] = memory.read
                memory.timed_out = _timed_out(memory.read)
                memory.next_read_at = self._paced_until(memory, memory.read)
                memory.read = None
            # a paced node in its pause is not due, unless the controller was read fencing it: its next read
            # then says how it failed (refused at once after a crash) rather than its last page serving on
            if memory.read is None and (memory.fenced or time.perf_counter() >= memory.next_read_at):
                due.append(target)
            # else a read from an earlier round is still queued or running: not doubled, and not waited for
            # (a stalled node's would hold every round to the timeout), but used if it is done by the end
        # nodes that answered last time first: their reads start before the ones that may hang again
        for target in sorted(due, key=lambda t: self._memory[t].suspect):
            memory = self._memory[target]
            memory.read = self._lanes[target.cluster].submit(
                functools.partial(self._read, target, self._slow_due(memory, taken_at)), timed_out=memory.suspect
            )
            memory.read_round, memory.read_submitted_at = sequence, time.perf_counter()
            if memory.suspect:
                suspects.append((self._allowance(memory), memory.read))
            else:
                fresh.append(memory.read)
        return late, fresh, suspects

    def _allowance(self, memory: _NodeMemory) -> float:
        """How long a round waits for the fresh read of a node: the scrape timeout, or for a suspect (its last
        read timed out, or the round was woken with the controller fencing it), SUSPECT_WAIT_SECONDS (see there)."""
        if not memory.suspect:
            return self.timeout_seconds
        return min(self.timeout_seconds, max(SUSPECT_WAIT_SECONDS, SUSPECT_READS_WAITED * memory.good_read_seconds))

    def _submit_quorum_reads(self, sequence: int) -> dict[str, tuple[Future[QuorumView], int]]:
        """One quorum read per cluster at a time: a read still running from an earlier round is waited for
        again, not doubled (an unanswering quorum holds its one thread, not more)."""
        if self._quorum_pool is None:
            return {}
        for cluster, source in self.quorum_sources.items():
            pending = self._quorum_reads.get(cluster)
            if pending is None or pending[0].done():
                self._quorum_reads[cluster] = (self._quorum_pool.submit(source.read), sequence)
        return dict(self._quorum_reads)

    def _node_snapshot(
        self, target: Target, late: Future[_Read] | None, taken_at: float, sequence: int
    ) -> NodeSnapshot:
        memory = self._memory[target]
        # before a finished read updates memory.timed_out
        waited = self._allowance(memory) if memory.cut_after is None else round(memory.cut_after, 1)
        future, error = self._finished_read(memory, late, sequence, waited)
        if error is not None and (held := self._held(target, memory, taken_at)) is not None:
            if isinstance(held, NodeSnapshot):
                return held
            error = held
        failure = Failure.TIMEOUT  # unless the read failed with a reason of its own
        if error is None and future is not None:
            error, failure = _read_failure(target, future) or (None, failure)
        samples: tuple[Sample, ...] = ()
        if error is None and future is not None:
            try:
                samples = samples_from_readings(future.result().readings)
                identity = identify(samples)
            except Exception as exc:
                # A value no catalogue row can map is this node's problem, never the round's
                log.warning("unmappable MBean values from %s/%s", target.cluster, target.node, exc_info=exc)
                error, failure = f"unmappable MBean values: {type(exc).__name__}: {str(exc)[:200]}", Failure.OTHER
        if error is not None:
            memory.errors_total += 1
            memory.slow_samples, memory.slow_read_at, memory.held = (), None, None
            if future is not None and future.done():
                # a read that failed (one still running may yet be a slow page): no longer paced, so the
                # next round reads it again rather than after its last page's pause
                memory.slow_pages, memory.next_read_at = 0, 0.0
            duration = waited if future is not None and not future.done() else 0.0
            return _unread(target, memory, duration, error, taken_at, failure)
        assert future is not None
        return self._answered(target, memory, future.result(), samples, identity)

    def _finished_read(
        self, memory: _NodeMemory, late: Future[_Read] | None, sequence: int, waited: float
    ) -> tuple[Future[_Read] | None, str | None]:
        """The read this round serves for a node (its own, else one finished late), or why there is none."""
        future = memory.read
        if future is not None and future.done():
            memory.read = None  # consumed: the next round reads the node again
            memory.timed_out = _timed_out(future)
            return future, None
        if late is not None:
            return late, None
        if future is None or future.running():
            if memory.read_round != sequence:
                return future, "previous read still running (node stalled?)"
            if memory.timed_out:
                return future, (
                    f"no answer within {waited:g}s (its last read timed out: the round waits for it no longer)"
                )
            if memory.fenced:
                return future, f"no answer within {waited:g}s (the controller has fenced it: the round waits no longer)"
            return future, f"no answer within {waited:g}s"
        if memory.read_round == sequence:
            return future, "read still queued (more reads than the cluster's workers can do per round)"
        return future, "previous read still queued (more reads than the cluster's workers can do per round)"

    def _answered(
        self, target: Target, memory: _NodeMemory, read: _Read, samples: tuple[Sample, ...], identity: Identity
    ) -> NodeSnapshot:
        """The snapshot of a node that answered, its slow tier added, what it says of itself remembered."""
        memory.good_read_seconds, memory.last_read_at = read.duration, read.started_at
        memory.fenced_since_page = False
        if self.slow_interval_seconds is not None:
            samples = _with_slow_tier(memory, read, samples)
        until = self._paced_until(memory, read)
        memory.slow_pages = memory.slow_pages + 1 if self._slow_page(read) else 0
        stamped = None
        if read.page_bytes >= PACED_PAGE_BYTES:  # kept for a round its next read runs late, paced or not
            stamped = tuple(s if s.read_at is not None else replace(s, read_at=read.started_at) for s in samples)
        if until:  # paced: served until the next page lands, stamped with when it was taken
            samples = stamped or samples
        memory.held, memory.next_read_at = stamped, until
        if identity.role is not Role.UNKNOWN:
            memory.role, memory.mode = identity.role, identity.mode
        memory.active_controller = read.active_controller
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
            last_read_at=read.started_at,
        )

    def _slow_page(self, read: _Read) -> bool:
        return read.page_bytes >= PACED_PAGE_BYTES and read.duration > self.timeout_seconds

    def _paced_until(self, memory: _NodeMemory, read: _Read | Future[_Read]) -> float:
        """perf_counter() before which the node's next read does not start, `read` just finished (not yet
        counted in memory.slow_pages): where it makes the node paced, PACE_PAUSE_SHARE of it after it ended and
        no sooner than `page_interval_seconds` after it began; 0 for any other read, or one that failed."""
        if isinstance(read, Future):
            if read.cancelled() or read.exception() is not None:
                return 0.0
            read = read.result()
        if not self._slow_page(read) or memory.slow_pages + 1 < PACED_AFTER_SLOW_PAGES:
            return 0.0
        began = read.ended - read.duration
        return max(read.ended + PACE_PAUSE_SHARE * read.duration, began + self.page_interval_seconds)

    def _held(self, target: Target, memory: _NodeMemory, taken_at: float) -> NodeSnapshot | str | None:
        """A paced node's last read, served this round (NodeSnapshot.held), if its next is due or under way
        for no longer than PACED_READ_SLACK allows; past that, why it is no longer served (the node's error);
        None where there is none to serve (then the round says why it has no read)."""
        if memory.held is None or memory.last_read_at is None or memory.fenced_since_page:
            return None
        last = memory.good_read_seconds
        if memory.read is not None:
            under_way = time.perf_counter() - memory.read_submitted_at
            if under_way > (bound := max(PACED_READ_SLACK * last, last + self.timeout_seconds)):
                return (
                    f"its next page under way for {under_way:.0f}s, past {bound:.0f}s (its last took {last:.1f}s): "
                    "not answering as it did, its last page no longer served"
                )
            doing = f"the next under way for {under_way:.0f}s"
        else:
            doing = "the next due soon"
        # not paced: a large page usually inside the round's wait ran past it this once (a loaded host)
        how = (
            "read at its own pace: its page took"
            if memory.slow_pages >= PACED_AFTER_SLOW_PAGES
            else "a large page, late this round: its last took"
        )
        said = f"{how} {last:.1f}s; serving the read of {max(0.0, taken_at - memory.last_read_at):.0f}s ago, {doing}"
        return _unread(target, memory, last, said, memory.last_read_at, Failure.PACED, memory.held)

    def wake(self, fenced: Collection[tuple[str, int]] = ()) -> None:
        """Start the next round now rather than at its time (fencing_watch.FencingWatch read a change), at
        least WOKEN_ROUND_GAP_SECONDS after the last one started; a round under way finishes first. `fenced`:
        (cluster, node id) of brokers the controller was read fencing, each a suspect in the next round only
        (`_NodeMemory.fenced`: read after its siblings, waited for SUSPECT_WAIT_SECONDS): a broker fenced after
        a crash answers at once and a hung one no longer holds the round for its RMI timeouts; a round under
        way stops waiting for their reads (`_wait_for_reads`). Safe from any thread."""
        with self._pending_lock:
            self._fenced_hint.update(fenced)
            if fenced and self._round_changed is not None:  # a round under way stops waiting for them
                self._round_changed.set()
        self._wake.set()

    def run_forever(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            self._wake.clear()  # a change read during the round wakes the next one
            try:
                self.scrape_once()
            except Exception:
                log.exception("scrape round failed; serving the previous snapshot")
            woken = self._wake.wait(max(0.0, self.interval_seconds - (time.monotonic() - started)))
            if self._stop.is_set():
                break
            if woken and time.monotonic() - started < self.interval_seconds:
                self.woken_rounds_total += 1
                self._stop.wait(max(0.0, WOKEN_ROUND_GAP_SECONDS - (time.monotonic() - started)))

    def start(self) -> None:
        self._thread = threading.Thread(target=self.run_forever, name="scraper", daemon=True)
        self._thread.start()

    def request_stop(self) -> None:
        """No round starts after this; a round under way finishes (or times out) on its own."""
        self._stop.set()
        self._wake.set()

    def running(self) -> bool:
        """Whether the scrape thread is still in a round (after `stop`: one that waits on a hung read)."""
        return self._thread is not None and self._thread.is_alive()

    def stop(self, join_seconds: float | None = None) -> None:
        """Stop and wait for the round under way: at most `join_seconds` (default: its whole timeout)."""
        self.request_stop()
        if self._thread is not None:
            self._thread.join(timeout=self.timeout_seconds + 5 if join_seconds is None else join_seconds)
        for lane in self._lanes.values():
            lane.cancel_waiting()
        self._pool.shutdown(wait=False, cancel_futures=True)
        if self._quorum_pool is not None:
            self._quorum_pool.shutdown(wait=False, cancel_futures=True)
        for source in self.quorum_sources.values():
            source.close()
        for canary in self.canaries.values():
            canary.close()
        self.client.close()


def _with_slow_tier(memory: _NodeMemory, read: _Read, samples: tuple[Sample, ...]) -> tuple[Sample, ...]:
    """A node's samples with the slow tier's: this read's, stamped with its time and kept in `memory`, or
    the ones kept from the last read that had them."""
    if not read.slow:
        return (*samples, *memory.slow_samples)
    slow = tuple(replace(sample, read_at=read.started_at) for sample in samples if sample.series in SLOW_SERIES)
    phase = memory.slow_phase if memory.slow_read_at is None else 0.0
    memory.slow_samples, memory.slow_read_at = slow, read.started_at - phase
    return (*(sample for sample in samples if sample.series not in SLOW_SERIES), *slow)


def _unread(
    target: Target,
    memory: _NodeMemory,
    duration: float,
    error: str,
    scraped_at: float,
    failure: Failure,
    samples: tuple[Sample, ...] = (),
) -> NodeSnapshot:
    """A node not read this round as ctlplane remembers it: why, and for a paced node its last page's samples."""
    return NodeSnapshot(
        target.cluster,
        target.node,
        target.endpoint.address,
        memory.role,
        memory.mode,
        memory.node_id,
        memory.version,
        False,
        duration,
        error,
        memory.errors_total,
        scraped_at,
        samples,
        failure=failure,
        last_read_at=memory.last_read_at,
    )


def _quorum_pool(sources: Mapping[str, QuorumSource]) -> ThreadPoolExecutor | None:
    """A thread per cluster's quorum source, or none without any."""
    return ThreadPoolExecutor(max_workers=len(sources), thread_name_prefix="quorum") if sources else None


def _close_all(sources: Sequence[QuorumSource | CanarySource]) -> None:
    for source in sources:
        try:
            source.close()
        except Exception:  # closing a dropped client must not take the others with it
            log.warning("closing a quorum reader failed", exc_info=True)


def _timed_out(read: Future[_Read]) -> bool:
    """Whether a finished read failed as a timeout (the node hung or dropped packets)."""
    if read.cancelled():
        return False
    exc = read.exception()
    return isinstance(exc, ReadError) and exc.failure is Failure.TIMEOUT


def _read_failure(target: Target, future: Future[_Read]) -> tuple[str, Failure] | None:
    """Why a finished read failed, if it did: its own reason, or an unexpected exception logged."""
    exc = ReadError("read cancelled (scraper stopping)") if future.cancelled() else future.exception()
    if isinstance(exc, ReadError):
        return str(exc), exc.failure
    if exc is not None:
        log.error("unexpected failure reading %s/%s", target.cluster, target.node, exc_info=exc)
        return f"{type(exc).__name__}: {exc}", Failure.OTHER
    return None


def _log_round(snapshot: FleetSnapshot, nodes: Sequence[NodeSnapshot]) -> None:
    down = [f"{n.cluster}/{n.node}: {n.error}" for n in nodes if not n.up]
    log.debug(
        "round %d: %d of %d nodes read in %.3f s%s",
        snapshot.sequence,
        len(nodes) - len(down),
        len(nodes),
        snapshot.round_duration_seconds,
        "; not read: " + "; ".join(down) if down else "",
    )
