"""Give the C allocator's free memory back to the system after each round.

A round builds a ~18 MB snapshot at 1,000 nodes in many worker threads; glibc gives each thread an arena
of its own (up to 8 per core) and keeps what those threads free for reuse, so the process's RSS grew by
the freed-but-held memory (bench/scrapers.py: malloc in use flat at ~65 MB while "free held" rose from 35
to 114 MB in 7 minutes). malloc_trim(0) returns the free pages of every arena to the system (glibc 2.8+
also releases whole free pages inside an arena, not only at its top). Elsewhere than glibc: nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
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
