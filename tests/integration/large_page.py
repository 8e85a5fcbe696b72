"""A real jmx_exporter page served as a large broker's is: its first byte only after the collection time, then
the real page and partition-level lines in jmx_exporter's default naming. jmx_exporter collects every MBean
before it writes a byte (JmxCollector, then the HTTP server), so a broker with 10,000s of partitions answers
after tens of seconds with tens of MB (prometheus/jmx_exporter #955: 23 s at 10.8k partitions; 29 s and 5.6 MB
measured on a real KRaft 4.3.1 broker of 5,000 partitions here). The page's values are the real agent's, asked
when the request arrives; this server only adds the wait and the size."""

from __future__ import annotations

import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


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
    """Serves `upstream` (a node's real jmx_exporter page) after `collect_seconds`, with `partitions` worth of
    partition lines; counts the requests and the most ever in flight at once."""

    def __init__(self, upstream: str, collect_seconds: float, partitions: int = 10_000) -> None:
        self.upstream = upstream
        self.collect_seconds = collect_seconds
        self.padding = partition_lines(partitions)
        self.started: list[float] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self._lock = threading.Lock()
        page = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                page._serve(self)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="large-page", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/metrics"

    def _serve(self, request: BaseHTTPRequestHandler) -> None:
        with self._lock:
            self.started.append(time.monotonic())
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            with urllib.request.urlopen(self.upstream, timeout=10) as answer:
                real = answer.read()
            time.sleep(self.collect_seconds)
            body = real + self.padding
            request.send_response(200)
            request.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            request.send_header("Content-Length", str(len(body)))
            request.end_headers()
            request.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the reader gave up: its own error
        finally:
            with self._lock:
                self.in_flight -= 1

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
