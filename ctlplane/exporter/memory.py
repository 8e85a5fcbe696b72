"""Give the C allocator's free memory back to the system after each round (at most every 10 s), and run
CPython's full cyclic garbage collections on the exporter's schedule rather than CPython's.

A round builds a ~18 MB snapshot at 1,000 nodes in many worker threads; glibc gives each thread an arena
of its own (up to 8 per core) and keeps what those threads free for reuse, so the process's RSS grew by
the freed-but-held memory (bench/scrapers.py: malloc in use flat at ~65 MB while "free held" rose from 35
to 114 MB in 7 minutes). malloc_trim(0) returns the free pages of every arena to the system (glibc 2.8+
also releases whole free pages inside an arena, not only at its top). Elsewhere than glibc: nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


_TRIM = _malloc_trim()


def release_free_memory(*_: object) -> None:
    """Return the allocator's free pages to the system. Takes (and ignores) a listener's argument."""
    if _TRIM is not None:
        _TRIM(0)


# A trim walks every arena (~0.3 ms for a small process, more for a large one): after each round of the default
# 15 s interval, but no more often than this where rounds are shorter (the memory comes back all the same)
RELEASE_EVERY_SECONDS = 10.0


class MemoryReleaser:
    """A round listener that returns free memory to the system (`release`) at most every `every_seconds`."""

    def __init__(
        self,
        every_seconds: float = RELEASE_EVERY_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        release: Callable[[], None] = release_free_memory,
    ) -> None:
        self.every_seconds = every_seconds
        self.clock = clock
        self.release = release
        self._last: float | None = None

    def __call__(self, *_: object) -> None:
        now = self.clock()
        if self._last is None or now - self._last >= self.every_seconds:
            self._last = now
            self.release()


# Two things ran full cyclic collections over the whole heap many times a round, freeing nothing:
# - JPype, on every collection of its JVM's: a sentinel PhantomReference is enqueued when the JVM collects
#   (org/jpype/ref/JPypeReferenceQueue.java addSentinel), and JPype answers with PyGC_Collect(), a full
#   Python collection (native/common/jp_reference_queue.cpp ..._wake -> jp_gc.cpp
#   JPGarbageCollection::triggered). A round of node reads fills the JVM's young generation many times.
# - CPython's own rule, a full pass once the objects promoted since the last one reach a quarter of the
#   long-lived (Modules/gcmodule.c): a round's snapshot, readings and page rows live through many young
#   collections and are promoted, then die by reference count when the next round replaces them.
# At 1,000 simulated nodes that was ~11 full passes a round over ~530,000 objects: 2-3.7 s of a ~8 s
# round (gc.callbacks in bench/fleet.py). With the collector disabled PyGC_Collect returns at once
# (CPython 3.11 gcmodule.c: `if (!gcstate->enabled) return 0;`) while gc.collect() still works, so the
# exporter disables it and collects itself: the young generations after each round (what the round and
# the requests since the last made, short-lived cycles such as an exception and its traceback included),
# and everything every FULL_COLLECTION_SECONDS.
FULL_COLLECTION_SECONDS = 300.0
# ... and when no round has ended for this long (an interval of minutes, or a scrape loop whose rounds keep
# failing), a thread collects in its place, so garbage from HTTP requests and the dashboard never waits for
# a round
IDLE_COLLECTION_SECONDS = 60.0


class RoundCollector:
    """A round listener (call it after each round) that collects cyclic garbage: the young generations,
    and every generation when `every_seconds` have passed since the last full pass; a daemon thread does
    the same when no collection ran for `idle_seconds`."""

    def __init__(self, every_seconds: float, idle_seconds: float | None, clock: Callable[[], float]) -> None:
        self.every_seconds = every_seconds
        self.idle_seconds = idle_seconds
        self.clock = clock
        self._lock = threading.Lock()
        self._last_full = self._last = clock()
        self._stop = threading.Event()
        if idle_seconds is not None:
            threading.Thread(target=self._watch, name="gc-idle", daemon=True).start()

    def __call__(self, *_: object) -> None:
        with self._lock:
            now = self.clock()
            self._last = now
            if now - self._last_full < self.every_seconds:
                gc.collect(1)
                return
            self._last_full = now
            started = time.perf_counter()
            found = gc.collect()
        log.debug("full garbage collection: %d unreachable objects, %.3f s", found, time.perf_counter() - started)

    def _watch(self) -> None:
        assert self.idle_seconds is not None
        while not self._stop.wait(self.idle_seconds / 2):
            if self.clock() - self._last >= self.idle_seconds:
                self()

    def stop(self) -> None:
        self._stop.set()


def collect_garbage_per_round(
    every_seconds: float = FULL_COLLECTION_SECONDS,
    clock: Callable[[], float] = time.monotonic,
    idle_seconds: float | None = IDLE_COLLECTION_SECONDS,
) -> RoundCollector:
    """Take cyclic garbage collection over for this process: disable CPython's automatic collections (and
    with them JPype's) and return the round listener that collects instead (RoundCollector)."""
    gc.disable()
    return RoundCollector(every_seconds, idle_seconds, clock)
