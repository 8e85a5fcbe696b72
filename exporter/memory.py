"""Give the C allocator's free memory back to the system after each round, and run CPython's full cyclic
garbage collections on the exporter's schedule rather than CPython's.

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


# CPython (3.11) runs a full collection once the objects promoted since the last one reach a quarter of the
# long-lived ones (Modules/gcmodule.c, long_lived_pending > long_lived_total / 4). A round's snapshot,
# readings and page rows live through many young collections and are promoted, then die by reference count
# when the next round replaces them: at 1,000 simulated nodes that rule fired ~11 times a round, each pass
# traversing ~530,000 objects and freeing none, 2-3.7 s of a ~8 s round (gc.callbacks in bench/fleet.py).
# Young collections still run as CPython schedules them (short-lived cycles, e.g. an exception and its
# traceback, die there); the full pass that finds cycles which outlived them runs this often instead.
FULL_COLLECTION_SECONDS = 300.0
# gc.set_threshold's third value: full collections after this many young-generation-1 passes, i.e. never
_NEVER = 2**31 - 1


def schedule_full_collections(
    every_seconds: float = FULL_COLLECTION_SECONDS, clock: Callable[[], float] = time.monotonic
) -> Callable[..., None]:
    """Stop CPython's own full collections for this process and return a round listener that runs one
    when `every_seconds` have passed since the last (the first `every_seconds` after this call)."""
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, _NEVER)
    last = clock()

    def after_round(*_: object) -> None:
        nonlocal last
        now = clock()
        if now - last >= every_seconds:
            last = now
            started = time.perf_counter()
            found = gc.collect()
            log.debug("full garbage collection: %d unreachable objects, %.3f s", found, time.perf_counter() - started)

    return after_round
