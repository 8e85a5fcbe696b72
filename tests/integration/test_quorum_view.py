"""The metadata quorum's own view (docs/configuration.md "The quorum's view"): Kafka's Admin client in
ctlplane's JVM asks a real KRaft cluster's controllers (`bootstrap.controllers`, KIP-919) what `kafka-metadata-quorum.sh
describe --replication` prints, and ctlplane serves it beside the JMX view; an unreachable quorum is an
error value that leaves the JMX view alone."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
import yaml

from ctlplane.exporter.families import health_families, quorum_families
from ctlplane.exporter.health import BrokerHealth, Lifecycle
from ctlplane.exporter.health.model import Redundancy
from ctlplane.exporter.model import ClusterSnapshot, QuorumView
from ctlplane.exporter.scraper import Scraper, Target
from ctlplane.exporter.sources.admin.client import QuorumReader
from ctlplane.exporter.sources.jmx.base import Endpoint
from ctlplane.exporter.state import ExporterState, Observation
from ctlplane.exporter.thresholds import Thresholds
from harness.localkafka import (
    LOOPBACK,
    KafkaCluster,
    clusters_config,
    describe_quorum_replication,
    encrypted_key,
    free_port,
    jks_keystore,
    jks_truststore,
    major_minor,
    pkcs12_keystore,
    pkcs12_truststore,
    quorum_bootstrap,
)
from harness.netcut import CuttableLink
from tests.integration.quorum_links import start_with_a_broker_to_cut_off
from tests.integration.served import metrics_until, run_config
from tests.integration.watch import Watch, shared_client, targets_of
from tests.kafka_versions import KRAFT_NAME, KRAFT_UNDER_TEST, SASL_USERS

pytestmark = pytest.mark.kraft
# the tests that ask the controllers; those asking the brokers (bootstrap.servers) run on every KRaft release
needs_bootstrap_controllers = pytest.mark.skipif(
    major_minor(KRAFT_UNDER_TEST) < (3, 7), reason="bootstrap.controllers (KIP-919) needs Kafka 3.7+"
)


@pytest.fixture
def reader(kraft_cluster: KafkaCluster) -> Iterator[QuorumReader]:
    shared_client()  # the JVM the Admin client runs in
    # the product's default scrape timeout: a fresh Admin client's first call loads its classes in the JVM,
    # which a loaded fresh-clone run (the Spark cluster beside it) saw take past 5 s
    quorum = QuorumReader(KRAFT_NAME, quorum_bootstrap(kraft_cluster), controllers=True, timeout_seconds=10.0)
    yield quorum
    quorum.close()


def _ms(seconds: float | None) -> int:
    return -1 if seconds is None else round(seconds * 1000)


@needs_bootstrap_controllers
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
    # every node once among the members, though describeCluster through the controllers and the voter set
    # both name each controller (the API's `members` listed them twice)
    assert sorted(m.node_id for m in before.members) == sorted(n.node_id for n in kraft_cluster.nodes)
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


@needs_bootstrap_controllers
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


@needs_bootstrap_controllers
def test_a_black_holed_quorum_is_an_error_value_and_the_jmx_view_goes_on(
    kraft_cluster: KafkaCluster, reader: QuorumReader
) -> None:
    """Every controller address behind a link that holds bytes (a partition, not a refusal): the Admin call
    gives up at its own deadline, the round says why, and every node's JMX is read as before."""
    # The JVM's first Admin client loads Kafka's client classes, a second or more before its own deadline
    # starts; read the real quorum once so the deadline below is the Admin call's, whatever ran before.
    assert reader.read().up
    links = [CuttableLink((LOOPBACK, node.listeners["CONTROLLER"])) for node in kraft_cluster.controllers()]
    for link in links:
        link.cut()
    shared_client()
    quorum = QuorumReader(
        KRAFT_NAME, [f"{LOOPBACK}:{link.port}" for link in links], controllers=True, timeout_seconds=2.0
    )
    # The round's deadline well past the reader's own (the Admin call's 2 s, then its 1 s grace on the future):
    # a fresh-clone run at load 16 ended a 3 s round before the JVM's client reported its own timeout.
    watch = Watch(kraft_cluster, timeout=6.0, quorum_sources={KRAFT_NAME: quorum})
    try:
        snapshot = watch.scrape().snapshot
        view = snapshot.cluster(KRAFT_NAME).quorum  # type: ignore[union-attr]
        assert isinstance(view, QuorumView) and not view.up, view
        # the Admin call's own deadline (2 s here, 80% of the round's in the CLI) ends it, not the round's
        assert view.error is not None and view.error.startswith(f"bootstrap.controllers {LOOPBACK}:"), view.error
        assert "TimeoutException" in view.error, view.error
        assert all(n.up for n in snapshot.cluster(KRAFT_NAME).nodes)  # type: ignore[union-attr]
        rows = {f.name: f.rows for f in quorum_families(snapshot)}
        assert set(rows) == {"ctlplane_quorum_up", "ctlplane_quorum_refused"}
        assert rows["ctlplane_quorum_up"][0][3] == 0.0
        assert rows["ctlplane_quorum_refused"][0][3] == 0.0 and not view.refused  # no answer is not a refusal
    finally:
        watch.close()
        quorum.close()
        for link in links:
            link.close()


@needs_bootstrap_controllers
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


@needs_bootstrap_controllers
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


def _observed(targets: list[Target], quorum: QuorumReader, timeout_seconds: float) -> tuple[Scraper, ExporterState]:
    """A scraper of `targets` through the test process's JMX client, the quorum asked through `quorum`, and the
    exporter state that observes each of its rounds (the test drives them: `scraper.scrape_once()`)."""
    scraper = Scraper(
        targets,
        shared_client(),
        interval_seconds=1,
        timeout_seconds=timeout_seconds,
        workers=8,
        quorum_sources={KRAFT_NAME: quorum},
    )
    state = ExporterState(scraper.latest(), Thresholds())
    scraper.subscribe(state.observe)
    return scraper, state


def test_a_hung_broker_is_fenced_by_name_and_its_lag_comes_from_the_quorum(kraft_cluster: KafkaCluster) -> None:
    """SIGSTOP of a broker, the quorum asked through the brokers (bootstrap_servers): its JMX stops
    answering, so its metadata lag is the quorum's - the time since the leader last saw it caught up grows
    past the 9 s session. Once the active controller fences it, describeCluster names it fenced on 4.0+
    (KIP-1073), where JMX gives only FencedBrokerCount before 4.1, and that decides its state. Resumed, it
    is unfenced and its lag is its own JMX's again. Before 4.0 the brokers cannot say who is fenced, and
    the view says why instead of guessing."""
    victim, other = kraft_cluster.brokers()
    quorum = QuorumReader(KRAFT_NAME, kraft_cluster.bootstrap.split(","), controllers=False, timeout_seconds=2.0)
    scraper, state = _observed(targets_of(kraft_cluster), quorum, timeout_seconds=2)
    names = major_minor(KRAFT_UNDER_TEST) >= (4, 0)

    def round_() -> tuple[QuorumView, BrokerHealth]:
        scraper.scrape_once()
        observed = state.current()
        view = _cluster(observed).quorum
        health = observed.health.cluster(KRAFT_NAME)
        broker = health.broker(victim.name) if health is not None else None
        assert view is not None and broker is not None, observed.snapshot
        return view, broker

    try:
        view, broker = round_()
        assert view.up, view.error
        assert broker.metadata_lag_source == "jmx", broker
        if names:
            assert view.fenced == {victim.node_id: False, other.node_id: False}, view
        else:
            assert view.fenced is None and "UnsupportedVersion" in (view.registrations_error or ""), view
        victim.pause()
        try:
            deadline = time.monotonic() + 60
            while True:
                view, broker = round_()
                past_session = broker.metadata_lag_seconds is not None and broker.metadata_lag_seconds > 8.0
                if past_session and (not names or (view.fenced or {}).get(victim.node_id)):
                    break
                assert time.monotonic() < deadline, f"no quorum lag past the session / not fenced in 60 s: {broker}"
                time.sleep(1)
            assert not broker.up and broker.metadata_lag_source == "quorum", broker
            replica = view.replica(victim.node_id)
            assert replica is not None and broker.metadata_lag_seconds == view.age(replica.last_caught_up_at)
            if names:
                assert view.fenced == {victim.node_id: True, other.node_id: False}, view
                assert broker.state is Lifecycle.FENCED and broker.decided_by == "quorum", broker
        finally:
            victim.resume()
        deadline = time.monotonic() + 60
        while True:
            view, broker = round_()
            unfenced = not names or view.fenced == {victim.node_id: False, other.node_id: False}
            if unfenced and broker.state is Lifecycle.ACTIVE and broker.metadata_lag_source == "jmx":
                break
            assert time.monotonic() < deadline, f"not unfenced, its lag its own, within 60 s: {view} {broker}"
            time.sleep(1)
    finally:
        scraper.stop()


def test_a_broker_whose_jmx_is_black_holed_is_active_by_the_quorums_word_and_the_views_disagree(
    kraft_cluster: KafkaCluster,
) -> None:
    """A loopback black hole in front of one healthy broker's JMX port: JMX alone calls it UNREACHABLE; the
    quorum (asked through the brokers) says it is unfenced and caught up, so it is ACTIVE, decided by the
    quorum, and the disagreement is a series."""
    victim = kraft_cluster.brokers()[0]
    link = CuttableLink((LOOPBACK, victim.jmx_port))
    link.cut()
    targets = [
        replace(target, endpoint=Endpoint(LOOPBACK, link.port)) if target.node == victim.name else target
        for target in targets_of(kraft_cluster)
    ]
    quorum = QuorumReader(KRAFT_NAME, kraft_cluster.bootstrap.split(","), controllers=False, timeout_seconds=2.0)
    scraper, state = _observed(targets, quorum, timeout_seconds=3)
    try:
        deadline = time.monotonic() + 60
        while True:
            scraper.scrape_once()
            health = state.current().health.cluster(KRAFT_NAME)
            broker = health.broker(victim.name) if health is not None else None
            if broker is not None and broker.decided_by == "quorum" and broker.state is Lifecycle.ACTIVE:
                break
            assert time.monotonic() < deadline, f"not ACTIVE by the quorum's word within 60 s: {broker}"
            time.sleep(0.5)
        assert not broker.up and broker.views_disagree, broker
        assert "its own JMX says UNREACHABLE" in broker.evidence, broker.evidence
        # its lag, which its JMX cannot give, is the quorum's: caught up
        assert broker.metadata_lag_source == "quorum" and not broker.stale, broker
        assert broker.metadata_lag_seconds is not None and broker.metadata_lag_seconds < 5.0, broker
        assert health is not None and not health.controller_views_disagree
        rows = {
            f.name: {values: value for _, _, values, value in f.rows} for f in health_families(state.current().health)
        }
        assert rows["kafka_broker_views_disagree"][(KRAFT_NAME, victim.name, "broker")] == 1.0
        assert rows["kafka_broker_views_disagree"][(KRAFT_NAME, kraft_cluster.brokers()[1].name, "broker")] == 0.0
    finally:
        scraper.stop()
        link.close()


def _serve_views(
    kraft_cluster: KafkaCluster,
    tmp_path: Path,
    views: Mapping[str, tuple[str, Mapping[str, object]]],
    env: dict[str, str],
    answering: set[str],
) -> tuple[dict[str, dict[str, object]], list[str]]:
    """`ctlplane run` over the same nodes once per view (name -> (the brokers' listener, the `admin:` block)),
    until the views in `answering` are ctlplane_quorum_up 1 and the others 0 (a first round may be 0 while
    the client connects) and every node is read; then each view's quorum as /api/v1/snapshot has it, and
    every page (/metrics, /api/v1/*) and the process's output, to look for secrets."""
    base = clusters_config((kraft_cluster,))[0]
    base.pop("bootstrap_controllers", None)
    clusters = []
    for name, (listener, admin) in views.items():
        bootstrap = kraft_cluster.listener_bootstrap(listener)
        assert bootstrap, f"the session cluster's brokers have no {listener} listener"
        clusters.append({**base, "name": name, "bootstrap_servers": bootstrap, "admin": admin})
    # 3 s rounds: the Admin calls' deadline is 80% of the round's, 2.4 s, room for a refused TLS handshake to
    # surface as Kafka's SslAuthenticationException (a loaded fresh-clone run saw 1.2 s end it as a
    # node-assignment timeout)
    config, port = run_config(tmp_path, clusters)
    output = tmp_path / "ctlplane.out"
    with output.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "ctlplane.cli", "run", "--config", str(config)],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env={**os.environ, **env},
        )
        try:
            wanted = [f'ctlplane_quorum_up{{cluster="{name}"}} {float(name in answering)}' for name in views] + [
                f'ctlplane_up{{cluster="{name}",node="{n.name}",role="{n.roles[0]}"}} 1.0'
                for name in views
                for n in kraft_cluster.nodes
            ]
            text = metrics_until(
                f"http://127.0.0.1:{port}", wanted, process, output.read_text, 90, "the views' quorum and nodes"
            ).decode()
            pages = [text]
            for path in ("/api/v1/snapshot", "/api/v1/health"):
                response = httpx.get(f"http://127.0.0.1:{port}{path}", timeout=5)
                assert response.status_code == 200, path
                pages.append(response.text)
            snapshot = httpx.get(f"http://127.0.0.1:{port}/api/v1/snapshot", timeout=5).json()
            quorum = {c["name"]: c.get("quorum") or {} for c in snapshot["clusters"]}
        finally:
            process.terminate()
            process.wait(timeout=20)
    return quorum, [*pages, output.read_text()]


def test_sasl_plain_and_scram_read_the_quorum_and_a_wrong_password_is_one_clear_error_never_shown(
    kraft_cluster: KafkaCluster, tmp_path: Path
) -> None:
    """Four views of the same nodes through the brokers' SASL_PLAINTEXT listener (conftest's sasl_users):
    PLAIN with the password from an environment variable, SCRAM-SHA-256 from a file, SCRAM-SHA-512, and
    PLAIN with a wrong password. The first three answer; the last is ctlplane_quorum_up 0 with Kafka's
    reason while its JMX is read as before; neither password is on any page or in the process's output."""
    user, password = next(iter(SASL_USERS.items()))
    wrong = "wrong-Pa55-" + password[::-1]
    (tmp_path / "scram-password").write_text(password + "\n")
    (tmp_path / "wrong-password").write_text(wrong)

    def sasl(mechanism: str, secret: dict[str, str]) -> tuple[str, dict[str, str]]:
        admin = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": mechanism, "username": user, **secret}
        return "SASL_PLAINTEXT", admin

    quorum, pages = _serve_views(
        kraft_cluster,
        tmp_path,
        {
            "sasl-plain": sasl("PLAIN", {"password_env": "CTLPLANE_TEST_SASL_PASSWORD"}),
            "sasl-scram": sasl("SCRAM-SHA-256", {"password_file": str(tmp_path / "scram-password")}),
            "sasl-scram-512": sasl("SCRAM-SHA-512", {"password_env": "CTLPLANE_TEST_SASL_PASSWORD"}),
            "sasl-wrong": sasl("PLAIN", {"password_file": str(tmp_path / "wrong-password")}),
        },
        {"CTLPLANE_TEST_SASL_PASSWORD": password},
        answering={"sasl-plain", "sasl-scram", "sasl-scram-512"},
    )
    error = str(quorum["sasl-wrong"].get("error") or "")
    # Kafka's own words (SaslAuthenticationException), prefixed with what was asked
    assert error.startswith("bootstrap.servers ") and "Authentication failed" in error, error
    # refused, not down: the operator's to fix (CtlplaneAdminAccessRefused), and said so on /metrics
    assert ": authentication failed: " in error, error
    assert {name: view.get("refused") for name, view in quorum.items()} == {
        "sasl-plain": False, "sasl-scram": False, "sasl-scram-512": False, "sasl-wrong": True
    }  # fmt: skip
    assert any('ctlplane_quorum_refused{cluster="sasl-wrong"} 1.0' in page for page in pages)
    assert any('ctlplane_quorum_refused{cluster="sasl-plain"} 0.0' in page for page in pages)
    for secret in (password, wrong):
        assert not [page[:200] for page in pages if secret in page], "a password is shown"


def test_tls_listeners_read_the_quorum_with_the_clusters_ca_and_say_why_when_a_certificate_is_missing(
    kraft_cluster: KafkaCluster, tmp_path: Path
) -> None:
    """Through the brokers' SSL listener (a client certificate required) and SASL_SSL (conftest's pki):
    trusting the cluster's CA with the client certificate (its key plain, or encrypted with its password in
    key_password_file; or Java's PKCS12 and JKS trust and key stores, a JKS key entry under a password of its
    own), and SASL PLAIN over TLS, answer; without a
    client certificate, or without the CA (the JVM's own trust store does not know it), the view is an
    error in Kafka's words and the JMX view goes on, as is AWS_MSK_IAM, which the listener does not offer; the
    client key is on no page and in no output."""
    assert kraft_cluster.pki is not None, "the session cluster's brokers have TLS listeners"
    pki = kraft_cluster.pki
    user, password = next(iter(SASL_USERS.items()))
    ca = str(pki.ca)
    client = {"cert_file": str(pki.cert("client")), "key_file": str(pki.key("client"))}
    # the same key encrypted (PBES2, AES-256-CBC: OpenSSL 3's default), its password in a file
    key_password = tmp_path / "key-password"
    key_password.write_text("s3cret-key\n")
    encrypted = encrypted_key(pki, "client", "s3cret-key")
    encrypted_client = {**client, "key_file": str(encrypted), "key_password_file": str(key_password)}
    # Java's own stores: PKCS12 made by openssl and keytool, JKS by keytool with a key entry of its own password
    store_password = tmp_path / "store-password"
    store_password.write_text("store-pass\n")
    pkcs12_stores = {
        "truststore": str(pkcs12_truststore(pki, "store-pass")),
        "truststore_password_file": str(store_password),
        "keystore": str(pkcs12_keystore(pki, "client", "store-pass")),
        "keystore_password_file": str(store_password),
    }
    jks_stores = {
        "truststore": str(jks_truststore(pki, "store-pass")),
        "keystore": str(jks_keystore(pki, "client", "store-pass", key_password="s3cret-key")),
        "keystore_password_file": str(store_password),
        "key_password_file": str(key_password),
    }
    quorum, pages = _serve_views(
        kraft_cluster,
        tmp_path,
        {
            "tls-client-cert": ("SSL", {"security_protocol": "SSL", "ca_file": ca, **client}),
            "tls-encrypted-key": ("SSL", {"security_protocol": "SSL", "ca_file": ca, **encrypted_client}),
            "tls-pkcs12-stores": ("SSL", {"security_protocol": "SSL", **pkcs12_stores}),
            "tls-jks-stores": ("SSL", {"security_protocol": "SSL", **jks_stores}),
            "tls-sasl": (
                "SASL_SSL",
                {
                    "security_protocol": "SASL_SSL",
                    "ca_file": ca,
                    "sasl_mechanism": "PLAIN",
                    "username": user,
                    "password_env": "CTLPLANE_TEST_SASL_PASSWORD",
                },
            ),
            "tls-no-client-cert": ("SSL", {"security_protocol": "SSL", "ca_file": ca}),
            "tls-untrusted": ("SSL", {"security_protocol": "SSL", **client}),
            # Amazon MSK's IAM login, through AWS's library, to a listener that does not offer it
            "tls-aws-iam": (
                "SASL_SSL",
                {"security_protocol": "SASL_SSL", "ca_file": ca, "sasl_mechanism": "AWS_MSK_IAM", "aws_iam": {}},
            ),
        },
        {"CTLPLANE_TEST_SASL_PASSWORD": password},
        answering={"tls-client-cert", "tls-encrypted-key", "tls-pkcs12-stores", "tls-jks-stores", "tls-sasl"},
    )
    for name in ("tls-no-client-cert", "tls-untrusted"):
        error = str(quorum[name].get("error") or "")
        assert error.startswith("bootstrap.servers ") and "SslAuthenticationException" in error, error
    # the root cause says which side: the listener refused us, or we do not trust the listener
    assert "certification path" in str(quorum["tls-untrusted"]["error"]), quorum["tls-untrusted"]
    # the library loaded, its login module parsed, and the broker's SASL handshake named the mechanism it lacks
    # (UnsupportedSaslMechanismException, SaslClientAuthenticator.handleSaslHandshakeResponse)
    error = str(quorum["tls-aws-iam"].get("error") or "")
    assert "'AWS_MSK_IAM' not enabled in the server" in error and quorum["tls-aws-iam"].get("refused"), error
    key = pki.key("client").read_text().strip().splitlines()[1]  # a line of the key's base64
    sealed = encrypted.read_text().strip().splitlines()[1]
    for secret in (password, key, sealed, "s3cret-key", "store-pass"):
        assert not [page[:200] for page in pages if secret in page], "a secret is shown"


def test_a_hung_follower_controller_leaves_the_quorum_no_spare_voter_and_its_return_restores_it(
    kraft_cluster: KafkaCluster, reader: QuorumReader
) -> None:
    """#36 redundancy: SIGSTOP of a follower voter of the 3-controller quorum. The leader stops seeing it
    reach its log end (LeaderState.updateFollowerState), so within quorum_caught_up_seconds it is behind: 3
    voters, 2 caught up, no spare voter, while the quorum keeps its leader. Resumed, it catches up and the
    spare comes back. The controllers' JMX is read too, and the quorum's word decides."""
    scraper, state = _observed(targets_of(kraft_cluster), reader, timeout_seconds=2)

    def redundancy() -> tuple[Redundancy | None, int | None]:
        scraper.scrape_once()
        health = state.current().health.cluster(KRAFT_NAME)
        assert health is not None
        return health.redundancy, health.quorum_leader_id

    def until(wanted: Redundancy, what: str, timeout: float = 60) -> int | None:
        deadline = time.monotonic() + timeout
        while True:
            found, leader = redundancy()
            if found == wanted:
                return leader
            assert time.monotonic() < deadline, f"{what}: {found} after {timeout:g} s"
            time.sleep(1)

    try:
        leader_id = until(Redundancy(3, 3, "quorum"), "a healthy quorum")
        follower = next(c for c in kraft_cluster.controllers() if c.node_id != leader_id)
        follower.pause()
        try:
            started = time.monotonic()
            leader_during = until(Redundancy(3, 2, "quorum"), "no spare voter once a follower hangs")
            behind_after = time.monotonic() - started
            assert leader_during == leader_id  # the quorum kept its leader: a warning, not a page
        finally:
            follower.resume()
        until(Redundancy(3, 3, "quorum"), "the spare back once it resumes")
        sys.stdout.write(f"\n[redundancy] a hung follower voter read behind after {behind_after:.1f} s\n")
    finally:
        scraper.stop()


@pytest.mark.kraft
def test_a_broker_cut_off_from_the_quorum_costs_the_brokers_view_no_round(kafka_workdir: Path) -> None:
    """A broker cut off from the quorum still takes the DescribeQuorum it should forward (KIP-836) and holds it:
    the Admin client's call waits for it until the call's deadline whatever request.timeout.ms says (its I/O
    thread sleeps until the next call deadline). The read asks again within its deadline, and the next call
    goes to another broker. Each read here is a fresh client that knows only the cut-off broker's address: its
    first call goes to either broker, as the least loaded, so eight reads meet the cut-off one all but once in
    256 runs (before the read asked again, a read whose first call met it failed at its deadline)."""
    link = CuttableLink((LOOPBACK, free_port()))
    cluster = start_with_a_broker_to_cut_off("quorum-cut", kafka_workdir, link)
    shared_client()  # the JVM the Admin client runs in
    timeout = 6.0
    try:
        link.cut()
        victim = cluster.node("broker-1")
        for _ in range(8):
            reader = QuorumReader(cluster.name, [victim.address], controllers=False, timeout_seconds=timeout)
            try:
                started = time.monotonic()
                view = reader.read()
                took = time.monotonic() - started
            finally:
                reader.close()
            assert view.error is None and view.leader_id == 101, view
            assert took < timeout, took  # within the round that waits for it
    finally:
        link.heal()
        link.close()
        cluster.stop()
