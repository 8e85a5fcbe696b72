"""ctlplane against prometheus/jmx_exporter on one real broker, each exporter as its own process.

    .venv/bin/python -m bench.vs_jmx_exporter [--seconds 60]

Starts one real Kafka 3.9.2 broker (ZooKeeper mode, KIP-291 listener on) from the cached jars, then, one
exporter at a time: `ctlplane run` (1 s rounds, no dashboard, no history) and jmx_exporter's standalone
server 1.0.1 (`io.prometheus.jmx:jmx_prometheus_httpserver`, from Maven Central into the cache; it reads
JMX over RMI on each request) with an include-list of the same MBean patterns ctlplane reads. Each is
scraped once a second (gzip, as Prometheus asks) for `--warmup` seconds, then for `--seconds`, and the
CPU of the exporter's process and of the broker's (minus the broker's idle rate, measured first with no
exporter) is divided by the scrapes. Figures only; the issue's targets are printed beside them.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from bench.machine import process_cpu_seconds
from ctlplane.exporter.readings import plan_queries
from harness import localkafka
from harness.localkafka.jars import ensure_artifact
from harness.localkafka.process import free_port, java_executable

JMX_EXPORTER = ("io.prometheus.jmx", "jmx_prometheus_httpserver", "1.0.1")


def series_count(body: str) -> int:
    return sum(1 for line in body.splitlines() if line and not line.startswith("#"))


def scrape_for(url: str, seconds: float, pids: tuple[int, int]) -> tuple[int, float, float, int]:
    """Scrape `url` once a second for `seconds`; (scrapes, exporter CPU s, broker CPU s, series)."""
    exporter, broker = pids
    with httpx.Client(timeout=30, headers={"Accept-Encoding": "gzip"}) as client:
        cpu0, broker0 = process_cpu_seconds(exporter), process_cpu_seconds(broker)
        scrapes, series = 0, 0
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            started = time.monotonic()
            body = client.get(url).raise_for_status().text
            series = series_count(body)
            scrapes += 1
            time.sleep(max(0.0, 1.0 - (time.monotonic() - started)))
        return scrapes, process_cpu_seconds(exporter) - cpu0, process_cpu_seconds(broker) - broker0, series


def wait_for(check: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"{what} did not come up within {seconds:.0f} s")


def start_ctlplane(workdir: Path, jmx_port: int) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    config = workdir / "ctlplane.yaml"
    config.write_text(
        f"clusters: [{{name: bench, nodes: [{{address: '127.0.0.1:{jmx_port}', name: broker-1}}]}}]\n"
        # the slow tier at four rounds, its default's ratio to the default 15 s interval (60 s): at one
        # round a second its default would read the per-RPC histograms once in 60 rounds
        f"scrape: {{interval_seconds: 1, timeout_seconds: 0.9, slow_interval_seconds: 4}}\n"
        f"http: {{host: 127.0.0.1, port: {port}}}\n"
        "dashboard: {enabled: false}\n"
    )
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "ctlplane"), "run", "--config", str(config)],  # the venv's script
        stdout=subprocess.DEVNULL,
        stderr=open(workdir / "ctlplane.log", "wb"),  # the child holds it
    )
    url = f"http://127.0.0.1:{port}/metrics"
    wait_for(lambda: 'ctlplane_up{cluster="bench"' in httpx.get(url).text, 120, "ctlplane")
    return process, url


def start_jmx_exporter(workdir: Path, jmx_port: int) -> tuple[subprocess.Popen[bytes], str]:
    jar = ensure_artifact(*JMX_EXPORTER)
    port = free_port()
    patterns = sorted({query.pattern for query in plan_queries() if query.pattern.startswith("kafka.")})
    config = workdir / "jmx_exporter.yaml"
    config.write_text(
        f"hostPort: 127.0.0.1:{jmx_port}\n"
        "lowercaseOutputName: true\n"
        "includeObjectNames:\n" + "".join(f"  - '{pattern}'\n" for pattern in patterns) + "rules:\n  - pattern: '.*'\n"
    )
    process = subprocess.Popen(
        [java_executable(), "-Xmx128m", "-jar", str(jar), f"127.0.0.1:{port}", str(config)],
        stdout=subprocess.DEVNULL,
        stderr=open(workdir / "jmx_exporter.log", "wb"),
    )
    url = f"http://127.0.0.1:{port}/metrics"
    wait_for(lambda: "kafka_" in httpx.get(url).text, 120, "jmx_exporter")
    return process, url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=60, help="measured scraping time per exporter")
    # Both exporters run a JVM whose C2 compiler is still busy for minutes at one scrape a second: in
    # ctlplane 20 ms/scrape in the first minute, 10 in the second, ~1 from the third (thread CPU, 2026-11-25)
    parser.add_argument("--warmup", type=float, default=180, help="scraping time before measuring (JIT)")
    args = parser.parse_args()
    results: dict[str, tuple[int, float, float, int]] = {}
    with tempfile.TemporaryDirectory(prefix="ctlplane-bench-") as directory:
        workdir = Path(directory)
        cluster = localkafka.start_zk_cluster("bench-3.9", workdir, brokers=1, control_plane_listener=True)
        try:
            broker = cluster.nodes[0]
            broker_pid = broker.pid
            assert broker_pid is not None
            time.sleep(20)  # the broker's start-up work settles
            idle0 = process_cpu_seconds(broker_pid)
            time.sleep(args.seconds)
            idle_rate = (process_cpu_seconds(broker_pid) - idle0) / args.seconds
            for name, start in (("ctlplane", start_ctlplane), ("jmx_exporter", start_jmx_exporter)):
                process, url = start(workdir, broker.jmx_port)
                try:
                    scrape_for(url, args.warmup, (process.pid, broker_pid))  # JIT, connections
                    scrapes, cpu, broker_cpu, series = scrape_for(url, args.seconds, (process.pid, broker_pid))
                    broker_cpu -= idle_rate * args.seconds
                    results[name] = (scrapes, cpu, broker_cpu, series)
                finally:
                    process.terminate()
                    process.wait(30)
        finally:
            cluster.stop()
    print(f"one Kafka 3.9.2 broker (ZooKeeper mode, control-plane listener), scraped once a second for "
          f"{args.seconds:.0f} s per exporter; broker idle {idle_rate * 1000:.1f} ms CPU/s subtracted")  # fmt: skip
    print(f"{'exporter':<13} {'series':>7} {'scrapes':>8} {'exporter CPU ms/scrape':>23} {'broker CPU ms/scrape':>21}")
    for name, (scrapes, cpu, broker_cpu, series) in results.items():
        print(f"{name:<13} {series:>7} {scrapes:>8} {cpu / scrapes * 1000:>23.1f} {broker_cpu / scrapes * 1000:>21.1f}")
    ours, theirs = results["ctlplane"], results["jmx_exporter"]
    print(f"exporter CPU ctlplane / jmx_exporter: {ours[1] / ours[0] / (theirs[1] / theirs[0]):.2f}x (target <= 0.25x)")
    print(f"broker CPU ctlplane / jmx_exporter:   {ours[2] / ours[0] / (theirs[2] / theirs[0]):.2f}x (target <= 0.25x)")


if __name__ == "__main__":
    main()
