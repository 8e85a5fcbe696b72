"""A real paging pipeline for end-to-end tests: ctlplane -> Prometheus -> Alertmanager -> a local
stand-in for PagerDuty's Events API v2.

The shipped rule files (alerts/*.rules.yml) are loaded unchanged. The shipped alertmanager.yml is
loaded with only what a test must change: the PagerDuty `url` (to the local receiver), the
`routing_key_file` paths (to dummy keys in a temporary directory) and the template path (made
absolute). Every process binds 127.0.0.1 on a free port and is stopped by `PagingStack.close`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from ctlplane.exporter.thresholds import PROMETHEUS_SCRAPE_SECONDS
from harness.localkafka import free_port

REPO = Path(__file__).resolve().parents[2]
ALERTS = REPO / "alerts"
PROMETHEUS = "prometheus"
ALERTMANAGER = "prometheus-alertmanager"
# 32 characters like a real Events v2 integration key; one per receiver so a test can tell them apart.
ROUTING_KEYS = {
    "pagerduty-critical": "c" * 32,
    "pagerduty-low-urgency": "w" * 32,
}


@dataclass(frozen=True)
class Event:
    """One Events API v2 request as the receiver got it."""

    received_at: float  # time.monotonic()
    body: dict[str, Any]

    @property
    def action(self) -> str:
        return str(self.body.get("event_action"))

    @property
    def dedup_key(self) -> str:
        return str(self.body.get("dedup_key"))

    @property
    def payload(self) -> dict[str, Any]:
        payload = self.body.get("payload")
        return payload if isinstance(payload, dict) else {}


class PagerDutyReceiver:
    """Records POSTs to /v2/enqueue and answers 202 like PagerDuty does."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except json.JSONDecodeError:
                    self.send_response(400)
                    self.end_headers()
                    return
                if self.path == "/v2/enqueue" and isinstance(body, dict):
                    with receiver._lock:
                        receiver.events.append(Event(time.monotonic(), body))
                self.send_response(202)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b'{"status":"success","message":"Event processed"}')

            def log_message(self, format: str, *args: Any) -> None:  # the base class's parameter name
                return  # keep pytest output clean

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="pd-receiver", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v2/enqueue"

    def snapshot(self) -> list[Event]:
        with self._lock:
            return list(self.events)

    def wait_for(self, predicate: Callable[[Event], bool], timeout: float, after: int = 0) -> Event:
        """The first event (from index `after`) matching `predicate`, polling until `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            for event in self.snapshot()[after:]:
                if predicate(event):
                    return event
            if time.monotonic() > deadline:
                seen = [(e.action, e.payload.get("class"), e.payload.get("summary")) for e in self.snapshot()]
                raise AssertionError(f"no matching PagerDuty event within {timeout:.0f}s; received: {seen}")
            time.sleep(0.5)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def http_get(url: str, timeout: float = 5.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return int(response.status), bytes(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
    except (urllib.error.URLError, OSError):
        return 0, b""


def wait_until(
    what: str, check: Callable[[], bool], timeout: float, process: subprocess.Popen[bytes] | None = None
) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if process is not None and process.poll() is not None:
            raise AssertionError(f"{what}: process exited with {process.returncode}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not true within {timeout:.0f}s")
        time.sleep(0.5)


def alertmanager_test_config(receiver_url: str, secrets: Path, fast: bool = False) -> dict[str, Any]:
    """The shipped alertmanager.yml with the local receiver URL and dummy key files (`fast`: 1 s/2 s grouping)."""
    config: dict[str, Any] = yaml.safe_load((ALERTS / "alertmanager.yml").read_text())
    if fast:
        for route in [config["route"], *config["route"]["routes"]]:
            route.update({"group_wait": "1s", "group_interval": "2s"})
    config["templates"] = [str(ALERTS / pattern) for pattern in config.get("templates", [])]
    for receiver in config["receivers"]:
        for pagerduty in receiver.get("pagerduty_configs", []):
            key_file = secrets / f"{receiver['name']}.key"
            key_file.write_text(ROUTING_KEYS[receiver["name"]] + "\n")
            pagerduty["routing_key_file"] = str(key_file)
            pagerduty["url"] = receiver_url
    return config


@dataclass(frozen=True)
class ScrapeTarget:
    cluster: str
    nodes: Sequence[tuple[str, int, str]]  # (name, JMX port, role)


@dataclass
class PagingStack:
    """ctlplane + Prometheus + Alertmanager + receiver, all on free loopback ports."""

    workdir: Path
    # ctlplane's round interval and Prometheus' evaluation interval (the shipped defaults; the rule groups pin
    # their own); Prometheus scrapes ctlplane at the shipped PROMETHEUS_SCRAPE_SECONDS, or this if shorter
    interval_seconds: float = 15.0
    receiver: PagerDutyReceiver = field(default_factory=PagerDutyReceiver)
    ctlplane_port: int = field(default_factory=free_port)
    prometheus_port: int = field(default_factory=free_port)
    alertmanager_port: int = field(default_factory=free_port)
    rule_files: Sequence[Path] = field(default_factory=lambda: sorted(ALERTS.glob("*.rules.yml")))
    fast_grouping: bool = False  # Alertmanager group_wait 1 s / group_interval 2 s instead of the shipped timings
    _processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    _stack: ExitStack = field(default_factory=ExitStack)

    def _spawn(self, name: str, argv: Sequence[str]) -> subprocess.Popen[bytes]:
        log = self._stack.enter_context((self.workdir / f"{name}.log").open("wb"))
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self._processes.append(process)
        return process

    def log(self, name: str) -> str:
        path = self.workdir / f"{name}.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    @property
    def alertmanager_url(self) -> str:
        return f"http://127.0.0.1:{self.alertmanager_port}"

    def start_alertmanager(self) -> subprocess.Popen[bytes]:
        """Alertmanager with the shipped routing and inhibitions, paging the local receiver."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        secrets = self.workdir / "secrets"
        secrets.mkdir(exist_ok=True)
        am_config = self.workdir / "alertmanager.yml"
        am_config.write_text(
            yaml.safe_dump(alertmanager_test_config(self.receiver.url, secrets, self.fast_grouping), sort_keys=False)
        )
        return self._spawn(
            "alertmanager",
            [
                ALERTMANAGER,
                f"--config.file={am_config}",
                f"--storage.path={self.workdir / 'am-data'}",
                f"--web.listen-address=127.0.0.1:{self.alertmanager_port}",
                "--cluster.listen-address=",  # no gossip port
                f"--web.external-url={self.alertmanager_url}",
            ],
        )

    def wait_alertmanager_ready(self, process: subprocess.Popen[bytes], timeout: float = 120) -> None:
        ready = f"{self.alertmanager_url}/-/ready"
        wait_until("alertmanager ready", lambda: http_get(ready)[0] == 200, timeout, process)

    def start(self, targets: Sequence[ScrapeTarget], timeout: float = 120) -> None:
        alertmanager = self.start_alertmanager()
        ctl_config = self.workdir / "ctlplane.yml"
        ctl_config.write_text(
            yaml.safe_dump(
                {
                    "clusters": [
                        {
                            "name": target.cluster,
                            "nodes": [
                                {"address": f"127.0.0.1:{port}", "name": name, "role": role}
                                for name, port, role in target.nodes
                            ],
                        }
                        for target in targets
                    ],
                    "scrape": {
                        "interval_seconds": self.interval_seconds,
                        "timeout_seconds": min(10.0, self.interval_seconds),
                    },
                    "http": {"host": "127.0.0.1", "port": self.ctlplane_port},
                    "dashboard": {"public_url": self.dashboard_url},
                }
            )
        )
        ctlplane = self._spawn("ctlplane", [sys.executable, "-m", "ctlplane.cli", "run", "--config", str(ctl_config)])
        prom_config = self.workdir / "prometheus.yml"
        interval = f"{self.interval_seconds:g}s"
        prom_config.write_text(
            yaml.safe_dump(
                {
                    "global": {"scrape_interval": interval, "evaluation_interval": interval},
                    "rule_files": [str(path) for path in self.rule_files],
                    "alerting": {
                        "alertmanagers": [{"static_configs": [{"targets": [f"127.0.0.1:{self.alertmanager_port}"]}]}]
                    },
                    "scrape_configs": [
                        {
                            "job_name": "ctlplane",
                            # as shipped (thresholds.PROMETHEUS_SCRAPE_SECONDS), or the stack's faster pace
                            "scrape_interval": f"{min(self.interval_seconds, PROMETHEUS_SCRAPE_SECONDS):g}s",
                            "static_configs": [{"targets": [f"127.0.0.1:{self.ctlplane_port}"]}],
                        }
                    ],
                }
            )
        )
        prometheus = self._spawn(
            "prometheus",
            [
                PROMETHEUS,
                f"--config.file={prom_config}",
                f"--storage.tsdb.path={self.workdir / 'prom-data'}",
                f"--web.listen-address=127.0.0.1:{self.prometheus_port}",
            ],
        )
        self.wait_alertmanager_ready(alertmanager, timeout)
        wait_until(
            "prometheus ready", lambda: http_get(f"{self.prometheus_url}/-/ready")[0] == 200, timeout, prometheus
        )
        wait_until(
            "ctlplane healthy",
            lambda: http_get(f"http://127.0.0.1:{self.ctlplane_port}/healthz")[0] == 200,
            timeout,
            ctlplane,
        )

    @property
    def dashboard_url(self) -> str:
        """Where a page links (dashboard.public_url, served as ctlplane_dashboard_info)."""
        return f"http://localhost:{self.ctlplane_port}/dashboard/"

    @property
    def prometheus_url(self) -> str:
        return f"http://127.0.0.1:{self.prometheus_port}"

    def query(self, promql: str) -> list[dict[str, Any]]:
        """An instant query's result vector ([] on any error, so callers can poll)."""
        status, body = http_get(f"{self.prometheus_url}/api/v1/query?" + urllib.parse.urlencode({"query": promql}))
        if status != 200:
            return []
        result = json.loads(body).get("data", {}).get("result", [])
        return result if isinstance(result, list) else []

    def close(self) -> None:
        for process in reversed(self._processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self._processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
        self.receiver.close()
        self._stack.close()


def duration_seconds(duration: str) -> float:
    """A Prometheus/Alertmanager duration of one unit (`15s`, `1m`, `4h`) in seconds."""
    units = {"s": 1, "m": 60, "h": 3600}
    return float(duration[:-1]) * units[duration[-1]]


def shortened_rules(directory: Path, divisor: float, interval: str) -> list[Path]:
    """Copies of the shipped rule files with every `for:` divided by `divisor` (at least 5 s) and the
    group interval set to `interval`; expressions, labels and annotations unchanged."""
    directory.mkdir(parents=True, exist_ok=True)
    copies = []
    for path in sorted(ALERTS.glob("*.rules.yml")):
        document = yaml.safe_load(path.read_text())
        for group in document["groups"]:
            group["interval"] = interval
            for rule in group["rules"]:
                if "for" in rule:
                    rule["for"] = f"{max(5.0, duration_seconds(rule['for']) / divisor):g}s"
        copy = directory / path.name
        copy.write_text(yaml.safe_dump(document, sort_keys=False))
        copies.append(copy)
    return copies
