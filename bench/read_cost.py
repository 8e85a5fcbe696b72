"""Exporter CPU per node read, by worker count, with the one-call Java node read and with the Python loop.

    .venv/bin/python -m bench.read_cost [--nodes 100] [--workers 1,4,16] [--rounds 12]

One simulator process serves the nodes; this process reads all of them in a thread pool of each size,
round after round with no pause, and prints the process's CPU per read (its JVM included) over the last
half of the rounds, after the JIT has compiled the read path. The Python loop is the reader ctlplane
falls back to where the Java class cannot be compiled (ctlplane/exporter/sources/jmx/node_reader.py). Figures only.
Target (issue 16): <= 4 ms of exporter CPU per node read in a 1,000-node fleet.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.machine import load, own_cpu_seconds
from ctlplane.demo.launch import start_simulator
from ctlplane.exporter.readings import plan_queries
from ctlplane.exporter.sources.jmx import jpype_client
from ctlplane.exporter.sources.jmx.base import Endpoint
from ctlplane.exporter.sources.jmx.jpype_client import JPypeJmxClient

TARGET_MS = 4.0


def _cost(client: JPypeJmxClient, endpoints: list[Endpoint], workers: int, rounds: int) -> tuple[float, float]:
    """(ms of CPU per read, seconds per round), medians of the second half of `rounds`."""
    queries = plan_queries()
    cpus, walls = [], []
    with ThreadPoolExecutor(workers) as pool:
        for _ in range(rounds):
            cpu, wall = own_cpu_seconds(), time.perf_counter()
            list(pool.map(lambda endpoint: client.read(endpoint, queries), endpoints))
            cpus.append((own_cpu_seconds() - cpu) / len(endpoints) * 1000)
            walls.append(time.perf_counter() - wall)
    return statistics.median(cpus[rounds // 2 :]), statistics.median(walls[rounds // 2 :])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--workers", default="1,4,16")
    parser.add_argument("--rounds", type=int, default=12)
    args = parser.parse_args()
    simulator = start_simulator(fleet_clusters=-(-args.nodes // 10), fleet_nodes=10, max_heap="512m")
    try:
        client = JPypeJmxClient(timeout_seconds=5.0, max_heap="256m")
        endpoints = [Endpoint("127.0.0.1", node.port) for node in simulator.nodes[: args.nodes]]
        rows = []
        for reader in ("java", "python"):
            if reader == "python":
                jpype_client._READER[:] = [None]  # what a JVM without the compiled class does
            for workers in (int(w) for w in args.workers.split(",")):
                cpu_ms, round_s = _cost(client, endpoints, workers, args.rounds)
                rows.append((reader, workers, cpu_ms, round_s))
                print(f"{reader:6} {workers:3} workers: {cpu_ms:5.2f} ms CPU per read, round {round_s:.2f} s; {load()}")
        print(
            f"\n{args.nodes} simulated nodes, {args.rounds} rounds each, "
            f"medians of the last {args.rounds - args.rounds // 2}"
        )
        print("| reader | workers | exporter CPU per read | round | target |\n|---|---|---|---|---|")
        for reader, workers, cpu_ms, round_s in rows:
            print(f"| {reader} | {workers} | {cpu_ms:.2f} ms | {round_s:.2f} s | <= {TARGET_MS:g} ms |")
        client.close()
    finally:
        simulator.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
