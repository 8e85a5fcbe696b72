"""Real server processes (`ctlplane run`, Prometheus) seen from outside: ready when a URL answers 200, a
/metrics page polled until it says enough, stopped the way their service manager stops them."""

from __future__ import annotations

import shutil
import ssl
import subprocess
import time
from collections.abc import Callable, Sequence

import httpx

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
