"""The fault table on each source beyond remote JMX (issue #45): a real KRaft cluster whose nodes serve their
MBeans only through the jmx_exporter javaagent. In Strimzi's rules it is read through those endpoints alone and,
on the same clock, through the Admin API alone (one surviving broker's address, no node read); in the default
naming, through the endpoints and the quorum's view from one broker's address, as docs/sources.md configures MSK.

The rows, each recorded per source and replayed through the shipped rules by promtool (the Strimzi-named
cluster all three, the default-named one the first two). The faults of a row fall on distinct nodes of one
cluster at once, so one cluster carries them all (each fault alone on a cluster of its own cost its start-up
and ~2.5 min of the suite's 20):
1. SIGSTOP of a broker and SIGTERM of another leading partitions, 0.5 s after a round;
2. kill -9 of the active controller and of a third broker;
3. the quorum's majority frozen while a broker restarts: no leader, the broker held in start-up.

What a source cannot tell is said per row (docs/sources.md "The fault table on each source").
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from ctlplane.exporter.config.file import parse_settings
from ctlplane.exporter.families import quorum_families
from ctlplane.exporter.health import Cause, Lifecycle
from ctlplane.exporter.sources.admin.client import QuorumReader
from ctlplane.exporter.sources.endpoint.client import EndpointClient
from ctlplane.exporter.sources.endpoint.profiles import PROFILES_DIR, EndpointNaming, profile
from ctlplane.exporter.sources.routed import Sources
from ctlplane.wiring import build_discovery, build_dns_watch, build_scraper, build_state
from harness import localkafka
from harness.localkafka import KafkaCluster, MetricsAgent, create_topic, delete_topic
from tests.dnsserver import loopback_dns
from tests.integration.faults import (
    CauseAt,
    Expectation,
    SideBySide,
    Source,
    cluster_health,
    healthy,
    offline_partitions,
    pages_then_resolves,
    replay,
    restart_with_the_quorum_frozen,
)
from tests.integration.watch import (
    DEFAULT_SCRAPE_TIMEOUT,
    Watch,
    endpoint_targets,
    shared_client,
    stop_scraper,
    until_read,
)
from tests.kafka_versions import KRAFT_UNDER_TEST

pytestmark = [pytest.mark.kafka, pytest.mark.kraft]


def _start(tmp_path_factory: pytest.TempPathFactory, name: str, agent: MetricsAgent) -> Iterator[KafkaCluster]:
    cluster = localkafka.start_kraft_cluster(
        name,
        tmp_path_factory.mktemp(name),
        controllers=3,
        brokers=4,
        version=KRAFT_UNDER_TEST,
        metrics_agent=agent,
        # a broker that cannot register within initial.broker.registration.timeout.ms (60 s by default,
        # KRaftConfigs) exits: the quorum row holds one in start-up longer than that on purpose
        broker_overrides={"initial.broker.registration.timeout.ms": "300000"},
    )
    try:
        yield cluster
    finally:
        cluster.stop()


def _survivors_view(cluster: KafkaCluster) -> QuorumReader:
    """The Admin API through the one broker no row stops (broker-4)."""
    survivor = cluster.brokers()[-1]
    return QuorumReader(cluster.name, [survivor.address], controllers=False, timeout_seconds=DEFAULT_SCRAPE_TIMEOUT)


def _endpoints(cluster: KafkaCluster, naming: EndpointNaming, *, quorum: bool = False) -> Watch:
    """Every node through its endpoint; `quorum`: with the quorum's view beside them, from one broker's address."""
    sources = {cluster.name: _survivors_view(cluster)} if quorum else None
    return Watch(cluster, targets=endpoint_targets(cluster, naming), quorum_sources=sources)


def _admin_alone(cluster: KafkaCluster) -> Watch:
    return Watch(cluster, targets=[], quorum_sources={cluster.name: _survivors_view(cluster)}, alone=[cluster.name])


def _until_healthy(cluster: KafkaCluster, sources: list[Source]) -> None:
    for source in sources:
        seen = source.watch.until(healthy(cluster.name), 180, f"{cluster.name} healthy through {source.recorded}")
        if source.admin:
            # no node read, and none of the quorum's members counted as a node left unwatched
            alone = seen.snapshot.cluster(cluster.name)
            assert alone is not None and alone.nodes == () and alone.admin_only
            assert not [f for f in quorum_families(seen.snapshot) if f.name == "kafka_cluster_node_unwatched"]


def _brokers_row(cluster: KafkaCluster, sources: list[Source], tmp_path: Path) -> None:
    """SIGSTOP of broker-2 and SIGTERM of broker-3 (leading all 4 partitions of a topic it shares with broker-4)
    0.5 s after a round; 90 s later broker-2 resumed and broker-3 restarted. Through the endpoints: broker-2
    FENCED hung_or_isolated (its endpoint takes the connection and never answers), paged; broker-3 SHUTDOWN
    controlled_shutdown (4.1+ counts it: ControlledShutdownBrokerCount on the controllers' endpoints), no page.
    Through the Admin API alone both are fenced in describeCluster (KIP-1073) with nothing to say why: FENCED
    no_node_metrics, and both page.

    Not with a crash at the same time: a crashed broker and a stopped one are both gone and fenced, and one
    controlled shutdown counted cannot say which of the two it was, so both page (a crash must:
    health/lifecycle.py controlled_shutdown_evidence). The crash is the next row's."""
    _, hung, stopped, survivor = cluster.brokers()
    topic = "ctlplane-source-led"
    _until_healthy(cluster, sources)
    create_topic(cluster, topic, [[stopped.node_id, survivor.node_id]] * 4)
    try:
        reader = next(s for s in sources if not s.admin).watch
        reader.until(lambda o: healthy(cluster.name)(o) and offline_partitions(o, cluster.name) == 0, 60, "online")
        rounds = SideBySide(cluster, sources)
        rounds.round()
        rounds.sleep_into_round(0.5)
        hung.pause()
        try:
            stopped.stop()  # SIGTERM: a controlled shutdown, over within seconds
            rounds.rounds(6)  # 90 s: `for: 1m` has fired
        finally:
            hung.resume()
        faulted_until = rounds.last
        stopped.start()
        rounds.until([hung.name, stopped.name], Lifecycle.ACTIVE, 12)
        for source, timeline in rounds.pairs:
            fenced = [hung, stopped] if source.admin else [hung]
            for victim in fenced:
                states = timeline.states(victim.name)[1 : faulted_until + 1]
                assert states[0] in (Lifecycle.FENCED, Lifecycle.UNREACHABLE), timeline.evidence(victim.name)
                assert set(states[1:]) == {Lifecycle.FENCED}, (source.recorded, timeline.evidence(victim.name))
            causes = {hung: Cause.HUNG_OR_ISOLATED, stopped: Cause.CONTROLLED_SHUTDOWN}
            if source.admin:
                causes = dict.fromkeys(causes, Cause.NO_NODE_METRICS)
            else:
                shut = timeline.states(stopped.name)[1 : faulted_until + 1]
                assert set(shut) == {Lifecycle.SHUTDOWN}, timeline.evidence(stopped.name)
            for victim, cause in causes.items():
                gone = (Lifecycle.FENCED, Lifecycle.UNREACHABLE, Lifecycle.SHUTDOWN)
                timeline.expect_causes(victim.name, {cause}, *gone, until=faulted_until)
            pages = frozenset(("KafkaBrokerFenced", v.name) for v in fenced)
            replay(
                timeline,
                f"{source.recorded}-broker-hung-another-stopped",
                [
                    *pages_then_resolves(faulted_until, rounds.last, pages),
                    *(CauseAt(victim.name, faulted_until, cause) for victim, cause in causes.items()),
                ],
                f"{source.read_through}; 0.5 s after a round SIGSTOP of {hung.name} and SIGTERM of {stopped.name} "
                "(leading 4 partitions); after 90 s resumed and restarted",
                tmp_path,
            )
    finally:
        if not stopped.is_running:
            stopped.start()
        _until_healthy(cluster, sources)
        delete_topic(cluster, topic)


def _controller_row(cluster: KafkaCluster, sources: list[Source], tmp_path: Path) -> None:
    """kill -9 of the active controller and of broker-1, 0.5 s after a round, both restarted after 90 s. The
    other voters elect a leader within the election timeout, so through every source the identity moves
    exactly once and no round has two active controllers; the new leader fences broker-1 once the session it
    gave it on taking over times out: FENCED, process_gone through the endpoints (no_node_metrics through the
    Admin API alone), and KafkaBrokerFenced is the one page. The quorum has no spare voter while the old
    controller is down (KafkaQuorumNoSpareVoter warns, and resolves)."""
    _until_healthy(cluster, sources)
    first = sources[0].watch.scrape()
    old = cluster.node(cluster_health(first, cluster.name).controller.node)  # type: ignore[arg-type]  # healthy: named
    killed = cluster.brokers()[0]
    rounds = SideBySide(cluster, sources)
    rounds.round()
    rounds.sleep_into_round(0.5)
    old.kill()
    killed.kill()
    try:
        rounds.rounds(6)  # 90 s: `for: 1m` has fired for the broker, and would have for no active controller
    finally:
        old.start()
        killed.start()
    faulted_until = rounds.last
    rounds.until([killed.name], Lifecycle.ACTIVE, 12)
    for _ in range(8):
        if all(healthy(cluster.name)(t.observations[-1]) for _, t in rounds.pairs):
            break
        rounds.round()
    rounds.round()  # the old controller back as a follower
    for source, timeline in rounds.pairs:
        controllers = [cluster_health(o, cluster.name).controller for o in timeline.observations]
        assert all(cluster_health(o, cluster.name).active_controllers <= 1 for o in timeline.observations)
        identities = [c.node for c in controllers if c.node is not None]
        changes = sum(1 for a, b in itertools.pairwise(identities) if a != b)
        assert changes == 1 and identities[-1] != old.name, (source.recorded, identities)
        assert controllers[-1].failovers_total == controllers[0].failovers_total + 1, (source.recorded, controllers)
        crashed = timeline.states(killed.name)[1 : faulted_until + 1]
        # The endpoints see the process gone at once. The Admin API alone says only what the quorum says, and
        # the new leader starts every broker's session afresh when it takes over (QuorumController.claim ->
        # ClusterControlManager.activate -> BrokerHeartbeatManager.register -> touch: lastContactNs = now), so
        # the dead broker stays unfenced for the election plus broker.session.timeout.ms (9 s) after it: the
        # round 14.5 s after the kill may still read it ACTIVE on a loaded machine, never a later one.
        first = (
            (Lifecycle.ACTIVE, Lifecycle.FENCED, Lifecycle.UNREACHABLE)
            if source.admin
            else (
                Lifecycle.FENCED,
                Lifecycle.UNREACHABLE,
            )
        )
        assert crashed[0] in first, (source.recorded, timeline.evidence(killed.name)[1])
        assert set(crashed[1:]) == {Lifecycle.FENCED}, (source.recorded, timeline.evidence(killed.name)[1:])
        cause = Cause.NO_NODE_METRICS if source.admin else Cause.PROCESS_GONE
        timeline.expect_causes(killed.name, {cause}, Lifecycle.FENCED, Lifecycle.UNREACHABLE, until=faulted_until)
        replay(
            timeline,
            f"{source.recorded}-kill-active-controller-and-a-broker",
            [
                *pages_then_resolves(faulted_until, rounds.last, frozenset({("KafkaBrokerFenced", killed.name)})),
                CauseAt(killed.name, faulted_until, cause),
                Expectation("warning", rounds.last, frozenset({("KafkaQuorumNoSpareVoter", "")}), ever=True),
                Expectation("warning", rounds.last, frozenset()),
            ],
            f"{source.read_through}; kill -9 of the active controller {old.name} and of {killed.name} 0.5 s after "
            "a round, both restarted after 90 s",
            tmp_path,
        )


def _quorum_row(cluster: KafkaCluster, sources: list[Source], tmp_path: Path) -> None:
    """2 of 3 controllers frozen (SIGSTOP) for 90 s while broker-2 is killed and restarted at once: no leader,
    so no metadata change commits and the restarted broker cannot finish starting. Through the endpoints it is
    INITIAL (BrokerState STARTING), never paged as fenced, and KafkaNoActiveController pages (no controller
    says ActiveControllerCount 1). Through the Admin API alone the cluster falls silent (no broker can forward
    describeMetadataQuorum to a leader, and they mostly stop answering describeCluster): every broker
    UNREACHABLE as last named, never FENCED, and nothing pages within the 90 s."""
    _until_healthy(cluster, sources)
    victim = cluster.brokers()[1]
    rounds = SideBySide(cluster, sources)
    rounds.round()
    with restart_with_the_quorum_frozen(cluster, victim):
        rounds.rounds(6)  # 90 s: any FENCED reading would page by now (`for: 1m`)
    held_until = rounds.last
    rounds.until([victim.name], Lifecycle.ACTIVE, 12)
    for source, timeline in rounds.pairs:
        held = timeline.states(victim.name)[1 : held_until + 1]
        if source.admin:
            # the brokers mostly stop answering too (describeCluster "Timed out waiting for a node assignment"
            # beside describeMetadataQuorum's timeout, seen on 4.3.1): a silent cluster, UNREACHABLE as last
            # named, which KafkaBrokerUnreachable pages only after its 3 m
            assert Lifecycle.FENCED not in held and Lifecycle.UNREACHABLE in held, timeline.evidence(victim.name)
            expectations = [Expectation("critical", rounds.last, frozenset(), ever=True)]
        else:
            answered = [state for state in held if state is not Lifecycle.UNREACHABLE]  # the JVM's first seconds
            assert len(answered) >= 4 and set(answered) == {Lifecycle.INITIAL}, timeline.evidence(victim.name)
            timeline.expect_causes(victim.name, {Cause.STARTING}, Lifecycle.INITIAL)
            expectations = [
                Expectation("critical", held_until, frozenset({("KafkaNoActiveController", "")})),
                Expectation("critical", rounds.last, frozenset(), ever=True, node=victim.name),
                Expectation("critical", rounds.last, frozenset()),
            ]
        replay(
            timeline,
            f"{source.recorded}-quorum-frozen-restart-held",
            expectations,
            f"{source.read_through}; 2 of 3 controllers frozen for 90 s while {victim.name} is killed and restarted",
            tmp_path,
        )


STRIMZI_READ = "every node read through its jmx_exporter endpoint alone, in Strimzi's example rules"
ADMIN_READ = "read through the Admin API alone (one broker's address, no node metrics)"
DEFAULT_READ = (
    f"every node read through jmx_exporter {localkafka.JMX_EXPORTER_VERSION}'s javaagent in its default naming, "
    "the quorum's view from one broker's address"
)


@pytest.fixture(scope="module")
def strimzi_named(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KafkaCluster, list[Source]]]:
    """Strimzi's example rules on every node's javaagent (as its :9404), read through them and, beside them,
    through the Admin API alone."""
    agent = MetricsAgent((PROFILES_DIR / "strimzi.yaml").read_text())
    for cluster in _start(tmp_path_factory, "source-strimzi", agent):
        sources = [
            Source(_endpoints(cluster, profile("strimzi")), "endpoint-strimzi-naming", STRIMZI_READ),
            Source(_admin_alone(cluster), "admin-alone", ADMIN_READ, admin=True),
        ]
        try:
            yield cluster, sources
        finally:
            for source in sources:
                source.watch.close()


@pytest.fixture(scope="module")
def default_named(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KafkaCluster, list[Source]]]:
    """jmx_exporter's default naming on every node (as Amazon MSK's :11001), read through it with the quorum's
    view from one broker's address, as docs/sources.md configures MSK: the naming drops raft current-state (a
    String), so the endpoints alone cannot say which controllers are in step with the quorum (its spare voters)."""
    for cluster in _start(tmp_path_factory, "source-default", MetricsAgent()):
        watch = _endpoints(cluster, profile("jmx_exporter"), quorum=True)
        source = Source(watch, "endpoint-default-naming", DEFAULT_READ)
        try:
            yield cluster, [source]
        finally:
            source.watch.close()


class TestStrimziRulesAndTheAdminApiAlone:
    def test_a_broker_hung_and_another_stopped(
        self, strimzi_named: tuple[KafkaCluster, list[Source]], tmp_path: Path
    ) -> None:
        _brokers_row(*strimzi_named, tmp_path)

    def test_the_active_controller_and_a_broker_killed(
        self, strimzi_named: tuple[KafkaCluster, list[Source]], tmp_path: Path
    ) -> None:
        _controller_row(*strimzi_named, tmp_path)

    def test_the_quorum_frozen_while_a_broker_restarts(
        self, strimzi_named: tuple[KafkaCluster, list[Source]], tmp_path: Path
    ) -> None:
        _quorum_row(*strimzi_named, tmp_path)


class TestDefaultNaming:
    """The broker and controller rows; the quorum row's one reading that differs by naming (BrokerState
    STARTING) is read the same as through Strimzi's rules (test_endpoint_source.py compares every series)."""

    def test_a_broker_hung_and_another_stopped(
        self, default_named: tuple[KafkaCluster, list[Source]], tmp_path: Path
    ) -> None:
        _brokers_row(*default_named, tmp_path)

    def test_the_active_controller_and_a_broker_killed(
        self, default_named: tuple[KafkaCluster, list[Source]], tmp_path: Path
    ) -> None:
        _controller_row(*default_named, tmp_path)

    def test_srv_records_find_every_node_at_its_metrics_port(
        self, default_named: tuple[KafkaCluster, list[Source]]
    ) -> None:
        """A headless Service's SRV records for the pods' metrics port (named `metrics`: a target per pod) beside
        one broker's address: every node found once, under its pod's name, and read at the address and port its
        records give, through its endpoint (`metrics:`)."""
        cluster, _ = default_named
        service = "source-default-kafka-pods.kafka.svc.cluster.local."
        srv = f"_metrics._tcp.{service}"
        with loopback_dns() as dns:
            dns.records[(srv, "SRV")] = [f"0 50 {n.metrics_port} {n.name}.{service}" for n in cluster.nodes]
            for node in cluster.nodes:
                dns.records[(f"{node.name}.{service}", "A")] = ["127.0.0.1"]
            settings = parse_settings(
                {
                    "clusters": [
                        {
                            "name": cluster.name,
                            "bootstrap_servers": [cluster.brokers()[-1].address],
                            "discovery": {"dns": [{"name": srv}], "dns_nameservers": [dns.address]},
                            "metrics": {"naming": "jmx_exporter"},
                        }
                    ],
                    # the product's timeout: a jmx_exporter agent's page took over 2 s on a loaded fresh-clone
                    # run (each round here waits for its reads, so a quiet run is no slower)
                    "scrape": {"interval_seconds": DEFAULT_SCRAPE_TIMEOUT, "timeout_seconds": DEFAULT_SCRAPE_TIMEOUT},
                }
            )
            scraper = build_scraper(settings, Sources(shared_client, EndpointClient(DEFAULT_SCRAPE_TIMEOUT)))
            state = build_state(settings, scraper)
            names = build_dns_watch(settings, build_discovery(settings, scraper, state))
            everyone = {n.name: (n.node_id, f"http://127.0.0.1:{n.metrics_port}/metrics", True) for n in cluster.nodes}
            try:
                # each round after the names are resolved, as the watch's thread does on its interval
                until_read(scraper, state, everyone, "every node found once, read at its endpoint", names.refresh)
                assert healthy(cluster.name)(state.current())
            finally:
                stop_scraper(scraper)
