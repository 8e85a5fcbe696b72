"""A ZooKeeper-mode cluster at production size (issue #60): a real cluster of the ZooKeeper-mode release under
test whose broker-1 holds 10,000 partitions (1,000 topics of 10, RF 1), its KIP-291 control-plane listener
set, read at once over remote JMX, through each broker's real jmx_exporter javaagent in its default naming
(as Amazon MSK's ZooKeeper-mode clusters serve it; broker-1's page ~10 MB) with the Admin API's view beside
it, and through the Admin API alone: every broker RUNNING and ACTIVE, the one active controller named alike
by every source (the controller ZooKeeper elected, whichever broker that is: the large one or not), its
partition count, and each broker's control-plane and data-plane queues and idle ratios served.

The KRaft cluster at this size, its fault rows, canary and restart answers: test_large_cluster.py (the same
lane of tests/suite.py, one after the other: each broker of 10,000 partitions holds ~10,100 of this machine's
20,000 descriptors a process and ~0.1 of a core)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from ctlplane.exporter.model import NodeSnapshot
from ctlplane.exporter.state import Observation
from harness import localkafka
from harness.localkafka import KafkaCluster, MetricsAgent
from tests.integration import large as large_cluster
from tests.integration.faults import Source, cluster_health, read_of
from tests.kafka_versions import ZK_UNDER_TEST

pytestmark = [pytest.mark.kafka, pytest.mark.zookeeper]

NAME = "large-zookeeper"
TOPICS = 1_000
PARTITIONS_PER_TOPIC = 10
LARGE_PARTITIONS = TOPICS * PARTITIONS_PER_TOPIC
# each broker's own queues and idle ratios, on both planes (KIP-291), as every source serves them
QUEUES = (
    "kafka_control_plane_request_queue_size",
    "kafka_control_plane_network_processor_idle_ratio",
    "kafka_request_queue_size",
    "kafka_request_handler_idle_ratio",
)


@pytest.fixture(scope="module")
def large_zk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KafkaCluster, list[Source]]]:
    cluster = localkafka.start_zk_cluster(
        NAME,
        tmp_path_factory.mktemp(NAME),
        brokers=2,
        version=ZK_UNDER_TEST,
        metrics_agent=MetricsAgent(),
        broker_overrides=localkafka.LARGE_BROKER_OVERRIDES,
        broker_heap_mb=large_cluster.BROKER_HEAP_MB,
    )
    try:
        with large_cluster.watched(
            cluster, "large-zk", TOPICS, [(1,)] * PARTITIONS_PER_TOPIC, LARGE_PARTITIONS
        ) as sources:
            yield cluster, sources
    finally:
        cluster.stop()


def _said(observation: Observation) -> str:
    return large_cluster.said(observation, NAME)


def _own_series(node: NodeSnapshot | None) -> NodeSnapshot:
    """A broker's own series as any source serves them: RUNNING, its queues and idle ratios on both planes."""
    assert node is not None and node.served, node
    assert node.value("kafka_broker_state") == 3.0, node
    missing = [series for series in QUEUES if not node.has(series)]
    assert not missing, (node.node, missing)
    return node


def test_every_broker_and_the_one_controller_are_read_alike_through_every_source(
    large_zk: tuple[KafkaCluster, list[Source]],
) -> None:
    """Every source reads every broker ACTIVE and names the same one active controller; over remote JMX and
    through its page broker-1 serves its own series (RUNNING, leading its 10,000 partitions, its queues on
    both planes), as the other broker does; the controller counts every partition."""
    cluster, sources = large_zk
    jmx, endpoints, admin = sources
    observation = large_cluster.until_healthy(NAME, jmx, sources)
    controller = cluster_health(observation, NAME).controller.node
    for broker in cluster.brokers():
        _own_series(read_of(observation, NAME, broker.name))
    large = _own_series(read_of(observation, NAME, "broker-1"))
    assert large.value("kafka_broker_leader_partitions") == LARGE_PARTITIONS, large
    active = read_of(observation, NAME, controller or "")
    assert active is not None and (active.value("kafka_controller_global_partitions") or 0) >= LARGE_PARTITIONS

    # through the pages: the first of broker-1's may take past the scrape timeout (cold), then every round
    endpoints.watch.until(
        lambda o: (node := read_of(o, NAME, "broker-1")) is not None and node.served, 60, "broker-1's first page read"
    )
    for _ in range(3):  # 45 s at the 15 s round
        observation = large_cluster.until_healthy(NAME, endpoints, sources, timeout=30)
        assert cluster_health(observation, NAME).controller.node == controller, _said(observation)
        for broker in cluster.brokers():
            _own_series(read_of(observation, NAME, broker.name))
        page = _own_series(read_of(observation, NAME, "broker-1"))
        assert page.value("kafka_broker_leader_partitions") == LARGE_PARTITIONS, page
        age = observation.snapshot.taken_at - (page.last_read_at or 0.0)
        assert age <= max(2 * page.scrape_duration_seconds, 60.0), (age, page)
        time.sleep(15)

    observation = large_cluster.until_healthy(NAME, admin, sources)
    assert cluster_health(observation, NAME).controller.node == controller, _said(observation)
