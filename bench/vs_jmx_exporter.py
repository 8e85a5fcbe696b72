"""ctlplane against prometheus/jmx_exporter on one real broker, each exporter as its own process.

    .venv/bin/python -m bench.vs_jmx_exporter [--seconds 60]

Starts one real Kafka 3.9.2 broker (ZooKeeper mode, KIP-291 listener on) from the cached jars, then, one
exporter at a time: `ctlplane run` (1 s rounds, no dashboard, no history) and jmx_exporter's standalone
server 1.0.1 (`io.prometheus.jmx:jmx_prometheus_httpserver`, from Maven Central into the cache; it reads
JMX over RMI on each request) with an include-list of the same MBean patterns ctlplane reads. Each is
scraped once a second (gzip, as Prometheus asks) for `--warmup` seconds each, then in `--windows` windows of
`--seconds` each, alternating, the other exporter stopped (SIGSTOP: ctlplane reads the broker every round,
scraped or not); per window the CPU of the exporter's process and of the broker's (minus the broker's idle
rate, measured first with no exporter) is divided by the scrapes. It prints the median of the windows and
their spread, and the target beside the ratio: one window's figure moves more than the target allows.
"""

from __future__ import annotations

import argparse
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
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
        # round a second its default would read the per-RPC histograms once in 60 rounds. No fencing watch
        # (scrape.fencing_poll_seconds): equal work, jmx_exporter has none, and at a round a second it buys
        # nothing
        f"scrape: {{interval_seconds: 1, timeout_seconds: 0.9, slow_interval_seconds: 4, fencing_poll_seconds: 0}}\n"
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


def paused(process: subprocess.Popen[bytes]) -> Callable[[], None]:
    """SIGSTOP `process` (the exporter not measured: ctlplane reads the broker every round, scraped or not, and
    would load the broker in the other's window); the returned call resumes it."""
    process.send_signal(signal.SIGSTOP)
    return lambda: process.send_signal(signal.SIGCONT)


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=60, help="scraping time of each measured window")
    parser.add_argument("--windows", type=int, default=5, help="measured windows per exporter, alternating")
    # Both exporters run a JVM whose C2 compiler is still busy for minutes at one scrape a second: in
    # ctlplane 20 ms/scrape in the first minute, 10 in the second, ~1 from the third (thread CPU, 2026-11-25)
    parser.add_argument("--warmup", type=float, default=180, help="scraping time of each before measuring (JIT)")
    args = parser.parse_args()
    # per exporter: one (scrapes, exporter CPU s, broker CPU s above idle, series) per window
    windows: dict[str, list[tuple[int, float, float, int]]] = {"ctlplane": [], "jmx_exporter": []}
    with tempfile.TemporaryDirectory(prefix="ctlplane-bench-") as directory:
        workdir = Path(directory)
        cluster = localkafka.start_zk_cluster("bench-3.9", workdir, brokers=1, control_plane_listener=True)
        running: dict[str, tuple[subprocess.Popen[bytes], str]] = {}
        try:
            broker = cluster.nodes[0]
            broker_pid = broker.pid
            assert broker_pid is not None
            time.sleep(20)  # the broker's start-up work settles
            idle0 = process_cpu_seconds(broker_pid)
            time.sleep(args.seconds)
            idle_rate = (process_cpu_seconds(broker_pid) - idle0) / args.seconds
            for name, start in (("ctlplane", start_ctlplane), ("jmx_exporter", start_jmx_exporter)):
                running[name] = start(workdir, broker.jmx_port)
            order = ("ctlplane", "jmx_exporter")
            for measured in (False, *([True] * args.windows)):
                for name in order:
                    process, url = running[name]
                    other = running[order[1 - order.index(name)]][0]
                    resume = paused(other)
                    try:
                        seconds = args.seconds if measured else args.warmup
                        scrapes, cpu, broker_cpu, series = scrape_for(url, seconds, (process.pid, broker_pid))
                    finally:
                        resume()
                    if measured:
                        windows[name].append((scrapes, cpu, broker_cpu - idle_rate * seconds, series))
        finally:
            for process, _ in running.values():
                process.send_signal(signal.SIGCONT)
                process.terminate()
                process.wait(30)
            cluster.stop()
    report(windows, args.seconds, idle_rate)


def report(windows: dict[str, list[tuple[int, float, float, int]]], seconds: float, idle_rate: float) -> None:
    """Each exporter's CPU per scrape, its own and the broker's: the median of the windows and their spread,
    and the ratio of the medians beside the target."""
    print(f"one Kafka 3.9.2 broker (ZooKeeper mode, control-plane listener), scraped once a second in "
          f"{len(windows['ctlplane'])} alternating windows of {seconds:.0f} s per exporter (the other stopped); "
          f"broker idle {idle_rate * 1000:.1f} ms CPU/s subtracted")  # fmt: skip
    print(f"{'exporter':<13} {'series':>7} {'exporter CPU ms/scrape: median (min-max)':>42} "
          f"{'broker CPU ms/scrape: median (min-max)':>40}")  # fmt: skip
    per_scrape: dict[str, tuple[list[float], list[float]]] = {}
    for name, rows in windows.items():
        own = [cpu / scrapes * 1000 for scrapes, cpu, _, _ in rows]
        broker = [broker_cpu / scrapes * 1000 for scrapes, _, broker_cpu, _ in rows]
        per_scrape[name] = (own, broker)
        print(f"{name:<13} {rows[-1][3]:>7} {median(own):>25.1f} ({min(own):.1f}-{max(own):.1f}) "
              f"{median(broker):>23.1f} ({min(broker):.1f}-{max(broker):.1f})")  # fmt: skip
    (ours, ours_broker), (theirs, theirs_broker) = per_scrape["ctlplane"], per_scrape["jmx_exporter"]
    pairs = [a / b for a, b in zip(ours, theirs, strict=True)]
    print(
        f"exporter CPU ctlplane / jmx_exporter: {median(ours) / median(theirs):.2f}x of the medians "
        f"(window by window {min(pairs):.2f}-{max(pairs):.2f}x; target <= 0.25x)"
    )
    print(
        f"broker CPU ctlplane / jmx_exporter:   {median(ours_broker) / median(theirs_broker):.2f}x of the medians "
        "(the broker's own cost of being read; no target)"
    )


if __name__ == "__main__":
    main()
