"""Discovery on a real KRaft cluster (issue #33): ctlplane given one address (the controllers'
`bootstrap.controllers`) and a JMX address rule watches every node with its id and role, a broker started
later is watched and ACTIVE within a round or two, and its crash is FENCED exactly as a listed broker's.

The cluster's nodes take their JMX ports from their ids (one loopback host, a port per node, as a
docker-compose setup has them), so the rule is `127.0.0.1:{id+BASE}`: brokers seen through the controllers
are quorum observers, named by id with no host."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ctlplane.exporter.catalog import Mode, Role
from ctlplane.exporter.config import Settings
from ctlplane.exporter.config.file import parse_settings
from ctlplane.exporter.discovery.answers import NodeDiscovery
from ctlplane.exporter.families import quorum_families
from ctlplane.exporter.health import Lifecycle
from ctlplane.exporter.scraper import Scraper
from ctlplane.exporter.state import ExporterState, Observation
from ctlplane.exporter.thresholds import Thresholds
from ctlplane.probe import format_watch_list
from ctlplane.wiring import build_discovery, build_dns_watch, build_scraper
from harness.localkafka import (
    KRAFT_VERSION,
    ZK_VERSION,
    KafkaCluster,
    create_topic,
    delete_topic,
    quorum_bootstrap,
    start_kraft_cluster,
    start_zk_cluster,
    unregister_broker,
)
from harness.localkafka.process import free_port_base
from tests.dnsserver import loopback_dns
from tests.integration.faults import (
    cluster_health,
    healthy,
)
from tests.integration.watch import Watch, shared_client, stop_scraper

NAME = "discovered"
ZK_NAME = "discovered-zk"
LATE = "broker-3"  # started once ctlplane watches the others


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KafkaCluster, int]]:
    base = free_port_base([1, 2, 3, 101])
    workdir: Path = tmp_path_factory.mktemp("discovery")
    started = start_kraft_cluster(
        NAME, workdir, version=KRAFT_VERSION, controllers=1, brokers=3, jmx_port_base=base, held=[LATE]
    )
    try:
        yield started, base
    finally:
        started.stop()


class Rounds:
    def __init__(self, scraper: Scraper) -> None:
        self.scraper = scraper
        self.state = ExporterState(scraper.latest(), Thresholds())
        scraper.subscribe(self.state.observe)

    def until(self, check: Callable[[Observation], bool], timeout: float, what: str) -> Observation:
        deadline = time.monotonic() + timeout
        while True:
            self.scraper.scrape_once()
            observation = self.state.current()
            if check(observation):
                return observation
            if time.monotonic() > deadline:
                said = [(b.node, b.state.value, b.evidence) for c in observation.health.clusters for b in c.brokers]
                raise AssertionError(f"not within {timeout:g}s: {what}; last: {said}; {observation.snapshot}")
            time.sleep(0.5)


def _nodes(o: Observation) -> dict[str, tuple[int | None, Role, bool]]:
    return {n.node: (n.node_id, n.role, n.up) for n in o.snapshot.nodes()}


def _state(o: Observation, node: str, cluster: str = NAME) -> Lifecycle | None:
    health = o.health.cluster(cluster)
    broker = None if health is None else health.broker(node)
    return None if broker is None else broker.state


def test_one_address_and_a_jmx_rule_watch_every_node_and_a_broker_added_later(
    cluster: tuple[KafkaCluster, int],
) -> None:
    kafka, base = cluster
    rule = f"127.0.0.1:{{id+{base}}}"
    settings = parse_settings(
        {
            "clusters": [
                {
                    "name": NAME,
                    "bootstrap_controllers": quorum_bootstrap(kafka),
                    "discovery": {"broker_jmx": rule, "controller_jmx": rule},
                }
            ],
            "scrape": {"interval_seconds": 2, "timeout_seconds": 2},
        }
    )
    scraper = build_scraper(settings, shared_client())
    rounds = Rounds(scraper)
    discovery = build_discovery(settings, scraper, rounds.state)
    try:
        everyone = {
            "controller-101": (101, Role.CONTROLLER, True),
            "broker-1": (1, Role.BROKER, True),
            "broker-2": (2, Role.BROKER, True),
        }
        found = rounds.until(lambda o: _nodes(o) == everyone, 60, f"every running node watched: {everyone}")
        assert not [f for f in quorum_families(found.snapshot) if f.name == "kafka_cluster_node_unwatched"]
        # `ctlplane probe --discover`: each node with its id, JMX address (the rule's) and where it came from
        listing = format_watch_list(scraper.targets, found, discovery).splitlines()
        for node, (node_id, role, _) in everyone.items():
            row = next(line for line in listing if f" {node} " in line)
            assert row.split()[2:5] == [role.value, str(node_id), f"127.0.0.1:{base + node_id}"], row
            assert row.endswith("discovered (the cluster's answers)"), row

        late = kafka.node(LATE)
        late.start()
        late.wait_ready(120)
        # ACTIVE can come from the controller's word a round before the new broker's own JMX answers: wait
        # for both (a loaded CI machine showed the gap)
        added = rounds.until(
            lambda o: _state(o, "broker-3") is Lifecycle.ACTIVE and _nodes(o).get("broker-3", (0, 0, False))[2],
            90,
            "the broker started later watched, read and ACTIVE",
        )
        assert _nodes(added)["broker-3"] == (3, Role.BROKER, True)

        late.kill()
        fenced = rounds.until(lambda o: _state(o, "broker-3") is Lifecycle.FENCED, 60, "the killed broker FENCED")
        assert _state(fenced, "broker-3") is not Lifecycle.SHUTDOWN
        for _ in range(3):  # it stays watched and fenced, round after round
            scraper.scrape_once()
            assert _state(rounds.state.current(), "broker-3") is Lifecycle.FENCED
    finally:
        stop_scraper(scraper)


def _forgotten(discovery: NodeDiscovery) -> dict[tuple[str, ...], float]:
    return {
        row[2]: row[3]
        for family in discovery.families()
        for row in family.rows
        if row[0] == "ctlplane_discovery_forgotten_nodes_total"
    }


def _never_pages(o: Observation, node: str, cluster: str) -> None:
    """What a page reads: the broker never FENCED (KafkaBrokerFenced), no fenced broker without a name."""
    health = o.health.cluster(cluster)
    assert health is not None
    broker = health.broker(node)
    assert broker is None or broker.state is not Lifecycle.FENCED, f"{node} read FENCED: {broker}"
    assert not health.fenced_unnamed, f"a fenced broker without a name: {health.fenced_unnamed}"


def _leaves_cleanly(
    settings: Settings, cluster: str, node: str, stop: Callable[[], None], departed: Callable[[], None]
) -> None:
    """`node` watched and ACTIVE; `stop` it (a controlled shutdown), `departed` (what tells the cluster it is
    gone for good): it leaves the watched set, counted, and no round reads anything that pages."""
    scraper = build_scraper(settings, shared_client())
    rounds = Rounds(scraper)
    discovery = build_discovery(settings, scraper, rounds.state)
    try:
        # ACTIVE, and on KRaft 4.1+ in the controller's own word: its dropping that gauge is what proves the
        # unregistration where only the controllers are asked
        def active(o: Observation) -> bool:
            health = o.health.cluster(cluster)
            broker = None if health is None else health.broker(node)
            if broker is None or broker.state is not Lifecycle.ACTIVE:
                return False
            return cluster != NAME or "BrokerRegistrationState=30" in broker.evidence

        rounds.until(active, 90, f"{node} watched and ACTIVE")
        # the rounds go on while the broker stops, as ctlplane's do beside an operator's `kafka-server-stop`
        stopping = threading.Thread(target=stop, name=f"stop {node}")
        stopping.start()
        rounds.until(lambda o: _state(o, node, cluster) is Lifecycle.SHUTDOWN, 60, f"{node} SHUTDOWN")
        stopping.join(60)
        departed()

        def left(o: Observation) -> bool:
            _never_pages(o, node, cluster)
            return node not in {n.node for n in o.snapshot.nodes()}

        rounds.until(left, 120, f"{node} no longer watched")
        assert _forgotten(discovery) == {(cluster, reason): 1.0 for reason in [_REASON[cluster]]}
        for _ in range(2):  # and it stays away: nothing names it, nothing pages
            scraper.scrape_once()
            _never_pages(rounds.state.current(), node, cluster)
            assert node not in {n.node for n in rounds.state.current().snapshot.nodes()}
    finally:
        stop_scraper(scraper)


_REASON = {NAME: "unregistered", ZK_NAME: "clean_shutdown"}
FORGET_AFTER = 6  # seconds the evidence must hold (300 by default): rounds here are ~2 s


@pytest.mark.parametrize("asked", ["bootstrap_servers", "bootstrap_controllers"])
def test_a_discovered_broker_shut_down_and_unregistered_leaves_the_watched_set_and_pages_nothing(
    cluster: tuple[KafkaCluster, int], asked: str
) -> None:
    """KRaft, a broker unregistered (`kafka-cluster.sh unregister`) after a clean stop. Through the brokers
    (4.0+), describeCluster with includeFencedBrokers lists every registered broker, so one missing from it
    was unregistered; through the controllers alone, the controller's JVM dropped the broker's
    BrokerRegistrationState gauge (4.1+), which it does only for an unregistration (exporter/discovery/departures.py).

    The broker leads a partition when it stops, as a broker in service does: the controller then marks its
    controlled shutdown (ControlledShutdownBrokerCount), which is what tells a clean stop from a crash when
    it happens between two rounds (an empty broker stops within one, and reads as a crash: it pages)."""
    kafka, base = cluster
    late = kafka.node(LATE)
    if not late.is_running:
        late.start()
        late.wait_ready(120)
    create_topic(kafka, "led-by-the-leaving-broker", [[late.node_id, 1]])
    rule = f"127.0.0.1:{{id+{base}}}"
    settings = parse_settings(
        {
            "clusters": [
                {
                    "name": NAME,
                    asked: [kafka.node("broker-1").address]
                    if asked == "bootstrap_servers"
                    else quorum_bootstrap(kafka),
                    "discovery": {"broker_jmx": rule, "controller_jmx": rule, "forget_after_seconds": FORGET_AFTER},
                }
            ],
            "scrape": {"interval_seconds": 2, "timeout_seconds": 2},
        }
    )
    try:
        _leaves_cleanly(settings, NAME, LATE, late.stop, lambda: unregister_broker(kafka, late.node_id))
    finally:
        delete_topic(kafka, "led-by-the-leaving-broker")


@pytest.fixture(scope="module")
def discovered_zk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KafkaCluster, int]]:
    base = free_port_base([1, 2])
    workdir: Path = tmp_path_factory.mktemp("discovery-zk")
    started = start_zk_cluster(
        ZK_NAME, workdir, version=ZK_VERSION, brokers=2, control_plane_listener=False, jmx_port_base=base
    )
    try:
        yield started, base
    finally:
        started.stop()


def test_zookeeper_mode_brokers_are_found_from_describe_cluster_and_one_that_vanishes_from_it_stays_watched(
    discovered_zk: tuple[KafkaCluster, int],
) -> None:
    """ZooKeeper mode: the brokers through `bootstrap_servers` (describeCluster, with their hosts: the rule
    uses `{host}`). A killed broker's ZooKeeper session expires and describeCluster stops naming it: it is
    the node that must stay watched, and it does, FENCED, until it is back ACTIVE."""
    kafka, base = discovered_zk
    settings = parse_settings(
        {
            "clusters": [
                {
                    "name": ZK_NAME,
                    "bootstrap_servers": [kafka.brokers()[0].address],
                    "discovery": {"broker_jmx": f"{{host}}:{{id+{base}}}"},
                }
            ],
            "scrape": {"interval_seconds": 2, "timeout_seconds": 2},
        }
    )
    scraper = build_scraper(settings, shared_client())
    rounds = Rounds(scraper)
    build_discovery(settings, scraper, rounds.state)
    try:
        both = {"broker-1": (1, Role.BROKER, True), "broker-2": (2, Role.BROKER, True)}
        found = rounds.until(
            lambda o: (
                _nodes(o) == both and (h := o.health.cluster(ZK_NAME)) is not None and h.controller.node is not None
            ),
            90,
            "both brokers watched, a controller known",
        )
        health = found.health.cluster(ZK_NAME)
        assert health is not None
        victim = kafka.node("broker-2" if health.controller.node == "broker-1" else "broker-1")
        victim.kill()

        def vanished_and_fenced(o: Observation) -> bool:
            cluster = o.snapshot.cluster(ZK_NAME)
            named = {m.node_id for m in cluster.quorum.members} if cluster and cluster.quorum else set()
            return victim.node_id not in named and _state(o, victim.name, ZK_NAME) is Lifecycle.FENCED

        rounds.until(vanished_and_fenced, 90, "the killed broker gone from describeCluster, still FENCED")
        for _ in range(3):  # round after round: still read (down), still FENCED, never dropped
            scraper.scrape_once()
            now = rounds.state.current()
            assert victim.name in {n.node for n in now.snapshot.nodes()}, "dropped when it vanished from the answer"
            assert _state(now, victim.name, ZK_NAME) is Lifecycle.FENCED
        victim.start()
        rounds.until(lambda o: _state(o, victim.name, ZK_NAME) is Lifecycle.ACTIVE, 120, "back ACTIVE")
    finally:
        stop_scraper(scraper)


def test_the_srv_records_of_a_headless_service_watch_every_broker_and_a_crashed_one_they_drop_stays(
    discovered_zk: tuple[KafkaCluster, int],
) -> None:
    """Kubernetes' form (docs/kubernetes.md "Kubernetes"): SRV records `_jmx._tcp.<service>` with a target per pod,
    answered by a DNS server on loopback that the test edits as the pods come and go. Kafka's own answers
    (bootstrap_servers) name the same brokers: each is read once, under its pod's name."""
    kafka, base = discovered_zk
    service = "kafka-brokers.kafka.svc.cluster.local."
    srv = f"_jmx._tcp.{service}"
    with loopback_dns() as dns:

        def publish(*brokers: str) -> None:
            dns.records[(srv, "SRV")] = [f"0 50 {base + kafka.node(b).node_id} {b}.{service}" for b in brokers]
            for b in brokers:
                dns.records[(f"{b}.{service}", "A")] = ["127.0.0.1"]

        publish("broker-1", "broker-2")
        settings = parse_settings(
            {
                "clusters": [
                    {
                        "name": ZK_NAME,
                        "bootstrap_servers": [kafka.brokers()[0].address],
                        "discovery": {"dns": [{"name": srv}], "dns_nameservers": [dns.address]},
                    }
                ],
                "scrape": {"interval_seconds": 2, "timeout_seconds": 2},
            }
        )
        scraper = build_scraper(settings, shared_client())
        rounds = Rounds(scraper)
        discovery = build_discovery(settings, scraper, rounds.state)
        names = build_dns_watch(settings, discovery)

        def resolved_round(check: Callable[[Observation], bool], what: str) -> Observation:
            def after_dns(o: Observation) -> bool:
                names.refresh()  # as the watch's thread does on its interval
                return check(o)

            return rounds.until(after_dns, 90, what)

        try:
            both = {"broker-1": (1, Role.BROKER, True), "broker-2": (2, Role.BROKER, True)}
            found = resolved_round(lambda o: _nodes(o) == both, "both pods watched once each, ids read")
            listing = format_watch_list(scraper.targets, found, discovery)
            assert listing.count("discovered (DNS)") == 2, listing
            assert not [f for f in quorum_families(found.snapshot) if f.name == "kafka_cluster_node_unwatched"]

            victim = kafka.node("broker-2")
            victim.kill()
            publish("broker-1")  # the crashed pod left the Service's endpoints

            def expired_and_fenced(o: Observation) -> bool:
                # its ZooKeeper session expired (describeCluster no longer names it): the restart below can
                # register again (a broker whose old session still holds /brokers/ids/N refuses to start)
                cluster = o.snapshot.cluster(ZK_NAME)
                named = {m.node_id for m in cluster.quorum.members} if cluster and cluster.quorum else {2}
                return 2 not in named and _state(o, "broker-2", ZK_NAME) is Lifecycle.FENCED

            resolved_round(expired_and_fenced, "the crashed pod's session expired, FENCED")
            for _ in range(3):  # still watched, still FENCED: a record gone is no evidence it left
                names.refresh()
                scraper.scrape_once()
                assert _state(rounds.state.current(), "broker-2", ZK_NAME) is Lifecycle.FENCED
            victim.start()
            publish("broker-1", "broker-2")
            resolved_round(lambda o: _state(o, "broker-2", ZK_NAME) is Lifecycle.ACTIVE, "back ACTIVE")
        finally:
            stop_scraper(scraper)


def test_a_zookeeper_mode_broker_shut_down_cleanly_leaves_the_watched_set_after_the_delay(
    discovered_zk: tuple[KafkaCluster, int],
) -> None:
    """ZooKeeper mode: a broker seen through its controlled shutdown, then gone from describeCluster for
    forget_after_seconds, is forgotten (counted `clean_shutdown`); a crashed one never is (the test above)."""
    kafka, base = discovered_zk
    settings = parse_settings(
        {
            "clusters": [
                {
                    "name": ZK_NAME,
                    "bootstrap_servers": [kafka.brokers()[0].address],
                    "discovery": {"broker_jmx": f"{{host}}:{{id+{base}}}", "forget_after_seconds": FORGET_AFTER},
                }
            ],
            "scrape": {"interval_seconds": 2, "timeout_seconds": 2},
        }
    )
    # not the controller: its own request would be counted by itself, gone with it, so nothing but a round
    # that catches its BrokerState could say it stopped cleanly
    looking = Watch(kafka, timeout=2.0)
    try:
        controller = cluster_health(looking.until(healthy(ZK_NAME), 60, "healthy"), ZK_NAME).controller.node
    finally:
        looking.close()
    leaving = next(b for b in reversed(kafka.brokers()) if b.name != controller)
    staying = next(b for b in kafka.brokers() if b is not leaving)
    # leading a partition, its controlled shutdown hands leadership over first (BrokerState
    # PENDING_CONTROLLED_SHUTDOWN, and a ControlledShutdown request the controller counts): the evidence an
    # operator's stop of a broker in service leaves
    create_topic(kafka, "led-by-the-leaving-broker", [[leaving.node_id, staying.node_id]])
    try:
        _leaves_cleanly(settings, ZK_NAME, leaving.name, leaving.stop, lambda: None)
    finally:
        leaving.start()  # the module's cluster as it was: its tests may run in any order
        leaving.wait_ready(120)
        delete_topic(kafka, "led-by-the-leaving-broker")


def test_a_listed_node_that_answers_as_another_clusters_node_is_unknown_to_its_cluster(
    cluster: tuple[KafkaCluster, int], discovered_zk: tuple[KafkaCluster, int]
) -> None:
    """The converse of unwatched: the ZooKeeper-mode cluster's config also lists the KRaft cluster's
    controller (a copy-paste between cluster blocks). It answers JMX as node 101, which the ZooKeeper-mode
    cluster's describeCluster never names: `kafka_cluster_node_unknown` for it, and for no other node."""
    kraft, _ = cluster
    zk, _ = discovered_zk
    settings = parse_settings(
        {
            "clusters": [
                {
                    "name": ZK_NAME,
                    "bootstrap_servers": [zk.brokers()[0].address],
                    "nodes": [
                        *({"address": f"127.0.0.1:{b.jmx_port}", "name": b.name} for b in zk.brokers()),
                        {"address": f"127.0.0.1:{kraft.controllers()[0].jmx_port}", "name": "pasted"},
                    ],
                }
            ],
            "scrape": {"interval_seconds": 2, "timeout_seconds": 2},
        }
    )
    scraper = build_scraper(settings, shared_client())
    rounds = Rounds(scraper)
    build_discovery(settings, scraper, rounds.state)
    try:

        def unknown(o: Observation) -> list[tuple[str, ...]]:
            families = quorum_families(o.snapshot)
            return [row[2] for f in families if f.name == "kafka_cluster_node_unknown" for row in f.rows]

        read = rounds.until(lambda o: all(n.up for n in o.snapshot.nodes()) and bool(unknown(o)), 60, "unknown")
        assert unknown(read) == [(ZK_NAME, "pasted", "controller")]
    finally:
        stop_scraper(scraper)


ALONE = "admin-alone"  # the same clusters given as a bootstrap address alone: no node read (health/admin.py)


def _alone(address: str) -> Rounds:
    settings = parse_settings(
        {
            "clusters": [{"name": ALONE, "bootstrap_servers": [address]}],
            "scrape": {"interval_seconds": 2, "timeout_seconds": 2},
        }
    )
    return Rounds(build_scraper(settings, shared_client()))


def _alone_states(o: Observation) -> dict[str, Lifecycle]:
    health = o.health.cluster(ALONE)
    return {} if health is None else {b.node: b.state for b in health.brokers}


def test_zookeeper_mode_the_admin_api_alone_names_the_controller_and_a_broker_that_deregisters(
    discovered_zk: tuple[KafkaCluster, int],
) -> None:
    """ZooKeeper mode given one broker's address alone: describeCluster's brokers are those registered and
    its controller the active one (ZkCachedControllerId); a killed broker's session expires, describeCluster
    stops naming it, and it is FENCED (not forgotten) until it registers again."""
    kafka, _ = discovered_zk
    rounds = _alone(kafka.brokers()[0].address)
    try:

        def healthy(o: Observation) -> bool:
            health = o.health.cluster(ALONE)
            both = {b.name: Lifecycle.ACTIVE for b in kafka.brokers()}
            return health is not None and health.controller.node is not None and _alone_states(o) == both

        seen = rounds.until(healthy, 60, "both brokers ACTIVE, a controller named")
        health = seen.health.cluster(ALONE)
        assert health is not None and health.mode is Mode.ZOOKEEPER and health.active_controllers == 1
        victim = next(b for b in kafka.brokers() if b.name != health.controller.node)
        victim.kill()
        try:
            fenced = rounds.until(lambda o: _alone_states(o).get(victim.name) is Lifecycle.FENCED, 90, "FENCED")
            after = fenced.health.cluster(ALONE)
            broker = after.broker(victim.name) if after is not None else None
            assert broker is not None and "no longer registered" in broker.evidence, broker
        finally:
            victim.start()
        rounds.until(lambda o: _alone_states(o).get(victim.name) is Lifecycle.ACTIVE, 120, "back ACTIVE")
    finally:
        stop_scraper(rounds.scraper)
