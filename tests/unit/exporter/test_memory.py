"""release_free_memory gives memory freed by other threads back to the system; full garbage collections
run on the exporter's schedule (schedule_full_collections)."""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from exporter.memory import release_free_memory, schedule_full_collections

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
    """A cyclic object: only a full (or young) collection frees it once unreachable."""

    def __init__(self) -> None:
        self.me = self


@pytest.fixture
def gc_thresholds() -> Iterator[None]:
    saved = gc.get_threshold()
    yield
    gc.set_threshold(*saved)


def _full_collections_during(work: Callable[[], None]) -> int:
    full = 0

    def count(phase: str, info: dict[str, int]) -> None:
        nonlocal full
        if phase == "stop" and info["generation"] == 2:
            full += 1

    gc.callbacks.append(count)
    try:
        work()
    finally:
        gc.callbacks.remove(count)
    return full


def test_rounds_that_replace_their_snapshot_trigger_no_full_collection_of_cpythons(gc_thresholds: None) -> None:
    # A round keeps ~100,000 objects until the next replaces them (a 1,000-node snapshot and page): with
    # CPython's own rule, each round promoted enough of them to start full passes that freed nothing
    # (~11 a round, 2-3.7 s of CPU, bench/fleet.py); the exporter runs them on its schedule instead.
    now = [0.0]
    after_round = schedule_full_collections(every_seconds=300.0, clock=lambda: now[0])

    def rounds() -> None:
        kept: list[list[int]] = []
        for _ in range(30):
            kept = [[i] for i in range(100_000)]  # lists: tracked for as long as they live, as dicts and objects are
            now[0] += 15.0
            after_round(kept)

    assert _full_collections_during(rounds) == 1  # 450 s of rounds: the one at 300 s


def test_a_cycle_that_outlived_the_young_collections_is_freed_by_the_scheduled_full_one(gc_thresholds: None) -> None:
    now = [0.0]
    after_round = schedule_full_collections(every_seconds=300.0, clock=lambda: now[0])
    cycle = _Node()
    gone = weakref.ref(cycle)
    gc.collect(1)
    gc.collect(1)  # promoted to the oldest generation, as a round's survivors are
    del cycle
    gc.collect(1)
    assert gone() is not None  # young collections do not look at it
    now[0] += 299.0
    after_round()
    assert gone() is not None
    now[0] += 1.0
    after_round()
    assert gone() is None
