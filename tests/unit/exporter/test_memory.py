"""release_free_memory gives memory freed by other threads back to the system."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from exporter.memory import release_free_memory

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
