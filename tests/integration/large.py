"""A cluster at production size read through every source at once (issue #60): its topics made, its large
broker holding them all, and three watches of it — remote JMX, each node's real jmx_exporter javaagent in its
default naming with the Admin API's view beside it (the shipped page timeout, pace and fencing watch), and
the Admin API alone. test_large_cluster.py (KRaft) and test_large_zookeeper_cluster.py use it."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence

from ctlplane.exporter.config import ScrapeConfig
from ctlplane.exporter.sources.admin.client import QuorumReader
from ctlplane.exporter.sources.endpoint.profiles import profile
from ctlplane.exporter.state import Observation
from harness import localkafka
from harness.localkafka import KafkaCluster, create_topics
from tests.integration.faults import Source, cluster_health, healthy
from tests.integration.watch import DEFAULT_SCRAPE_TIMEOUT, Watch, endpoint_targets, until_holding

# a broker of 10,000 partitions in 768 MB (the bench gives one 1,536 MB: docs/benchmarks.md "Large brokers")
BROKER_HEAP_MB = 768
JMX_READ = "every node read over remote JMX"
ENDPOINT_READ = (
    f"every node read through jmx_exporter {localkafka.JMX_EXPORTER_VERSION}'s javaagent in its default naming "
    "(the large broker's page ~10 MB), the Admin API's view from the last broker's address, the shipped page "
    "timeout, pace and fencing watch"
)
ADMIN_READ = "read through the Admin API alone (the last broker's address, no node metrics)"


def _view(cluster: KafkaCluster) -> QuorumReader:
    """The Admin API through the last broker, which no row stops."""
    survivor = cluster.brokers()[-1]
    return QuorumReader(cluster.name, [survivor.address], controllers=False, timeout_seconds=DEFAULT_SCRAPE_TIMEOUT)


@contextlib.contextmanager
def watched(
    cluster: KafkaCluster, recorded: str, topics: int, replicas: Sequence[Sequence[int]], partitions: int
) -> Iterator[list[Source]]:
    """`topics` topics of `replicas` made on `cluster`, broker-1 holding `partitions` of them, and the three
    sources (their recordings named `<recorded>-jmx`, `-endpoint-default-naming`, `-admin-alone`), closed
    after."""
    sources: list[Source] = []
    try:
        create_topics(cluster, "large", topics, replicas)
        endpoints = endpoint_targets(cluster, profile("jmx_exporter"))
        quorum = {cluster.name: _view(cluster)}
        sources = [
            Source(Watch(cluster), f"{recorded}-jmx", JMX_READ),
            Source(
                Watch(cluster, targets=endpoints, quorum_sources=quorum, pages=ScrapeConfig()),
                f"{recorded}-endpoint-default-naming",
                ENDPOINT_READ,
            ),
            Source(
                Watch(cluster, targets=[], quorum_sources={cluster.name: _view(cluster)}, alone=[cluster.name]),
                f"{recorded}-admin-alone",
                ADMIN_READ,
                admin=True,
            ),
        ]
        until_holding(cluster.brokers()[0], partitions)
        yield sources
    finally:
        for source in sources:
            source.watch.close()


def said(observation: Observation, name: str) -> str:
    """Cluster `name`'s health in a line: each broker's state and cause, the active controllers, each node's read."""
    health = cluster_health(observation, name)
    cluster = observation.snapshot.cluster(name)
    brokers = ", ".join(f"{b.node} {b.state.value} {b.cause.value if b.cause else ''}".rstrip() for b in health.brokers)
    nodes = (
        ", ".join(f"{n.node} {n.failure or 'read'} {n.error or ''}".rstrip() for n in cluster.nodes) if cluster else ""
    )
    return f"{brokers}; active controllers {health.active_controllers} ({health.controller.node}); {nodes}"


def until_healthy(name: str, source: Source, sources: Sequence[Source], timeout: float = 240) -> Observation:
    """Rounds of `source` until it reads every broker of `name` ACTIVE and one active controller. Failing, it
    says whether Kafka itself fenced a broker (the Admin API alone of `sources`: describeCluster's word), a real
    fencing on a starved machine rather than ctlplane's error: a large broker can starve its neighbours on 2
    cores (an exporter collecting a page for a core's worth of seconds)."""
    deadline = time.monotonic() + timeout
    while not healthy(name)(seen := source.watch.scrape()):
        if time.monotonic() > deadline:
            kafka = next(s for s in sources if s.admin).watch.scrape()
            raise AssertionError(
                f"not healthy through {source.recorded} within {timeout:g}s: {said(seen, name)}; "
                f"by Kafka's own word (describeCluster): {said(kafka, name)}"
            )
        time.sleep(1.0)
    return seen
