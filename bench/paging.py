"""Time to page on real Kafka: a hung (or killed) broker -> PagerDuty trigger, several runs, median and worst.

Runs tests/e2e/test_paging.py (real Kafka 4.3 KRaft, or with `--mode zookeeper` 3.9 at Kafka's default 18 s
ZooKeeper session; ctlplane, Prometheus and Alertmanager at the shipped
intervals and rules, a local receiver in PagerDuty's place) `--runs` times, each in a fresh pytest session
(a fresh cluster, so every run starts at a random phase of ctlplane's round and Prometheus' scrape and
evaluation), and prints what each run measured from SIGSTOP to the trigger and from SIGCONT to the
resolve. Figures only: nothing here is asserted. Run: `python -m bench.paging [--runs 5] [--fault kill]
[--mode zookeeper]`.

Targets (issue 49): <= 35 s median, <= 50 s worst, with no new false pages (the recorded fault and
restart rows: `python -m tools.page_sweep`). The latency budget is in docs/alerts.md "How fast a page comes".
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIGURE = re.compile(r"\[paging e2e\] \S+ [^>]+ -> KafkaBrokerFenced trigger: ([\d.]+) s; \S+ -> resolve: ([\d.]+) s")
WHAT = {"stop": ("hung", "resumed"), "kill": ("killed", "restarted")}
MEDIAN_TARGET_SECONDS = 35.0
WORST_TARGET_SECONDS = 50.0


def one_run(fault: str, mode: str) -> tuple[float, float] | None:
    """(seconds to page, seconds to resolve) of one run, or None if the test failed (its output is shown)."""
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-s", "tests/e2e/test_paging.py"]
    env = {**os.environ, "CTLPLANE_PAGING_FAULT": fault, "CTLPLANE_PAGING_MODE": mode}
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False, env=env)
    match = FIGURE.search(result.stdout)
    if result.returncode != 0 or match is None:
        sys.stdout.write(result.stdout[-3000:] + result.stderr[-2000:])
        return None
    return float(match[1]), float(match[2])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--fault", choices=("stop", "kill"), default="stop", help="SIGSTOP the broker, or kill -9 it (then restart)"
    )
    parser.add_argument("--mode", choices=("kraft", "zookeeper"), default="kraft")
    args = parser.parse_args()
    pages, resolves, failed = [], [], 0
    for run in range(1, args.runs + 1):
        figures = one_run(args.fault, args.mode)
        if figures is None:
            failed += 1
            sys.stdout.write(f"run {run}: the paging test failed\n")
            continue
        pages.append(figures[0])
        resolves.append(figures[1])
        sys.stdout.write(f"run {run}: page {figures[0]:.1f} s, resolve {figures[1]:.1f} s\n")
        sys.stdout.flush()
    if not pages:
        return 1
    sys.stdout.write(
        "\n| figure | measured | target |\n|---|---|---|\n"
        f"| {WHAT[args.fault][0]} broker ({args.mode}) -> PagerDuty trigger, median of {len(pages)} "
        f"| {statistics.median(pages):.1f} s "
        f"| <= {MEDIAN_TARGET_SECONDS:g} s |\n"
        f"| the same, worst | {max(pages):.1f} s | <= {WORST_TARGET_SECONDS:g} s |\n"
        f"| {WHAT[args.fault][1]} -> resolve, median / worst "
        f"| {statistics.median(resolves):.1f} / {max(resolves):.1f} s | - |\n"
        f"| runs that failed | {failed} | 0 |\n"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
