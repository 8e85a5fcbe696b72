"""Nodes read only through their Prometheus endpoints: the real jmx_exporter javaagent on every node of a real
KRaft cluster, in jmx_exporter's default naming (as Amazon MSK serves it) and in Strimzi's example rules, and
the real Strimzi Metrics Reporter (no JMX at all) with the allowlist Strimzi's operator gives it.

What each naming serves is read beside what the same nodes' remote JMX says, and a broker's crash is read
through the Strimzi Metrics Reporter alone and through a ZooKeeper-mode cluster's endpoints alone: fenced, its
cause named, paged by the shipped rules (replayed by promtool). The other rows on each source, on KRaft, are
test_source_fault_table.py's.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from ctlplane.exporter.catalog import Mode, Role
from ctlplane.exporter.config import ScrapeConfig
from ctlplane.exporter.config.file import parse_settings
from ctlplane.exporter.health import Cause, Lifecycle
from ctlplane.exporter.model import Failure, NodeSnapshot, RawReading
from ctlplane.exporter.readings import plan_queries
from ctlplane.exporter.sources.base import ReadError
from ctlplane.exporter.sources.endpoint.client import EndpointClient, MetricsEndpoint
from ctlplane.exporter.sources.endpoint.profiles import PROFILES_DIR, EndpointNaming, profile
from ctlplane.exporter.sources.routed import Sources
from ctlplane.exporter.state import Observation
from ctlplane.wiring import build_discovery, build_scraper, build_state
from harness import localkafka
from harness.localkafka import KafkaCluster, KafkaNode, MetricsAgent, MetricsReporter, MetricsServer, free_port
from harness.localkafka.standalone import start_standalone_exporters, stop_standalone_exporters
from harness.tlsproxy import TlsProxy
from tests.integration.faults import (
    Timeline,
    pages_then_resolves,
    replay,
    rounds_until_active,
)
from tests.integration.large_page import LargePage
from tests.integration.watch import (
    DEFAULT_SCRAPE_TIMEOUT,
    Watch,
    endpoint_targets,
    shared_client,
    stop_scraper,
    until_read,
)
from tests.kafka_versions import KRAFT_UNDER_TEST, ZK_UNDER_TEST
from tools.docs import unserved_series

pytestmark = [pytest.mark.kafka]

_UNREAD = NodeSnapshot("", "", "", Role.UNKNOWN, None, None, None, False, 0.0, "not read", 0, 0.0)

# What no naming serves without a rule for it: a String attribute (jmx_exporter drops them, "Ignoring
# unsupported bean"): raft current-state and app-info's Version. Strimzi's rules serve current-state as a label.
DEFAULT_NAMING_LACKS = {"kafka_raft_state"}
# Strimzi's rules leave out RequestMetrics (its own comment: "numerous"), app-info and every java.lang MBean
# (the javaagent's JVM series stand in for the JVM's start time and collectors: profiles.AGENT_ALIASES), and
# serve the request handlers' idle Meter as its MeanRate (the average since the broker started), not the
# one-minute rate ctlplane reads
STRIMZI_LACKS = {
    "kafka_request_handler_idle_ratio",
    "kafka_node_info",
    "kafka_request_queue_time_seconds",
    "kafka_request_total_time_seconds",
    "kafka_requests_total",
    "kafka_controller_event_queue_time_seconds",
    "kafka_controller_event_queue_processing_time_seconds",
}
# Confluent's rules exclude every kafka.server:type=* MBean (raft-metrics, broker-metadata-metrics) and
# app-info, and serve the histograms' Count and percentiles but not their Mean
CONFLUENT_LACKS = {
    "kafka_node_info",
    *(f"kafka_raft_{name}" for name in ("state", "current_leader", "current_epoch", "high_watermark")),
    *(f"kafka_raft_{name}" for name in ("log_end_offset", "commit_latency_seconds", "voters", "observers")),
    "kafka_raft_uncommitted_voter_change",
    "kafka_broker_last_applied_record_offset",
    "kafka_broker_last_applied_record_timestamp_seconds",
    "kafka_broker_last_applied_record_lag_seconds",
    "kafka_broker_metadata_load_errors_total",
    "kafka_broker_metadata_apply_errors_total",
    "kafka_broker_ignored_static_voters",
    "kafka_controller_event_queue_time_seconds",
    "kafka_controller_event_queue_processing_time_seconds",
    "kafka_request_queue_time_seconds",
    "kafka_request_total_time_seconds",
}
# The Strimzi Metrics Reporter under Strimzi's operator's default allowlist: what the manual's evidence table
# says it leaves out (the allowlist; a Meter's rates; app-info, an MBean not a metric), held to the real reporter
STRIMZI_REPORTER_LACKS = set(unserved_series("strimzi_reporter"))
# Aiven's names: the Strings dropped (raft current-state; app-info, whose id key no name carries), and the JVM's
# start time and collectors (not in Aiven's list; its agent is not jmx_exporter's, whose JVM series it lacks)
AIVEN_LACKS = {
    "kafka_raft_state",
    "kafka_node_info",
    "kafka_node_start_time_seconds",
    "kafka_jvm_gc_collection_seconds_total",
}
# The judgement each String a naming may drop leaves unknown (health/unknown.py)
UNKNOWN_WITHOUT = {
    Mode.KRAFT: {"kafka_raft_state": "quorum_spare_voters"},
    Mode.ZOOKEEPER: {"kafka_zookeeper_session_state": "zookeeper_sessions"},
}
# Values that do not move between two reads a moment apart on a quiet cluster
STEADY = (
    "kafka_broker_state",
    "kafka_controller_active",
    "kafka_raft_current_leader",
    "kafka_raft_current_epoch",
    "kafka_controller_broker_registration_state",
    "kafka_metadata_current_controller_id",
    "kafka_raft_state",
)


def _cluster(workdir: Path, name: str, brokers: int, agent: MetricsServer) -> Iterator[KafkaCluster]:
    cluster = localkafka.start_kraft_cluster(
        name, workdir, controllers=1, brokers=brokers, version=KRAFT_UNDER_TEST, metrics_agent=agent
    )
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def msk_like(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    """1 controller + 2 brokers, each serving jmx_exporter's default naming (no rules), as MSK's :11001."""
    yield from _cluster(tmp_path_factory.mktemp("msk"), "endpoint-msk", 2, MetricsAgent())


# The release a public scrape of Amazon MSK's :11001 shows (`jmx_exporter_build_info{version="0.12.0"}`,
# DataDog/integrations-core amazon_msk/tests/fixtures/jmx_metrics.txt): simpleclient's text, every type untyped
MSK_AGENT_VERSION = "0.12.0"


@pytest.fixture
def msk_012_like(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    """1 controller + 1 broker, each serving jmx_exporter 0.12.0's default naming, the release MSK runs."""
    agent = MetricsAgent(version=MSK_AGENT_VERSION)
    yield from _cluster(tmp_path_factory.mktemp("msk012"), "endpoint-msk-012", 1, agent)


# the clusters of one test each stop with it; the MSK-like ones serve two each
@pytest.fixture(scope="module")
def zookeeper_msk_like(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    """A ZooKeeper-mode cluster (MSK ran ZooKeeper mode until 3.9) of 2 brokers with the KIP-291 listener,
    each serving jmx_exporter's default naming."""
    cluster = localkafka.start_zk_cluster(
        "endpoint-zk", tmp_path_factory.mktemp("zk"), brokers=2, version=ZK_UNDER_TEST, metrics_agent=MetricsAgent()
    )
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def confluent_like(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    """1 controller + 1 broker, each serving Confluent's jmx-monitoring-stacks broker rules (rules/confluent.yaml)."""
    rules = (PROFILES_DIR / "confluent.yaml").read_text().replace("startDelaySeconds: 120", "startDelaySeconds: 0")
    yield from _cluster(tmp_path_factory.mktemp("confluent"), "endpoint-confluent", 1, MetricsAgent(rules))


@pytest.fixture
def strimzi_like(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    """1 controller + 1 broker, each serving Strimzi's example rules (rules/strimzi.yaml), as its :9404."""
    rules = (PROFILES_DIR / "strimzi.yaml").read_text()
    yield from _cluster(tmp_path_factory.mktemp("strimzi"), "endpoint-strimzi", 1, MetricsAgent(rules))


@pytest.fixture
def aiven_like(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    """1 controller + 1 broker, each serving Aiven's names through jmx_exporter (rules/aiven.yaml)."""
    rules = (PROFILES_DIR / "aiven.yaml").read_text()
    yield from _cluster(tmp_path_factory.mktemp("aiven"), "endpoint-aiven", 1, MetricsAgent(rules))


@pytest.fixture
def strimzi_reporter_like(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    """1 controller + 1 broker, each serving its metrics through the Strimzi Metrics Reporter with Strimzi's
    operator's default allowlist, as a Kafka resource with `metricsConfig: type: strimziMetricsReporter`."""
    yield from _cluster(tmp_path_factory.mktemp("reporter"), "endpoint-reporter", 1, MetricsReporter())


def _healthy(cluster: KafkaCluster) -> Callable[[Observation], bool]:
    def check(o: Observation) -> bool:
        health = o.health.cluster(cluster.name)
        snapshot = o.snapshot.cluster(cluster.name)
        return (
            health is not None
            and snapshot is not None
            and all(node.up for node in snapshot.nodes)
            and health.controller.node is not None
            and all(b.state is Lifecycle.ACTIVE for b in health.brokers)
        )

    return check


def _series(o: Observation, cluster: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    snapshot = o.snapshot.cluster(cluster)
    assert snapshot is not None
    table: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for node in snapshot.nodes:
        for sample in node.samples:
            table.setdefault(sample.series, {})[(("node", node.node), *sample.labels)] = sample.value
    return table


def _compare(
    cluster: KafkaCluster,
    naming: EndpointNaming,
    lacks: set[str],
    mode: Mode = Mode.KRAFT,
    urls: Mapping[str, str] | None = None,
) -> None:
    """The endpoints (each node's own, or `urls`) read beside the same nodes' JMX: the same identities and
    health, every series the JMX read has but those `lacks` names, and the same steady values."""
    jmx = Watch(cluster)
    endpoints = Watch(cluster, targets=endpoint_targets(cluster, naming, urls))
    try:
        by_endpoint = endpoints.until(_healthy(cluster), 90, "every node read, every broker ACTIVE")
        by_jmx = jmx.until(_healthy(cluster), 60, "every node read by JMX")
        read = by_endpoint.snapshot.cluster(cluster.name)
        assert read is not None
        for node in read.nodes:
            expected = cluster.node(node.node)
            assert node.mode is mode, node
            assert node.role is (Role.BROKER if expected.is_broker else Role.CONTROLLER), node
            assert node.node_id == expected.node_id, node
            assert node.address.startswith("http://127.0.0.1:"), node.address
            assert urls is None or node.address == urls[node.node], node.address
        health_e, health_j = by_endpoint.health.cluster(cluster.name), by_jmx.health.cluster(cluster.name)
        assert health_e is not None and health_j is not None
        assert health_e.controller.node == health_j.controller.node
        # what the naming lacks leaves its judgement unknown, said with what it lacks (health/unknown.py)
        unknown = {reading for series, reading in UNKNOWN_WITHOUT[mode].items() if series in lacks}
        assert {u.reading for u in health_e.unknown} == unknown
        assert health_j.unknown == ()
        # Kafka registers a RequestsPerSec MBean for a request and version when the first such request
        # arrives: one may appear between the two reads. Read both again, a moment apart, until what each has
        # is the same but what the naming lacks (a few tries)
        for attempt in range(5):
            series_e, series_j = _series(by_endpoint, cluster.name), _series(by_jmx, cluster.name)
            missing, extra = set(series_j) - set(series_e), set(series_e) - set(series_j)
            if (missing == lacks & set(series_j) and not extra) or attempt == 4:
                break
            by_endpoint, by_jmx = endpoints.scrape(), jmx.scrape()
        assert missing == lacks & set(series_j), f"not read through the endpoints: {sorted(missing)}"
        assert not extra, sorted(extra)
        for name in STEADY:
            if name in series_e:
                assert series_e[name] == series_j[name], (name, series_e[name], series_j[name])
    finally:
        jmx.close()
        endpoints.close()


@pytest.mark.kraft
def test_default_naming_reads_what_remote_jmx_reads_but_the_strings(msk_like: KafkaCluster) -> None:
    _compare(msk_like, profile("jmx_exporter"), DEFAULT_NAMING_LACKS)


@pytest.mark.kraft
def test_jmx_exporters_standalone_server_reads_the_same_and_a_scrape_it_could_not_make_is_the_nodes_error(
    msk_like: KafkaCluster, tmp_path: Path
) -> None:
    """jmx_exporter's standalone server (jmx_prometheus_httpserver) beside each node, reading it over remote JMX
    in the default naming: the same as the javaagent's but the collectors' time. It serves no JVM series (those
    would be its own JVM's), and the default naming writes each collector's name into the series name
    (`java_lang_G1_Young_Generation_CollectionTime`), which ctlplane does not map back: the javaagent's own
    jvm_gc_collection_seconds stand in for it there. One whose node does not answer JMX answers 200 with none
    of its MBeans: that node's one-line error, never a node read with nothing in it."""
    reads = {node.name: node.jmx_port for node in msk_like.nodes}
    reads["nobody"] = free_port()  # no JMX listens there
    servers = start_standalone_exporters(reads, tmp_path)
    try:
        urls = {name: server.url for name, server in servers.items()}
        lacks = DEFAULT_NAMING_LACKS | {"kafka_jvm_gc_collection_seconds_total"}
        _compare(msk_like, profile("jmx_exporter"), lacks, urls=urls)
        client = EndpointClient(DEFAULT_SCRAPE_TIMEOUT)
        try:
            with pytest.raises(ReadError) as error:
                client.read(MetricsEndpoint(urls["nobody"], profile("jmx_exporter")), plan_queries())
        finally:
            client.close()
        said = f"{urls['nobody']}: the exporter served none of the node's MBeans (jmx_scrape_error "
        assert str(error.value).startswith(said), str(error.value)
    finally:
        stop_standalone_exporters(servers)


@pytest.mark.kraft
def test_default_naming_of_the_release_msk_runs_reads_the_same(msk_012_like: KafkaCluster) -> None:
    """jmx_exporter 0.12.0 (simpleclient, 2019): the same names as 1.x for everything ctlplane reads (none ends
    in a suffix 1.x reserves), untyped, without 1.x's `_objectname` label."""
    _compare(msk_012_like, profile("jmx_exporter"), DEFAULT_NAMING_LACKS)


@pytest.mark.zookeeper
def test_default_naming_on_zookeeper_mode_reads_what_remote_jmx_reads_but_the_session_state(
    zookeeper_msk_like: KafkaCluster,
) -> None:
    _compare(zookeeper_msk_like, profile("jmx_exporter"), {"kafka_zookeeper_session_state"}, Mode.ZOOKEEPER)


@pytest.mark.kraft
def test_strimzi_rules_read_what_remote_jmx_reads_but_request_metrics(strimzi_like: KafkaCluster) -> None:
    _compare(strimzi_like, profile("strimzi"), STRIMZI_LACKS)


@pytest.mark.kraft
def test_confluent_rules_read_what_remote_jmx_reads_but_the_excluded_mbeans(confluent_like: KafkaCluster) -> None:
    """No raft-metrics at all: the nodes are still known as KRaft nodes (their metadata loader's series)."""
    _compare(confluent_like, profile("confluent"), CONFLUENT_LACKS)


@pytest.mark.kraft
def test_strimzi_metrics_reporter_reads_what_remote_jmx_reads_but_what_its_allowlist_leaves_out(
    strimzi_reporter_like: KafkaCluster, tmp_path: Path
) -> None:
    """No JMX in the path at all: Kafka's own registries, as the reporter names them. Then the crash row read
    through the reporter alone: the controller's registration gauges (kafka_controller_kafkacontroller.*, in
    the operator's allowlist) say the broker is fenced; KafkaBrokerFenced pages and resolves."""
    _compare(strimzi_reporter_like, profile("strimzi_reporter"), STRIMZI_REPORTER_LACKS)
    watch = Watch(strimzi_reporter_like, targets=endpoint_targets(strimzi_reporter_like, profile("strimzi_reporter")))
    try:
        watch.until(_healthy(strimzi_reporter_like), 90, "every node read, every broker ACTIVE")
        read_through = (
            f"every node read through the Strimzi Metrics Reporter {localkafka.METRICS_REPORTER_VERSION} alone, "
            "with Strimzi's operator's default allowlist"
        )
        _crash_row(strimzi_reporter_like, watch, "endpoint-strimzi-reporter-kill-broker", read_through, tmp_path)
    finally:
        watch.close()


@pytest.mark.kraft
def test_an_endpoint_served_over_tls_with_basic_auth_is_read_and_refusals_are_one_line(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """jmx_exporter 1.x's own HTTPS and basic authentication (`httpServer.ssl`, `httpServer.authentication`),
    as a secured MSK-like or Strimzi pod serves it: read with the CA and the password; a wrong password and an
    untrusted certificate are each the node's one-line error."""
    workdir = tmp_path_factory.mktemp("secured")
    pki = localkafka.make_local_pki(workdir / "pki", ("server",))
    store = localkafka.pkcs12_keystore(pki, "server", "changeit")
    config = (
        "httpServer:\n"
        "  authentication:\n    basic:\n      username: prometheus\n      password: s3cret\n"
        f"  ssl:\n    keyStore:\n      filename: {store}\n      password: changeit\n"
        "    certificate:\n      alias: server\n"
    )
    cluster = localkafka.start_kraft_cluster(
        "endpoint-secured",
        workdir,
        controllers=1,
        brokers=1,
        version=KRAFT_UNDER_TEST,
        metrics_agent=MetricsAgent(config),
    )
    # the product's timeouts: the agent's first page over TLS took more than 5 s on a loaded CI host
    client = EndpointClient(DEFAULT_SCRAPE_TIMEOUT, ScrapeConfig().page_timeout_seconds)
    try:
        broker = cluster.brokers()[0]
        url = f"https://127.0.0.1:{broker.metrics_port}/metrics"
        naming = profile("jmx_exporter")
        queries = plan_queries()
        read = client.read(MetricsEndpoint(url, naming, "prometheus", "s3cret", str(pki.ca)), queries)
        states = [r.values for r in read if r.object_name == "kafka.server:type=KafkaServer,name=BrokerState"]
        assert states == [{"Value": 3.0}], states
        with pytest.raises(ReadError) as refused:
            client.read(MetricsEndpoint(url, naming, "prometheus", "wrong", str(pki.ca)), queries)
        assert str(refused.value) == f"{url}: HTTP 401 (credentials refused)" and refused.value.failure is Failure.AUTH
        with pytest.raises(ReadError) as untrusted:
            client.read(MetricsEndpoint(url, naming, "prometheus", "s3cret"), queries)  # the system's trust store
        assert "CERTIFICATE_VERIFY_FAILED" in str(untrusted.value) and "\n" not in str(untrusted.value)
    finally:
        client.close()
        cluster.stop()


def _replace(path: Path, source: Path) -> None:
    """`path` made a copy of `source` by a rename, as a Secret's files are swapped (a new inode)."""
    staged = path.with_name(path.name + ".new")
    staged.write_bytes(source.read_bytes())
    staged.replace(path)


@pytest.mark.kraft
def test_an_endpoint_behind_a_proxy_asking_a_client_certificate_and_a_token_is_read_and_rotated_without_a_restart(
    msk_like: KafkaCluster, tmp_path: Path
) -> None:
    """A broker's agent behind nginx as kube-rbac-proxy or an ingress fronts a pod: a client certificate of the
    proxy's CA (one allowed by its fingerprint) and a bearer token. Each refusal is the node's one line; then the
    proxy allows only a renewed certificate and a new token, both files are replaced under the same names, and
    the same client's next read uses them (a client kept its first certificate before: 403)."""
    pki = localkafka.make_local_pki(tmp_path / "pki", ("proxy", "client-a", "client-b"), rogue=True)
    broker = msk_like.brokers()[0]
    proxy = TlsProxy(tmp_path / "proxy", f"127.0.0.1:{broker.metrics_port}", pki, "proxy")
    cert, key, token = tmp_path / "client.pem", tmp_path / "client.key", tmp_path / "token"
    _replace(cert, pki.cert("client-a"))
    _replace(key, pki.key("client-a"))
    token.write_text("token-1\n")
    proxy.start("client-a", "token-1")
    client = EndpointClient(DEFAULT_SCRAPE_TIMEOUT, ScrapeConfig().page_timeout_seconds)
    naming, queries = profile("jmx_exporter"), plan_queries()
    endpoint = MetricsEndpoint(proxy.url, naming, None, None, str(pki.ca), str(cert), str(key), str(token))

    def broker_state(read: Sequence[RawReading]) -> list[dict[str, object]]:
        return [dict(r.values) for r in read if r.object_name == "kafka.server:type=KafkaServer,name=BrokerState"]

    def refused(how: MetricsEndpoint) -> ReadError:
        with pytest.raises(ReadError) as error:
            client.read(how, queries)
        assert "\n" not in str(error.value), str(error.value)
        return error.value

    try:
        assert broker_state(client.read(endpoint, queries)) == [{"Value": 3.0}]
        # nginx answers both with a 400 and its page: "No required SSL certificate was sent", "The SSL
        # certificate error"
        for cert_file, key_file in ((None, None), (str(pki.cert("rogue")), str(pki.key("rogue")))):
            anonymous = refused(replace(endpoint, cert_file=cert_file, key_file=key_file))
            assert str(anonymous) == f"{proxy.url}: HTTP 400 (client certificate refused)", cert_file
            assert anonymous.failure is Failure.AUTH
        (tmp_path / "other-token").write_text("token-0\n")
        wrong = refused(replace(endpoint, bearer_token_file=str(tmp_path / "other-token")))
        assert str(wrong) == f"{proxy.url}: HTTP 401 (credentials refused)" and wrong.failure is Failure.AUTH
        proxy.allow("client-b", "token-2")  # the server side rotated first
        old = refused(endpoint)
        assert old.failure is Failure.AUTH and str(old) == f"{proxy.url}: HTTP 403 (credentials refused)"
        _replace(cert, pki.cert("client-b"))
        _replace(key, pki.key("client-b"))
        token.write_text("token-2\n")
        assert broker_state(client.read(endpoint, queries)) == [{"Value": 3.0}]
    finally:
        client.close()
        proxy.stop()


@pytest.mark.kraft
def test_aivens_names_read_what_remote_jmx_reads_but_the_strings(aiven_like: KafkaCluster) -> None:
    _compare(aiven_like, profile("aiven"), AIVEN_LACKS)


def _crash_row(
    cluster: KafkaCluster,
    watch: Watch,
    recorded: str,
    read_through: str,
    tmp_path: Path,
    victim: KafkaNode | None = None,
) -> None:
    """kill -9 of `victim` (the cluster's first broker by default) 0.5 s after a round: its endpoint refuses (the
    process is gone), the controller's endpoint says it is fenced; KafkaBrokerFenced pages; restarted, it is
    ACTIVE again and the page resolves. Recorded as `recorded`."""
    victim = victim or cluster.brokers()[0]
    timeline = Timeline(watch, cluster)
    timeline.round()
    timeline.round()
    timeline.sleep_into_round(0.5)
    victim.kill()
    for _ in range(7):  # 105 s: long enough for `for: 1m` to fire
        timeline.round()
    killed_until = len(timeline.observations) - 1
    crashed = timeline.states(victim.name)[2:]
    assert crashed[0] in (Lifecycle.FENCED, Lifecycle.UNREACHABLE), timeline.evidence(victim.name)
    assert set(crashed[1:]) == {Lifecycle.FENCED}, timeline.evidence(victim.name)
    timeline.expect_causes(victim.name, {Cause.PROCESS_GONE}, Lifecycle.FENCED, Lifecycle.UNREACHABLE)
    victim.start()
    rounds_until_active(timeline, victim, 12)
    last = len(timeline.observations) - 1
    replay(
        timeline,
        recorded,
        pages_then_resolves(killed_until, last, frozenset({("KafkaBrokerFenced", victim.name)})),
        f"{read_through}; kill -9 of {victim.name} 0.5 s after a round, restart after 105 s",
        tmp_path,
    )


@pytest.mark.kraft
def test_one_address_and_an_endpoint_rule_read_every_node_through_its_endpoint(msk_like: KafkaCluster) -> None:
    """A user's config for MSK in miniature: the controllers' address (the quorum's view names every node),
    discovery's address rule giving each node's endpoint, `metrics:` saying how it names the MBeans."""
    settings = parse_settings(
        {
            "clusters": [
                {
                    "name": msk_like.name,
                    "bootstrap_controllers": localkafka.quorum_bootstrap(msk_like),
                    "discovery": {"overrides": {n.node_id: f"127.0.0.1:{n.metrics_port}" for n in msk_like.nodes}},
                    "metrics": {"naming": "jmx_exporter"},
                }
            ],
        }
    )
    # the product's scrape timeouts (a 2 s page, tried first, missed every read for a minute on a loaded CI
    # host): what is under test is discovery's naming of the nodes, not how fast a cold agent's page comes
    scrape = settings.scrape
    endpoints = EndpointClient(scrape.timeout_seconds, scrape.page_timeout_seconds)
    scraper = build_scraper(settings, Sources(shared_client, endpoints))
    state = build_state(settings, scraper)
    build_discovery(settings, scraper, state)
    # named by discovery's default, {role}-{id}
    everyone = {
        f"{'broker' if n.is_broker else 'controller'}-{n.node_id}": (
            n.node_id,
            f"http://127.0.0.1:{n.metrics_port}/metrics",
            True,
        )
        for n in msk_like.nodes
    }
    try:
        until_read(scraper, state, everyone, "every node read through its endpoint")
        health = state.current().health.cluster(msk_like.name)
        assert health is not None and {b.node for b in health.brokers} == {
            f"broker-{b.node_id}" for b in msk_like.brokers()
        }
        assert all(b.state is Lifecycle.ACTIVE for b in health.brokers), health.brokers
    finally:
        stop_scraper(scraper)


@pytest.mark.zookeeper
def test_a_zookeeper_mode_crash_read_through_endpoints_alone_is_fenced_gone_and_pages(
    zookeeper_msk_like: KafkaCluster, tmp_path: Path
) -> None:
    """MSK's ZooKeeper-mode form (default naming): kill -9 of the broker that is not the controller. Its session
    expires (zookeeper.session.timeout.ms, 6 s here) and the controller drops its request queue
    (ControllerChannelManager.removeBroker), which the controller's endpoint serves: FENCED by the controller's
    word, cause process_gone (its endpoint refuses), KafkaBrokerFenced pages; restarted, ACTIVE and resolved."""
    watch = Watch(zookeeper_msk_like, targets=endpoint_targets(zookeeper_msk_like, profile("jmx_exporter")))
    try:
        seen = watch.until(_healthy(zookeeper_msk_like), 90, "every node read, every broker ACTIVE")
        health = seen.health.cluster(zookeeper_msk_like.name)
        assert health is not None
        victim = next(b for b in zookeeper_msk_like.brokers() if b.name != health.controller.node)
        read_through = (
            f"every node read through jmx_exporter {localkafka.JMX_EXPORTER_VERSION}'s javaagent in its default "
            "naming only"
        )
        _crash_row(zookeeper_msk_like, watch, "endpoint-default-naming-kill-broker", read_through, tmp_path, victim)
    finally:
        watch.close()


@pytest.mark.kraft
def test_a_large_brokers_slow_page_is_read_at_its_pace_and_one_that_never_completes_is_its_error(
    msk_like: KafkaCluster,
) -> None:
    """The manual's MSK form (the controllers' address, each node's endpoint by discovery's overrides, default
    naming) with one broker answering as a broker of 10,000 partitions does: its real agent's page after 6 s
    (three times the round's timeout), then ~6 MB of partition lines; and the other broker's page never
    completing. The large broker is read at its pace: one request at a time, never re-asked while its page is
    being collected, at most one a page interval; every round serves its last page (ctlplane_up 1) no older than
    max(2 x its page's time, 60 s); ACTIVE with nothing wrong. The one that never completes is its one-line error
    at scrape.page_timeout_seconds, its request held open (one at a time), ACTIVE on the quorum's word and
    unread (KafkaBrokerMetricsUnread's case)."""
    large_broker, stuck_broker = msk_like.brokers()[:2]
    page_timeout = 20.0
    agent = "http://127.0.0.1:{}/metrics"
    large = LargePage(agent.format(large_broker.metrics_port), collect_seconds=6.0)
    stuck = LargePage(agent.format(stuck_broker.metrics_port), collect_seconds=120.0, partitions=0)
    overrides = {n.node_id: f"127.0.0.1:{n.metrics_port}" for n in msk_like.nodes}
    overrides[large_broker.node_id] = large.url.removeprefix("http://").removesuffix("/metrics")
    overrides[stuck_broker.node_id] = stuck.url.removeprefix("http://").removesuffix("/metrics")
    settings = parse_settings(
        {
            "clusters": [
                {
                    "name": msk_like.name,
                    "bootstrap_controllers": localkafka.quorum_bootstrap(msk_like),
                    "discovery": {"overrides": overrides},
                    "metrics": {"naming": "jmx_exporter"},
                }
            ],
            "scrape": {
                "interval_seconds": 2,
                "timeout_seconds": 2,
                # 6 s collected, then ~6 MB through the proxy and parsed: at load 14 (a CI run) a 10 s
                # timeout cut one page short (its round neither up nor held); a page may take 20 s here
                "page_timeout_seconds": page_timeout,
                "page_interval_seconds": 12,
            },
        }
    )
    scraper = build_scraper(settings, Sources(shared_client, EndpointClient(2.0, page_timeout)))
    state = build_state(settings, scraper)
    build_discovery(settings, scraper, state)
    large_name, stuck_name = f"broker-{large_broker.node_id}", f"broker-{stuck_broker.node_id}"

    def nodes() -> dict[str, NodeSnapshot]:
        scraper.scrape_once()
        return {n.node: n for n in state.current().snapshot.nodes()}

    try:
        deadline = time.monotonic() + 90
        while not (seen := nodes()).get(large_name, _UNREAD).held:
            assert time.monotonic() < deadline, f"the large broker never paced: {seen.get(large_name)}"
            time.sleep(0.5)
        page_seconds = seen[large_name].scrape_duration_seconds
        assert 6.0 <= page_seconds < page_timeout, page_seconds
        served, stuck_errors = set(), set()
        for _ in range(15):  # ~30 s: several of its pages
            seen = nodes()
            stuck_node = seen[stuck_name]
            assert not stuck_node.up and not stuck_node.held and stuck_node.failure is Failure.TIMEOUT, stuck_node
            stuck_errors.add(stuck_node.error or "")
            node = seen[large_name]
            assert node.up or node.held, node  # ctlplane_up 1 in every round
            assert node.value("kafka_broker_state") == 3.0, node  # RUNNING, its own series served
            age = state.current().snapshot.taken_at - (node.last_read_at or 0.0)
            assert age <= max(2 * page_seconds, 60.0), (age, node)
            served.add(node.last_read_at)
            health = state.current().health.cluster(msk_like.name)
            assert health is not None
            broker = {b.node: b for b in health.brokers}[large_name]
            assert broker.state is Lifecycle.ACTIVE and broker.cause is None, broker
            time.sleep(2.0)
        assert len(served) >= 2, "no new page read in 30 s"
        assert large.most_in_flight == 1  # never asked again while a page was being collected
        gaps = [b - a for a, b in zip(large.started[1:], large.started[2:], strict=False)]
        assert gaps and min(gaps) >= 12.0 - 0.5, gaps  # a page at most every page_interval_seconds

        # each of its reads ends at the page timeout, that round says so; the rounds while the next is under way
        # say that instead (which one the last round shows depends on the phase)
        assert any(f"page not complete within {page_timeout:g}s" in error for error in stuck_errors), stuck_errors
        # its request held open past each read's page timeout, never a second beside it (four page timeouts)
        assert stuck.most_in_flight == 1
        assert all(b - a >= 4 * page_timeout - 0.5 for a, b in zip(stuck.started, stuck.started[1:], strict=False))
        health = state.current().health.cluster(msk_like.name)
        assert health is not None
        broker = {b.node: b for b in health.brokers}[stuck_name]
        assert broker.state is Lifecycle.ACTIVE and broker.cause is Cause.JMX_UNREACHABLE, broker
    finally:
        stop_scraper(scraper)
        large.stop()
        stuck.stop()


def test_probe_waits_for_a_large_brokers_page_as_long_as_a_page_may_take(
    msk_like: KafkaCluster, tmp_path: Path
) -> None:
    """`ctlplane probe` has no next round to serve a late page: it waits as long as a page may take
    (scrape.page_timeout_seconds), not the read deadline (twice the scrape timeout), so a large broker's page
    of 6 s is read with a 2 s timeout."""
    large_broker = msk_like.brokers()[0]
    large = LargePage(f"http://127.0.0.1:{large_broker.metrics_port}/metrics", collect_seconds=6.0)
    overrides = {n.node_id: f"127.0.0.1:{n.metrics_port}" for n in msk_like.nodes}
    overrides[large_broker.node_id] = large.url.removeprefix("http://").removesuffix("/metrics")
    config = tmp_path / "ctlplane.yaml"
    cluster = {
        "name": msk_like.name,
        "bootstrap_controllers": localkafka.quorum_bootstrap(msk_like),
        "discovery": {"overrides": overrides},
        "metrics": {"naming": "jmx_exporter"},
    }
    scrape = {"interval_seconds": 2, "timeout_seconds": 2, "page_timeout_seconds": 30}
    config.write_text(yaml.safe_dump({"clusters": [cluster], "scrape": scrape}))
    try:
        probe = subprocess.run(
            [sys.executable, "-m", "ctlplane.cli", "probe", "--config", str(config)],
            capture_output=True, text=True, timeout=180,
        )  # fmt: skip
    finally:
        large.stop()
    assert probe.returncode == 0, probe.stdout + probe.stderr
    line = next((row for row in probe.stdout.splitlines() if f" broker-{large_broker.node_id} " in row), "")
    assert " yes " in line and " series" in line, probe.stdout
    assert "waiting up to 30s for each metrics page" in probe.stderr, probe.stderr


def _requests_waiting(port: int) -> int:
    """Requests a server on a loopback port has not read yet: its connections (/proc/net/tcp and tcp6, where a
    JVM's dual-stack sockets are; ESTABLISHED or CLOSE_WAIT, the reader gone) with bytes in their receive
    queue. A paused process reads none: each waits there, in an accepted connection or the listen backlog, for
    its server to read and answer once it resumes."""
    waiting = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, _, state, queues = line.split()[1:5]
            if int(local.rsplit(":", 1)[1], 16) == port and state in ("01", "08") and int(queues.split(":")[1], 16):
                waiting += 1
    return waiting


@pytest.mark.kraft
def test_a_paused_nodes_page_is_asked_for_once_and_its_late_page_is_the_next_reads(msk_like: KafkaCluster) -> None:
    """A broker paused (SIGSTOP) behind its real jmx_exporter agent, read twice with a 3 s page timeout: each read
    ends at the page timeout with the node's one-line error, but the request stays open, so the agent's backlog
    holds one request, not one per read, to collect side by side when the broker resumes (jmx_exporter answers every
    request it accepted, on up to 10 threads: HTTPServerFactory); and the first read after the resume is that
    request's page. Paused for less than broker.session.timeout.ms, so the shared cluster is not fenced."""
    broker = msk_like.brokers()[-1]
    assert broker.metrics_port is not None
    # the held request ends by itself after 4 page timeouts (12 s): two reads of the pause use 6 s of them, the
    # rest is the resumed agent's on a loaded machine (three reads at 2 s once left it 2 s, and it missed them)
    client = EndpointClient(2.0, 3.0)
    endpoint = MetricsEndpoint(f"http://127.0.0.1:{broker.metrics_port}/metrics", profile("jmx_exporter"))
    queries = plan_queries()
    assert client.read(endpoint, queries)  # the agent's first page (a cold one is slow) before the pause
    broker.pause()
    try:
        errors = []
        for _ in range(2):
            with pytest.raises(ReadError) as error:
                client.read(endpoint, queries)
            assert error.value.failure is Failure.TIMEOUT, error.value
            errors.append(str(error.value))
        waiting = _requests_waiting(broker.metrics_port)
    finally:
        broker.resume()
    assert waiting == 1, (waiting, errors)
    assert errors[0].endswith("page not complete within 3s"), errors
    assert "page not complete within 3s (its request of" in errors[1] and "held open" in errors[1], errors
    for _ in range(5):  # the held request's page: the agent collects it once resumed
        try:
            page = client.read(endpoint, queries)
            break
        except ReadError as exc:
            assert "held open" in str(exc), exc
    else:
        raise AssertionError("no page after the resume")
    assert any(r.object_name == "kafka.server:type=KafkaServer,name=BrokerState" for r in page), page
    client.close()
