"""docs/install.md "A secured setup", run as written: its web config, ctlplane config and Prometheus
scrape_config (read out of the page; only paths, ports and the password's hash put in), a real `ctlplane run`
and a real Prometheus scraping it over HTTPS with the password."""

from __future__ import annotations

import re
import ssl
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import bcrypt
import httpx
import yaml

from harness.localkafka import free_port, make_local_pki
from tests.integration.served import PROMETHEUS, stop, wait_ready

PAGE = Path(__file__).resolve().parents[2] / "docs" / "install.md"
SECTION = "## A secured setup"
PLACEHOLDER = "$2b$10$REPLACE_WITH_THE_BCRYPT_HASH"
PASSWORD = "s3cret-for-prometheus"


def _blocks() -> list[dict[str, Any]]:
    """The section's YAML blocks, in order: the web config, ctlplane's config, prometheus.yml."""
    text = PAGE.read_text()
    section = text[text.index(SECTION) :]
    section = section[: section.index("\n## ", 1)]
    blocks = re.findall(r"```yaml\n(.*?)```", section, re.DOTALL)
    assert len(blocks) == 3, f"{PAGE}: {SECTION} has {len(blocks)} YAML blocks, expected 3"
    assert PLACEHOLDER in blocks[0]
    return [yaml.safe_load(block.replace(PLACEHOLDER, "'{hash}'")) for block in blocks]


def test_prometheus_scrapes_ctlplane_over_https_with_the_password_as_the_page_says(tmp_path: Path) -> None:
    web, ctlplane, prometheus = _blocks()
    etc = tmp_path / "etc"
    pki = make_local_pki(etc, ("server",))  # server.pem, server.key and ca.pem, for 127.0.0.1
    hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode()
    web["basic_auth_users"] = dict.fromkeys(web["basic_auth_users"], hashed)
    (etc / "web-config.yml").write_text(yaml.safe_dump(web))  # its relative paths: beside it, as the page says
    port = free_port()
    ctlplane["http"].update(host="127.0.0.1", port=port, web_config_file=str(etc / "web-config.yml"))
    ctlplane["clusters"] = [{"name": "c1", "nodes": [{"address": "127.0.0.1:1"}]}]
    ctlplane["scrape"] = {"interval_seconds": 1, "timeout_seconds": 0.5}
    ctlplane["dashboard"] = {"enabled": False}
    (etc / "ctlplane.yaml").write_text(yaml.safe_dump(ctlplane))
    (etc / "prometheus-password").write_text(PASSWORD)
    job = prometheus["scrape_configs"][0]
    job["tls_config"]["ca_file"] = str(pki.ca)
    job["basic_auth"]["password_file"] = str(etc / "prometheus-password")
    job["static_configs"] = [{"targets": [f"127.0.0.1:{port}"]}]
    prometheus["global"] = {"scrape_interval": "1s"}
    (etc / "prometheus.yml").write_text(yaml.safe_dump(prometheus))

    logs = (tmp_path / "ctlplane.log").open("wb"), (tmp_path / "prometheus.log").open("wb")
    served = subprocess.Popen(
        [sys.executable, "-m", "ctlplane.cli", "run", "--config", str(etc / "ctlplane.yaml")],
        stdout=logs[0],
        stderr=subprocess.STDOUT,
    )
    prometheus_port = free_port()
    scraper = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={etc / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp_path / 'data'}",
            f"--web.listen-address=127.0.0.1:{prometheus_port}",
        ],
        stdout=logs[1],
        stderr=subprocess.STDOUT,
    )
    try:
        base = f"https://127.0.0.1:{port}"
        trusted = ssl.create_default_context(cafile=str(pki.ca))
        wait_ready(served, f"{base}/healthz", "ctlplane", verify=trusted)  # no password on /healthz
        assert httpx.get(f"{base}/metrics", verify=trusted, timeout=10).status_code == 401
        wait_ready(scraper, f"http://127.0.0.1:{prometheus_port}/-/ready", "prometheus")
        deadline = time.monotonic() + 60
        while True:
            targets = httpx.get(f"http://127.0.0.1:{prometheus_port}/api/v1/targets", timeout=10).json()
            (target,) = targets["data"]["activeTargets"] or [{"health": "unknown", "lastError": "not listed yet"}]
            if target["health"] == "up":
                break
            assert time.monotonic() < deadline, f"Prometheus's scrape of ctlplane: {target['lastError']}"
            time.sleep(1)
        answer = httpx.get(
            f"http://127.0.0.1:{prometheus_port}/api/v1/query", params={"query": "ctlplane_build_info"}, timeout=10
        ).json()
        assert answer["data"]["result"], answer
    finally:
        stop(scraper)
        stop(served)
        for log in logs:
            log.close()
