"""Hostile MBean values through the whole path, many more cases than the suite tries: the figures of
issue 13.3.

    .venv/bin/python -m bench.hostile_values [--examples 3000]

Runs the property test tests/unit/exporter/test_hostile_values.py (hypothesis: NaN, +-inf, huge ints,
odd Unicode, thousands of broker=* MBeans, enormous strings, beside a healthy cluster) with
--examples generated cases and prints hypothesis' own count of the cases tried and failed. A failure is
a traceback out of the round, the health model or the exposition, or any change in a healthy node's
series, health or /metrics lines ("nodes wrongly affected"); hypothesis stops at the first and
shrinks it, so the figure is 0 or "at least 1" with the smallest failing case printed.
Targets: tracebacks 0, nodes wrongly affected 0.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEST = (
    "tests/unit/exporter/test_hostile_values.py"
    "::test_hostile_values_never_break_the_round_health_or_exposition_of_anyone_else"
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--examples", type=int, default=3000)
    args = parser.parse_args()
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--hypothesis-show-statistics", TEST],
        cwd=ROOT,
        env={**os.environ, "CTLPLANE_HOSTILE_EXAMPLES": str(args.examples)},
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.monotonic() - started
    output = result.stdout + result.stderr
    passing = re.search(r"(\d+) passing, (\d+) failing, and (\d+) invalid", output)
    if passing is None:
        print(output[-4000:])
        print("could not read hypothesis' statistics")
        return 1
    tried, failing, invalid = (int(group) for group in passing.groups())
    print(f"{args.examples} generated cases asked for, {elapsed:.0f} s; load average {os.getloadavg()[0]:.1f}")
    print(f"{'figure':<40} {'value':>8}   target")
    print(f"{'cases tried (passing + failing)':<40} {tried + failing:>8}")
    print(f"{'cases hypothesis discarded as invalid':<40} {invalid:>8}")
    print(f"{'tracebacks or nodes wrongly affected':<40} {failing:>8}   0")
    if result.returncode != 0:
        print(output[-4000:])
    return result.returncode


if __name__ == "__main__":
    raise SystemExit(main())
