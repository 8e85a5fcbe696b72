"""The exporter against real Kafka: every series a mode defines, sane values, failures as values."""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

from ctlplane.exporter.catalog import CATALOG, Mode, Role, SeriesType
from ctlplane.exporter.health import Lifecycle
from ctlplane.exporter.health.gc import GC_SECONDS, pause_seconds
from ctlplane.exporter.model import ClusterSnapshot
from ctlplane.exporter.releases import catalogue_series
from harness.localkafka import KafkaCluster, clusters_config, free_port, quorum_bootstrap
from tests.integration.served import metrics_until
from tests.integration.watch import Watch
from tests.kafka_versions import KRAFT_NAME, KRAFT_UNDER_TEST, ZK_LISTENER, ZK_NAME, ZK_NOLISTENER_NAME, ZK_UNDER_TEST

# per-broker queues of the active controller and their queue-time timers (ControllerChannelManager)
ZK_ONLY_ON_ACTIVE_CONTROLLER = {"kafka_controller_channel_queue_size", "kafka_controller_channel_queue_time_seconds"}
# Series that exist only once the matching traffic happened (no AlterPartition on an idle cluster, ...).
TRAFFIC_DEPENDENT = {"kafka_requests_total"}


def expected_series(mode: Mode, version: str, *, listener: bool) -> set[str]:
    return set(catalogue_series(mode, version, listener=listener)) - TRAFFIC_DEPENDENT


def present(cluster: ClusterSnapshot) -> set[str]:
    return {sample.series for node in cluster.nodes for sample in node.samples}


def assert_sane(cluster: ClusterSnapshot) -> None:
    for node in cluster.nodes:
        for sample in node.samples:
            spec = next(s for s in CATALOG if s.series == sample.series)
            if sample.series.endswith("_ratio"):
                assert 0.0 <= sample.value <= 1.0 or math.isnan(sample.value), (node.node, sample)
            if sample.series.endswith(("_queue_size", "_total", "_seconds")) and spec.type is not SeriesType.INFO:
                # NaN is Kafka's "no sample in the window" (e.g. commit latency on a follower)
                assert sample.value >= 0 or math.isnan(sample.value), (node.node, sample)


@pytest.fixture(scope="module")
def zk_watch(zk_cluster: KafkaCluster, zk_cluster_no_listener: KafkaCluster) -> Watch:
    watch = Watch(zk_cluster, zk_cluster_no_listener)
    # a broker restarted by an earlier test registers app-info only at the end of its start-up
    watch.until(lambda o: all(n.up and n.version for n in o.snapshot.nodes()), 60, "all ZooKeeper-mode brokers read")
    return watch


@pytest.mark.zookeeper
def test_zookeeper_cluster_serves_every_series_its_mode_and_release_define(zk_watch: Watch) -> None:
    observation = zk_watch.until(
        lambda o: o.health.cluster(ZK_NAME).active_controllers == 1,  # type: ignore[union-attr]
        60,
        "one active controller",
    )
    snapshot, health = zk_watch.cluster(ZK_NAME)
    assert snapshot.mode is Mode.ZOOKEEPER
    assert {n.role for n in snapshot.nodes} == {Role.BROKER}
    assert {n.version for n in snapshot.nodes} == {ZK_UNDER_TEST} and {n.node_id for n in snapshot.nodes} == {1, 2, 3}
    missing = expected_series(Mode.ZOOKEEPER, ZK_UNDER_TEST, listener=ZK_LISTENER) - present(snapshot)
    assert not missing, f"series the mode defines but the cluster does not serve: {sorted(missing)}"
    for node in snapshot.nodes:
        per_node = expected_series(Mode.ZOOKEEPER, ZK_UNDER_TEST, listener=ZK_LISTENER) - ZK_ONLY_ON_ACTIVE_CONTROLLER
        lacking = per_node - {s.series for s in node.samples}
        assert not lacking, f"{node.node} lacks {sorted(lacking)}"
    assert_sane(snapshot)
    assert health.active_controllers == 1 and health.controller.node is not None
    assert [b.state for b in health.brokers] == [Lifecycle.ACTIVE] * 3
    assert all(b.control_plane_listener is ZK_LISTENER for b in health.brokers)
    assert observation.snapshot.sequence >= 1


@pytest.mark.zookeeper
def test_zookeeper_cluster_without_listener_reports_it_not_configured(zk_watch: Watch) -> None:
    zk_watch.scrape()
    snapshot, health = zk_watch.cluster(ZK_NOLISTENER_NAME)
    assert not {s for s in present(snapshot) if s.startswith("kafka_control_plane_")}
    assert [b.control_plane_listener for b in health.brokers] == [False]
    missing = expected_series(Mode.ZOOKEEPER, ZK_UNDER_TEST, listener=False) - present(snapshot)
    assert not missing, sorted(missing)


@pytest.mark.kraft
def test_kraft_cluster_serves_every_series_its_mode_and_release_define(kraft_cluster: KafkaCluster) -> None:
    watch = Watch(kraft_cluster)
    expected = expected_series(Mode.KRAFT, KRAFT_UNDER_TEST, listener=False)
    watch.until(
        lambda o: all(n.up for n in o.snapshot.nodes()) and o.health.clusters[0].active_controllers == 1,
        90,
        "KRaft nodes read, one active controller",
    )
    # The per-broker gauges the active controller registers when it becomes active (ClusterControlManager
    # .activate, 4.1+) are looked up again at most RESOLVE_SOON_SECONDS after a node last had none: a
    # test that follows a failover (the quorum-loss test) may meet a controller that is active and whose
    # gauges are not read yet, so the series must all be there within a few rounds, not on the first one.
    deadline = time.monotonic() + 30
    while (missing := expected - present(watch.cluster(KRAFT_NAME)[0])) and time.monotonic() < deadline:
        time.sleep(0.5)
        watch.scrape()
    snapshot, health = watch.cluster(KRAFT_NAME)
    assert snapshot.mode is Mode.KRAFT
    roles = {n.node: n.role for n in snapshot.nodes}
    assert roles == {node.name: Role(node.roles[0]) for node in kraft_cluster.nodes}
    assert not missing, sorted(missing)
    assert not {s for s in present(snapshot) if s.startswith("kafka_control_plane_")}
    assert_sane(snapshot)
    active = health.controller
    leaders = {n.value("kafka_raft_current_leader") for n in snapshot.nodes}
    assert leaders == {float(active.node_id)}, "raft current-leader agrees with ActiveControllerCount"  # type: ignore[arg-type]
    assert active.node in {c.name for c in kraft_cluster.controllers()}
    assert {b.node for b in health.brokers} == {b.name for b in kraft_cluster.brokers()}
    assert all(b.metadata_lag_records is not None and b.metadata_lag_records >= 0 for b in health.brokers)
    assert all(b.state is Lifecycle.ACTIVE for b in health.brokers), health.brokers
    # every JVM's collectors, by the names the JVM gives them (the harness runs Kafka with -XX:+UseSerialGC:
    # Copy for the young generation, MarkSweepCompact for the old), summed into the pause time the
    # long_gc_pause cause compares between reads
    for node in snapshot.nodes:
        collectors = {dict(s.labels)["collector"] for s in node.series_samples(GC_SECONDS)}
        assert collectors == {"Copy", "MarkSweepCompact"}, (node.node, collectors)
        assert (pause_seconds(node) or -1.0) >= 0.0, node.node
    watch.close()


def test_a_stalled_broker_is_down_within_the_timeout_and_the_others_keep_updating(
    zk_watch: Watch, zk_cluster: KafkaCluster
) -> None:
    victim = zk_cluster.brokers()[-1]
    victim.pause()
    try:
        observation = zk_watch.until(
            lambda o: not next(n for n in o.snapshot.nodes() if n.node == victim.name).up, 20, "stalled broker down"
        )
        timeout = zk_watch.scraper.timeout_seconds
        assert observation.snapshot.round_duration_seconds < timeout + 1.5, "a stalled node must not stall the round"
        others = [n for n in observation.snapshot.nodes() if n.node != victim.name]
        assert all(n.up for n in others)
        before = {n.node: n.value("kafka_request_handler_idle_ratio") for n in others}
        after = zk_watch.scrape()
        assert after.snapshot.sequence == observation.snapshot.sequence + 1
        assert all(n.up for n in after.snapshot.nodes() if n.node != victim.name), before
    finally:
        victim.resume()
    zk_watch.until(lambda o: all(n.up for n in o.snapshot.nodes()), 30, "stalled broker back after SIGCONT")


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is installed by `make test`")
def test_ctlplane_run_serves_both_real_clusters_on_metrics(
    zk_cluster: KafkaCluster, kraft_cluster: KafkaCluster, tmp_path: Path
) -> None:
    port = free_port()
    config = tmp_path / "ctlplane.yaml"
    document = {
        "clusters": clusters_config((zk_cluster, kraft_cluster)),
        "scrape": {"interval_seconds": 2, "timeout_seconds": 1.5},
        "http": {"port": port},
    }
    config.write_text(yaml.safe_dump(document))
    process = subprocess.Popen(
        [sys.executable, "-m", "ctlplane.cli", "run", "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        wanted = [f'kafka_cluster_active_controllers{{cluster="{c}"}} 1.0' for c in (ZK_NAME, KRAFT_NAME)]
        if quorum_bootstrap(kraft_cluster):  # the quorum's own view too, through the CLI's wiring
            wanted.append(f'ctlplane_quorum_up{{cluster="{KRAFT_NAME}"}} 1.0')
        body = metrics_until(
            f"http://127.0.0.1:{port}",
            wanted,
            process,
            lambda: process.stdout.read().decode(),  # type: ignore[union-attr]
            90,
            "no single active controller per cluster on /metrics",
        )
        text = body.decode()
        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200
        check = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True, check=False)
        assert check.returncode == 0, check.stdout.decode() + check.stderr.decode()
        assert f'kafka_control_plane_request_queue_size{{cluster="{ZK_NAME}"' in text
        assert f'kafka_broker_last_applied_record_offset{{cluster="{KRAFT_NAME}"' in text
    finally:
        process.terminate()
        process.wait(timeout=20)
