"""The container's entrypoint as a process (no container runtime can be installed here: no Debian package,
no Docker engine): `ctlplane run` stopped as Docker stops it, and `ctlplane healthcheck` as the image's
HEALTHCHECK runs it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pyarrow.dataset as ds  # type: ignore[import-untyped]
import yaml

from harness.blackhole import BlackHoles
from harness.localkafka import free_port
from tests.integration.jmxserver import jmx_server
from tests.integration.watch import shared_client

DOCKER_STOP_GRACE_SECONDS = 10  # `docker stop`: SIGTERM, then SIGKILL after 10 s


def _ctlplane(*args: str, log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as output:
        return subprocess.Popen(
            [sys.executable, "-m", "ctlplane.cli", *args], stdout=output, stderr=subprocess.STDOUT, env=dict(os.environ)
        )


def _wait_for_rounds(base: str, process: subprocess.Popen[bytes], log: Path, rounds: int) -> None:
    deadline = time.monotonic() + 60
    while True:
        assert process.poll() is None, log.read_text()
        assert time.monotonic() < deadline, f"no {rounds} rounds served:\n{log.read_text()}"
        try:
            health = httpx.get(f"{base}/healthz", timeout=5, verify=False).json()
            if health["sequence"] >= rounds:
                return
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(0.5)


def test_docker_stop_keeps_the_history_even_while_a_round_hangs_on_a_node(tmp_path: Path) -> None:
    from jpype import JClass

    shared_client()
    one = JClass("java.lang.Long")(1)
    port = free_port()
    archive = tmp_path / "history"
    log = tmp_path / "ctlplane.log"
    with jmx_server({"kafka.server:type=KafkaServer,name=BrokerState": {"Value": lambda: one}}) as jmx_port:
        with BlackHoles(1) as holes:  # a node whose reads hang for the whole scrape timeout
            config = tmp_path / "ctlplane.yaml"
            document = {
                "clusters": [
                    {
                        "name": "c1",
                        "nodes": [
                            {"address": f"127.0.0.1:{jmx_port}", "name": "broker-1"},
                            {"address": f"127.0.0.1:{holes.ports[0]}", "name": "broker-2"},
                        ],
                    }
                ],
                "scrape": {"interval_seconds": 9, "timeout_seconds": 8},
                "http": {"port": port},
                # only a shutdown flush can write within this test
                "history": {"path": str(archive), "flush_seconds": 3600},
            }
            config.write_text(yaml.safe_dump(document))
            process = _ctlplane("run", "--config", str(config), log=log)
            try:
                _wait_for_rounds(f"http://127.0.0.1:{port}", process, log, 2)
                time.sleep(1)  # into the next round, which waits on the black-holed node
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=DOCKER_STOP_GRACE_SECONDS)
                except subprocess.TimeoutExpired:
                    process.kill()  # as Docker does after the grace period
                    process.wait()
            finally:
                if process.poll() is None:
                    process.kill()
    assert list(archive.rglob("part-*.parquet")), f"docker stop lost the history:\n{log.read_text()}"
    table = ds.dataset(archive, format="parquet", partitioning="hive").to_table()
    rounds = set(table.column("timestamp").to_pylist())
    assert len(rounds) >= 2, f"the history of the rounds before docker stop was lost:\n{log.read_text()}"
    assert process.returncode == 0, f"exit {process.returncode} (killed?):\n{log.read_text()}"


def test_healthcheck_reads_port_scheme_and_auth_free_healthz_from_the_config(tmp_path: Path) -> None:
    from jpype import JClass

    shared_client()
    one = JClass("java.lang.Long")(1)
    port = free_port()
    log = tmp_path / "ctlplane.log"
    certs = tmp_path / "certs"
    certs.mkdir()
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", "key.pem", "-out", "cert.pem", "-days", "2", "-subj", "/CN=ctlplane"],
        cwd=certs, check=True, capture_output=True,
    )  # fmt: skip
    with jmx_server({"kafka.server:type=KafkaServer,name=BrokerState": {"Value": lambda: one}}) as jmx_port:
        config = tmp_path / "ctlplane.yaml"
        document = {
            "clusters": [{"name": "c1", "nodes": [{"address": f"127.0.0.1:{jmx_port}", "name": "broker-1"}]}],
            "scrape": {"interval_seconds": 2, "timeout_seconds": 1.5},
            "http": {
                "port": port,
                "tls": {"cert_file": str(certs / "cert.pem"), "key_file": str(certs / "key.pem")},
                "basic_auth_users": {"prometheus": "$2b$04$" + "a" * 53},
            },
        }
        config.write_text(yaml.safe_dump(document))
        check = [sys.executable, "-m", "ctlplane.cli", "healthcheck", "--config", str(config)]
        assert subprocess.run(check, capture_output=True, timeout=30).returncode == 1  # nothing serves yet
        process = _ctlplane("run", "--config", str(config), log=log)
        try:
            _wait_for_rounds(f"https://127.0.0.1:{port}", process, log, 1)
            result = subprocess.run(check, capture_output=True, text=True, timeout=30)
            assert result.returncode == 0, result.stdout + result.stderr
        finally:
            process.terminate()
            process.wait(timeout=30)
