"""The dashboard's memory after an hour of a 1,000-node fleet, on a simulated clock.

    .venv/bin/python -m bench.dashboard_memory [--nodes 1000] [--minutes 60] [--interval 15] [--keep-snapshots]

Snapshots come from the real path once: the simulator's first 100 nodes (10 clusters of 10, KRaft and
ZooKeeper alternating) read over JMX by the Scraper with the JPype client until every node answers. They
are copied under new cluster names up to --nodes, and each simulated round gives every sample a new value
(new objects, as a real round has), advances the clock by --interval, and goes through the real
ExporterState (health model) into the dashboard's InProcessSource, whose Trail keeps what the pages draw.
After the hour one cluster page is built (its figures and table). RSS is this process's VmRSS, JVM
included.

--keep-snapshots also keeps every observation, as the dashboard did before it had a Trail, for the
figure it replaces.
Target (issue 13.5): RSS < 1 GB with 1,000 nodes after an hour.
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.machine import load, status
from ctlplane.dashboard import views
from ctlplane.dashboard.source import NO_ALERTS, InProcessSource
from ctlplane.demo.launch import start_simulator
from ctlplane.exporter.model import ClusterSnapshot, FleetSnapshot, Sample
from ctlplane.exporter.scraper import Scraper, Target
from ctlplane.exporter.sources.jmx.base import Endpoint
from ctlplane.exporter.sources.jmx.jpype_client import JPypeJmxClient
from ctlplane.exporter.state import ExporterState, Observation
from ctlplane.exporter.thresholds import Thresholds

TARGET_RSS_MB = 1024
REAL_NODES = 100


def real_clusters() -> tuple[ClusterSnapshot, ...]:
    """One round of the simulator's first REAL_NODES nodes, read over real JMX, every node up."""
    with start_simulator(fleet_clusters=REAL_NODES // 10, fleet_nodes=10, max_heap="256m") as simulator:
        targets = [Target(n.cluster, n.name, Endpoint("127.0.0.1", n.port)) for n in simulator.nodes[:REAL_NODES]]
        client = JPypeJmxClient(timeout_seconds=5.0)
        try:
            scraper = Scraper(targets, client, interval_seconds=15, timeout_seconds=12, workers=20)
            for _ in range(10):
                snapshot = scraper.scrape_once()
                up = sum(node.up for node in snapshot.nodes())
                if up == len(targets):
                    return snapshot.clusters
                time.sleep(1)
            raise RuntimeError(f"only {up} of {len(targets)} simulated nodes answered")
        finally:
            client.close()


def _jitter(sample: Sample, rng: random.Random) -> Sample:
    factor = 1.0 + rng.uniform(-0.05, 0.05)
    return replace(
        sample, value=sample.value * factor, parts=tuple((key, value * factor) for key, value in sample.parts)
    )


def fleet_round(
    templates: tuple[ClusterSnapshot, ...], nodes: int, sequence: int, at: float, rng: random.Random
) -> FleetSnapshot:
    """`nodes` nodes: the real clusters repeated under new names, every sample a new object and value."""
    clusters: list[ClusterSnapshot] = []
    count = 0
    for copy in range(-(-nodes // REAL_NODES)):
        for template in templates:
            if count >= nodes:
                break
            name = f"{template.name}-x{copy}"
            members = tuple(
                replace(node, cluster=name, scraped_at=at, samples=tuple(_jitter(s, rng) for s in node.samples))
                for node in template.nodes
            )
            clusters.append(ClusterSnapshot(name, members))
            count += len(members)
    return FleetSnapshot(sequence, at, 1.0, tuple(clusters))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--minutes", type=float, default=60.0, help="simulated time")
    parser.add_argument("--interval", type=float, default=15.0, help="simulated scrape interval, seconds")
    parser.add_argument("--keep-snapshots", action="store_true", help="also keep every observation (the old way)")
    args = parser.parse_args()

    started = time.monotonic()
    templates = real_clusters()
    samples_per_node = sum(len(n.samples) for c in templates for n in c.nodes) / REAL_NODES
    gc.collect()
    baseline = status()[0]
    print(
        f"{REAL_NODES} simulated nodes read over JMX in {time.monotonic() - started:.0f} s "
        f"({samples_per_node:.0f} samples per node); RSS {baseline:.0f} MB before the hour; {load()}"
    )

    rng = random.Random(13)
    at = time.time()
    state = ExporterState(FleetSnapshot(0, at, 0.0, ()), Thresholds())
    source = InProcessSource(state, window_seconds=3600.0)
    kept: list[Observation] = []
    if args.keep_snapshots:
        state.subscribe(kept.append)
    rounds = int(args.minutes * 60 / args.interval)
    fold_seconds = 0.0
    peak = baseline
    for sequence in range(1, rounds + 1):
        at += args.interval
        snapshot = fleet_round(templates, args.nodes, sequence, at, rng)
        begin = time.process_time()
        state.observe(snapshot)  # health + the trail's fold, as the scraper thread does each round
        fold_seconds += time.process_time() - begin
        if sequence % max(1, rounds // 6) == 0 or sequence == rounds:
            gc.collect()
            rss = status()[0]
            peak = max(peak, rss)
            print(f"  {sequence * args.interval / 60:5.0f} simulated min: RSS {rss:6.0f} MB")
    first = state.current().health.clusters[0].name
    begin = time.perf_counter()
    trail = source.trail(first)
    page = views.cluster_view(first, state.current(), trail.events, NO_ALERTS, at)
    figures = views.cluster_figures(trail)
    build = time.perf_counter() - begin
    gc.collect()
    rss = status()[0]
    points = sum(len(line.times) for lines in trail.lines.values() for line in lines.values())
    print(
        f"\n{args.nodes} nodes, {rounds} rounds of {args.interval:g} s ({args.minutes:g} simulated min)"
        + (", every observation kept (the old way)" if args.keep_snapshots else "")
        + f"; {load()}"
    )
    print(f"{'figure':<44} {'value':>10}   target")
    print(f"{'RSS after the hour, MB':<44} {rss:>10.0f}   < {TARGET_RSS_MB}")
    print(f"{'RSS growth over the hour, MB':<44} {rss - baseline:>10.0f}")
    print(f"{'health + trail fold per round, CPU ms':<44} {fold_seconds / rounds * 1000:>10.0f}")
    print(f"{'one cluster page built, ms':<44} {build * 1000:>10.0f}   ({len(figures)} figures, {points} points)")
    del page, kept
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
