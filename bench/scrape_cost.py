"""Client CPU and wall per node-scrape: persistent JPype connector vs jmxquery (a JVM per read).

Starts one real Kafka 3.9.2 broker (ZooKeeper mode, KIP-291 listener on) from the cached jars, reads the
whole catalogue from it with each client, and prints the medians and their ratio. Figures only: nothing
here is asserted. Run: `python -m bench.scrape_cost [--reads 30]`.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from ctlplane.exporter.readings import plan_queries, samples_from_readings
from ctlplane.exporter.sources.jmx.base import Endpoint, JmxClient
from ctlplane.exporter.sources.jmx.jmxquery_client import JmxQueryClient
from ctlplane.exporter.sources.jmx.jpype_client import JPypeJmxClient
from harness import localkafka


def _cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)  # jmxquery's java processes
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def measure(read: Callable[[], int], reads: int) -> tuple[float, float, int]:
    """Median wall and client CPU (seconds) per read, and the number of series read."""
    walls, cpus, series = [], [], 0
    for _ in range(reads):
        cpu0, wall0 = _cpu_seconds(), time.perf_counter()
        series = read()
        walls.append(time.perf_counter() - wall0)
        cpus.append(_cpu_seconds() - cpu0)
    return statistics.median(walls), statistics.median(cpus), series


def reader(client: JmxClient, endpoint: Endpoint) -> Callable[[], int]:
    queries = plan_queries()

    def read() -> int:
        return len(samples_from_readings(client.read(endpoint, queries)))

    return read


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reads", type=int, default=30, help="reads per client (jmxquery gets a third)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ctlplane-bench-") as workdir:
        cluster = localkafka.start_zk_cluster("bench-3.9", Path(workdir), brokers=1, control_plane_listener=True)
        try:
            endpoint = Endpoint("127.0.0.1", cluster.nodes[0].jmx_port)
            jpype_client = JPypeJmxClient(timeout_seconds=5)
            jpype_read = reader(jpype_client, endpoint)
            warm_until = time.monotonic() + 5  # JIT warm-up: the first seconds are up to 10x slower
            while time.monotonic() < warm_until:
                jpype_read()
            jpype = measure(jpype_read, args.reads)
            jmxquery_read = reader(JmxQueryClient(timeout_seconds=30), endpoint)
            jmxquery_read()  # page cache warm for the jar
            jmxquery = measure(jmxquery_read, max(3, args.reads // 3))
            jpype_client.close()
        finally:
            cluster.stop()
    print(f"one Kafka 3.9.2 broker (ZooKeeper mode, control-plane listener), {len(plan_queries())} MBean patterns")
    print(f"{'client':<10} {'series':>7} {'wall ms':>9} {'client CPU ms':>14}")
    for name, (wall, cpu, series) in (("jpype", jpype), ("jmxquery", jmxquery)):
        print(f"{name:<10} {series:>7} {wall * 1000:>9.1f} {cpu * 1000:>14.1f}")
    print(f"ratio jmxquery/jpype: wall {jmxquery[0] / jpype[0]:.0f}x, CPU {jmxquery[1] / max(jpype[1], 1e-6):.0f}x")


if __name__ == "__main__":
    main()
