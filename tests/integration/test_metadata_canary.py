"""The metadata canary on real clusters (ctlplane/exporter/sources/admin/canary.py): every broker serves each
change within a second when all is well, and a broker the controller's changes no longer reach while it
stays up and answers its clients is stale by the canary's word within the threshold, and fresh again once
they reach it.

ZooKeeper mode: the controller's channel to one broker is cut (its control-plane listener reached through a
link, harness.netcut), the broker's ZooKeeper session and clients untouched: it keeps serving the metadata
it had (no UpdateMetadata arrives) and nothing of its own says so. KRaft: the closest fault a broker can be
brought to, a partition between one broker and the quorum (its fetches stop; it is fenced after its session,
and still answers clients from the image it has).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ctlplane.exporter.config.file import parse_settings
from ctlplane.exporter.health import BrokerHealth, Lifecycle
from ctlplane.exporter.model import CANARY_BUCKETS, CanaryView
from ctlplane.exporter.sources.admin.canary import RETRY_CREATE_AFTER_SECONDS, MetadataCanary
from ctlplane.exporter.sources.admin.client import QuorumReader, create_admin, security_properties
from ctlplane.exporter.state import Observation
from ctlplane.exporter.thresholds import Thresholds
from ctlplane.wiring import build_canaries
from harness.localkafka import KafkaCluster, acls, start_kraft_cluster, start_zk_cluster
from harness.localkafka.process import LOOPBACK, free_port
from harness.netcut import CuttableLink
from tests.integration.faults import ROUND_SECONDS, Timeline, pages_then_resolves, replay
from tests.integration.quorum_links import start_with_a_broker_to_cut_off
from tests.integration.watch import Watch, shared_client
from tests.kafka_versions import KRAFT_UNDER_TEST, ZK_LISTENER, ZK_UNDER_TEST

INTERVAL = 5.0  # the smallest the config allows: a change every 5 s
TIMEOUT = 5.0  # each Kafka call's
PREFIX = "ctlplane-canary-"
STALE = Thresholds().metadata_stale_seconds


def _canary(cluster: KafkaCluster) -> MetadataCanary:
    return MetadataCanary(
        cluster.name, tuple(cluster.bootstrap.split(",")), topic_prefix=PREFIX, interval_seconds=INTERVAL,
        timeout_seconds=TIMEOUT,
    ).start()  # fmt: skip


def _view(observation: Observation, cluster: str) -> CanaryView:
    snapshot = observation.snapshot.cluster(cluster)
    assert snapshot is not None and snapshot.canary is not None
    return snapshot.canary


def _broker(observation: Observation, cluster: str, node: str) -> BrokerHealth:
    health = observation.health.cluster(cluster)
    broker = health.broker(node) if health is not None else None
    assert broker is not None, node
    return broker


def _served_twice(cluster: KafkaCluster) -> object:
    def served(observation: Observation) -> bool:
        view = _view(observation, cluster.name)
        return len(view.brokers) == len(cluster.brokers()) and all(
            b.buckets and b.buckets[-1] >= 2 for b in view.brokers
        )

    return served


def _healthy_propagation(watch: Watch, cluster: KafkaCluster) -> None:
    """Every broker has served two changes or more, each well within the stale threshold, and none is stale.
    How fast is a measurement (docs/canary.md), not asserted here: a fresh cluster's first change took ~2 s
    on a loaded machine (CI, ZooKeeper mode)."""
    observation = watch.until(_served_twice(cluster), 60, "every broker serves two canary changes")  # type: ignore[arg-type]
    view = _view(observation, cluster.name)
    assert view.error is None and not view.errors_total, view
    within = CANARY_BUCKETS.index(10.0)  # the 10 s bucket, under the 15 s threshold
    for said in view.brokers:
        assert said.answered and said.buckets[within] == said.buckets[-1], said
    for broker in cluster.brokers():
        health = _broker(observation, cluster.name, broker.name)
        assert health.canary_unserved_seconds is not None and health.canary_unserved_seconds < STALE, health
        assert not health.stale, health.evidence


def _stale_within_the_threshold(watch: Watch, cluster: KafkaCluster, victim: str, cut: CuttableLink) -> None:
    """Cut: the victim is stale by the canary within the threshold of the first change it lacks, made within
    an interval of the cut but for the calls that timed out; the others are not. Healed: it serves the changes
    again.

    The calls that time out are Kafka's routing, not load: the Admin client sends CreateTopics and DeleteTopics
    to the broker its metadata names as controller, in KRaft a random alive broker (KRaftMetadataCache
    .getControllerId), and the cut-off broker holds what it is handed until the call times out (CI, 98f9e72:
    two creations lost so, the flag 29.1 s after the cut)."""
    victim_id = cluster.node(victim).node_id
    timeouts_before = _view(watch.state.current(), cluster.name).errors_total.get("timeout", 0)
    cut_at, cut_wall = time.monotonic(), time.time()
    cut.cut()
    try:
        observation = watch.until(
            lambda o: (
                _broker(o, cluster.name, victim).stale
                and "metadata canary" in _broker(o, cluster.name, victim).evidence
            ),
            60,
            f"{victim} stale by the canary",
        )
        flagged = time.monotonic() - cut_at
        view = _view(observation, cluster.name)
        answers = view.broker(victim_id)
        assert answers is not None and answers.unserved_since is not None, view
        lacks_from = answers.unserved_since - cut_wall  # the first change it lacks was asked for then
        # the threshold after that change, then a round
        assert flagged - lacks_from <= STALE + 3, (flagged, lacks_from, view)
        # that change: within an interval of the cut (and its describeCluster), each call that timed out before
        # it costing its timeout and the canary's pause before trying again
        timeouts = view.errors_total.get("timeout", 0) - timeouts_before
        assert lacks_from <= INTERVAL + 1 + timeouts * (TIMEOUT + RETRY_CREATE_AFTER_SECONDS + 0.5), (
            flagged,
            lacks_from,
            view,
        )
        broker = _broker(observation, cluster.name, victim)
        assert broker.up, broker  # it runs and answers: not a crash
        assert broker.canary_unserved_seconds is not None and broker.canary_unserved_seconds >= STALE
        for other in cluster.brokers():
            if other.name != victim:
                said = _broker(observation, cluster.name, other.name)
                assert said.canary_unserved_seconds is not None and said.canary_unserved_seconds < STALE, said
                assert "metadata canary" not in said.evidence, said.evidence
    finally:
        cut.heal()
    watch.until(
        lambda o: _broker(o, cluster.name, victim).canary_unserved_seconds == 0.0,
        60,
        f"{victim} serving the canary's changes again",
    )


@pytest.fixture
def links() -> Iterator[dict[str, CuttableLink]]:
    made: dict[str, CuttableLink] = {}
    yield made
    for link in made.values():
        link.close()


@pytest.mark.zookeeper
def test_zookeeper_a_broker_the_controller_no_longer_reaches_is_stale_by_the_canary_and_pages(
    kafka_workdir: Path, links: dict[str, CuttableLink], tmp_path: Path
) -> None:
    """The active controller's channel to one broker cut 0.5 s after a round for 7 rounds (105 s), at the 15 s
    round, recorded and replayed against the shipped rules: stale by the canary within the threshold and a
    change, KafkaBrokerMetadataCanaryUnserved the one page (30 s unserved, for 1m), resolved once healed."""
    if not ZK_LISTENER:  # a matrix entry without KIP-291's listener: the same cluster, its own listener, once
        pytest.skip("runs on the entries with the control-plane listener: the link cuts that listener alone")
    names = [f"broker-{i}" for i in (1, 2, 3)]
    ports = {name: free_port() for name in names}
    links.update({name: CuttableLink((LOOPBACK, ports[name])) for name in names})
    cluster = start_zk_cluster(
        "canary-zk",
        kafka_workdir,
        brokers=3,
        version=ZK_UNDER_TEST,
        control_plane_ports={name: (ports[name], links[name].port) for name in names},
    )
    watch = Watch(cluster)  # its JMX client starts the JVM the canary's client runs in
    # as a user's config turns it on, through the wiring `ctlplane run` uses
    settings = parse_settings(
        {
            "clusters": [
                {
                    "name": cluster.name,
                    "bootstrap_servers": cluster.bootstrap.split(","),
                    "canary": {"topic_prefix": PREFIX, "interval_seconds": INTERVAL},
                }
            ]
        }
    )
    watch.scraper.set_canaries(build_canaries(settings))
    try:
        _healthy_propagation(watch, cluster)
        health = watch.state.current().health.cluster(cluster.name)
        assert health is not None and health.controller.node is not None
        victim = next(name for name in names if name != health.controller.node)
        timeline = Timeline(watch, cluster)
        timeline.round()
        timeline.sleep_into_round(0.5)
        cut_at = time.monotonic()
        links[victim].cut()
        flagged: float | None = None
        try:
            # 105 s: the first change after the cut comes within 5 s, so by the third round it is over 30 s
            # unserved, and the rule's 1m has passed at the seventh
            for _ in range(7):
                timeline.round()
                broker = timeline.broker_rounds(victim)[-1]
                if flagged is None and broker is not None and broker.stale and "metadata canary" in broker.evidence:
                    flagged = time.monotonic() - cut_at
        finally:
            links[victim].heal()
        faulted_until = len(timeline.observations) - 1
        for _ in range(4):
            broker = timeline.broker_rounds(victim)[-1]
            if broker is not None and broker.canary_unserved_seconds == 0.0:
                break
            timeline.round()
        timeline.round()
        # the first change after the cut, the threshold, then the next round
        assert flagged is not None and flagged <= STALE + INTERVAL + ROUND_SECONDS + 3, timeline.evidence(victim)
        cut = timeline.broker_rounds(victim)[2 : faulted_until + 1]
        assert all(b is not None and b.up and b.state is Lifecycle.ACTIVE for b in cut), timeline.evidence(victim)
        for other in names:
            if other != victim:
                assert not any("metadata canary" in e for e in timeline.evidence(other)), timeline.evidence(other)
        last = len(timeline.observations) - 1
        replay(
            timeline,
            "controller-channel-cut-canary",
            pages_then_resolves(
                faulted_until, last, frozenset({("KafkaBrokerMetadataCanaryUnserved", victim)}), node=victim
            ),
            f"the active controller's channel to {victim} (its control-plane listener, through a link) cut 0.5 s "
            "after a round for 105 s, its ZooKeeper session and clients untouched; a metadata canary change "
            "every 5 s",
            tmp_path,
        )
    finally:
        watch.close()
        cluster.stop()


@pytest.mark.kraft
def test_kraft_a_broker_cut_off_from_the_quorum_is_stale_by_the_canary(
    kafka_workdir: Path, links: dict[str, CuttableLink]
) -> None:
    link = CuttableLink((LOOPBACK, free_port()))
    links["controller-1"] = link
    cluster = start_with_a_broker_to_cut_off("canary-kraft", kafka_workdir, link)
    watch = Watch(cluster)  # its JMX client starts the JVM the canary's client runs in
    watch.scraper.set_canaries({cluster.name: _canary(cluster)})
    try:
        _healthy_propagation(watch, cluster)
        _stale_within_the_threshold(watch, cluster, "broker-1", link)
    finally:
        watch.close()
        cluster.stop()


def _canary_topics(cluster: KafkaCluster) -> list[str]:
    """The canary's topics the cluster has now (Kafka's Admin client in the test's JVM)."""
    from java.util import Properties

    props = Properties()
    props.setProperty("bootstrap.servers", cluster.bootstrap)
    admin = create_admin(props)
    try:
        return sorted(str(n) for n in admin.listTopics().names().get() if str(n).startswith(PREFIX))
    finally:
        admin.close()


@pytest.mark.kraft
def test_kraft_a_creation_that_times_out_is_tried_again_at_once_and_deleted_if_it_was_made(kafka_workdir: Path) -> None:
    """The quorum frozen (its one controller SIGSTOPped): the broker holds each forwarded CreateTopics, every
    creation times out. The canary tries again after RETRY_CREATE_AFTER_SECONDS, not an interval later (a
    broker cut off from the quorum does the same to the creations it is handed at random: the test above).
    The quorum back, a change is made and the creations that timed out, made after all once the controller
    read them, are deleted with it: no canary topic is left for LEFTOVER_SECONDS."""
    cluster = start_kraft_cluster("canary-retry", kafka_workdir, controllers=1, brokers=1, version=KRAFT_UNDER_TEST)
    shared_client()  # the JVM the canary's client runs in
    timeout = 2.0
    controller = cluster.controllers()[0]
    controller.pause()
    canary = MetadataCanary(
        cluster.name, tuple(cluster.bootstrap.split(",")), topic_prefix=PREFIX, interval_seconds=30.0,
        timeout_seconds=timeout,
    ).start()  # fmt: skip
    try:
        started = time.monotonic()
        tries = 3  # an interval apart, the third would come a minute later
        deadline = started + tries * (timeout + RETRY_CREATE_AFTER_SECONDS) + 5
        while canary.view().errors_total.get("timeout", 0) < tries:
            assert time.monotonic() < deadline, canary.view()
            time.sleep(0.2)
        view = canary.view()
        assert view.changes_total == 0 and view.error is not None and "creating" in view.error, view
        controller.resume()
        deadline = time.monotonic() + 60
        while not (
            canary.view().changes_total >= 1 and all(b.buckets and b.buckets[-1] >= 1 for b in canary.view().brokers)
        ):
            assert time.monotonic() < deadline, canary.view()
            time.sleep(0.2)
        # the change's own topic deleted at its end, with every creation that timed out before it
        deadline = time.monotonic() + 20
        while left := _canary_topics(cluster):
            assert time.monotonic() < deadline, left
            time.sleep(0.5)
    finally:
        if controller.is_running:
            controller.resume()
        canary.close()
        cluster.stop()


ACL_USER, ACL_PASSWORD = "canary", "canary-Secret-1903"
# An authorizer on every node; the nodes' own PLAINTEXT listeners (between brokers and controllers, and the
# test's own kafka-acls) are User:ANONYMOUS, a super user, while the canary signs in on SASL_PLAINTEXT
SUPER_ANONYMOUS = {"super.users": "User:ANONYMOUS"}
STANDARD_AUTHORIZER = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
ACL_AUTHORIZER = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"}  # ZooKeeper mode, 2.4+
# docs/canary.md, "ACLs", as written there but for the principal
DOCUMENTED = ["--topic", PREFIX, "--resource-pattern-type", "prefixed"]


@pytest.mark.kraft
def test_with_the_documented_acls_alone_it_works_and_without_delete_it_says_so_and_makes_no_second_topic(
    kafka_workdir: Path,
) -> None:
    authorizer = STANDARD_AUTHORIZER | SUPER_ANONYMOUS
    cluster = start_kraft_cluster(
        "canary-acl",
        kafka_workdir,
        controllers=1,
        brokers=1,
        version=KRAFT_UNDER_TEST,
        sasl_users={ACL_USER: ACL_PASSWORD},
        broker_overrides=authorizer,
        node_overrides={"controller-1": authorizer},
    )
    try:
        _the_quorum_view_without_describe_on_the_cluster_is_refused_not_down(cluster)
        _documented_acls_alone_work(cluster)
    finally:
        cluster.stop()


def _the_quorum_view_without_describe_on_the_cluster_is_refused_not_down(cluster: KafkaCluster) -> None:
    """DescribeQuorum needs Describe on the cluster (docs/ports-and-acls.md): without it Kafka's
    ClusterAuthorizationException is a refusal the view names ("not authorised:"), with the ACL it answers."""
    shared_client()  # the JVM the Admin client runs in
    security = security_properties("SASL_PLAINTEXT", "SCRAM-SHA-256", ACL_USER, ACL_PASSWORD)
    reader = QuorumReader(
        cluster.name, cluster.listener_bootstrap("SASL_PLAINTEXT"), controllers=False, timeout_seconds=10.0,
        security=security,
    )  # fmt: skip
    try:
        denied = reader.read()
        assert not denied.up and denied.refused, denied
        assert denied.error is not None and ": not authorised: ClusterAuthorizationException" in denied.error, denied
        assert ACL_PASSWORD not in denied.error
        acls(cluster, "--add", "--allow-principal", f"User:{ACL_USER}", "--operation", "Describe", "--cluster")
        deadline = time.monotonic() + 30  # the authorizer's ACL cache follows the metadata log
        while not (view := reader.read()).up:
            assert time.monotonic() < deadline, view
            time.sleep(0.5)
        assert not view.refused and view.leader_id is not None, view
    finally:
        reader.close()


@pytest.mark.zookeeper
def test_zookeeper_mode_with_the_documented_acls_alone_it_works_and_without_delete_it_says_so(
    kafka_workdir: Path,
) -> None:
    """The same with AclAuthorizer, ZooKeeper mode's authorizer (ACLs in ZooKeeper; the same KafkaApis checks:
    CreateTopics, DeleteTopics and Metadata authorize the topic by name, a PREFIXED ACL matching it)."""
    cluster = start_zk_cluster(
        "canary-acl-zk",
        kafka_workdir,
        brokers=1,
        version=ZK_UNDER_TEST,
        sasl_users={ACL_USER: ACL_PASSWORD},
        node_overrides={"broker-1": ACL_AUTHORIZER | SUPER_ANONYMOUS},
    )
    try:
        _documented_acls_alone_work(cluster)
    finally:
        cluster.stop()


def _documented_acls_alone_work(cluster: KafkaCluster) -> None:
    """With Create and Describe on the prefix, Delete missing: the first topic is made and served, its deletion
    refused in one clear error, no second topic made, the brokers' health unaffected; Delete added, it goes on."""
    principal = ["--allow-principal", f"User:{ACL_USER}"]
    acls(cluster, "--add", *principal, "--operation", "Create", "--operation", "Describe", *DOCUMENTED)
    canary = MetadataCanary(
        cluster.name,
        tuple(cluster.listener_bootstrap("SASL_PLAINTEXT")),
        topic_prefix=PREFIX,
        interval_seconds=INTERVAL,
        timeout_seconds=TIMEOUT,
        security=security_properties("SASL_PLAINTEXT", "SCRAM-SHA-256", ACL_USER, ACL_PASSWORD),
    )
    watch = Watch(cluster)
    watch.scraper.set_canaries({cluster.name: canary.start()})
    try:
        refused = watch.until(
            lambda o: _view(o, cluster.name).errors_total.get("not_authorized", 0) >= 2, 60, "the deletion refused"
        )
        view = _view(refused, cluster.name)
        assert view.changes_total == 1, view
        assert view.error is not None and "TopicAuthorizationException" in view.error, view.error
        assert view.error.startswith(f"not_authorized: deleting {view.topic}"), view.error
        assert all(b.answered and b.unserved_since is None for b in view.brokers), view.brokers
        health = refused.health.cluster(cluster.name)
        assert health is not None and all(b.up and not b.stale for b in health.brokers), health  # the rest goes on
        # the one documented ACL added: the topic deleted, changes made again, nothing refused after
        acls(cluster, "--add", *principal, "--operation", "Delete", *DOCUMENTED)
        working = watch.until(lambda o: _view(o, cluster.name).changes_total >= 3, 60, "changes made again")
        view = _view(working, cluster.name)
        errors = view.errors_total.get("not_authorized", 0)
        again = watch.until(lambda o: _view(o, cluster.name).changes_total >= 5, 60, "two more changes")
        assert _view(again, cluster.name).errors_total.get("not_authorized", 0) == errors
        assert _view(again, cluster.name).error is None
        assert all(b.buckets[-1] >= 3 for b in _view(again, cluster.name).brokers)
    finally:
        watch.close()
