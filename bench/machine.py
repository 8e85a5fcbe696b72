"""What the benchmarks say about the machine they ran on: load average, a process's RSS, threads and memory."""

from __future__ import annotations

import ctypes
import os
import resource
import sys
import tempfile
from pathlib import Path


def load() -> str:
    """The load average, printed beside every figure: a figure from a loaded machine says so."""
    return "load average " + ", ".join(f"{x:.1f}" for x in os.getloadavg())


def own_cpu_seconds() -> float:
    """User + system CPU of this process (every thread: the in-process JVM's included)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def process_cpu_seconds(pid: int) -> float:
    """utime + stime of another process (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def status(pid: int | str = "self") -> tuple[float, int]:
    """(RSS in MB, threads) of a process, from /proc."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["Threads"])


class _MallInfo2(ctypes.Structure):
    # glibc's struct mallinfo2 (2.33+): every field a size_t
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks")
    ] + [("keepcost", ctypes.c_size_t)]


def memory_breakdown() -> str:
    """Where this process's memory is: malloc in use vs free but held (glibc mallinfo2, summed over
    every arena), the in-process JVM's heap and non-heap if one runs, and pymalloc's arenas.
    RSS growth with malloc's in-use flat is fragmentation or arenas, not a leak."""
    parts = []
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = _MallInfo2
        info = libc.mallinfo2()
        in_use = (info.uordblks + info.hblkhd) / 2**20
        parts.append(f"malloc in use {in_use:.0f} MB, free held {info.fordblks / 2**20:.0f} MB")
    except (OSError, AttributeError):
        parts.append("malloc: no mallinfo2")
    try:
        import jpype

        if jpype.isJVMStarted():
            memory = jpype.JClass("java.lang.management.ManagementFactory").getMemoryMXBean()
            heap, other = memory.getHeapMemoryUsage(), memory.getNonHeapMemoryUsage()
            parts.append(
                f"JVM heap committed {int(heap.getCommitted()) / 2**20:.0f} MB "
                f"(used {int(heap.getUsed()) / 2**20:.0f}), "
                f"non-heap {int(other.getCommitted()) / 2**20:.0f} MB"
            )
    except ImportError:
        pass
    parts.append(f"pymalloc arenas {_pymalloc_arena_bytes() / 2**20:.0f} MB")
    return "; ".join(parts)


def _pymalloc_arena_bytes() -> int:
    """Bytes in pymalloc's arenas, which it maps itself (not malloc): from sys._debugmallocstats' report."""
    with tempfile.TemporaryFile("w+") as capture:
        saved = os.dup(2)
        try:
            sys.stderr.flush()
            os.dup2(capture.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        capture.seek(0)
        for line in capture:
            if line.startswith("# arenas allocated current"):
                arenas = int(line.split("=")[-1].replace(",", ""))
                return arenas * 256 * 1024  # ARENA_SIZE in CPython 3.11
    return 0
