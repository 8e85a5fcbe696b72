"""Hung nodes beside a healthy cluster: round time and the healthy cluster's up ratio, printed as a table.

    .venv/bin/python bench/blackhole.py [--hung 0,16,64] [--rounds 4] [--workers 16] [--timeout 3]

The healthy cluster is 10 simulated nodes (one simulator process, real remote JMX on loopback); the hung
ones are black-holed loopback ports (harness.blackhole: SYNs dropped, as for a firewalled host), listed
first. Each count runs twice: with per-cluster worker shares (the scraper's behaviour) and with every
cluster allowed the whole pool (one shared queue, as before). RMI timeouts of 1 s, bounded rounds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ctlplane.demo.launch import start_simulator
from ctlplane.exporter import scraper as scraper_module
from ctlplane.exporter.scraper import Scraper, Target
from ctlplane.exporter.sources.jmx.base import Endpoint
from ctlplane.exporter.sources.jmx.jpype_client import JPypeJmxClient
from harness.blackhole import BlackHoles


def _whole_pool(workers: int, sizes: Mapping[str, int]) -> dict[str, int]:
    # a lane as wide as the fleet hands every read to the pool at once: one first-come queue, as before
    return dict.fromkeys(sizes, sum(sizes.values()))


def _never_timed_out(read: Future[Any]) -> bool:
    return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--hung", default="0,16,64", help="numbers of black-holed nodes")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--timeout", type=float, default=3.0, help="the scrape round's timeout, seconds")
    args = parser.parse_args()
    counts = [int(count) for count in args.hung.split(",")]

    simulator = start_simulator(fleet_clusters=1, fleet_nodes=10, max_heap="128m", ready_timeout=120)
    client = JPypeJmxClient(timeout_seconds=1.0)
    healthy = [Target(n.cluster, n.name, Endpoint("127.0.0.1", n.port)) for n in simulator.nodes]
    shares, timed_out = scraper_module.worker_shares, scraper_module._timed_out
    rows = []
    try:
        for hung in counts:
            for mode in ("shares", "shared queue"):
                # The old behaviour: every cluster may fill the whole pool, whose queue is first come, first
                # served, and a node that timed out is not read after the others.
                old = mode == "shared queue"
                scraper_module.worker_shares = _whole_pool if old else shares
                scraper_module._timed_out = _never_timed_out if old else timed_out
                with BlackHoles(hung) as holes:
                    unreachable = [Target("unreachable", f"h{p}", Endpoint("127.0.0.1", p)) for p in holes.ports]
                    scraper = Scraper(
                        unreachable + healthy,
                        client,
                        interval_seconds=args.timeout,
                        timeout_seconds=args.timeout,
                        workers=args.workers,
                    )
                    walls, ratios = [], []
                    for _ in range(args.rounds):
                        started = time.monotonic()
                        snapshot = scraper.scrape_once()
                        walls.append(time.monotonic() - started)
                        cluster = snapshot.cluster(healthy[0].cluster)
                        assert cluster is not None
                        ratios.append(sum(node.up for node in cluster.nodes) / len(cluster.nodes))
                    scraper._pool.shutdown(wait=False, cancel_futures=True)  # the client is reused
                rows.append((hung, mode, statistics.median(walls), max(walls), statistics.mean(ratios), min(ratios)))
                print(f"  {hung} hung, {mode}: rounds {[f'{w:.2f}' for w in walls]} s, healthy up {ratios}")
    finally:
        scraper_module.worker_shares, scraper_module._timed_out = shares, timed_out
        client.close()
        simulator.stop()

    print(
        f"\n{len(healthy)} healthy nodes, {args.workers} workers, timeout {args.timeout:g} s, RMI timeouts 1 s, "
        f"{args.rounds} rounds"
    )
    print(f"{'hung':>4} {'mode':>12} {'round s':>8} {'max s':>6} {'healthy up':>10} {'worst':>6}")
    for hung, mode, median, worst_wall, ratio, worst in rows:
        print(f"{hung:>4} {mode:>12} {median:>8.2f} {worst_wall:>6.2f} {ratio:>10.2f} {worst:>6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
