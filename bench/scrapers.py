"""/metrics under many concurrent scrapers while the exporter watches 1,000 simulated nodes.

    .venv/bin/python -m bench.scrapers [--nodes 1000] [--scrapers 50] [--minutes 10] [--every 5]

The exporter runs as `ctlplane run` does (Scraper with the JPype client, ExporterState, the HTTP app with
the dashboard mounted, uvicorn), in this process, against one simulator process. Once every node has
answered, --scrapers client threads in a process of their own each GET /metrics every --every seconds
(random phase, as independent Prometheus servers would; `Accept-Encoding: gzip` as Prometheus sends; the
body read to the end and dropped) for --minutes. RSS is the exporter process's alone, printed each
minute. Printed: requests, errors (non-200 or failed), latency p50/p99/max, the rounds' answered
nodes, and RSS before and after.
Targets (issue 13): errors 0; the rounds keep every node answered; RSS does not grow.
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import statistics
import sys
import threading
import time
from multiprocessing.queues import Queue
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.machine import load, memory_breakdown, status
from ctlplane.dashboard.source import InProcessSource
from ctlplane.demo.launch import start_simulator
from ctlplane.exporter.http.app import QuietServer, create_app, server_options
from ctlplane.exporter.memory import collect_garbage_per_round, release_free_memory
from ctlplane.exporter.model import FleetSnapshot
from ctlplane.exporter.scraper import Scraper, Target
from ctlplane.exporter.sources.jmx.base import Endpoint
from ctlplane.exporter.sources.jmx.jpype_client import JPypeJmxClient
from ctlplane.exporter.state import ExporterState
from ctlplane.exporter.thresholds import Thresholds


def _scrape_loop(base: str, every: float, until: float, latencies: list[float], errors: list[str], seed: int) -> None:
    rng = random.Random(seed)
    with httpx.Client(base_url=base, timeout=30, headers={"Accept-Encoding": "gzip"}) as client:
        next_at = time.monotonic() + rng.uniform(0, every)
        while True:
            time.sleep(max(0.0, next_at - time.monotonic()))
            if time.monotonic() >= until:
                return
            started = time.perf_counter()
            try:
                with client.stream("GET", "/metrics") as response:
                    for _ in response.iter_raw():  # read to the end, keep nothing (as a scraper parses)
                        pass
                if response.status_code != 200:
                    errors.append(f"HTTP {response.status_code}")
            except httpx.HTTPError as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
            latencies.append(time.perf_counter() - started)
            next_at += every


def _scrapers(
    base: str, scrapers: int, every: float, seconds: float, results: Queue[tuple[list[float], list[str]]]
) -> None:
    """The scrapers' own process: their buffers and CPU are not the exporter's (Prometheus runs elsewhere)."""
    latencies: list[float] = []
    errors: list[str] = []
    until = time.monotonic() + seconds
    threads = [
        threading.Thread(target=_scrape_loop, args=(base, every, until, latencies, errors, i), daemon=True)
        for i in range(scrapers)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    results.put((latencies, errors))


def _quantile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q * 100) - 1] if len(values) > 1 else values[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--scrapers", type=int, default=50)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--every", type=float, default=5.0, help="each scraper's interval, seconds")
    parser.add_argument("--interval", type=float, default=15.0, help="the exporter's scrape interval")
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument(
        "--keep-free-memory", action="store_true", help="no malloc_trim after each round (the way before)"
    )
    args = parser.parse_args()

    import uvicorn

    simulator = start_simulator(fleet_clusters=-(-args.nodes // 10), fleet_nodes=10, max_heap="512m", ready_timeout=600)
    rounds: list[tuple[int, float]] = []  # (nodes answered, round seconds)
    try:
        targets = [Target(n.cluster, n.name, Endpoint("127.0.0.1", n.port)) for n in simulator.nodes[: args.nodes]]
        client = JPypeJmxClient(timeout_seconds=5.0, max_heap="256m")
        scraper = Scraper(
            targets, client, interval_seconds=args.interval, timeout_seconds=0.8 * args.interval, workers=args.workers
        )
        state = ExporterState(scraper.latest(), Thresholds())
        scraper.subscribe(state.observe)
        state.subscribe(collect_garbage_per_round())  # as `ctlplane run` does (ctlplane/cli.py build_state)
        if not args.keep_free_memory:
            state.subscribe(release_free_memory)  # likewise

        def record(snapshot: FleetSnapshot) -> None:
            rounds.append((sum(node.up for node in snapshot.nodes()), snapshot.round_duration_seconds))

        scraper.subscribe(record)
        app = create_app(state.current, interval_seconds=args.interval)
        from ctlplane.dashboard.app import create_dashboard

        create_dashboard(InProcessSource(state), server=app)
        server = QuietServer(uvicorn.Config(app, host="127.0.0.1", port=0, **server_options()))
        thread = threading.Thread(target=server.run, name="uvicorn", daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.05)
        port = server.servers[0].sockets[0].getsockname()[1]
        base = f"http://127.0.0.1:{port}"
        scraper.start()
        warm_until = time.monotonic() + 20 * args.interval
        while not rounds or rounds[-1][0] < len(targets):
            if time.monotonic() > warm_until:
                print(f"warm-up: only {rounds[-1][0] if rounds else 0} of {len(targets)} nodes answered; going on")
                break
            time.sleep(1)
        warm_rounds = len(rounds)
        rss_before, threads_before = status()
        warm = rounds[-1][0] if rounds else 0
        print(
            f"{warm} of {len(targets)} nodes answered after {warm_rounds} rounds; RSS {rss_before:.0f} MB "
            f"({memory_breakdown()}); {load()}"
        )

        context = multiprocessing.get_context("spawn")  # never fork a process that hosts a JVM
        results: Queue[tuple[list[float], list[str]]] = context.Queue()
        process = context.Process(target=_scrapers, args=(base, args.scrapers, args.every, args.minutes * 60, results))
        process.start()
        started = time.monotonic()
        for minute in range(1, int(args.minutes) + 1):
            time.sleep(max(0.0, started + 60 * minute - time.monotonic()))
            print(f"  minute {minute}: exporter RSS {status()[0]:.0f} MB ({memory_breakdown()}); {load()}")
        latencies, errors = results.get(timeout=args.minutes * 60 + 120)
        process.join(timeout=30)
        rss_after, threads_after = status()
        during = rounds[warm_rounds:]
        scraper.stop()
        server.should_exit = True
        thread.join(timeout=10)
        client.close()
    finally:
        simulator.stop()

    print(
        f"\n{args.scrapers} scrapers each every {args.every:g} s for {args.minutes:g} min, {len(targets)} nodes, "
        f"exporter interval {args.interval:g} s, {args.workers} workers; {load()}"
    )
    print(f"{'figure':<44} {'value':>10}   target")
    print(f"{'/metrics requests':<44} {len(latencies):>10}")
    print(f"{'errors':<44} {len(errors):>10}   0" + (f"  (first: {errors[0]})" if errors else ""))
    print(f"{'latency p50, ms':<44} {_quantile(latencies, 0.5) * 1000:>10.0f}")
    print(f"{'latency p99, ms':<44} {_quantile(latencies, 0.99) * 1000:>10.0f}")
    print(f"{'latency max, ms':<44} {max(latencies) * 1000:>10.0f}")
    if during:
        answered = [up for up, _ in during]
        print(f"{'rounds meanwhile; fewest nodes answered':<44} {len(during):>5} {min(answered):>4}   {len(targets)}")
        print(f"{'round seconds, median / max':<44} {statistics.median(d for _, d in during):>5.1f} "
              f"{max(d for _, d in during):>4.1f}")  # fmt: skip
    print(f"{'RSS before / after, MB':<44} {rss_before:>5.0f} {rss_after:>4.0f}   no growth")
    print(f"{'threads before / after':<44} {threads_before:>5} {threads_after:>4}")
    return 0 if not errors else 1


if __name__ == "__main__":
    raise SystemExit(main())
