"""What the benchmarks say about the machine they ran on: load average, a process's RSS and threads."""

from __future__ import annotations

import os
from pathlib import Path


def load() -> str:
    """The load average, printed beside every figure: a figure from a loaded machine says so."""
    return "load average " + ", ".join(f"{x:.1f}" for x in os.getloadavg())


def status(pid: int | str = "self") -> tuple[float, int]:
    """(RSS in MB, threads) of a process, from /proc."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["Threads"])
