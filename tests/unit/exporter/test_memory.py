"""release_free_memory gives memory freed by other threads back to the system; full garbage collections
run on the exporter's schedule (collect_garbage_per_round)."""

from __future__ import annotations

import ctypes
import gc
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ctlplane.exporter.memory import (
    RELEASE_EVERY_SECONDS,
    MemoryReleaser,
    collect_garbage_per_round,
    release_free_memory,
)

CHUNK = 64 * 1024  # above pymalloc's 512 bytes and below malloc's mmap threshold: lives in a malloc arena


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
def test_memory_freed_in_a_worker_thread_goes_back_to_the_system() -> None:
    kept: list[bytearray] = []

    def work() -> None:
        # 2,000 chunks written to (resident), every other one freed: the freed ones sit between live ones,
        # where only a trim returns their pages, as a round's garbage does between what the round keeps
        chunks = [bytearray(b"x" * CHUNK) for _ in range(2000)]
        kept.extend(chunks[::2])
        del chunks

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    before = _rss_mb()
    release_free_memory()
    after = _rss_mb()
    assert before - after > 40, (before, after)  # ~62 MB were freed
    assert len(kept) == 1000


class _Node:
    """A cyclic object: only the cyclic collector frees it once unreachable."""

    def __init__(self) -> None:
        self.me = self


@pytest.fixture
def collector() -> Iterator[None]:
    saved, enabled = gc.get_threshold(), gc.isenabled()
    yield
    gc.set_threshold(*saved)
    if enabled:
        gc.enable()


def _collections_during(work: Callable[[], object]) -> list[int]:
    """The generation of each collection that `work` ran (in this thread: another test's exporter left in
    the worker, whose idle collector thread collects every 30 s, once made this count two too many)."""
    generations: list[int] = []
    worker = threading.get_ident()

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "stop" and threading.get_ident() == worker:
            generations.append(info["generation"])

    gc.callbacks.append(count)
    try:
        work()
    finally:
        gc.callbacks.remove(count)
    return generations


def test_rounds_that_replace_their_snapshot_run_only_the_scheduled_full_collection(collector: None) -> None:
    # A round keeps ~100,000 objects until the next replaces them (a 1,000-node snapshot and page): CPython's
    # own rule promoted enough of them to start full passes that freed nothing (~11 a round with JPype's,
    # 2-3.7 s of CPU, bench/fleet.py); now one young collection per round and one full pass per 5 minutes.
    now = [0.0]
    after_round = collect_garbage_per_round(every_seconds=300.0, clock=lambda: now[0], idle_seconds=None)

    def rounds() -> None:
        kept: list[list[int]] = []
        for _ in range(30):
            kept = [[i] for i in range(100_000)]  # lists: tracked for as long as they live, as dicts and objects are
            now[0] += 15.0
            after_round(kept)

    generations = _collections_during(rounds)
    assert generations.count(2) == 1 and generations.count(1) == 29, generations  # 450 s: the full one at 300 s


def test_the_full_collection_jpype_starts_on_each_jvm_collection_does_nothing(collector: None) -> None:
    # JPype calls PyGC_Collect() whenever its JVM collects (native/common/jp_gc.cpp triggered()); the C call
    # is made here as JPype makes it
    collect = ctypes.pythonapi.PyGC_Collect
    collect.restype = ctypes.c_ssize_t
    collect_garbage_per_round(idle_seconds=None)
    assert _collections_during(lambda: [collect() for _ in range(10)]) == []


def test_cycles_are_freed_by_the_next_round_or_the_scheduled_full_collection(collector: None) -> None:
    now = [0.0]
    after_round = collect_garbage_per_round(every_seconds=300.0, clock=lambda: now[0], idle_seconds=None)
    young = _Node()
    young_gone = weakref.ref(young)
    del young  # made between rounds (a request's exception and its traceback, say)
    after_round()
    assert young_gone() is None
    old = _Node()
    old_gone = weakref.ref(old)
    after_round()  # survives a round: promoted to the oldest generation, as a round's snapshot is
    del old
    now[0] += 290.0
    after_round()
    assert old_gone() is not None  # young collections do not look at it
    now[0] += 10.0
    after_round()
    assert old_gone() is None


def test_without_rounds_the_young_generations_are_still_collected(collector: None) -> None:
    # an interval of minutes, or rounds that keep failing: a thread collects in their place
    collect = collect_garbage_per_round(idle_seconds=0.2)
    try:
        cycle = _Node()
        gone = weakref.ref(cycle)
        del cycle
        deadline = time.monotonic() + 30
        while gone() is not None:
            assert time.monotonic() < deadline, "no collection without rounds"
            time.sleep(0.05)
    finally:
        collect.stop()


def test_free_memory_goes_back_at_most_every_ten_seconds_however_short_the_rounds() -> None:
    now = [0.0]
    released: list[float] = []
    releaser = MemoryReleaser(clock=lambda: now[0], release=lambda: released.append(now[0]))
    for at in (0.0, 1.0, 9.9, 10.0, 15.0, 35.0):  # rounds of 1 s, then of the default 15 s and longer
        now[0] = at
        releaser(object())
    assert released == [0.0, 10.0, 35.0] and RELEASE_EVERY_SECONDS == 10.0
