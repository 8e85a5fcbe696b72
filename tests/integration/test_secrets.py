"""The JMX password is read, used and never shown: not in the exporter's logs (at DEBUG), /metrics, the
JSON API, the dashboard, nor any process's command line, while `ctlplane run` reads a real JMX server
that requires it."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import httpx
import yaml

from harness.localkafka import free_port
from tests.integration.jmxserver import jmx_server
from tests.integration.served import metrics_until
from tests.integration.watch import shared_client


def _command_lines() -> list[str]:
    """Every process's command line, as `ps -ef` shows them to any local user."""
    lines = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                lines.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
            except OSError:
                continue  # the process ended meanwhile
    return lines


def test_the_jmx_password_is_used_and_never_shown(tmp_path: Path) -> None:
    from jpype import JClass

    shared_client()  # the test process's JVM, which hosts the JMX server
    password = "pw-" + secrets.token_hex(12)
    one = JClass("java.lang.Long")(1)
    mbeans = {"kafka.server:type=KafkaServer,name=BrokerState": {"Value": lambda: one}}
    port = free_port()
    with jmx_server(mbeans, credentials=("monitor", password)) as jmx_port:
        config = tmp_path / "ctlplane.yaml"
        document = {
            "clusters": [
                {
                    "name": "secured",
                    "nodes": [{"address": f"127.0.0.1:{jmx_port}", "name": "broker-1"}],
                    "jmx": {"username": "monitor", "password_env": "CTLPLANE_TEST_JMX_PASSWORD"},
                }
            ],
            "scrape": {"interval_seconds": 2, "timeout_seconds": 1.5},
            "http": {"port": port},
        }
        config.write_text(yaml.safe_dump(document))
        log = tmp_path / "ctlplane.log"
        with open(log, "wb") as output:
            process = subprocess.Popen(
                [sys.executable, "-m", "ctlplane.cli", "--log-level", "DEBUG", "run", "--config", str(config)],
                stdout=output,
                stderr=subprocess.STDOUT,
                env={**os.environ, "CTLPLANE_TEST_JMX_PASSWORD": password},
            )
        try:
            base = f"http://127.0.0.1:{port}"
            metrics_until(
                base,
                ['ctlplane_up{cluster="secured",node="broker-1",role="broker"} 1.0'],
                process,
                log.read_text,
                60,
                "the node was never read with the password",
                pause=0.5,
            )
            shown = {
                path: httpx.get(f"{base}{path}", timeout=10).text
                for path in (
                    "/metrics",
                    "/api/v1/snapshot",
                    "/api/v1/health",
                    "/",
                    "/dashboard/",
                    "/dashboard/_dash-layout",
                )
            }
            command_lines = _command_lines()
        finally:
            process.terminate()
            process.wait(timeout=30)
    logged = log.read_text()
    assert "JMX authentication without SSL" in logged  # warned, since this server has no SSL
    assert "DEBUG" in logged, "the log was not at DEBUG: the test would prove nothing about debug logs"
    leaks = ["log of ctlplane run"] if password in logged else []
    leaks += [f"HTTP {path}" for path, body in shown.items() if password in body]
    leaks += [f"command line: {line[:200]}" for line in command_lines if password in line]
    assert not leaks, leaks
