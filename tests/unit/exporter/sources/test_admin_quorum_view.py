"""The quorum's own view (Admin API describeMetadataQuorum) in a round, on /metrics, and in the config; the
Admin client itself is tested against real KRaft clusters (tests/integration/test_quorum_view.py)."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from xml.etree import ElementTree

import pytest
import yaml

from ctlplane.exporter.config.file import ConfigError, parse_settings
from ctlplane.exporter.families import Family, health_families, quorum_families
from ctlplane.exporter.health import ClusterHealth, FleetHealth, HealthMemory, Lifecycle, evaluate
from ctlplane.exporter.http.jsonapi import snapshot_from_dict, snapshot_to_dict
from ctlplane.exporter.model import ClusterSnapshot, Failure, FleetSnapshot, NodeSnapshot, QuorumReplica, QuorumView
from ctlplane.exporter.releases import CLIENT_VERSION
from ctlplane.exporter.scraper import Scraper, Target
from ctlplane.exporter.sources.admin import client as kafka_admin
from ctlplane.exporter.sources.jmx.base import Endpoint
from ctlplane.exporter.thresholds import Thresholds
from tests.unit.exporter.builders import fleet, kraft_broker, kraft_controller
from tests.unit.exporter.test_scraper import ScriptedClient

READ_AT = 1_000.0
VIEW = QuorumView(
    read_at=READ_AT,
    leader_id=101,
    leader_epoch=7,
    high_watermark=500,
    replicas=(
        QuorumReplica(101, True, 510, READ_AT, READ_AT),
        QuorumReplica(102, True, 505, READ_AT - 0.5, READ_AT - 0.5),
        QuorumReplica(1, False, 400, READ_AT - 12.0, READ_AT - 30.0),
        QuorumReplica(9, False, 510, None, None),  # an observer the leader has not heard from
    ),
    fenced={1: True, 9: False},
)


class Quorum:
    """A QuorumSource double: answers VIEW, or blocks until released."""

    def __init__(self, *, hang: bool = False) -> None:
        self.hang = hang
        self.release = threading.Event()
        self.reads = 0
        self.closed = False

    def read(self) -> QuorumView:
        self.reads += 1
        if self.hang:
            self.release.wait(10)
        return VIEW

    def close(self) -> None:
        self.closed = True
        self.release.set()


def _scraper(quorum: Quorum, client: ScriptedClient) -> Scraper:
    targets = [Target(cluster, f"b{port}", Endpoint("127.0.0.1", port)) for cluster, port in (("c1", 1), ("c2", 2))]
    return Scraper(targets, client, interval_seconds=1, timeout_seconds=0.3, workers=4, quorum_sources={"c1": quorum})


def test_the_quorum_view_is_in_the_round_of_its_cluster_only() -> None:
    quorum = Quorum()
    scraper = _scraper(quorum, ScriptedClient())
    snapshot = scraper.scrape_once()
    assert snapshot.cluster("c1").quorum == VIEW  # type: ignore[union-attr]
    assert snapshot.cluster("c2").quorum is None  # type: ignore[union-attr]
    scraper.stop()
    assert quorum.closed


def test_a_quorum_that_does_not_answer_is_an_error_value_read_once_and_the_nodes_are_served() -> None:
    quorum, client = Quorum(hang=True), ScriptedClient()
    scraper = _scraper(quorum, client)
    first, second = scraper.scrape_once(), scraper.scrape_once()
    for snapshot, when in ((first, "this round"), (second, "since round 1")):
        view = snapshot.cluster("c1").quorum  # type: ignore[union-attr]
        assert view is not None and not view.up and "did not answer within 0.3s" in (view.error or "")
        assert when in (view.error or "")
        assert all(node.up for node in snapshot.nodes())
    assert quorum.reads == 1  # not doubled while the first read hangs
    quorum.hang = False
    quorum.release.set()
    for _ in range(20):
        if scraper.scrape_once().cluster("c1").quorum == VIEW:  # type: ignore[union-attr]
            break
    assert scraper.latest().cluster("c1").quorum == VIEW  # type: ignore[union-attr]
    scraper.stop()


def test_a_one_shot_round_waits_for_a_slow_quorum_as_long_as_a_read_may_run() -> None:
    # `ctlplane probe` reads once: a quorum answer later than the round's timeout has no next round to be
    # served in (ci34: a cold Admin client's first describeMetadataQuorum took over 10 s at load), so its one
    # round waits up to the read deadline instead
    quorum, client = Quorum(hang=True), ScriptedClient()
    scraper = _scraper(quorum, client)
    threading.Timer(0.6, quorum.release.set).start()
    assert scraper.scrape_once(wait_seconds=5.0).cluster("c1").quorum == VIEW  # type: ignore[union-attr]
    scraper.stop()
    quorum, client = Quorum(hang=True), ScriptedClient()
    scraper = _scraper(quorum, client)
    timer = threading.Timer(0.6, quorum.release.set)
    timer.start()
    view = scraper.scrape_once().cluster("c1").quorum  # type: ignore[union-attr]
    assert view is not None and "did not answer within 0.3s" in (view.error or "")
    timer.join()
    scraper.stop()


def _by_name(families: list[Family]) -> dict[str, dict[tuple[str, ...], float]]:
    """Each family's samples by their label values."""
    return {family.name: {values: value for _, _, values, value in family.rows} for family in families}


def _rows(view: QuorumView | None) -> dict[str, dict[tuple[str, ...], float]]:
    cluster = ClusterSnapshot("c1", (), view)
    return _by_name(quorum_families(FleetSnapshot(1, READ_AT, 0.1, (cluster,))))


def test_quorum_series_say_what_kafka_metadata_quorum_describe_says() -> None:
    rows = _rows(VIEW)
    assert rows["ctlplane_quorum_up"] == {("c1",): 1.0}
    assert rows["kafka_quorum_leader_id"] == {("c1",): 101.0}
    assert rows["kafka_quorum_leader_epoch"] == {("c1",): 7.0}
    assert rows["kafka_quorum_high_watermark"] == {("c1",): 500.0}
    # Lag as the tool prints it: the leader's log end offset minus the replica's
    assert rows["kafka_quorum_replica_lag_records"] == {
        ("c1", "101", "controller"): 0.0,
        ("c1", "102", "controller"): 5.0,
        ("c1", "1", "broker"): 110.0,
        ("c1", "9", "broker"): 0.0,
    }
    assert rows["kafka_quorum_replica_last_caught_up_age_seconds"][("c1", "1", "broker")] == 30.0
    assert rows["kafka_quorum_replica_last_fetch_age_seconds"][("c1", "1", "broker")] == 12.0
    assert ("c1", "9", "broker") not in rows["kafka_quorum_replica_last_fetch_age_seconds"]  # never fetched
    assert rows["kafka_broker_fenced"] == {("c1", "1", "broker"): 1.0, ("c1", "9", "broker"): 0.0}
    unasked = _rows(QuorumView(read_at=READ_AT, leader_id=101, registrations_error="UnsupportedVersionException"))
    assert "kafka_broker_fenced" not in unasked  # brokers before 4.0 cannot say: no guess


def test_a_quorum_without_an_answer_is_only_its_up_series_and_whether_it_refused_ctlplane() -> None:
    assert _rows(QuorumView(read_at=READ_AT, error="TimeoutException: no answer")) == {
        "ctlplane_quorum_up": {("c1",): 0.0},
        "ctlplane_quorum_refused": {("c1",): 0.0},
    }
    denied = QuorumView(read_at=READ_AT, error="not authorised: ClusterAuthorizationException: …", refused=True)
    assert _rows(denied)["ctlplane_quorum_refused"] == {("c1",): 1.0}
    assert _rows(VIEW)["ctlplane_quorum_refused"] == {("c1",): 0.0}
    assert _rows(None) == {}


CLUSTER = {"name": "c1", "nodes": [{"address": "127.0.0.1:9999"}]}


def test_bootstrap_addresses_are_checked_and_only_one_kind_is_allowed() -> None:
    ok = parse_settings({"clusters": [{**CLUSTER, "bootstrap_controllers": ["127.0.0.1:9093"]}]}, "t")
    assert ok.clusters[0].bootstrap_controllers == ["127.0.0.1:9093"]
    with pytest.raises(ConfigError, match="not both"):
        parse_settings(
            {"clusters": [{**CLUSTER, "bootstrap_servers": ["a:9092"], "bootstrap_controllers": ["a:9093"]}]}, "t"
        )
    with pytest.raises(ConfigError, match="host:port"):
        parse_settings({"clusters": [{**CLUSTER, "bootstrap_servers": ["a"]}]}, "t")
    with pytest.raises(ConfigError, match=r"use scrape\.client: jpype"):
        parse_settings(
            {"clusters": [{**CLUSTER, "bootstrap_servers": ["a:9092"]}], "scrape": {"client": "jmxquery"}}, "t"
        )


def test_the_admin_block_needs_a_sasl_user_only_on_sasl_listeners_and_a_quorum_view_to_secure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    servers = {**CLUSTER, "bootstrap_servers": ["a:9092"]}
    sasl = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "SCRAM-SHA-512", "username": "u"}
    monkeypatch.setenv("ADMIN_PW", "s3cret")
    ok = parse_settings({"clusters": [{**servers, "admin": {**sasl, "password_env": "ADMIN_PW"}}]}, "t")
    admin = ok.clusters[0].admin
    assert admin is not None and admin.password() is not None and "s3cret" not in repr(ok)
    with pytest.raises(ConfigError, match="needs sasl_mechanism and username"):
        parse_settings({"clusters": [{**servers, "admin": {"security_protocol": "SASL_PLAINTEXT"}}]}, "t")
    with pytest.raises(ConfigError, match="username needs password_file or password_env"):
        parse_settings({"clusters": [{**servers, "admin": sasl}]}, "t")
    with pytest.raises(ConfigError, match="are for SASL listeners"):
        parse_settings({"clusters": [{**servers, "admin": {"sasl_mechanism": "PLAIN"}}]}, "t")
    with pytest.raises(ConfigError, match="set bootstrap_servers or bootstrap_controllers too"):
        parse_settings({"clusters": [{**CLUSTER, "admin": {**sasl, "password_env": "ADMIN_PW"}}]}, "t")
    with pytest.raises(ConfigError, match="are for TLS listeners"):
        parse_settings({"clusters": [{**servers, "admin": {"ca_file": "/ca.pem"}}]}, "t")
    with pytest.raises(ConfigError, match="cert_file and key_file go together"):
        parse_settings({"clusters": [{**servers, "admin": {"security_protocol": "SSL", "cert_file": "/c.pem"}}]}, "t")
    tls = parse_settings({"clusters": [{**servers, "admin": {"security_protocol": "SSL"}}]}, "t").clusters[0].admin
    assert tls is not None and tls.client_certificate() is None  # the JVM's trust store, no client certificate
    with pytest.raises(ConfigError, match="key_password_file is the password of key_file"):
        parse_settings(
            {"clusters": [{**servers, "admin": {"security_protocol": "SSL", "key_password_file": "/pw"}}]}, "t"
        )
    with pytest.raises(ConfigError, match="are for TLS listeners"):
        parse_settings({"clusters": [{**servers, "admin": {"key_password_file": "/pw"}}]}, "t")


def test_a_missing_or_multi_line_admin_password_is_a_config_problem_naming_the_cluster(tmp_path: Path) -> None:
    from ctlplane.exporter.config.file import load_settings

    def settings_with(password_file: Path) -> Path:
        admin = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN", "username": "u"}
        cluster = {**CLUSTER, "bootstrap_servers": ["a:9092"], "admin": {**admin, "password_file": str(password_file)}}
        config = tmp_path / "c.yaml"
        config.write_text(yaml.safe_dump({"clusters": [cluster]}))
        return config

    with pytest.raises(ConfigError, match=r"clusters\.0\.admin \(cluster .*\): cannot read password_file"):
        load_settings(settings_with(tmp_path / "absent"))
    two_lines = tmp_path / "two-lines"
    two_lines.write_text("first\nsecond\n")
    with pytest.raises(ConfigError, match="line break"):
        load_settings(settings_with(two_lines))
    tls = {"security_protocol": "SSL", "ca_file": str(tmp_path / "no-ca.pem")}
    config = tmp_path / "tls.yaml"
    config.write_text(yaml.safe_dump({"clusters": [{**CLUSTER, "bootstrap_servers": ["a:9092"], "admin": tls}]}))
    with pytest.raises(ConfigError, match=r"clusters\.0\.admin\.ca_file: "):
        load_settings(config)


def test_an_encrypted_client_key_without_its_password_is_a_config_problem_naming_the_key(tmp_path: Path) -> None:
    from ctlplane.exporter.config.file import load_settings
    from harness.localkafka import encrypted_key, make_local_pki

    pki = make_local_pki(tmp_path / "pki", ("client",))
    sealed = encrypted_key(pki, "client", "s3cret")
    admin = {"security_protocol": "SSL", "cert_file": str(pki.cert("client")), "key_file": str(sealed)}
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"clusters": [{**CLUSTER, "bootstrap_servers": ["a:9092"], "admin": admin}]}))
    with pytest.raises(ConfigError, match=r"clusters\.0\.admin\.key_file: .* is encrypted: give its password"):
        load_settings(config)
    password = tmp_path / "key-password"
    password.write_text("s3cret\n")
    config.write_text(
        yaml.safe_dump(
            {
                "clusters": [
                    {**CLUSTER, "bootstrap_servers": ["a:9092"], "admin": {**admin, "key_password_file": str(password)}}
                ]
            }
        )
    )
    loaded = load_settings(config).clusters[0].admin
    assert loaded is not None and loaded.key_password() is not None


@pytest.mark.parametrize(
    ("mechanism", "module"),
    [
        ("PLAIN", "org.apache.kafka.common.security.plain.PlainLoginModule"),
        ("SCRAM-SHA-256", "org.apache.kafka.common.security.scram.ScramLoginModule"),
    ],
)
def test_sasl_settings_quote_the_user_and_password_as_kafkas_jaas_parser_reads_them(
    mechanism: str, module: str
) -> None:
    props = kafka_admin.security_properties("SASL_PLAINTEXT", mechanism, "u", 'p"a\\ss')
    assert props["security.protocol"] == "SASL_PLAINTEXT" and props["sasl.mechanism"] == mechanism
    assert props["sasl.jaas.config"] == f'{module} required username="u" password="p\\"a\\\\ss";'
    assert kafka_admin.security_properties("PLAINTEXT") == {"security.protocol": "PLAINTEXT"}
    tls = kafka_admin.security_properties("SSL", ca_file="/ca.pem", certificate=("CHAIN", "KEY"))
    assert tls == {
        "security.protocol": "SSL",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": "/ca.pem",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.certificate.chain": "CHAIN",
        "ssl.keystore.key": "KEY",
    }
    sealed = kafka_admin.security_properties("SSL", certificate=("CHAIN", "SEALED"), key_password="pw")
    assert sealed["ssl.keystore.key"] == "SEALED" and sealed["ssl.key.password"] == "pw"
    with pytest.raises(ValueError, match="line break"):
        kafka_admin.security_properties("SASL_PLAINTEXT", mechanism, "u", "a\nb")


def test_the_quorum_view_round_trips_through_the_snapshot_json() -> None:
    for view in (VIEW, QuorumView(read_at=READ_AT, error="TimeoutException: no answer"), None):
        snapshot = FleetSnapshot(1, READ_AT, 0.1, (ClusterSnapshot("c1", (), view),))
        document = snapshot_to_dict(snapshot)
        assert ("quorum" in document["clusters"][0]) is (view is not None)
        assert snapshot_from_dict(document) == snapshot


def test_the_client_pom_fetches_the_client_version_the_code_loads() -> None:
    pom = ElementTree.parse(kafka_admin.POM_FILE).getroot()
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    versions = {
        dep.findtext("m:artifactId", namespaces=ns): dep.findtext("m:version", namespaces=ns)
        for dep in pom.iterfind("m:dependencies/m:dependency", ns)
    }
    assert versions["kafka-clients"] == CLIENT_VERSION


def test_baked_in_client_jars_are_used_and_a_wrong_directory_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kafka_admin, "PACKAGED_JARS", tmp_path / "packaged")  # a package without them
    monkeypatch.setenv(kafka_admin.JARS_ENV, str(tmp_path))
    with pytest.raises(kafka_admin.AdminClientError, match=f"has no {kafka_admin.MAIN_JAR}"):
        kafka_admin.client_jars()
    for name in (kafka_admin.MAIN_JAR, "slf4j-api-1.7.36.jar"):
        (tmp_path / name).write_bytes(b"")
    assert [p.name for p in kafka_admin.client_jars()] == sorted([kafka_admin.MAIN_JAR, "slf4j-api-1.7.36.jar"])


# --- the health model: the quorum's view first --------------------------------------------------------


def _with_quorum(*nodes: NodeSnapshot, view: QuorumView) -> ClusterHealth:
    snapshot = fleet(*nodes, at=READ_AT)
    (cluster,) = snapshot.clusters
    health, _ = evaluate(replace(snapshot, clusters=(replace(cluster, quorum=view),)), HealthMemory(), Thresholds())
    return health.clusters[0]


def _view(
    *, fenced: dict[int, bool] | None, caught_up_ago: float = 1.0, fetched_ago: float = 0.1, leader: int = 1
) -> QuorumView:
    """The quorum of controller 1 (leader by default) and observers 101 and 102, each last fetching
    `fetched_ago` and caught up `caught_up_ago` seconds before the read."""
    observers = tuple(
        QuorumReplica(nid, False, 100, READ_AT - fetched_ago, READ_AT - caught_up_ago) for nid in (101, 102)
    )
    return QuorumView(
        read_at=READ_AT,
        leader_id=leader,
        leader_epoch=5,
        high_watermark=100,
        replicas=(QuorumReplica(1, True, 100, READ_AT, READ_AT), *observers),
        fenced=fenced,
    )


def test_a_broker_whose_jmx_is_unreachable_is_active_by_the_quorums_word_and_the_views_disagree() -> None:
    controller = kraft_controller("ctl", 1, active=True)
    blocked = kraft_broker("b1", 101, up=False, failure=Failure.TIMEOUT)
    cluster = _with_quorum(controller, blocked, view=_view(fenced={101: False}))
    broker = cluster.brokers[0]
    assert broker.state is Lifecycle.ACTIVE and broker.decided_by == "quorum" and broker.views_disagree
    said = "quorum: unfenced (describeCluster), fetching, caught up 1s ago; its own JMX says UNREACHABLE"
    assert broker.evidence.startswith(said), broker.evidence


def test_the_quorums_names_correct_a_fenced_count_that_jmx_matched_to_the_wrong_broker() -> None:
    """Kafka 4.0: FencedBrokerCount=1 and no names. b1's JMX is blocked (it is fine), b2 runs and answers
    but the controller has fenced it: JMX alone guesses b1; describeCluster names b2."""
    controller = kraft_controller("ctl", 1, active=True, fenced=1)
    blocked, fenced = kraft_broker("b1", 101, up=False, failure=Failure.TIMEOUT), kraft_broker("b2", 102)
    jmx_only, _ = evaluate(fleet(controller, blocked, fenced, at=READ_AT), HealthMemory(), Thresholds())
    assert {b.node: b.state for b in jmx_only.clusters[0].brokers} == {"b1": Lifecycle.FENCED, "b2": Lifecycle.ACTIVE}
    cluster = _with_quorum(controller, blocked, fenced, view=_view(fenced={101: False, 102: True}))
    assert {b.node: (b.state, b.views_disagree) for b in cluster.brokers} == {
        "b1": (Lifecycle.ACTIVE, True),
        "b2": (Lifecycle.FENCED, True),
    }


def test_a_broker_the_quorum_names_fenced_is_fenced_even_when_its_jmx_looks_fine() -> None:
    controller = kraft_controller("ctl", 1, active=True, fenced=1)
    cluster = _with_quorum(controller, kraft_broker("b1", 101), view=_view(fenced={101: True}, caught_up_ago=30))
    broker = cluster.brokers[0]
    assert broker.state is Lifecycle.FENCED and broker.views_disagree, broker.evidence
    assert "quorum: fenced (describeCluster), caught up 30s ago" in broker.evidence


def test_caught_up_alone_is_not_unfenced_unless_the_controller_counts_no_fenced_broker() -> None:
    down = kraft_broker("b1", 101, up=False, failure=Failure.TIMEOUT)
    counted = _with_quorum(kraft_controller("ctl", 1, active=True, fenced=1), down, view=_view(fenced=None))
    assert counted.brokers[0].state is not Lifecycle.ACTIVE and not counted.brokers[0].views_disagree
    none_fenced = _with_quorum(kraft_controller("ctl", 1, active=True, fenced=0), down, view=_view(fenced=None))
    assert none_fenced.brokers[0].state is Lifecycle.ACTIVE and none_fenced.brokers[0].views_disagree
    behind = _with_quorum(
        kraft_controller("ctl", 1, active=True, fenced=0), down, view=_view(fenced=None, caught_up_ago=60)
    )
    assert behind.brokers[0].state is Lifecycle.UNREACHABLE  # not following: the quorum says nothing of it


def test_a_process_gone_or_no_longer_fetching_is_not_brought_back_by_the_quorums_recent_word() -> None:
    """Just after a crash the quorum still remembers the broker caught up seconds ago. A refused JMX
    connection is a process that is not there, and a replica that stopped fetching is not alive."""
    controller = kraft_controller("ctl", 1, active=True)
    refused = _with_quorum(controller, kraft_broker("b1", 101, up=False), view=_view(fenced={101: False}))
    assert refused.brokers[0].state is Lifecycle.UNREACHABLE and not refused.brokers[0].views_disagree
    frozen = kraft_broker("b1", 101, up=False, failure=Failure.TIMEOUT)
    stopped = _with_quorum(controller, frozen, view=_view(fenced={101: False}, fetched_ago=8, caught_up_ago=8))
    assert stopped.brokers[0].state is Lifecycle.UNREACHABLE and not stopped.brokers[0].views_disagree


def test_the_quorum_never_overrides_a_start_up_or_a_controlled_shutdown() -> None:
    controller = kraft_controller("ctl", 1, active=True, registrations={101: 10})
    starting = _with_quorum(controller, kraft_broker("b1", 101, broker_state=1), view=_view(fenced={101: True}))
    assert starting.brokers[0].state is Lifecycle.INITIAL and not starting.brokers[0].views_disagree
    stopping = _with_quorum(controller, kraft_broker("b1", 101, broker_state=6), view=_view(fenced={101: False}))
    assert stopping.brokers[0].state is Lifecycle.SHUTDOWN and not stopping.brokers[0].views_disagree


def test_agreeing_views_say_so_and_a_cluster_without_the_quorum_view_is_read_as_before() -> None:
    controller = kraft_controller("ctl", 1, active=True, registrations={101: 30})
    agreed = _with_quorum(controller, kraft_broker("b1", 101), view=_view(fenced={101: False}))
    assert agreed.brokers[0].state is Lifecycle.ACTIVE and not agreed.brokers[0].views_disagree
    assert agreed.brokers[0].decided_by == "quorum" and agreed.quorum_leader_id == 1
    assert not agreed.controller_views_disagree
    health, _ = evaluate(fleet(controller, kraft_broker("b1", 101), at=READ_AT), HealthMemory(), Thresholds())
    plain = health.clusters[0]
    assert plain.brokers[0].decided_by == "jmx" and plain.quorum_leader_id is None


def test_a_controller_jmx_calls_active_that_the_quorum_does_not_lead_is_a_disagreement() -> None:
    zombie = kraft_controller("ctl", 1, active=True)
    cluster = _with_quorum(zombie, kraft_broker("b1", 101), view=_view(fenced={101: False}, leader=2))
    assert cluster.controller_views_disagree and cluster.quorum_leader_id == 2
    rows = _by_name(health_families(FleetHealth((cluster,))))
    assert rows["kafka_cluster_controller_views_disagree"] == {("c1",): 1.0}
    assert rows["kafka_broker_views_disagree"] == {("c1", "b1", "broker"): 0.0}


def test_metadata_lag_comes_from_the_quorum_where_the_brokers_jmx_does_not_answer_and_says_so() -> None:
    """The broker's own applied offset and record time where its JMX answers (the image it serves); the
    quorum leader's view of what it fetched where its JMX does not answer, so a hung broker's lag keeps
    growing and a black-holed one is seen caught up. Not for a refused connection: a broker stopped
    cleanly (SHUTDOWN, pages nothing) would otherwise fall ever further behind in the leader's view."""
    controller = kraft_controller("ctl", 1, active=True, committed=100)
    answering = _with_quorum(controller, kraft_broker("b1", 101, applied=90, lag_seconds=0.4), view=_view(fenced=None))
    jmx = answering.brokers[0]
    assert (jmx.metadata_lag_records, jmx.metadata_lag_seconds, jmx.metadata_lag_source) == (10.0, 0.4, "jmx")

    hung = kraft_broker("b1", 101, up=False, failure=Failure.TIMEOUT)
    behind = replace(
        _view(fenced={101: True}),
        replicas=(
            QuorumReplica(1, True, 180, READ_AT, READ_AT),
            QuorumReplica(101, False, 100, READ_AT - 45, READ_AT - 45),
        ),
    )
    cluster = _with_quorum(controller, hung, view=behind)
    quorum = cluster.brokers[0]
    assert (quorum.metadata_lag_records, quorum.metadata_lag_seconds) == (80.0, 45.0)
    assert quorum.metadata_lag_source == "quorum" and quorum.stale and quorum.state is Lifecycle.FENCED
    rows = _by_name(health_families(FleetHealth((cluster,))))
    assert rows["kafka_broker_metadata_lag_seconds"] == {("c1", "b1", "broker"): 45.0}
    assert rows["kafka_broker_metadata_lag_source_info"] == {("c1", "b1", "broker", "quorum"): 1.0}

    stopped = _with_quorum(controller, kraft_broker("b1", 101, up=False), view=behind).brokers[0]  # refused
    absent = _with_quorum(controller, hung, view=replace(behind, replicas=behind.replicas[:1])).brokers[0]
    no_view, _ = evaluate(fleet(controller, hung, at=READ_AT), HealthMemory(), Thresholds())
    for broker in (stopped, absent, no_view.clusters[0].brokers[0]):
        assert (broker.metadata_lag_records, broker.metadata_lag_seconds, broker.metadata_lag_source) == (
            None,
            None,
            None,
        )
    # the active controller's JMX unreadable: the broker's own record time, and no record count (as before)
    unread = kraft_controller("ctl", 1, active=True, up=False)
    own = _with_quorum(unread, kraft_broker("b1", 101, lag_seconds=0.4), view=_view(fenced={101: False})).brokers[0]
    assert (own.metadata_lag_records, own.metadata_lag_seconds, own.metadata_lag_source) == (None, 0.4, "jmx")


def test_a_failed_client_fetch_is_one_clear_error_not_retried_every_round(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kafka_admin, "PACKAGED_JARS", tmp_path / "packaged")  # a checkout without them
    monkeypatch.delenv(kafka_admin.JARS_ENV, raising=False)
    monkeypatch.setattr(kafka_admin, "cache_root", lambda: tmp_path)
    monkeypatch.setattr(kafka_admin, "_fetch_failure", None)
    looked_up: list[str] = []
    monkeypatch.setattr("shutil.which", lambda name: looked_up.append(name))
    for _ in range(3):
        with pytest.raises(kafka_admin.AdminClientError, match="'mvn' is not on PATH"):
            kafka_admin.client_jars()
    assert looked_up == ["mvn"]  # once: the next rounds get the same error until FETCH_RETRY_SECONDS pass


def test_a_node_whose_jmx_never_answered_has_its_configured_id_so_the_quorum_can_name_it() -> None:
    client = ScriptedClient()
    client.failing.add(1)
    targets = [Target("c1", "b1", Endpoint("127.0.0.1", 1), node_id=101), Target("c1", "b2", Endpoint("127.0.0.1", 2))]
    snapshot = Scraper(targets, client, interval_seconds=1, timeout_seconds=0.3, workers=2).scrape_once()
    assert {n.node: (n.up, n.node_id) for n in snapshot.nodes()} == {"b1": (False, 101), "b2": (True, None)}
    settings = parse_settings({"clusters": [{"name": "c1", "nodes": [{"address": "h:1", "node_id": 101}]}]}, "t")
    assert settings.clusters[0].nodes[0].node_id == 101
    with pytest.raises(ConfigError, match="node_id"):
        parse_settings({"clusters": [{"name": "c1", "nodes": [{"address": "h:1", "node_id": -1}]}]}, "t")


class _Throwable:
    """A stand-in for a Java exception as JPype shows it: getClass().getSimpleName(), getMessage(), getCause()."""

    def __init__(self, name: str, message: str | None, cause: _Throwable | None = None) -> None:
        self.name, self.message, self.cause = name, message, cause

    def getClass(self) -> _Throwable:
        return self

    def getSimpleName(self) -> str:
        return self.name

    def getMessage(self) -> str | None:
        return self.message

    def getCause(self) -> _Throwable | None:
        return self.cause


def test_an_admin_error_says_what_kafka_said_and_its_root_cause() -> None:
    untrusted = _Throwable(
        "ExecutionException",
        "wrapped",
        _Throwable(
            "SslAuthenticationException",
            "SSL handshake failed",
            _Throwable(
                "SSLHandshakeException",
                "PKIX path building failed",
                _Throwable("SunCertPathBuilderException", "no path"),
            ),
        ),
    )
    assert kafka_admin.kafka_reason(untrusted) == (  # type: ignore[arg-type]
        "SslAuthenticationException: SSL handshake failed (SunCertPathBuilderException: no path)"
    )
    sasl = _Throwable("ExecutionException", "x", _Throwable("SaslAuthenticationException", "Authentication failed"))
    assert kafka_admin.kafka_reason(sasl) == "SaslAuthenticationException: Authentication failed"  # type: ignore[arg-type]
    bare = _Throwable("TimeoutException", None)
    assert kafka_admin.kafka_reason(bare) == "TimeoutException"  # type: ignore[arg-type]
