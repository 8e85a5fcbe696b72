"""What reading one broker costs as its partitions grow, through each source (issue #60, "cost grows as it should").

    .venv/bin/python -m bench.large_broker [--sizes 100,1000,10000] [--jmx-reads 40] [--page-reads 3]

One real KRaft 4.3.1 broker (and its controller) from the cached jars, with jmx_exporter's javaagent in its
default naming (as Amazon MSK serves it), small segments and index files so that 10,000 partitions fit the
machine (production.md: ~2 memory maps per segment, `vm.max_map_count` 65,530 here). At each size (topics of
10 partitions, RF 1, created in a few createTopics calls, cumulative), after the broker leads them all:

- remote JMX, the persistent JPype client, the queries a KRaft broker is asked, read once a second as a round
  would, on a connection past its start-up window (RESOLVE_STARTUP_SECONDS: inside it every name that matched
  nothing is looked up again every 10 s, and a wildcard lookup walks its domain's MBeans, which grow with the
  topics): this process's CPU per read (its JVM included) as the mean over `--jmx-reads` reads, which
  includes the names looked up again every 60 s, the read's median wall time, the broker's CPU per read;
- the jmx_exporter page through ctlplane's endpoint client: the first read after the size was reached (cold)
  and the next ones (warm): wall time, this process's CPU, the broker's CPU (the agent runs inside it), the
  page's size and its own jmx_scrape_duration_seconds;
- the anchor: the same page scraped by a real Prometheus (the Debian package), `--prometheus-scrapes` scrapes
  at a 30 s interval and a 29 s timeout after the page reads, nothing else reading the broker, and the median
  of its own `scrape_duration_seconds` for that target.

Figures beside their targets: remote JMX flat in partitions (exact ObjectNames: the per-partition MBeans are
never touched), the endpoint linear in the page's size. Nothing else may run beside it (2 cores); the load
before and after is printed.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.machine import load, own_cpu_seconds, process_cpu_seconds
from ctlplane.exporter.catalog import Mode, Role
from ctlplane.exporter.readings import plan_queries, queries_for
from ctlplane.exporter.sources.admin.client import create_admin, java_class
from ctlplane.exporter.sources.endpoint.client import EndpointClient, MetricsEndpoint
from ctlplane.exporter.sources.endpoint.profiles import profile
from ctlplane.exporter.sources.jmx.base import Endpoint
from ctlplane.exporter.sources.jmx.jpype_client import RESOLVE_STARTUP_SECONDS, JPypeJmxClient
from harness import localkafka

PROMETHEUS = "prometheus"  # the Debian package `make test` installs
PARTITIONS_PER_TOPIC = 10
TOPICS_PER_CALL = 200
BROKER_HEAP_MB = 1536
LEADER_COUNT = "kafka.server:type=ReplicaManager,name=LeaderCount"


def create_topics(bootstrap: str, first: int, count: int) -> None:
    """`count` topics of PARTITIONS_PER_TOPIC partitions, RF 1, numbered from `first`, in few calls."""
    properties = java_class("java.util.Properties")()
    properties.setProperty("bootstrap.servers", bootstrap)
    properties.setProperty("request.timeout.ms", "120000")
    properties.setProperty("default.api.timeout.ms", "600000")
    admin = create_admin(properties)
    new_topic = java_class("org.apache.kafka.clients.admin.NewTopic")
    seconds = java_class("java.util.concurrent.TimeUnit").SECONDS
    import jpype

    try:
        for start in range(first, first + count, TOPICS_PER_CALL):
            batch = java_class("java.util.ArrayList")()
            for number in range(start, min(first + count, start + TOPICS_PER_CALL)):
                batch.add(new_topic(f"bench-{number:05d}", jpype.JInt(PARTITIONS_PER_TOPIC), jpype.JShort(1)))
            admin.createTopics(batch).all().get(600, seconds)
    finally:
        admin.close()


def leader_count(jmx: JPypeJmxClient, endpoint: Endpoint) -> int:
    from ctlplane.exporter.model import MBeanQuery

    readings = jmx.read(endpoint, [MBeanQuery(LEADER_COUNT, ("Value",))])
    return int(readings[0].values["Value"]) if readings else -1


def wait_for_leaders(jmx: JPypeJmxClient, endpoint: Endpoint, wanted: int, seconds: float = 1800) -> float:
    started = time.monotonic()
    while (count := leader_count(jmx, endpoint)) < wanted:
        if time.monotonic() - started > seconds:
            raise SystemExit(f"the broker leads {count} of {wanted} partitions after {seconds:g}s")
        time.sleep(2)
    return time.monotonic() - started


def per_read(
    read: Callable[[], object], reads: int, broker_pid: int, idle_rate: float, every: float = 0.0
) -> tuple[float, float, float]:
    """Per read, one every `every` seconds: (median wall s, mean CPU ms of this process, mean CPU ms of the
    broker beyond its idle rate); the means count the reads that looked names up again."""
    walls, cpus, brokers = [], [], []
    for _ in range(reads):
        wall, cpu, broker = time.monotonic(), own_cpu_seconds(), process_cpu_seconds(broker_pid)
        read()
        took = time.monotonic() - wall
        walls.append(took)
        cpus.append((own_cpu_seconds() - cpu) * 1000)
        brokers.append(max(0.0, process_cpu_seconds(broker_pid) - broker - idle_rate * took) * 1000)
        time.sleep(max(0.0, every - took))
    return statistics.median(walls), statistics.fmean(cpus), statistics.fmean(brokers)


def page_facts(url: str) -> tuple[int, int, float | None]:
    """The page's bytes, its lines, and its own jmx_scrape_duration_seconds."""
    body = httpx.get(url, timeout=1800).raise_for_status().text
    own = next((line for line in body.splitlines() if line.startswith("jmx_scrape_duration_seconds")), None)
    lines = sum(1 for line in body.splitlines() if line and not line.startswith("#"))
    return len(body.encode()), lines, float(own.split()[-1]) if own else None


def prometheus_scrape_seconds(url: str, scrapes: int, workdir: Path) -> float | None:
    """The median `scrape_duration_seconds` of `scrapes` scrapes of `url` by a real Prometheus (the anchor: what
    a user's Prometheus sees of the same page), or None with none asked."""
    if scrapes <= 0:
        return None
    port = localkafka.free_port()
    target = url.removeprefix("http://").split("/", 1)[0]
    config = workdir / "prometheus.yml"
    scrape = {"job_name": "page", "scrape_interval": "30s", "scrape_timeout": "29s"}
    config.write_text(yaml.safe_dump({"scrape_configs": [{**scrape, "static_configs": [{"targets": [target]}]}]}))
    data = workdir / f"prometheus-{port}"
    command = [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={data}"]
    server = subprocess.Popen(
        [*command, f"--web.listen-address=127.0.0.1:{port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 30 * scrapes + 120
        while time.monotonic() < deadline:
            time.sleep(5)
            try:
                answer = httpx.get(
                    f"http://127.0.0.1:{port}/api/v1/query",
                    params={"query": 'scrape_duration_seconds{job="page"}[1h]'},
                    timeout=10,
                ).json()
            except httpx.HTTPError:
                continue  # not listening yet
            series = answer.get("data", {}).get("result", [])
            values = [float(value) for _, value in series[0]["values"]] if series else []
            if len(values) >= scrapes:
                return statistics.median(values[:scrapes])
        raise SystemExit(f"prometheus did not scrape {url} {scrapes} times within {deadline:.0f}s")
    finally:
        server.terminate()
        server.wait(timeout=30)


def idle_rate(pid: int, seconds: float = 10.0) -> float:
    cpu = process_cpu_seconds(pid)
    time.sleep(seconds)
    return (process_cpu_seconds(pid) - cpu) / seconds


def measure(
    cluster: localkafka.KafkaCluster, sizes: list[int], jmx_reads: int, page_reads: int, scrapes: int
) -> list[str]:
    broker = cluster.brokers()[0]
    pid = broker._popen.pid if broker._popen is not None else 0
    endpoint = Endpoint("127.0.0.1", broker.jmx_port)
    jmx = JPypeJmxClient(timeout_seconds=10.0, max_heap="256m")
    connected = time.monotonic()
    pages = EndpointClient(timeout_seconds=10.0, page_timeout_seconds=1800.0)
    page = MetricsEndpoint(f"http://127.0.0.1:{broker.metrics_port}/metrics", profile("jmx_exporter"))
    queries = queries_for(plan_queries(), Mode.KRAFT, Role.BROKER, active_controller=False)
    rows, topics = [], 0
    for size in sizes:
        wanted = size // PARTITIONS_PER_TOPIC
        created = time.monotonic()
        create_topics(cluster.bootstrap, topics, wanted - topics)
        topics = wanted
        led = wait_for_leaders(jmx, endpoint, size)
        print(f"{size} partitions: created and led in {time.monotonic() - created:.0f}s ({led:.0f}s waiting)")
        idle = idle_rate(pid)
        cold = per_read(lambda: pages.read(page, queries), 1, pid, idle)
        warm = per_read(lambda: pages.read(page, queries), page_reads, pid, idle)
        size_bytes, lines, own = page_facts(page.url)
        assert cluster.workdir is not None
        anchor = prometheus_scrape_seconds(page.url, scrapes, cluster.workdir)
        jmx.read(endpoint, queries)  # the queries' names looked up, then past the start-up window
        time.sleep(max(0.0, RESOLVE_STARTUP_SECONDS + 5 - (time.monotonic() - connected)))
        jmx_read = per_read(lambda: jmx.read(endpoint, queries), jmx_reads, pid, idle, every=1.0)
        rows.append(
            f"| {size:,} | {jmx_read[1]:.1f} | {jmx_read[0] * 1000:.0f} | {jmx_read[2]:.1f} "
            f"| {cold[0]:.1f} | {warm[0]:.1f} | {warm[1]:.0f} | {warm[2]:.0f} | {size_bytes / 1e6:.1f} | {lines:,} "
            f"| {own if own is not None else '-'} | {f'{anchor:.1f}' if anchor is not None else '-'} "
            f"| {idle * 1000:.0f} |"
        )
        print(rows[-1], flush=True)
    jmx.close()
    pages.close()
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--jmx-reads", type=int, default=70, help="one a second: 70 span a 60 s name lookup")
    parser.add_argument("--page-reads", type=int, default=3)
    parser.add_argument("--prometheus-scrapes", type=int, default=3, help="0: no Prometheus anchor")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    print(f"load before: {load()}")
    with tempfile.TemporaryDirectory(prefix="ctlplane-bench-large-") as workdir:
        cluster = localkafka.start_kraft_cluster(
            "bench-large",
            Path(workdir),
            controllers=1,
            brokers=1,
            metrics_agent=localkafka.MetricsAgent(),
            broker_overrides=localkafka.LARGE_BROKER_OVERRIDES,
            broker_heap_mb=BROKER_HEAP_MB,
        )
        try:
            rows = measure(cluster, sizes, args.jmx_reads, args.page_reads, args.prometheus_scrapes)
        finally:
            cluster.stop()
    print(f"load after: {load()}")
    print(
        "\n| partitions | JMX: ctlplane CPU ms/read | JMX wall ms | JMX: broker CPU ms/read | page cold s "
        "| page warm s | page: ctlplane CPU ms | page: broker CPU ms | page MB | page lines "
        "| jmx_scrape_duration_seconds | Prometheus scrape_duration_seconds | broker idle CPU ms/s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    print("target: remote JMX flat in partitions; the endpoint linear in the page's size")
    return 0


if __name__ == "__main__":
    sys.exit(main())
