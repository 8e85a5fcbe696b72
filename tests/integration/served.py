"""A real `ctlplane run` process, seen from outside: its /metrics page polled until it says enough."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Sequence

import httpx


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
