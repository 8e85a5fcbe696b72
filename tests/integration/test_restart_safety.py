"""May this node restart now? (health/restart.py) on real clusters of 3 brokers with a topic of replication
factor 3 at min.insync.replicas 2: KRaft (three controllers) and ZooKeeper mode. Every broker may go; stopped
cleanly, one broker leaves each partition at its minimum, and the others must wait with the partitions as the
reason; back in sync, every broker may go again. On KRaft, a rolling restart of all six nodes driven by
`GET /api/v1/restart`: each goes only when the API says so, while it is down the others wait (a voter of three
is the quorum's last spare), and no partition goes offline and no broker reads as a fault."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from ctlplane.dashboard.timeline import EventKind, rolls, timeline
from ctlplane.exporter.health import Lifecycle
from ctlplane.exporter.health.restart import OFFLINE
from ctlplane.exporter.http.app import create_app
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
        _rolled_by_the_api(cluster, watch)
    finally:
        watch.close()
        cluster.stop()


def _rolled_by_the_api(cluster: KafkaCluster, watch: Watch) -> None:
    """A rolling restart of every broker and controller, one at a time, each when `GET /api/v1/restart` says it
    may go (the exporter's own HTTP app over the rounds): while each is down the others wait (a broker's
    partitions at their minimum; a voter, the quorum's last spare), no partition is ever offline and no broker
    ever reads FENCED or UNREACHABLE, the states that page."""
    http = TestClient(create_app(watch.state.current, interval_seconds=1, version="test"))
    rounds: list[Observation] = []

    def may_go(node: str) -> Callable[[Observation], bool]:
        def answer(observation: Observation) -> bool:
            rounds.append(observation)
            (said,) = http.get("/api/v1/restart", params={"cluster": NAME, "node": node}).json()
            return bool(said["safe"])

        return answer

    def waiting(others: tuple[str, ...], blocker: str) -> Callable[[Observation], bool]:
        def answer(observation: Observation) -> bool:
            rounds.append(observation)
            return _all(observation, (False, blocker), others)

        return answer

    for node, peers, blocker in (
        *((b, tuple(o for o in BROKERS if o != b), "at_min_isr") for b in BROKERS),
        *((c, tuple(o for o in CONTROLLERS if o != c), "quorum_majority") for c in CONTROLLERS),
    ):
        watch.until(may_go(node), 180, f"{node} may restart")
        cluster.node(node).stop()  # SIGTERM: a clean stop, as a roll does
        watch.until(waiting(peers, blocker), 60, f"while {node} is down, {', '.join(peers)} wait ({blocker})")
        cluster.node(node).start()
    everyone = (*BROKERS, *CONTROLLERS)

    def settled(observation: Observation) -> bool:
        rounds.append(observation)
        return _all(observation, (True, None), everyone)

    watch.until(settled, 180, "after the roll, every node may restart again")
    # the dashboard's timeline shows the whole roll as one event, every node in the order it went, the
    # elections the controllers' restarts caused in it, and nothing of any of the six beside it
    events = rolls(timeline(rounds))
    rolled = [e for e in events if e.kind is EventKind.ROLL]
    assert len(rolled) == 1, events
    # (a controller may go while the last broker starts: the API does not hold it for a broker)
    assert rolled[0].detail.startswith(f"{', '.join(everyone)}: 3 brokers and 3 controllers "), events
    assert not [e for e in events if e.node in everyone], events
    for observation in rounds:
        snapshot = next(c for c in observation.snapshot.clusters if c.name == NAME)
        offline = {n.node: n.value(OFFLINE) for n in snapshot.nodes if n.value(OFFLINE)}
        assert not offline, f"partitions offline during the roll: {offline}"
        health = observation.health.cluster(NAME)
        assert health is not None
        paged = [(b.node, b.state) for b in health.brokers if b.state in (Lifecycle.FENCED, Lifecycle.UNREACHABLE)]
        assert not paged, f"a broker read as a fault during the roll: {paged}"


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
