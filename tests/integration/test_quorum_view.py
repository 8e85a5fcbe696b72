"""The metadata quorum's own view (README "The quorum's view"): Kafka's Admin client in ctlplane's JVM asks
a real KRaft cluster's controllers (`bootstrap.controllers`, KIP-919) what `kafka-metadata-quorum.sh
describe --replication` prints, and ctlplane serves it beside the JMX view; an unreachable quorum is an
error value that leaves the JMX view alone."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from ctlplane.localkafka import (
    LOOPBACK,
    KafkaCluster,
    clusters_config,
    describe_quorum_replication,
    free_port,
    major_minor,
    quorum_bootstrap,
)
from ctlplane.netcut import CuttableLink
from exporter.families import quorum_families
from exporter.kafka_admin import QuorumReader
from exporter.model import ClusterSnapshot, QuorumView
from exporter.state import Observation
from tests.integration.watch import Watch, shared_client
from tests.kafka_versions import KRAFT_NAME, KRAFT_UNDER_TEST

pytestmark = [
    pytest.mark.kraft,
    pytest.mark.skipif(
        major_minor(KRAFT_UNDER_TEST) < (3, 7), reason="bootstrap.controllers (KIP-919) needs Kafka 3.7+"
    ),
]


@pytest.fixture
def reader(kraft_cluster: KafkaCluster) -> Iterator[QuorumReader]:
    shared_client()  # the JVM the Admin client runs in
    quorum = QuorumReader(KRAFT_NAME, quorum_bootstrap(kraft_cluster), controllers=True, timeout_seconds=5.0)
    yield quorum
    quorum.close()


def _ms(seconds: float | None) -> int:
    return -1 if seconds is None else round(seconds * 1000)


def test_the_quorum_view_is_what_kafka_metadata_quorum_describe_prints(
    kraft_cluster: KafkaCluster, reader: QuorumReader
) -> None:
    before = reader.read()
    assert before.up, before.error
    rows = {int(row["NodeId"]): row for row in describe_quorum_replication(kraft_cluster)}
    after = reader.read()
    assert after.up, after.error
    assert before.leader_id == after.leader_id, "an election while the test ran"
    assert set(rows) == {r.replica_id for r in before.replicas} == {n.node_id for n in kraft_cluster.nodes}
    status = {r.replica_id: "Observer" if not r.voter else "Follower" for r in before.replicas}
    status[before.leader_id] = "Leader"  # type: ignore[index]
    assert {nid: row["Status"] for nid, row in rows.items()} == status
    # The metadata log only grows (a no-op record every metadata.max.idle.interval.ms): the tool's reading,
    # taken between ctlplane's two, lies between them, replica by replica.
    first, last = ({r.replica_id: r for r in view.replicas} for view in (before, after))
    for nid, row in rows.items():
        assert first[nid].log_end_offset <= int(row["LogEndOffset"]) <= last[nid].log_end_offset, (nid, row)
        for column, field in (("LastFetchTimestamp", "last_fetch_at"), ("LastCaughtUpTimestamp", "last_caught_up_at")):
            low, high = _ms(getattr(first[nid], field)), _ms(getattr(last[nid], field))
            assert low <= int(row[column]) <= high or int(row[column]) == low == -1, (nid, column, row)


def _cluster(o: Observation) -> ClusterSnapshot:
    cluster = o.snapshot.cluster(KRAFT_NAME)
    assert cluster is not None
    return cluster


def test_the_quorum_series_name_every_node_of_the_cluster_beside_its_jmx(
    kraft_cluster: KafkaCluster, reader: QuorumReader
) -> None:
    watch = Watch(kraft_cluster, timeout=6.0, quorum_sources={KRAFT_NAME: reader})
    try:
        observation = watch.until(
            lambda o: (
                _cluster(o).quorum is not None
                and _cluster(o).quorum.up  # type: ignore[union-attr]
                and all(n.up for n in _cluster(o).nodes)
            ),
            60,
            "the quorum and every node answered",
        )
    finally:
        watch.close()
    rows = {
        family.name: {values: value for _, _, values, value in family.rows}
        for family in quorum_families(observation.snapshot)
    }
    replicas = {(node, role) for _, node, role in rows["kafka_quorum_replica_log_end_offset"]}
    expected = {(n.name, "controller" if n.is_controller else "broker") for n in kraft_cluster.nodes}
    assert replicas == expected, "one row per node, named as configured"
    view = _cluster(observation).quorum
    assert view is not None and view.leader_id is not None
    # the quorum's leader is the leader every node's raft client names (raft-metrics current-leader)
    for node in _cluster(observation).nodes:
        assert node.value("kafka_raft_current_leader") == view.leader_id, node.node


def test_a_black_holed_quorum_is_an_error_value_and_the_jmx_view_goes_on(kraft_cluster: KafkaCluster) -> None:
    """Every controller address behind a link that holds bytes (a partition, not a refusal): the Admin call
    gives up at its own deadline, the round says why, and every node's JMX is read as before."""
    links = [CuttableLink((LOOPBACK, node.listeners["CONTROLLER"])) for node in kraft_cluster.controllers()]
    for link in links:
        link.cut()
    shared_client()
    quorum = QuorumReader(
        KRAFT_NAME, [f"{LOOPBACK}:{link.port}" for link in links], controllers=True, timeout_seconds=2.0
    )
    watch = Watch(kraft_cluster, timeout=3.0, quorum_sources={KRAFT_NAME: quorum})
    try:
        snapshot = watch.scrape().snapshot
        view = snapshot.cluster(KRAFT_NAME).quorum  # type: ignore[union-attr]
        assert isinstance(view, QuorumView) and not view.up, view
        # the Admin call's own deadline (2 s here, 80% of the round's in the CLI) ends it within the round
        assert view.error is not None and view.error.startswith(f"bootstrap.controllers {LOOPBACK}:"), view.error
        assert "TimeoutException" in view.error, view.error
        assert all(n.up for n in snapshot.cluster(KRAFT_NAME).nodes)  # type: ignore[union-attr]
        rows = {f.name: f.rows for f in quorum_families(snapshot)}
        assert set(rows) == {"ctlplane_quorum_up"} and rows["ctlplane_quorum_up"][0][3] == 0.0
    finally:
        watch.close()
        quorum.close()
        for link in links:
            link.close()


def test_a_quorum_address_nobody_listens_on_is_a_clear_error(kraft_cluster: KafkaCluster) -> None:
    shared_client()
    quorum = QuorumReader(KRAFT_NAME, [f"{LOOPBACK}:{free_port()}"], controllers=True, timeout_seconds=2.0)
    try:
        view = quorum.read()
    finally:
        quorum.close()
    # Kafka's client retries a refused bootstrap address until its deadline and says only that
    assert view.error is not None and view.error.startswith(f"bootstrap.controllers {LOOPBACK}:"), view
    assert "Timed out waiting for a node assignment. Call: describeMetadataQuorum" in view.error, view


def test_probe_shows_the_quorum_view_beside_each_broker(kraft_cluster: KafkaCluster, tmp_path: Path) -> None:
    config = tmp_path / "ctlplane.yaml"
    config.write_text(yaml.safe_dump({"clusters": clusters_config((kraft_cluster,))}))
    result = subprocess.run(
        [sys.executable, "-m", "ctlplane.cli", "probe", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "quorum's view: leader " in result.stdout, result.stdout
    for broker in kraft_cluster.brokers():
        line = next(line for line in result.stdout.splitlines() if line.strip().startswith(broker.name + " "))
        assert "| quorum: lag " in line and "caught up" in line, line
