"""Hostile input at the edges and a killed exporter, with many more cases than the suite tries: the
figures of issue 15.

    .venv/bin/python -m bench.hostile_inputs [--examples 3000] [--cycles 50]

1. Runs the property tests of tests/unit/exporter/test_hostile_inputs.py with --examples generated cases
   each (configs through `check-config`; HTTP requests and Dash callback bodies against the exporter's app
   with auth and the dashboard) and prints hypothesis' counts. A failure is a traceback or a 5xx answer;
   hypothesis stops at the first and shrinks it. Targets: tracebacks 0, 5xx 0.
2. kill -9 of a process writing the history (a flush every round, as fast as it can) at a random moment,
   --cycles times on one archive, then again on a 2 MiB tmpfs that fills up during the cycles: every
   visible file must read back, and no row of a flush the writer had completed may be missing. Targets:
   unreadable files 0, rows lost among those flushed 0.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq  # type: ignore[import-untyped]  # pyarrow ships no type hints

ROOT = Path(__file__).resolve().parent.parent
TESTS = "tests/unit/exporter/test_hostile_inputs.py"

# The child: flush one round at a time and say how many rows are safely on disk after each flush.
WRITER = """
import sys
from pathlib import Path
from ctlplane.exporter.history.writer import HistoryWriter
from tests.unit.exporter.history.test_history import observe, T
writer = HistoryWriter(Path(sys.argv[1]), retention_days=None, clock=lambda: T)
i = int(sys.argv[2])
while True:
    writer.observe(observe(T + 15 * i)[0])
    i += 1
    try:
        writer.flush()
    except OSError:
        continue  # a full disk: the rows stay buffered, nothing is acknowledged
    print(i, flush=True)  # every round before i is on disk
"""


def run_properties(examples: int) -> tuple[int, str]:
    started = time.monotonic()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--hypothesis-show-statistics",
            "-W",
            "ignore",
            TESTS,
        ],
        cwd=ROOT,
        env={**os.environ, "CTLPLANE_HOSTILE_INPUT_EXAMPLES": str(examples)},
        capture_output=True,
        text=True,
        check=False,
    )
    tried = sum(int(n) for n in re.findall(r"- (\d+) passing, \d+ failing", result.stdout))
    failed = sum(int(n) for n in re.findall(r"- \d+ passing, (\d+) failing", result.stdout))
    print(
        f"generated cases tried: {tried} (configs, HTTP requests, callback bodies; {time.monotonic() - started:.0f} s)"
    )
    print(f"tracebacks or 5xx answers: {failed}   target 0")
    if result.returncode != 0:
        print(result.stdout[-3000:])
    return result.returncode, result.stdout


def kill_cycles(root: Path, cycles: int, rng: random.Random) -> tuple[int, int, int]:
    """(rows acknowledged as flushed, rows of those missing, unreadable files) after `cycles` kills."""
    acknowledged_rounds: set[int] = set()
    next_round = 0
    for _ in range(cycles):
        child = subprocess.Popen(
            [sys.executable, "-W", "ignore", "-c", WRITER, str(root), str(next_round)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        time.sleep(rng.uniform(2.0, 4.0))  # the child imports for ~1.5 s, then flushes as fast as it can
        child.send_signal(signal.SIGKILL)
        out, _ = child.communicate()
        done = [int(line) for line in out.split()]
        # a printed i means rounds next_round..i-1 were all flushed (buffered rows are flushed in order)
        if done:
            acknowledged_rounds.update(range(next_round, done[-1]))
            next_round = done[-1] + 1000  # rounds of the next cycle: distinct timestamps
        else:
            next_round += 1000
    unreadable = 0
    timestamps: set[float] = set()
    for path in root.glob("date=*/cluster=*/part-*.parquet"):
        try:
            table = pq.read_table(path, columns=["timestamp"])
        except Exception:
            unreadable += 1
            continue
        timestamps.update(ts.timestamp() for ts in table.column("timestamp").to_pylist())
    from tests.unit.exporter.history.test_history import T

    missing = sum(1 for i in acknowledged_rounds if T + 15 * i not in timestamps)
    return len(acknowledged_rounds) * 22, missing * 22, unreadable


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--examples", type=int, default=3000)
    parser.add_argument("--cycles", type=int, default=50)
    args = parser.parse_args()
    code, _ = run_properties(args.examples)
    rng = random.Random(15)
    with tempfile.TemporaryDirectory() as scratch:
        flushed, lost, unreadable = kill_cycles(Path(scratch) / "history", args.cycles, rng)
    print(
        f"kill -9 during history writes, {args.cycles} cycles: {flushed} rows flushed, {lost} of them lost, "
        f"{unreadable} unreadable files   target 0, 0"
    )
    small = Path(tempfile.mkdtemp())
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(small)], capture_output=True)
    if mounted.returncode != 0:
        print(f"full-disk cycles skipped: cannot mount a tmpfs ({mounted.stderr.decode().strip()})")
    else:
        try:
            flushed, lost, unreadable = kill_cycles(small / "history", args.cycles, rng)
            used = os.statvfs(small)
            full = 100 * (1 - used.f_bavail / used.f_blocks)
            print(
                f"... on a 2 MiB tmpfs that fills ({full:.0f}% used at the end): {flushed} rows flushed, "
                f"{lost} lost, {unreadable} unreadable   target 0, 0"
            )
        finally:
            subprocess.run(["umount", "-l", str(small)], check=False)
    return code or int(lost > 0 or unreadable > 0)


if __name__ == "__main__":
    raise SystemExit(main())
