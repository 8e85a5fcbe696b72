"""A real jmx_exporter page served as a large broker's is: its first byte only after the collection time, then
the real page and partition-level lines in jmx_exporter's default naming. jmx_exporter collects every MBean
before it writes a byte (JmxCollector, then the HTTP server), so a broker with 10,000s of partitions answers
after tens of seconds with tens of MB (prometheus/jmx_exporter #955: 23 s at 10.8k partitions; 29 s and 5.6 MB
measured on a real KRaft 4.3.1 broker of 5,000 partitions here). The page's values are the real agent's, asked
when the request arrives; this server only adds the wait and the size.

The server runs in a process of its own: in the test's process its threads shared the GIL with the scraper
parsing the 6 MB it served, so under a loaded CI machine its pages took seconds longer than asked and the
arrival times it recorded lagged the requests (two failed CI runs); its own process serves the time asked,
measured from the request's arrival as an exporter's collection is."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def partition_lines(partitions: int) -> bytes:
    """The per-partition lines jmx_exporter's default naming writes for `partitions` partitions (the Log and
    Partition MBeans of production.md: ~10 a partition)."""
    names = ("Size", "LogStartOffset", "LogEndOffset", "NumLogSegments")
    gauges = ("UnderReplicated", "UnderMinIsr", "AtMinIsr", "InSyncReplicasCount", "ReplicasCount")
    lines = [
        f'kafka_log_Log_Value{{name="{name}",topic="topic-{p // 10}",partition="{p % 10}",}} 1.0\n'
        for p in range(partitions)
        for name in names
    ]
    lines += [
        f'kafka_cluster_Partition_Value{{name="{name}",topic="topic-{p // 10}",partition="{p % 10}",}} 0.0\n'
        for p in range(partitions)
        for name in gauges
    ]
    return "".join(lines).encode()


class LargePage:
    """Serves `upstream` (a node's real jmx_exporter page) after `collect_seconds` from each request's arrival,
    with `partitions` worth of partition lines, from a child process; counts the requests and the most ever in
    flight at once."""

    def __init__(self, upstream: str, collect_seconds: float, partitions: int = 10_000) -> None:
        command = [
            sys.executable,
            "-m",
            "tests.integration.large_page",
            upstream,
            str(collect_seconds),
            str(partitions),
        ]
        self._process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        assert self._process.stdout is not None
        port = self._process.stdout.readline().strip()
        if not port.isdigit():
            self._process.kill()
            raise RuntimeError(f"the large page's server did not start: {port!r}")
        self._port = int(port)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}/metrics"

    def _stats(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self._port}/stats", timeout=10) as answer:
            stats: dict[str, Any] = json.load(answer)
        return stats

    @property
    def started(self) -> list[float]:
        """monotonic() at each request's arrival (CLOCK_MONOTONIC: one clock for every process of the machine)"""
        return list(self._stats()["started"])

    @property
    def most_in_flight(self) -> int:
        return int(self._stats()["most_in_flight"])

    def stop(self) -> None:
        self._process.terminate()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


class _Server:
    """The child process's server: the page and its counts."""

    def __init__(self, upstream: str, collect_seconds: float, partitions: int) -> None:
        self.upstream = upstream
        self.collect_seconds = collect_seconds
        self.padding = partition_lines(partitions)
        self.started: list[float] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self._lock = threading.Lock()

    def serve(self, request: BaseHTTPRequestHandler) -> None:
        if request.path == "/stats":
            with self._lock:
                stats = {"started": self.started, "most_in_flight": self.most_in_flight}
            self._send(request, json.dumps(stats).encode(), "application/json")
            return
        arrived = time.monotonic()
        with self._lock:
            self.started.append(arrived)
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            with urllib.request.urlopen(self.upstream, timeout=10) as answer:
                real = answer.read()
            time.sleep(max(0.0, arrived + self.collect_seconds - time.monotonic()))
            self._send(request, real + self.padding, "text/plain; version=0.0.4; charset=utf-8")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the reader gave up: its own error
        finally:
            with self._lock:
                self.in_flight -= 1

    @staticmethod
    def _send(request: BaseHTTPRequestHandler, body: bytes, content_type: str) -> None:
        request.send_response(200)
        request.send_header("Content-Type", content_type)
        request.send_header("Content-Length", str(len(body)))
        request.end_headers()
        request.wfile.write(body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("upstream")
    parser.add_argument("collect_seconds", type=float)
    parser.add_argument("partitions", type=int)
    args = parser.parse_args()
    page = _Server(args.upstream, args.collect_seconds, args.partitions)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            page.serve(self)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    sys.stdout.write(f"{server.server_address[1]}\n")
    sys.stdout.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()
