"""deploy/systemd/ctlplane.service as docs/install.md ships it: systemd's own check of the unit, then its
commands run as systemd would run them (the check first, the service, `systemctl reload`'s SIGHUP, `systemctl
stop`'s SIGTERM), with the installed `ctlplane` and a config of this test's own in place of /opt and /etc."""

from __future__ import annotations

import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

from harness.localkafka import free_port
from tests.integration.served import wait_ready

UNIT = Path(__file__).resolve().parents[2] / "deploy" / "systemd" / "ctlplane.service"
INSTALLED = "/opt/ctlplane/bin/ctlplane"
CONFIG = "/etc/ctlplane/ctlplane.yaml"


def _settings(unit: str) -> dict[str, str]:
    """The unit's `Key=value` lines (the last of each key, as systemd reads a single-valued setting)."""
    pairs = (line.split("=", 1) for line in unit.splitlines() if "=" in line and not line.startswith("#"))
    return {key.strip(): value.strip() for key, value in pairs}


def _local(unit: str, tmp_path: Path) -> str:
    ctlplane = Path(sys.executable).with_name("ctlplane")
    return unit.replace(INSTALLED, str(ctlplane)).replace(CONFIG, str(tmp_path / "ctlplane.yaml"))


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze (Debian's systemd)")
def test_systemd_finds_nothing_wrong_in_the_unit(tmp_path: Path) -> None:
    unit = tmp_path / "ctlplane.service"
    unit.write_text(_local(UNIT.read_text(), tmp_path))
    (tmp_path / "ctlplane.yaml").write_text("clusters: [{name: c1, nodes: [{address: '127.0.0.1:1'}]}]\n")
    checked = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0 and checked.stderr == "", checked.stderr


def test_the_units_commands_check_serve_reload_and_stop(tmp_path: Path) -> None:
    port = free_port()
    config = tmp_path / "ctlplane.yaml"
    document = {
        "clusters": [{"name": "c1", "nodes": [{"address": "127.0.0.1:1", "name": "broker-1"}]}],
        "scrape": {"interval_seconds": 1, "timeout_seconds": 0.5},
        "http": {"port": port},
        "dashboard": {"enabled": False},
    }
    config.write_text(yaml.safe_dump(document))
    settings = _settings(_local(UNIT.read_text(), tmp_path))
    checked = subprocess.run(shlex.split(settings["ExecStartPre"]), capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0, checked.stderr
    log = tmp_path / "journal.log"
    with open(log, "wb") as journal:
        service = subprocess.Popen(shlex.split(settings["ExecStart"]), stdout=journal, stderr=journal, cwd=tmp_path)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_ready(service, f"{base}/healthz", "the service", timeout=90)
        deadline = time.monotonic() + 90
        # ExecReload: `kill -HUP $MAINPID`
        assert settings["ExecReload"] == "/bin/kill -HUP $MAINPID"
        document["clusters"][0]["nodes"].append({"address": "127.0.0.1:2", "name": "broker-2"})
        config.write_text(yaml.safe_dump(document))
        service.send_signal(signal.SIGHUP)
        while 'ctlplane_up{cluster="c1",node="broker-2"' not in httpx.get(f"{base}/metrics", timeout=5).text:
            assert service.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.5)
        # `systemctl stop`: SIGTERM, and out well inside TimeoutStopSec
        stop_seconds = float(settings["TimeoutStopSec"])
        service.send_signal(signal.SIGTERM)
        assert service.wait(timeout=stop_seconds) == 0, log.read_text()
    finally:
        if service.poll() is None:
            service.kill()
            service.wait()
