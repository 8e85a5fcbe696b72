"""Watch a real cluster through the real exporter path: JPype JMX client -> Scraper -> ExporterState."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping, Sequence

from ctlplane.exporter.catalog import Role
from ctlplane.exporter.config import ScrapeConfig
from ctlplane.exporter.discovery.answers import JmxRule, NodeDiscovery
from ctlplane.exporter.fencing_watch import FencingWatch
from ctlplane.exporter.health import ClusterHealth
from ctlplane.exporter.model import ClusterSnapshot, MBeanQuery
from ctlplane.exporter.scraper import CanarySource, QuorumSource, Scraper, Target
from ctlplane.exporter.sources.admin.client import QuorumReader
from ctlplane.exporter.sources.base import NodeSource
from ctlplane.exporter.sources.endpoint.client import EndpointClient, MetricsEndpoint
from ctlplane.exporter.sources.endpoint.profiles import EndpointNaming
from ctlplane.exporter.sources.jmx.base import Endpoint
from ctlplane.exporter.sources.jmx.jpype_client import JPypeJmxClient, rmi_timeout_seconds
from ctlplane.exporter.sources.routed import Sources
from ctlplane.exporter.state import ExporterState, Observation
from ctlplane.exporter.thresholds import Thresholds
from harness.localkafka import KafkaCluster, KafkaNode, quorum_bootstrap

_CLIENT: JPypeJmxClient | None = None
# A round's budget for a node's read, as a user's config has it unless it says otherwise: a test that reads
# with less fails on a live node whose read is merely slow at load (ci27: a 2 s budget, a loaded machine)
DEFAULT_SCRAPE_TIMEOUT = ScrapeConfig().timeout_seconds


def shared_client() -> JPypeJmxClient:
    """One JPype client (one JVM) for the whole test process, with the RMI timeouts and read deadline `ctlplane
    run` gives a default config (its JVM's timeouts are process-wide: the first client sets them). With
    tighter ones (1 s) a live broker cut off from its controllers, whose JMX answers slowly for a while, read
    as down (ci28: "read abandoned after 6s")."""
    global _CLIENT
    if _CLIENT is None:
        _CLIENT = JPypeJmxClient(
            timeout_seconds=rmi_timeout_seconds(DEFAULT_SCRAPE_TIMEOUT),
            read_deadline_seconds=ScrapeConfig().read_deadline_seconds,
        )
    return _CLIENT


def stop_scraper(scraper: Scraper) -> None:
    """A test's scraper done with: its pool and Admin clients go; the shared JMX client stays open for the
    next test."""
    scraper._pool.shutdown(wait=False, cancel_futures=True)
    for source in scraper.quorum_sources.values():
        source.close()
    for canary in scraper.canaries.values():
        canary.close()


def targets_of(*clusters: KafkaCluster, omit: Collection[str] = ()) -> list[Target]:
    """Every node of `clusters` as ctlplane's config would list it, but those named in `omit`."""
    return [
        Target(
            cluster.name,
            node.name,
            Endpoint("127.0.0.1", node.jmx_port),
            Role.COMBINED if len(node.roles) > 1 else Role(node.roles[0]),
            node.node_id,
        )
        for cluster in clusters
        for node in cluster.nodes
        if node.name not in omit
    ]


PARTITION_COUNT = "kafka.server:type=ReplicaManager,name=PartitionCount"


def until_holding(broker: KafkaNode, partitions: int, timeout: float = 300) -> None:
    """Wait until `broker` holds `partitions` (its ReplicaManager's PartitionCount, over remote JMX): a large
    broker's topics are made in seconds, their replicas some time after."""
    deadline = time.monotonic() + timeout
    endpoint, query = Endpoint("127.0.0.1", broker.jmx_port), MBeanQuery(PARTITION_COUNT, ("Value",))
    while True:
        readings = shared_client().read(endpoint, [query])
        held = readings[0].values["Value"] if readings else -1
        if isinstance(held, float | int) and held >= partitions:
            return
        assert time.monotonic() < deadline, f"{broker.name} holds {held} of {partitions} partitions after {timeout:g}s"
        time.sleep(2)


def endpoint_targets(
    cluster: KafkaCluster, naming: EndpointNaming, urls: Mapping[str, str] | None = None
) -> list[Target]:
    """Every node of `cluster` read through its metrics endpoint (node.metrics_port, or `urls`: node name -> the
    URL of a server beside it), as a user's config with `metrics:` lists it, and its node id (a naming may not
    serve app-info's)."""
    return [
        Target(
            cluster.name,
            node.name,
            MetricsEndpoint(
                urls[node.name] if urls is not None else f"http://127.0.0.1:{node.metrics_port}/metrics", naming
            ),
            Role.COMBINED if len(node.roles) > 1 else Role(node.roles[0]),
            node.node_id,
        )
        for node in cluster.nodes
    ]


class Watch:
    def __init__(
        self,
        *clusters: KafkaCluster,
        timeout: float = DEFAULT_SCRAPE_TIMEOUT,
        thresholds: Thresholds | None = None,
        quorum_sources: Mapping[str, QuorumSource] | None = None,
        omit: Collection[str] = (),
        targets: Sequence[Target] | None = None,
        alone: Collection[str] = (),
        canaries: Mapping[str, CanarySource] | None = None,
        pages: ScrapeConfig | None = None,
    ) -> None:
        """`targets`: these instead of every node's JMX (endpoint_targets), read through the node sources;
        `alone`: clusters watched through their quorum source alone (ClusterSnapshot.admin_only); `canaries`:
        clusters' metadata canaries, closed with the watch; `pages`: the metrics pages' timeout and pace as
        this config has them (scrape.page_timeout_seconds, page_interval_seconds) and the fencing watch
        polling as its fencing_poll_seconds say (`ctlplane run`'s: it starts a paced node's read at once when
        the controller fences it), else a page is given the read deadline and never paced, and no fencing
        watch runs."""
        client: NodeSource = shared_client()
        page_timeout = pages.page_timeout_seconds if pages is not None else ScrapeConfig().read_deadline_seconds
        if targets is not None:
            client = Sources(shared_client, EndpointClient(timeout, page_timeout))
        self.scraper = Scraper(
            targets_of(*clusters, omit=omit) if targets is None else targets,
            client,
            interval_seconds=1.0,
            timeout_seconds=timeout,
            workers=8,
            quorum_sources=quorum_sources,
            admin_only=alone,
            canaries=canaries,
            page_interval_seconds=pages.page_interval_seconds if pages is not None else 0.0,
            page_timeout_seconds=page_timeout if pages is not None else None,
        )
        self.state = ExporterState(self.scraper.latest(), thresholds or Thresholds())
        self.scraper.subscribe(self.state.observe)
        self.fencing: FencingWatch | None = None
        if pages is not None and pages.fencing_poll_seconds > 0:
            scraper = self.scraper
            self.fencing = FencingWatch(
                scraper.latest, lambda: scraper.targets, client, scraper.wake, pages.fencing_poll_seconds
            ).start()

    def scrape(self) -> Observation:
        self.scraper.scrape_once()
        return self.state.current()

    def until(
        self, predicate: Callable[[Observation], bool], timeout: float, what: str, pause: float = 0.5
    ) -> Observation:
        """Scrape until `predicate` holds; fail naming `what` and the last health seen."""
        deadline = time.monotonic() + timeout
        while True:
            observation = self.scrape()
            if predicate(observation):
                return observation
            if time.monotonic() > deadline:
                raise AssertionError(f"not within {timeout:g}s: {what}; last health: {observation.health}")
            time.sleep(pause)

    def cluster(self, name: str) -> tuple[ClusterSnapshot, ClusterHealth]:
        observation = self.state.current()
        snapshot = observation.snapshot.cluster(name)
        health = observation.health.cluster(name)
        assert snapshot is not None and health is not None
        return snapshot, health

    def close(self) -> None:
        if self.fencing is not None:
            self.fencing.stop()
        stop_scraper(self.scraper)


def until_read(
    scraper: Scraper,
    state: ExporterState,
    expected: Mapping[str, tuple[int | None, str, bool]],
    what: str,
    before: Callable[[], None] = lambda: None,
    timeout: float = 60,
) -> None:
    """Rounds (each after `before`) until the nodes read are `expected`: node -> (node id, address, up)."""
    deadline = time.monotonic() + timeout
    while True:
        before()
        scraper.scrape_once()
        read = {n.node: (n.node_id, n.address, n.up) for n in state.current().snapshot.nodes()}
        if read == expected:
            return
        assert time.monotonic() < deadline, f"{what}: {read}"
        time.sleep(0.5)


def discovered_watch(cluster: KafkaCluster, timeout: float = DEFAULT_SCRAPE_TIMEOUT) -> Watch:
    """ctlplane given only the cluster's controllers (`bootstrap_controllers`) and a JMX rule: no node
    listed, every node found from the cluster's answers (docs/configuration.md "Watching your own clusters").
    The rule is `overrides` by node id, since the local nodes' JMX ports are free ports; nodes are named by discovery's
    default, `{role}-{id}` (broker-1, controller-101)."""
    reader = QuorumReader(cluster.name, quorum_bootstrap(cluster), controllers=True, timeout_seconds=timeout)
    watch = Watch(cluster, timeout=timeout, quorum_sources={cluster.name: reader}, omit=[n.name for n in cluster.nodes])
    rule = JmxRule(overrides={n.node_id: f"127.0.0.1:{n.jmx_port}" for n in cluster.nodes})

    def target(name: str, node: str, address: str, role: Role, node_id: int | None) -> Target:
        return Target(name, node, Endpoint("127.0.0.1", int(address.rpartition(":")[2])), role, node_id)

    discovery = NodeDiscovery([], {cluster.name: rule}, target, watch.scraper.set_targets)
    watch.state.subscribe(discovery.observe)
    return watch
