"""Reloading the config of a running `ctlplane run` (issue #33): SIGHUP and POST /-/reload, against the
suite's real ZooKeeper-mode clusters, with history on. A node and a cluster added, a bad edit refused (the
running config stays, `ctlplane_config_last_reload_successful 0`), a cluster removed, the interval
lengthened (/healthz judges by the new one); the process is the same throughout and the history keeps every
round before and after."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pyarrow.dataset as ds  # type: ignore[import-untyped]
import yaml

from harness.localkafka import KafkaCluster, clusters_config, free_port
from tests.integration.served import metrics_until
from tests.kafka_versions import ZK_NAME


def _up(cluster: str, node: str) -> str:
    return f'ctlplane_up{{cluster="{cluster}",node="{node}",role="broker"}} 1.0'


def test_sighup_and_post_reload_apply_a_new_config_and_refuse_a_bad_one(
    zk_cluster: KafkaCluster, zk_cluster_no_listener: KafkaCluster, tmp_path: Path
) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    archive = tmp_path / "history"
    zk, other = clusters_config((zk_cluster, zk_cluster_no_listener))
    late = zk["nodes"].pop()  # the last broker: added by the first reload
    document = {
        "clusters": [zk],
        "scrape": {"interval_seconds": 2, "timeout_seconds": 1.5},
        "http": {"port": port},
        "history": {"path": str(archive), "flush_seconds": 1},
    }
    config = tmp_path / "ctlplane.yaml"
    config.write_text(yaml.safe_dump(document))
    log = tmp_path / "ctlplane.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "ctlplane.cli", "run", "--config", str(config)], stdout=out, stderr=out
        )
    try:

        def until(wanted: list[str], what: str) -> str:
            return metrics_until(base, wanted, process, log.read_text, 90, what).decode()

        first = zk["nodes"][0]["name"]
        until([_up(ZK_NAME, first), "ctlplane_config_last_reload_successful 1.0"], "the listed nodes read")
        before = time.time()

        zk["nodes"].append(late)
        document["clusters"] = [zk, other]
        config.write_text(yaml.safe_dump(document))
        process.send_signal(signal.SIGHUP)
        text = until(
            [_up(ZK_NAME, late["name"]), _up(other["name"], other["nodes"][0]["name"])],
            "the added node and cluster read after SIGHUP",
        )
        assert "ctlplane_config_reload_failures_total 0.0" in text

        # a bad edit: refused with its field path, and the running config stays
        document["scrape"] = {"interval_seconds": 2, "timeout_seconds": 5}  # a timeout over the interval
        config.write_text(yaml.safe_dump(document))
        refused = httpx.post(f"{base}/-/reload", timeout=30)
        assert refused.status_code == 500 and "timeout_seconds must not exceed interval_seconds" in refused.text
        until(
            ["ctlplane_config_last_reload_successful 0.0", "ctlplane_config_reload_failures_total 1.0"],
            "the failed reload counted",
        )
        time.sleep(4)  # two rounds: still reading what the running config says
        until([_up(ZK_NAME, late["name"]), _up(other["name"], other["nodes"][0]["name"])], "still served")

        # fixed, and a cluster removed
        document["scrape"] = {"interval_seconds": 2, "timeout_seconds": 1.5}
        document["clusters"] = [zk]
        config.write_text(yaml.safe_dump(document))
        assert httpx.post(f"{base}/-/reload", timeout=30).status_code == 200
        text = until(["ctlplane_config_last_reload_successful 1.0"], "the fixed config applied")
        time.sleep(4)
        text = httpx.get(f"{base}/metrics", timeout=10).text
        assert f'cluster="{other["name"]}"' not in text, "the removed cluster is still served"

        # a longer interval: /healthz judges the snapshot's age by it, not by the 2 s the process started with
        # (issue 47), so a round older than three of those is still healthy
        document["scrape"] = {"interval_seconds": 30, "timeout_seconds": 1.5}
        config.write_text(yaml.safe_dump(document))
        assert httpx.post(f"{base}/-/reload", timeout=30).status_code == 200
        deadline = time.monotonic() + 30
        while (healthz := httpx.get(f"{base}/healthz", timeout=10)).json()["snapshot_age_seconds"] <= 3 * 2 + 1:
            assert time.monotonic() < deadline, healthz.text
            time.sleep(0.5)
        assert healthz.status_code == 200, healthz.text
        assert process.poll() is None
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    assert process.returncode == 0, log.read_text()
    table = ds.dataset(archive, format="parquet", partitioning="hive").to_table()
    rows = table.to_pylist()
    first_node_times = [r["timestamp"].timestamp() for r in rows if r["node"] == zk["nodes"][0]["name"]]
    assert min(first_node_times) < before < max(first_node_times), "history lost the rounds before or after"
    assert any(r["node"] == late["name"] for r in rows), "the node added by the reload has no history"
