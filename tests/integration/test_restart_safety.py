"""May this node restart now? (health/restart.py) on real clusters of 3 brokers with a topic of replication
factor 3 at min.insync.replicas 2: KRaft (three controllers) and ZooKeeper mode. Every broker may go; stopped
cleanly, one broker leaves each partition at its minimum, and the others must wait with the partitions as the
reason; back in sync, every broker may go again. Of the KRaft quorum's three voters each may go while the other
two are caught up; one stopped, the other two must wait."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctlplane.exporter.state import Observation
from harness.localkafka import KafkaCluster, create_topic, start_kraft_cluster, start_zk_cluster
from tests.integration.watch import Watch
from tests.kafka_versions import KRAFT_UNDER_TEST, ZK_UNDER_TEST

pytestmark = [pytest.mark.kafka]

NAME = "restart-safety"
BROKERS = ("broker-1", "broker-2", "broker-3")
CONTROLLERS = ("controller-1", "controller-2", "controller-3")


def _answers(observation: Observation) -> dict[str, tuple[bool, str | None]]:
    health = observation.health.cluster(NAME)
    return {} if health is None else {r.node: (r.safe, r.blocker) for r in health.restart}


def _all(observation: Observation, answer: tuple[bool, str | None], nodes: tuple[str, ...] = BROKERS) -> bool:
    answers = _answers(observation)
    return all(answers.get(node) == answer for node in nodes)


def _one_broker_stopped_and_back(cluster: KafkaCluster, watch: Watch) -> None:
    """broker-3 stopped cleanly: its replicas leave every ISR at once, each partition at its minimum; the other
    brokers wait, naming the partitions; broker-3 back in sync, every broker may go again."""
    create_topic(cluster, "orders", [[1, 2, 3], [2, 3, 1], [3, 1, 2]])
    watch.until(lambda o: _all(o, (True, None)), 60, "every broker safe to restart")
    victim = cluster.node("broker-3")
    victim.stop()  # SIGTERM: a clean stop
    stopped = watch.until(
        lambda o: _all(o, (False, "at_min_isr"), ("broker-1", "broker-2")),
        60,
        "the other brokers wait: every partition at min.insync.replicas",
    )
    assert _answers(stopped)["broker-3"] == (False, "not_active")
    health = stopped.health.cluster(NAME)
    assert health is not None
    reason = next(r.reason for r in health.restart if r.node == "broker-1")
    assert reason.startswith("3 partition(s) at min.insync.replicas"), reason
    victim.start()
    watch.until(lambda o: _all(o, (True, None)), 120, "back in sync: every broker safe again")


@pytest.mark.kraft
def test_a_broker_may_restart_only_while_every_partition_keeps_a_replica_to_spare(tmp_path: Path) -> None:
    # on the controller too: a topic created on KRaft 4.3.1 takes min.insync.replicas from the controllers'
    # config, not the brokers' (TopicCommand --describe shows it as the topic's own config)
    overrides = {node: {"min.insync.replicas": "2"} for node in (*BROKERS, *CONTROLLERS)}
    cluster = start_kraft_cluster(
        NAME, tmp_path, controllers=3, brokers=3, version=KRAFT_UNDER_TEST, node_overrides=overrides
    )
    watch = Watch(cluster)
    try:
        _one_broker_stopped_and_back(cluster, watch)
        _one_voter_stopped_and_back(cluster, watch)
    finally:
        watch.close()
        cluster.stop()


def _one_voter_stopped_and_back(cluster: KafkaCluster, watch: Watch) -> None:
    """Three voters, every one may go (two caught up keep the majority); a follower stopped, each of the other
    two is the majority's last spare: both wait; the follower back and caught up, every voter may go again."""
    watch.until(lambda o: _all(o, (True, None), CONTROLLERS), 60, "every voter safe to restart")
    health = watch.scrape().health.cluster(NAME)
    assert health is not None and health.controller.node in CONTROLLERS
    follower = next(name for name in CONTROLLERS if name != health.controller.node)
    others = tuple(name for name in CONTROLLERS if name != follower)
    cluster.node(follower).stop()
    watch.until(lambda o: _all(o, (False, "quorum_majority"), others), 60, "the other voters wait: no spare voter left")
    cluster.node(follower).start()
    watch.until(lambda o: _all(o, (True, None), CONTROLLERS), 120, "caught up again: every voter safe")


@pytest.mark.zookeeper
def test_zookeeper_mode_a_broker_may_restart_only_while_every_partition_keeps_a_replica_to_spare(
    tmp_path: Path,
) -> None:
    """The same on ZooKeeper mode: the brokers' own At/UnderMinIsrPartitionCount and the controller's
    OfflinePartitionsCount are the evidence in both modes; no quorum of voters to keep."""
    overrides = {node: {"min.insync.replicas": "2"} for node in BROKERS}
    cluster = start_zk_cluster(NAME, tmp_path, brokers=3, version=ZK_UNDER_TEST, node_overrides=overrides)
    watch = Watch(cluster)
    try:
        _one_broker_stopped_and_back(cluster, watch)
    finally:
        watch.close()
        cluster.stop()
