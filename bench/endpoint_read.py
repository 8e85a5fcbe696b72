"""Exporter CPU per node read through a metrics endpoint against remote JMX, and a large page's cost.

    .venv/bin/python -m bench.endpoint_read [--reads 200] [--partitions 2000,10000]

1. One real KRaft 4.3.1 broker (and its controller) from the cached jars, with jmx_exporter's javaagent in its
   default naming: the broker read `--reads` times over remote JMX (the persistent JPype client, the
   one-call Java reader) and as many times over its endpoint (ctlplane/exporter/sources/endpoint/), one after
   the other, after a warm-up of each; this process's CPU (its JVM included) per read.
2. A page of a broker with many partitions (per-partition series in jmx_exporter's default naming beside the
   control-plane series, 5 per partition): served on loopback and read through the endpoint client; CPU
   and wall per read, and the Python heap's peak during a read beside the page's size (only the mapped
   lines are kept: the peak must not grow with the page).
Figures beside their targets (issue 45): CPU per endpoint read no worse than a few times JMX's, a 10k+
series page read well within a 10 s round, its memory peak a small fraction of the page.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.machine import load, own_cpu_seconds
from ctlplane.exporter.readings import parse_object_name, plan_queries
from ctlplane.exporter.sources.endpoint.client import EndpointClient, MetricsEndpoint
from ctlplane.exporter.sources.endpoint.naming import Naming, export
from ctlplane.exporter.sources.endpoint.profiles import profile
from ctlplane.exporter.sources.jmx.base import Endpoint
from ctlplane.exporter.sources.jmx.jpype_client import JPypeJmxClient
from harness import localkafka

ROUND_SECONDS = 10.0  # the default scrape timeout: a read must fit well inside it


def _cpu_per_read(read: Callable[[], object], reads: int) -> float:
    """ms of this process's CPU per call of `read`, over the second half of `reads` calls."""
    samples = []
    for _ in range(reads):
        cpu = own_cpu_seconds()
        read()
        samples.append((own_cpu_seconds() - cpu) * 1000)
    return statistics.median(samples[reads // 2 :])


def real_broker(reads: int) -> None:
    queries = plan_queries()
    with tempfile.TemporaryDirectory(prefix="ctlplane-bench-") as workdir:
        cluster = localkafka.start_kraft_cluster(
            "bench-endpoint", Path(workdir), controllers=1, brokers=1, metrics_agent=localkafka.MetricsAgent()
        )
        try:
            broker = cluster.brokers()[0]
            jmx = JPypeJmxClient(timeout_seconds=5.0, max_heap="256m")
            endpoints = EndpointClient(timeout_seconds=5.0)
            page = MetricsEndpoint(f"http://127.0.0.1:{broker.metrics_port}/metrics", profile("jmx_exporter"))
            jmx_ms = _cpu_per_read(lambda: jmx.read(Endpoint("127.0.0.1", broker.jmx_port), queries), reads)
            endpoint_ms = _cpu_per_read(lambda: endpoints.read(page, queries), reads)
            print(f"real KRaft {localkafka.KRAFT_VERSION} broker, {reads} reads each (median of the second half):")
            print(f"  remote JMX (JPype, one call)   {jmx_ms:6.2f} ms CPU per read")
            print(
                f"  jmx_exporter endpoint          {endpoint_ms:6.2f} ms CPU per read   ({endpoint_ms / jmx_ms:.1f}x)"
            )
            print("  (the endpoint's figure is ctlplane's only: the agent's own CPU is the broker's)")
            jmx.close()
            endpoints.close()
        finally:
            cluster.stop()


def large_page(partitions: int) -> str:
    """The control-plane series of every catalogue MBean in the default naming, and 5 series per partition."""
    naming = profile("jmx_exporter")
    assert isinstance(naming, Naming)
    lines = []
    for number, query in enumerate(plan_queries()):
        domain, keys = parse_object_name(query.pattern)
        concrete = [(k, "1" if v == "*" else v) for k, v in keys.items()]
        for attribute in query.attributes:
            served = export(naming, domain, concrete, attribute, float(number))
            if served is not None:
                labels = ",".join(f'{k}="{v}"' for k, v in served.labels)
                lines.append(f"{served.name}{{{labels}}} {served.value}")
    for i in range(partitions):
        topic, partition = f"topic-{i // 50}", i % 50
        for name in ("Size", "NumLogSegments", "LogEndOffset", "LogStartOffset"):
            lines.append(f'kafka_log_Log_Value{{name="{name}",partition="{partition}",topic="{topic}"}} {i}.0')
        lines.append(
            f'kafka_cluster_Partition_Value{{name="UnderReplicated",partition="{partition}",topic="{topic}"}} 0.0'
        )
    return "\n".join(lines) + "\n"


def serve(body: bytes) -> tuple[ThreadingHTTPServer, str]:
    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/metrics"


def large_pages(sizes: list[int], reads: int) -> None:
    queries = plan_queries()
    client = EndpointClient(timeout_seconds=ROUND_SECONDS)
    print(f"large pages, default naming ({reads} reads each; the page served from this process's own thread):")
    for partitions in sizes:
        body = large_page(partitions).encode()
        server, url = serve(body)
        try:
            endpoint = MetricsEndpoint(url, profile("jmx_exporter"))
            walls = []
            for _ in range(reads):
                started = time.perf_counter()
                client.read(endpoint, queries)
                walls.append(time.perf_counter() - started)
            cpu_ms = _cpu_per_read(lambda: client.read(endpoint, queries), reads)  # noqa: B023 (called here)
            tracemalloc.start()
            client.read(endpoint, queries)
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            series = body.count(b"\n")
            wall = statistics.median(walls[reads // 2 :])
            print(
                f"  {series:7d} series, {len(body) / 1e6:5.1f} MB: {wall * 1000:7.1f} ms wall, {cpu_ms:7.1f} ms CPU "
                f"(target: well within the {ROUND_SECONDS:g} s round), heap peak {peak / 1e6:5.2f} MB "
                "(target: the same for any page: a chunk's worth, not the page's)"
            )
        finally:
            server.shutdown()
    client.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--reads", type=int, default=200)
    parser.add_argument("--partitions", default="2000,10000")
    parser.add_argument("--no-kafka", action="store_true", help="the large pages only")
    args = parser.parse_args()
    print(f"machine load before: {load()}")
    if not args.no_kafka:
        real_broker(args.reads)
    large_pages([int(p) for p in args.partitions.split(",")], max(10, args.reads // 10))
    print(f"machine load after: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
