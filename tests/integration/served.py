"""Real server processes (`ctlplane run`, Prometheus) seen from outside: ready when a URL answers 200, a
/metrics page polled until it says enough, stopped the way their service manager stops them."""

from __future__ import annotations

import json
import re
import shutil
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

from harness.localkafka import free_port

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"


def wait_ready(
    process: subprocess.Popen[bytes],
    url: str,
    what: str,
    timeout: float = 60,
    verify: ssl.SSLContext | bool = True,
) -> None:
    """Until `url` answers 200; fails at once if the process exits, or after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"{what} exited with {process.returncode}")
        try:
            if httpx.get(url, timeout=2, verify=verify).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"{what} not ready at {url} after {timeout:.0f} s")


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, as systemd or a container runtime stops it; SIGKILL after 20 s."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def metrics_until(
    base_url: str,
    wanted: Sequence[str],
    process: subprocess.Popen[bytes],
    output: Callable[[], str],
    timeout: float,
    what: str,
    pause: float = 1.0,
) -> bytes:
    """Poll `base_url`/metrics until every line of `wanted` is on it and return that page; fail with the
    process's output if it exits, or naming `what` and the missing lines after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    body = b""
    while not all(line in (text := body.decode()) for line in wanted):
        assert process.poll() is None, output()
        assert time.monotonic() < deadline, f"{what}; missing {[w for w in wanted if w not in text]}:\n{text}"
        time.sleep(pause)
        try:
            body = httpx.get(f"{base_url}/metrics", timeout=5).content
        except httpx.HTTPError:
            continue
    return body


@dataclass(frozen=True)
class Served:
    """What `ctlplane check-config` and `ctlplane run` showed of one config (check_and_run)."""

    checked: str  # check-config's output
    page: str  # /metrics, once it held every line asked for
    api: dict[str, str]  # /api/v1/snapshot and /api/v1/health, read right after
    output: str  # ctlplane run's stdout and stderr

    def snapshot(self) -> dict[str, Any]:
        return dict(json.loads(self.api["/api/v1/snapshot"]))

    def texts(self) -> list[str]:
        """Everything shown: where no secret may be."""
        return [self.checked, self.page, *self.api.values(), self.output]


def run_config(tmp_path: Path, clusters: Sequence[Mapping[str, Any]]) -> tuple[Path, int]:
    """A `ctlplane run` config of `clusters` in `tmp_path` (3 s rounds, so a refused view reads as one within
    the test's wait), and the free port its HTTP server takes."""
    port = free_port()
    document = {
        "clusters": list(clusters),
        "scrape": {"interval_seconds": 3, "timeout_seconds": 3},
        "http": {"port": port},
    }
    config = tmp_path / "ctlplane.yaml"
    config.write_text(yaml.safe_dump(document))
    return config, port


def check_and_run(
    config: Path,
    port: int,
    wanted: Sequence[str | re.Pattern[str]],
    *,
    env: Mapping[str, str],
    timeout: float,
    what: str,
) -> Served:
    """`ctlplane check-config CONFIG` (which must pass), then `ctlplane run --config CONFIG` (its HTTP server on
    `port`) until its /metrics holds every line of `wanted` (and matches each pattern in it), and its API's pages
    then; the process stopped."""
    checked = subprocess.run(
        [sys.executable, "-m", "ctlplane.cli", "check-config", str(config)], env=env, capture_output=True, text=True
    )
    said = checked.stdout + checked.stderr
    assert checked.returncode == 0 and "OK (" in checked.stdout, said
    output = config.with_name(f"{config.stem}.out")
    with output.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "ctlplane.cli", "run", "--config", str(config)],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=dict(env),
        )
        try:
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + timeout
            lines = [line for line in wanted if isinstance(line, str)]
            page = metrics_until(base, lines, process, output.read_text, timeout, what).decode()
            while missing := [p.pattern for p in wanted if isinstance(p, re.Pattern) and not p.search(page)]:
                assert process.poll() is None, output.read_text()
                assert time.monotonic() < deadline, f"{what}; nothing matches {missing}:\n{page}"
                time.sleep(1)
                page = metrics_until(base, lines, process, output.read_text, timeout, what).decode()
            api = {path: httpx.get(f"{base}{path}", timeout=5).text for path in ("/api/v1/snapshot", "/api/v1/health")}
        finally:
            stop(process)
    return Served(said, page, api, output.read_text(errors="replace"))
