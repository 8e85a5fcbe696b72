"""A fleet split over several real `ctlplane run` processes (`--shard I/N`): every simulated cluster is
served by exactly one of them, for N = 3 and then N = 2, and going from 3 to 2 moves only the clusters of
the replica that went away."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import yaml

from ctlplane.dashboard.source import ExportersSource, RemoteSource
from ctlplane.demo.launch import SettingsDocument, SimulatorProcess, start_simulator
from ctlplane.exporter.shards import shard_of
from harness.localkafka import free_port

DEADLINE_SECONDS = 90.0


def _replicas(
    simulator: SimulatorProcess,
    document: SettingsDocument,
    shards: list[str],
    tmp_path: Path,
    env: dict[str, str],
    dashboard_check: Callable[[list[subprocess.Popen[bytes]], list[str]], None] | None = None,
) -> list[set[str]]:
    """Start one `ctlplane run` per shard and return the clusters each serves once all their nodes are up;
    `dashboard_check(processes, urls)` runs before they are stopped."""
    processes: list[tuple[subprocess.Popen[bytes], int, Path]] = []
    try:
        for number, shard in enumerate(shards):
            port = free_port()
            config = tmp_path / f"replica-{number}.yaml"
            config.write_text(yaml.safe_dump({**document, "http": {"port": port}, "dashboard": {"enabled": False}}))
            log = tmp_path / f"replica-{number}.log"
            with log.open("wb") as output:
                process = subprocess.Popen(
                    [sys.executable, "-m", "ctlplane.cli", "run", "--config", str(config), "--shard", shard],
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    env={**os.environ, **env, "HOSTNAME": f"ctlplane-{number}"},  # what `auto` reads
                )
            processes.append((process, port, log))
        served: list[set[str]] = []
        for process, port, log in processes:
            deadline = time.monotonic() + DEADLINE_SECONDS
            while True:
                assert process.poll() is None, log.read_text()
                snapshot = _snapshot(port)
                if snapshot is not None and snapshot["sequence"] > 0:
                    nodes = [node for cluster in snapshot["clusters"] for node in cluster["nodes"]]
                    if all(node["up"] for node in nodes):
                        served.append({cluster["name"] for cluster in snapshot["clusters"]})
                        break
                assert time.monotonic() < deadline, f"replica on {port}: nodes not all up\n{log.read_text()}"
                time.sleep(0.5)
        if dashboard_check is not None:
            dashboard_check(
                [process for process, _, _ in processes], [f"http://127.0.0.1:{p}" for _, p, _ in processes]
            )
        return served
    finally:
        for process, _, _ in processes:
            process.terminate()
        for process, _, _ in processes:
            process.wait(timeout=20)


def _dashboard_sees_one_fleet(processes: list[subprocess.Popen[bytes]], urls: list[str]) -> None:
    """`ctlplane dashboard --exporter A --exporter B --exporter C`'s source: every replica's clusters once;
    a replica killed keeps its clusters on the page as last seen and is named."""
    source = ExportersSource([RemoteSource(url, timeout_seconds=5) for url in urls])
    try:
        fleet = source.poll_once()
        # every replica answered once with a snapshot and its own round's health (each did moments ago; a
        # loaded CI run saw one miss the source's 5 s, another's round end between the two requests, which
        # the source leaves for its next poll rather than pair a snapshot with another round's health)
        deadline = time.monotonic() + DEADLINE_SECONDS
        while (source.last_error is not None or any(r.current().snapshot.sequence == 0 for r in source.sources)) and (
            time.monotonic() < deadline
        ):
            time.sleep(1)
            fleet = source.poll_once()
        assert source.last_error is None, source.last_error
        shares = [{c.name for c in remote.current().snapshot.clusters} for remote in source.sources]
        assert sorted(c.name for c in fleet.snapshot.clusters) == sorted(c for share in shares for c in share)
        assert len(fleet.health.clusters) == len(fleet.snapshot.clusters) == 8
        processes[2].kill()
        processes[2].wait(timeout=20)
        after = source.poll_once()
        assert {c.name for c in after.snapshot.clusters} == {c.name for c in fleet.snapshot.clusters}
        error = source.last_error or ""
        assert error.startswith(f"{urls[2]} unreachable: ConnectError") and all(c in error for c in shares[2]), error
    finally:
        source.close()


def _snapshot(port: int) -> dict[str, Any] | None:
    try:
        response = httpx.get(f"http://127.0.0.1:{port}/api/v1/snapshot", timeout=5)
    except httpx.HTTPError:
        return None
    return response.json() if response.status_code == 200 else None


def test_replicas_split_the_fleet_with_no_cluster_served_twice_or_dropped(tmp_path: Path) -> None:
    with start_simulator(fleet_clusters=8, fleet_nodes=4, max_heap="192m") as simulator:
        document = simulator.settings_document(interval_seconds=2.0, timeout_seconds=1.5)
        clusters = {cluster["name"] for cluster in document["clusters"]}
        assert len(clusters) == 8
        # three replicas; the middle one as a StatefulSet pod would be started: auto, index from its hostname
        three = _replicas(simulator, document, ["0/3", "auto/3", "2/3"], tmp_path, {}, _dashboard_sees_one_fleet)
        two = _replicas(simulator, document, ["0/2"], tmp_path, {"CTLPLANE_SHARD": "1/2"})  # flag wins over env
        two += _replicas(simulator, document, ["1/2"], tmp_path, {})
    for shares in (three, two):
        assert sorted(c for share in shares for c in share) == sorted(clusters)  # none twice, none dropped
    assert three == [{c for c in clusters if shard_of(c, 3) == i} for i in range(3)]
    assert all(three), three  # 8 clusters over 3: each replica has some (the split is fixed by the names)
    # 3 -> 2 replicas: what replicas 0 and 1 served stays where it was; only replica 2's clusters move
    assert three[0] <= two[0] and three[1] <= two[1]
    assert (two[0] - three[0]) | (two[1] - three[1]) == three[2]


def test_a_replica_whose_share_is_empty_runs_healthy_and_serves_no_cluster(tmp_path: Path) -> None:
    # more replicas than clusters: some shares are empty, and such a replica must still start and stay healthy
    # (it is a pod of the StatefulSet like the others), not exit or report itself down
    names = [f"c{i}" for i in range(3)]
    count = 8
    empty = next(index for index in range(count) if all(shard_of(name, count) != index for name in names))
    port = free_port()
    config = tmp_path / "ctlplane.yaml"
    document = {
        "clusters": [{"name": name, "nodes": [{"address": "127.0.0.1:1"}]} for name in names],
        "scrape": {"interval_seconds": 1.0, "timeout_seconds": 0.8},
        "http": {"port": port},
        "dashboard": {"enabled": False},
    }
    config.write_text(yaml.safe_dump(document))
    log = tmp_path / "ctlplane.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "ctlplane.cli", "run", "--config", str(config), "--shard", f"{empty}/{count}"],
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + DEADLINE_SECONDS
        while (snapshot := _snapshot(port)) is None or snapshot["sequence"] < 2:
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.5)
        assert snapshot["clusters"] == []
        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200
        metrics = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
        assert "ctlplane_round_duration_seconds" in metrics and "ctlplane_up{" not in metrics
    finally:
        process.terminate()
        process.wait(timeout=20)
    assert f"shard {empty}/{count}: serving 0 of 3 clusters: none" in log.read_text()
