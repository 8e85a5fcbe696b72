"""A credential rotated under a running `ctlplane run`, the old one revoked on the broker (#61, rotation without
a restart): the Admin client's SCRAM password comes from a file projected as a Kubernetes Secret is, and the
broker asks every connection on its SASL_PLAINTEXT listener to log in again every SASL_REAUTH_MS
(connections.max.reauth.ms, KIP-368), so a connection opened with the revoked password cannot pass for the
new one: only a client made again with the renewed file keeps reading the quorum."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from harness.localkafka import KafkaCluster, clusters_config, set_scram_password
from tests.integration.served import metrics_until, run_config, stop
from tests.kafka_versions import SASL_REAUTH_MS
from tests.projected import project_secret

USER = "ctlplane-rotated"
FIRST, SECOND = "first-Rotated-7310", "second-Rotated-9024"
INTERVAL = 3  # ctlplane's round here (served.run_config's)


def _up(name: str, up: bool) -> list[str]:
    """The lines of a view up and not refused, or down and refused."""
    return [
        f'ctlplane_quorum_up{{cluster="{name}"}} {float(up)}',
        f'ctlplane_quorum_refused{{cluster="{name}"}} {float(not up)}',
    ]


def test_a_rotated_scram_password_is_read_without_a_restart_and_a_kept_one_is_refused_once_revoked(
    kraft_cluster: KafkaCluster, tmp_path: Path
) -> None:
    """Two views of the cluster as one user, SCRAM-SHA-512: `rotated` reads its password from a projected
    Secret that is renewed when the broker's password changes, `kept` from one that is not. Both read the quorum;
    once the password is changed on the broker (the first refused from then on) and the Secret renewed, `rotated`
    reads on through the broker's next re-authentication and after, and `kept` is refused, as
    `ctlplane_quorum_refused 1`, by the next re-authentication of its open connection."""
    set_scram_password(kraft_cluster, USER, FIRST, ["SCRAM-SHA-512"])
    rotated, kept = tmp_path / "rotated", tmp_path / "kept"
    for secret in (rotated, kept):
        project_secret(secret, "1", {"password": FIRST})
    base = clusters_config((kraft_cluster,))[0]
    base.pop("bootstrap_controllers", None)
    bootstrap = kraft_cluster.listener_bootstrap("SASL_PLAINTEXT")
    clusters = [
        {
            **base,
            "name": name,
            "bootstrap_servers": bootstrap,
            "admin": {
                "security_protocol": "SASL_PLAINTEXT",
                "sasl_mechanism": "SCRAM-SHA-512",
                "username": USER,
                "password_file": str(secret / "password"),
            },
        }
        for name, secret in (("rotated", rotated), ("kept", kept))
    ]
    config, port = run_config(tmp_path, clusters)  # 3 s rounds: INTERVAL
    output = tmp_path / "ctlplane.out"
    base_url = f"http://127.0.0.1:{port}"
    with output.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "ctlplane.cli", "run", "--config", str(config)],
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
        try:
            metrics_until(base_url, _up("rotated", True) + _up("kept", True), process, output.read_text, 90, "both")
            set_scram_password(kraft_cluster, USER, SECOND, ["SCRAM-SHA-512"])
            project_secret(rotated, "2", {"password": SECOND})
            revoked = time.monotonic()
            # within a re-authentication (and a round) the kept connection is refused
            timeout = SASL_REAUTH_MS / 1000 + 5 * INTERVAL
            metrics_until(base_url, _up("kept", False), process, output.read_text, timeout, "kept refused")
            # past the broker's next check of every connection opened before the change, the rotated view reads
            time.sleep(max(0.0, revoked + SASL_REAUTH_MS / 1000 + 2 * INTERVAL - time.monotonic()))
            for _ in range(3):
                page = metrics_until(base_url, _up("rotated", True), process, output.read_text, 1, "rotated up")
                time.sleep(INTERVAL)
        finally:
            stop(process)
    said = output.read_text()
    assert "credentials changed on disk" in said, said[-2000:]
    for secret_text in (FIRST, SECOND):
        assert secret_text.encode() not in page and secret_text not in said, "a password is shown"
