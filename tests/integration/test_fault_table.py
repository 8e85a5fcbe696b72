"""The fault table on real clusters (pinned: ZooKeeper 3.9 with the KIP-291 listener, KRaft 4.3; `make
test-matrix` runs it on every release of tests/kafka_versions.py's list):
each fault's lifecycle / controller states as ctlplane reports them, round by round at the default 15 s
interval, and - replayed through the shipped rules by promtool - which alerts would page.

A crash always pages, a restart never does: see docs/health-model.md "Health model" and docs/alerts.md.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from ctlplane.exporter.catalog import Mode
from ctlplane.exporter.health import Cause, Lifecycle
from ctlplane.exporter.releases import catalogue_series
from ctlplane.exporter.state import Observation
from harness.localkafka import (
    LOOPBACK,
    KafkaCluster,
    KafkaNode,
    free_port,
    major_minor,
    start_kraft_cluster,
    start_zk_cluster,
)
from harness.netcut import CuttableLink
from tests.integration.faults import (
    ROUND_SECONDS,
    CauseAt,
    Expectation,
    Timeline,
    cluster_health,
    controlled_shutdown_of_a_leader,
    healthy,
    offline_partitions,
    pages_nothing,
    pages_then_resolves,
    read_of,
    replay,
    restart_with_the_quorum_frozen,
    topic_around_fault,
)
from tests.integration.quorum_links import through_links
from tests.integration.watch import Watch, discovered_watch
from tests.kafka_versions import KRAFT_NAME, KRAFT_UNDER_TEST, ZK_LISTENER, ZK_NAME, ZK_UNDER_TEST

KRAFT = KRAFT_NAME
KRAFT_SERIES = catalogue_series(Mode.KRAFT, KRAFT_UNDER_TEST, listener=False)
# Kafka brings a crashed last replica back as the "last known leader" and counts that as an unclean election
# only with Eligible Leader Replicas on (KIP-966: PartitionChangeBuilder.canElectLastKnownLeader). A new
# cluster gets ELR by default from metadata.version 4.1-IV0 (EligibleLeaderReplicasVersion.ELRV_1's
# bootstrap version, read in the 4.0.1 and 4.1.1 server-common jars), so a 4.0 cluster never counts it
# (seen on 4.0.1) and 4.3.1 does; KRaft controllers before 3.9 have no UncleanLeaderElectionsPerSec at all.
UNCLEAN_WARNING = (
    frozenset({("KafkaUncleanLeaderElection", "")})
    if "kafka_controller_unclean_leader_elections_total" in KRAFT_SERIES and major_minor(KRAFT_UNDER_TEST) >= (4, 1)
    else frozenset()
)
# Kafka 4.1 names a controlled shutdown (faults.names_controlled_shutdown says why it matters)
NAMES_CONTROLLED_SHUTDOWN = "kafka_controller_controlled_shutdown_brokers" in KRAFT_SERIES
ZK = ZK_NAME
RESTARTED = f"{KRAFT_NAME}-restarted"
ZK_LINKED = f"{ZK_NAME}-linked"


@pytest.fixture(scope="module")
def kraft(kraft_cluster: KafkaCluster) -> Iterator[Watch]:
    watch = Watch(kraft_cluster)
    watch.until(healthy(KRAFT), 120, "healthy KRaft cluster")
    yield watch
    watch.close()


@pytest.fixture(scope="module")
def zk(zk_cluster: KafkaCluster) -> Iterator[Watch]:
    watch = Watch(zk_cluster)
    watch.until(healthy(ZK), 120, "healthy ZooKeeper-mode cluster")
    yield watch
    watch.close()


@pytest.mark.kraft
def test_kill_just_after_a_round_is_fenced_and_pages_never_shutdown_then_restarts_quietly(
    kraft: Watch, kraft_cluster: KafkaCluster, tmp_path: Path
) -> None:
    victim = kraft_cluster.brokers()[0]
    # the victim holds the only replica of a partition: its crash also takes that partition offline
    with topic_around_fault(kraft, kraft_cluster, "ctlplane-solo", [[victim.node_id]], victim):
        timeline = Timeline(kraft, kraft_cluster)
        timeline.round()
        timeline.round()
        timeline.sleep_into_round(0.5)  # kill -9 just after a round: fenced (9 s session) before the next
        victim.kill()
        for _ in range(7):  # 105 s: long enough for `for: 1m` to fire
            timeline.round()
        killed_until = len(timeline.observations) - 1
        crashed = timeline.states(victim.name)[2:]
        assert Lifecycle.SHUTDOWN not in crashed, crashed
        assert crashed[0] in (Lifecycle.FENCED, Lifecycle.UNREACHABLE), crashed
        assert set(crashed[1:]) == {Lifecycle.FENCED}, crashed
        # its JMX port refuses: the process is gone (#35), every round it was down
        timeline.expect_causes(victim.name, {Cause.PROCESS_GONE}, Lifecycle.FENCED, Lifecycle.UNREACHABLE)
        victim.start()
        for _ in range(12):
            health = timeline.round()
            broker = health.broker(victim.name)
            if (
                broker is not None
                and broker.state is Lifecycle.ACTIVE
                and offline_partitions(timeline.observations[-1], KRAFT) == 0
            ):
                break
        timeline.round()  # one more round: every alert resolved
        restarted = timeline.states(victim.name)[killed_until + 1 :]
        assert restarted[-1] is Lifecycle.ACTIVE, restarted
        assert Lifecycle.SHUTDOWN not in restarted, restarted
        started = next(i for i, s in enumerate(restarted) if s in (Lifecycle.INITIAL, Lifecycle.ACTIVE))
        assert Lifecycle.FENCED not in restarted[started:], f"fenced again once it ran: {restarted}"
        timeline.expect_causes(victim.name, {Cause.STARTING}, Lifecycle.INITIAL, exact=False)
        last = len(timeline.observations) - 1
        crash_pages = frozenset({("KafkaBrokerFenced", victim.name), ("KafkaOfflinePartitions", "")})
        replay(
            timeline,
            "kill-broker-after-round",
            [
                *pages_then_resolves(killed_until, last, crash_pages),
                CauseAt(victim.name, killed_until, Cause.PROCESS_GONE),
                # 4.1+ (UNCLEAN_WARNING) counts the crashed last replica's return as an unclean election
                # (PartitionChangeBuilder sets RECOVERING; TopicDelta counts it): unflushed records may be
                # lost, so the warning is right.
                Expectation("warning", last, UNCLEAN_WARNING, ever=True),
            ],
            f"kill -9 of {victim.name} (only replica of a partition) 0.5 s after a round, restart after 105 s",
            tmp_path,
        )


@pytest.mark.parametrize("phase", [7.5, 14.0], ids=["mid-round", "just-before-a-round"])
@pytest.mark.kraft
def test_kill_at_other_phases_of_the_round_is_never_shutdown(
    kraft: Watch, kraft_cluster: KafkaCluster, phase: float
) -> None:
    victim = kraft_cluster.brokers()[1]
    timeline = Timeline(kraft, kraft_cluster)
    timeline.round()
    timeline.sleep_into_round(phase)
    victim.kill()
    try:
        timeline.round()
        timeline.round()
        states = timeline.states(victim.name)[1:]
        assert states[0] in (Lifecycle.FENCED, Lifecycle.UNREACHABLE), timeline.evidence(victim.name)
        assert states[1] is Lifecycle.FENCED, timeline.evidence(victim.name)
        timeline.expect_causes(victim.name, {Cause.PROCESS_GONE}, Lifecycle.FENCED, Lifecycle.UNREACHABLE)
    finally:
        victim.start()
    kraft.until(healthy(KRAFT), 120, "restarted broker ACTIVE")


@pytest.mark.kraft
def test_controlled_shutdown_between_rounds_is_shutdown_and_pages_nothing_where_kafka_names_it(
    kraft: Watch, kraft_cluster: KafkaCluster, tmp_path: Path
) -> None:
    controlled_shutdown_of_a_leader(
        kraft, kraft_cluster, "ctlplane-led", "controlled-shutdown-not-restarted", "", tmp_path
    )


def _leader_partitions(o: Observation, cluster: str, node: str) -> float | None:
    read = read_of(o, cluster, node)
    return read.value("kafka_broker_leader_partitions") if read is not None else None


# A restart that takes its time (a slow JVM, a pod rescheduled): the process is gone across two rounds.
RESTART_DOWN_SECONDS = 35.0


def _heartbeat_timeouts(timeline: Timeline) -> dict[str, float]:
    """Controller -> how many broker sessions it timed out during the timeline (TimedOutBrokerHeartbeatCount:
    only the active controller counts, and a restarted controller starts again at 0)."""
    seen: dict[str, list[float]] = {}
    for observation in timeline.observations:
        cluster = observation.snapshot.cluster(timeline.cluster)
        for node in cluster.nodes if cluster is not None else ():
            value = node.value("kafka_controller_timed_out_broker_heartbeats_total")
            if value is not None:
                seen.setdefault(node.node, []).append(value)
    increases = {
        node: sum(max(0.0, later - earlier) for earlier, later in itertools.pairwise(values))
        for node, values in seen.items()
    }
    return {node: increase for node, increase in increases.items() if increase > 0}


def _leaderships(timeline: Timeline, victim: KafkaNode, brokers: tuple[KafkaNode, ...]) -> str:
    """`victim`'s rounds with every broker's own LeaderCount and the unplanned flag: what an unplanned
    reading of a restart was decided from."""
    lines = [f"{victim.name}, round by round:"]
    for index, observation in enumerate(timeline.observations):
        health = observation.health.cluster(timeline.cluster)
        broker = health.broker(victim.name) if health is not None else None
        counts = ", ".join(f"{b.name} leads {_leader_partitions(observation, KRAFT, b.name)}" for b in brokers)
        state = f"{broker.state} unplanned={broker.fenced_unplanned} {broker.evidence}" if broker else "-"
        lines.append(f"  {index}: {state} [{counts}]")
    return "\n".join(lines)


def _restart(timeline: Timeline, victim: KafkaNode) -> None:
    """SIGTERM 0.5 s after a round, start again RESTART_DOWN_SECONDS after the signal, rounds until ACTIVE."""
    timeline.sleep_into_round(0.5)
    victim.stop()  # controlled shutdown; returns once the process has exited
    down_rounds = int((RESTART_DOWN_SECONDS + 0.5) // ROUND_SECONDS)
    for _ in range(down_rounds):
        timeline.round()
    timeline.sleep_into_round(RESTART_DOWN_SECONDS + 0.5 - down_rounds * ROUND_SECONDS)
    victim.start()
    for _ in range(8):
        broker = timeline.round().broker(victim.name)
        if broker is not None and broker.state is Lifecycle.ACTIVE:
            return
    raise AssertionError(f"{victim.name} not ACTIVE after its restart: {timeline.evidence(victim.name)}")


@pytest.mark.kraft
def test_a_rolling_restart_never_reads_as_an_unplanned_fencing_and_pages_nothing(
    kraft: Watch, kraft_cluster: KafkaCluster, tmp_path: Path
) -> None:
    """A rolling restart, each broker down 35 s (two rounds): first broker-1, which leads nothing, then
    broker-2, which leads every partition of a topic. Kafka shuts a broker that leads nothing down without
    flagging a controlled shutdown (BrokerHeartbeatManager.calculateNextBrokerState: SHUTDOWN_NOW, fenced as
    after a crash), so broker-1 may read FENCED while it is gone; a leader's registration keeps
    inControlledShutdown, so on Kafka 4.1+ broker-2 reads SHUTDOWN. Neither is ever an unplanned fencing
    (kafka_broker_fenced_unplanned, the fast rule, `for: 10s`), and nothing pages: a restart never does."""
    quiet, leader = kraft_cluster.brokers()[0], kraft_cluster.brokers()[1]
    with topic_around_fault(kraft, kraft_cluster, "ctlplane-rolling", [[leader.node_id, quiet.node_id]] * 4, leader):
        # An earlier test's topic may still be on its way out (deleteTopics returns before the brokers drop
        # their leaderships): wait until each broker's own LeaderCount says what this row needs.
        kraft.until(
            lambda o: (
                _leader_partitions(o, KRAFT, quiet.name) == 0 and (_leader_partitions(o, KRAFT, leader.name) or 0) >= 4
            ),
            60,
            f"{quiet.name} leading nothing and {leader.name} leading the topic",
        )
        timeline = Timeline(kraft, kraft_cluster)
        timeline.round()
        before = timeline.observations[-1]
        assert _leader_partitions(before, KRAFT, quiet.name) == 0, timeline.evidence(quiet.name)
        assert (_leader_partitions(before, KRAFT, leader.name) or 0) >= 4, timeline.evidence(leader.name)
        _restart(timeline, quiet)
        quiet_until = len(timeline.observations)
        timeline.round()
        _restart(timeline, leader)
        timeline.round()  # one more round: nothing firing
        # the row's premise: nothing but the restarts fenced a broker. On a starved machine a running
        # broker's heartbeats can miss broker.session.timeout.ms and the controller really fences it (seen
        # at load 16 on 2 cores with a 6 s session): that fencing is real, and ctlplane is right to read it
        timed_out = _heartbeat_timeouts(timeline)
        assert not timed_out, f"the controller fenced a broker for missed heartbeats, not a restart: {timed_out}"
        for victim in (quiet, leader):
            rounds = [b for b in timeline.broker_rounds(victim.name) if b is not None]
            assert not any(b.fenced_unplanned for b in rounds), _leaderships(timeline, victim, (quiet, leader))
            # each reading of the restart says what it was: gone, a controlled shutdown, a start-up
            for states, causes in (
                ((Lifecycle.FENCED, Lifecycle.UNREACHABLE), {Cause.PROCESS_GONE}),
                ((Lifecycle.SHUTDOWN,), {Cause.CONTROLLED_SHUTDOWN}),
                ((Lifecycle.INITIAL,), {Cause.STARTING}),
            ):
                timeline.expect_causes(victim.name, causes, *states, exact=False)
        if NAMES_CONTROLLED_SHUTDOWN:
            restarted = timeline.states(leader.name)[quiet_until:]
            assert Lifecycle.FENCED not in restarted, timeline.evidence(leader.name)
            assert Lifecycle.SHUTDOWN in restarted, timeline.evidence(leader.name)
        last = len(timeline.observations) - 1
        replay(
            timeline,
            "rolling-restart",
            pages_nothing(last),
            f"rolling restart: SIGTERM 0.5 s after a round, started again {RESTART_DOWN_SECONDS:g} s later, "
            f"first {quiet.name} (leading nothing), then {leader.name} (leading 4 partitions)",
            tmp_path,
        )


@pytest.fixture(scope="module")
def quorum_links() -> Iterator[dict[int, CuttableLink]]:
    """broker-1's links to each controller of the module's own cluster (node id -> link): cut, they are a
    network partition between that broker and the quorum while its JMX still answers."""
    links = {nid: CuttableLink((LOOPBACK, free_port())) for nid in (101, 102, 103)}
    yield links
    for link in links.values():
        link.close()


@pytest.fixture(scope="module")
def restarted_kraft(kafka_workdir: Path, quorum_links: dict[int, CuttableLink]) -> Iterator[tuple[KafkaCluster, Watch]]:
    """A KRaft cluster of its own: a restarted controller has no per-broker registration gauges for good
    (until a broker registers anew, ControllerMetadataMetricsPublisher), and once such a controller is active
    again the shared cluster's other tests would see that. broker-1 reaches the quorum only through
    `quorum_links` (`through_links`)."""
    # A broker that cannot register within initial.broker.registration.timeout.ms (60 s by default,
    # KRaftConfigs) exits; the start-up test holds one longer than that on purpose.
    controller_ports = {nid: free_port() for nid in quorum_links}
    overrides = through_links("broker-1", quorum_links, controller_ports)
    cluster = start_kraft_cluster(
        RESTARTED,
        kafka_workdir,
        version=KRAFT_UNDER_TEST,
        controllers=3,
        brokers=2,
        broker_overrides={"initial.broker.registration.timeout.ms": "300000"},
        node_overrides=overrides,
        controller_ports=controller_ports,
    )
    watch = Watch(cluster)
    try:
        watch.until(healthy(RESTARTED), 120, "healthy KRaft cluster")
        yield cluster, watch
    finally:
        watch.close()
        cluster.stop()


@pytest.mark.kraft
def test_a_broker_cut_off_from_the_controllers_while_its_jmx_answers_is_fenced_and_pages(
    restarted_kraft: tuple[KafkaCluster, Watch], quorum_links: dict[int, CuttableLink], tmp_path: Path
) -> None:
    """A partition between one broker and the quorum: its heartbeats stop reaching the active controller,
    which fences it after broker.session.timeout.ms (BrokerHeartbeatManager), while the broker itself keeps
    BrokerState RUNNING and its JMX answers. Only the controller's view tells: FENCED, and it pages; once
    the network heals it catches up, is unfenced and the page resolves."""
    cluster_, kraft = restarted_kraft
    victim = cluster_.node("broker-1")
    kraft.until(healthy(RESTARTED), 120, "healthy")
    timeline = Timeline(kraft, cluster_)
    timeline.round()
    timeline.sleep_into_round(0.5)
    for link in quorum_links.values():
        link.cut()
    try:
        # 45 s cut off: a running broker fenced is unplanned on every KRaft release, so the fast rule (`for: 10s`) has
        # fired by then (fenced by the first round, fired at the second's evaluation)
        for _ in range(3):
            timeline.round()
    finally:
        for link in quorum_links.values():
            link.heal()
    cut_until = len(timeline.observations) - 1
    during = [b for b in timeline.broker_rounds(victim.name)[1:] if b is not None]
    assert len(during) == 3 and all(b.up for b in during), timeline.evidence(victim.name)  # JMX answered
    assert during[-1].fenced_unplanned, timeline.evidence(victim.name)
    states = [b.state for b in during]
    assert states[0] in (Lifecycle.ACTIVE, Lifecycle.FENCED), timeline.evidence(victim.name)
    assert set(states[1:]) == {Lifecycle.FENCED}, timeline.evidence(victim.name)
    # its own JMX says RUNNING while the controller fences it (#35)
    timeline.expect_causes(victim.name, {Cause.CUT_OFF_FROM_CONTROLLER}, Lifecycle.FENCED, until=cut_until)
    assert during[-1].stale, timeline.evidence(victim.name)  # and its metadata stopped with the partition
    for _ in range(8):
        broker = timeline.round().broker(victim.name)
        if broker is not None and broker.state is Lifecycle.ACTIVE and not broker.stale:
            break
    timeline.round()  # one more round: every alert resolved
    assert timeline.states(victim.name)[-1] is Lifecycle.ACTIVE, timeline.evidence(victim.name)
    last = len(timeline.observations) - 1
    pages = frozenset({("KafkaBrokerFenced", victim.name)})
    replay(
        timeline,
        "broker-cut-off-from-controllers",
        [
            *pages_then_resolves(cut_until, last, pages, node=victim.name),
            CauseAt(victim.name, cut_until, Cause.CUT_OFF_FROM_CONTROLLER),
        ],
        f"{victim.name}'s links to every controller cut 0.5 s after a round for 45 s (JMX answering), then healed",
        tmp_path,
    )


@pytest.mark.kraft
def test_killed_active_controller_fails_over_exactly_once_pages_nothing_and_warns_of_no_spare_voter(
    restarted_kraft: tuple[KafkaCluster, Watch], tmp_path: Path
) -> None:
    """kill -9 of the active controller 0.5 s after a round: the remaining voters elect a new leader within
    the election timeout (KafkaRaftClient), so every round has at most one active controller, the identity
    moves exactly once and stays when the old one comes back as a follower; a single failover is not churn
    and a quorum that kept its majority is not a page. It has no spare voter while the old one is down
    (90 s): KafkaQuorumNoSpareVoter warns (#36), and resolves once it is back."""
    cluster_, kraft = restarted_kraft
    start = kraft.until(healthy(RESTARTED), 120, "healthy")
    before = cluster_health(start, RESTARTED).controller
    old = cluster_.node(before.node)  # type: ignore[arg-type]
    timeline = Timeline(kraft, cluster_)
    timeline.round()
    timeline.sleep_into_round(0.5)
    old.kill()
    try:
        for _ in range(6):  # 90 s down: `for: 1m` of KafkaNoActiveController would have fired by then
            timeline.round()
    finally:
        old.start()
    for _ in range(8):
        if healthy(RESTARTED)(timeline.observations[-1]):
            break
        timeline.round()
    for _ in range(2):  # two more rounds with the old controller back as a follower
        timeline.round()
    controllers = [cluster_health(o, RESTARTED).controller for o in timeline.observations]
    assert all(cluster_health(o, RESTARTED).active_controllers <= 1 for o in timeline.observations), controllers
    identities = [c.node for c in controllers if c.node is not None]
    changes = sum(1 for a, b in itertools.pairwise(identities) if a != b)
    assert changes == 1 and identities[-1] != old.name, identities
    assert controllers[-1].failovers_total == before.failovers_total + 1, controllers
    spares = [r.spare if (r := cluster_health(o, RESTARTED).redundancy) else None for o in timeline.observations]
    assert spares[0] == 1 and set(spares[1:7]) <= {0, -1} and spares[-1] == 1, spares  # 3 voters, 1 killed
    last = len(timeline.observations) - 1
    no_spare = frozenset({("KafkaQuorumNoSpareVoter", "")})
    replay(
        timeline,
        "kill-active-controller",
        [
            Expectation("critical", last, frozenset(), ever=True),
            Expectation("warning", last, no_spare, ever=True),  # a warning, never a page
            Expectation("warning", last, frozenset()),  # resolved once the old controller is back in step
        ],
        f"kill -9 of the active controller {old.name} 0.5 s after a round, restarted after 90 s",
        tmp_path,
    )


def _registration_gauges(o: Observation, controller: str) -> set[str]:
    node = read_of(o, RESTARTED, controller)
    assert node is not None, controller
    return {dict(s.labels)["broker"] for s in node.series_samples("kafka_controller_broker_registration_state")}


def _restart_controllers_with_registration_gauges(cluster: KafkaCluster, watch: Watch) -> Observation:
    """Restart, one at a time (the quorum keeps a majority), every controller that has a BrokerRegistrationState
    gauge. Kafka creates BrokerRegistrationState,broker=N only for a registration change a controller sees
    while running, never from the snapshot a restarted controller loads (ControllerMetadataMetricsPublisher):
    afterwards no controller has one, as after a rolling restart of the controllers in production."""
    observation = watch.until(healthy(RESTARTED), 120, "healthy before the controllers restart")
    for controller in cluster.controllers():
        if not _registration_gauges(observation, controller.name):
            continue
        controller.stop()
        controller.start()
        controller.wait_ready(120)
        observation = watch.until(healthy(RESTARTED), 120, f"{controller.name} back")
    observation = watch.until(healthy(RESTARTED), 120, "healthy after the controllers restarted")
    for controller in cluster.controllers():
        assert not _registration_gauges(observation, controller.name), controller.name
    return observation


@pytest.mark.kraft
def test_a_hung_broker_is_fenced_and_pages_after_every_controller_restarted(
    restarted_kraft: tuple[KafkaCluster, Watch], tmp_path: Path
) -> None:
    """SIGSTOP of a broker on a cluster whose controllers all restarted since the brokers registered, so no
    controller has a per-broker BrokerRegistrationState: the broker's JMX stops answering and the active
    controller fences it after broker.session.timeout.ms; FencedBrokerCount alone tells, so ctlplane says
    FENCED from the second round on and KafkaBrokerFenced pages; resumed, it is unfenced and it resolves."""
    cluster_, kraft = restarted_kraft
    _restart_controllers_with_registration_gauges(cluster_, kraft)
    victim = cluster_.brokers()[0]
    timeline = Timeline(kraft, cluster_)
    timeline.round()
    timeline.sleep_into_round(0.5)
    victim.pause()
    try:
        for _ in range(6):  # 90 s hung: `for: 1m` has fired by then
            timeline.round()
    finally:
        victim.resume()
    hung_until = len(timeline.observations) - 1
    hung = timeline.states(victim.name)[1:]
    assert hung[0] in (Lifecycle.FENCED, Lifecycle.UNREACHABLE), timeline.evidence(victim.name)
    assert set(hung[1:]) == {Lifecycle.FENCED}, timeline.evidence(victim.name)
    # its JMX port takes connections and never answers: hung, or cut off from ctlplane and the controller alike
    timeline.expect_causes(victim.name, {Cause.HUNG_OR_ISOLATED}, Lifecycle.FENCED, Lifecycle.UNREACHABLE)
    assert "FencedBrokerCount" in timeline.evidence(victim.name)[-1], timeline.evidence(victim.name)
    for _ in range(8):
        if timeline.round().broker(victim.name).state is Lifecycle.ACTIVE:  # type: ignore[union-attr]
            break
    timeline.round()  # one more round: resolved
    assert timeline.states(victim.name)[-1] is Lifecycle.ACTIVE, timeline.evidence(victim.name)
    last = len(timeline.observations) - 1
    replay(
        timeline,
        "broker-hung-after-controllers-restarted",
        [
            Expectation("critical", hung_until, frozenset({("KafkaBrokerFenced", victim.name)}), node=victim.name),
            CauseAt(victim.name, hung_until, Cause.HUNG_OR_ISOLATED),
            Expectation("critical", last, frozenset(), node=victim.name),
        ],
        f"SIGSTOP of {victim.name} 0.5 s after a round for 90 s, then SIGCONT, after a rolling restart of the "
        "controllers (no BrokerRegistrationState gauges)",
        tmp_path,
    )


@pytest.mark.kraft
def test_a_crash_without_registration_gauges_is_fenced_never_shutdown(
    restarted_kraft: tuple[KafkaCluster, Watch],
) -> None:
    """kill -9 of a broker on a cluster whose controllers all restarted since the brokers registered: gone,
    fenced by FencedBrokerCount alone, and no ControlledShutdownBrokerCount for it (a crash never goes
    through controlled shutdown, BrokerHeartbeatManager): FENCED, never SHUTDOWN."""
    cluster_, kraft = restarted_kraft
    _restart_controllers_with_registration_gauges(cluster_, kraft)
    victim = cluster_.brokers()[1]
    timeline = Timeline(kraft, cluster_)
    timeline.round()
    timeline.sleep_into_round(0.5)
    victim.kill()
    try:
        timeline.round()
        timeline.round()
    finally:
        victim.start()
    crashed = timeline.states(victim.name)[1:]
    assert crashed[0] in (Lifecycle.FENCED, Lifecycle.UNREACHABLE), timeline.evidence(victim.name)
    assert crashed[1] is Lifecycle.FENCED, timeline.evidence(victim.name)
    assert "FencedBrokerCount" in timeline.evidence(victim.name)[-1], timeline.evidence(victim.name)
    timeline.expect_causes(victim.name, {Cause.PROCESS_GONE}, Lifecycle.FENCED, Lifecycle.UNREACHABLE)
    kraft.until(healthy(RESTARTED), 120, "restarted broker ACTIVE")


@pytest.mark.kraft
def test_controlled_shutdown_without_registration_gauges_is_shutdown_where_kafka_names_it(
    restarted_kraft: tuple[KafkaCluster, Watch], tmp_path: Path
) -> None:
    """After a rolling restart of the controllers no controller has a per-broker BrokerRegistrationState, so
    a SIGTERM'd broker is gone with only FencedBrokerCount to say it is fenced; ControlledShutdownBrokerCount
    (publishSnapshot sets it from the image) still says it shut down on purpose: SHUTDOWN, and no page."""
    cluster_, kraft = restarted_kraft
    _restart_controllers_with_registration_gauges(cluster_, kraft)
    timeline, victim = controlled_shutdown_of_a_leader(
        kraft,
        cluster_,
        "ctlplane-led-ungauged",
        "controlled-shutdown-without-registration-gauges",
        ", after a rolling restart of the controllers (no BrokerRegistrationState gauges)",
        tmp_path,
    )
    if NAMES_CONTROLLED_SHUTDOWN:
        # the count, not a gauge, told it apart (the round after the stop, once the process is gone)
        evidence = timeline.evidence(victim.name)
        assert any("ControlledShutdownBrokerCount" in e for e in evidence), evidence


@pytest.mark.kraft
def test_a_restart_held_in_start_up_is_initial_and_never_pages_as_fenced(
    restarted_kraft: tuple[KafkaCluster, Watch], tmp_path: Path
) -> None:
    """A broker restarted while it cannot reach a controller quorum stays in BrokerState STARTING (1): Kafka's
    BrokerLifecycleManager leaves STARTING only when a heartbeat response says it has caught up, and RECOVERY
    (2) only when one says it is unfenced. Those states are start-up, not fencing: INITIAL in every round,
    and KafkaBrokerFenced never fires for it, however long the start takes."""
    cluster_, kraft = restarted_kraft
    kraft.until(healthy(RESTARTED), 120, "healthy")
    victim = cluster_.brokers()[1]
    timeline = Timeline(kraft, cluster_)
    timeline.round()
    with restart_with_the_quorum_frozen(cluster_, victim):
        for _ in range(6):  # 90 s held in start-up: any FENCED reading would page by then (`for: 1m`)
            timeline.round()
    held = timeline.states(victim.name)[1:]
    answered = [state for state in held if state is not Lifecycle.UNREACHABLE]  # the JVM's first seconds
    assert len(answered) >= 4 and set(answered) == {Lifecycle.INITIAL}, timeline.evidence(victim.name)
    timeline.expect_causes(victim.name, {Cause.STARTING}, Lifecycle.INITIAL)
    # the last round that read its BrokerState (a loaded run saw the last held round's read time out)
    last_read = [e for e in timeline.evidence(victim.name) if "BrokerState=" in e][-1]
    assert "BrokerState=STARTING" in last_read, timeline.evidence(victim.name)
    for _ in range(12):
        broker = timeline.round().broker(victim.name)
        if broker is not None and broker.state is Lifecycle.ACTIVE:
            break
    assert timeline.states(victim.name)[-1] is Lifecycle.ACTIVE, timeline.evidence(victim.name)
    last = len(timeline.observations) - 1
    replay(
        timeline,
        "restart-held-in-start-up",
        [Expectation("critical", last, frozenset(), ever=True, node=victim.name)],
        f"{victim.name} killed and restarted while 2 of 3 controllers are frozen for 90 s",
        tmp_path,
    )
    kraft.until(healthy(RESTARTED), 120, "healthy again")


@pytest.mark.kraft
def test_discovered_brokers_killed_and_hung_are_fenced_and_page_as_listed_ones(
    restarted_kraft: tuple[KafkaCluster, Watch], tmp_path: Path
) -> None:
    """ctlplane given one address per cluster (`bootstrap_controllers`) and a JMX rule, no node listed
    (issue #33): kill -9 of one discovered broker and SIGSTOP of the other, 0.5 s after a round, give the
    states and pages of listed ones (the rows above): FENCED from the second round, never SHUTDOWN,
    KafkaBrokerFenced for each by name; both back ACTIVE and resolved, nothing else critical."""
    cluster_, _ = restarted_kraft
    watch = discovered_watch(cluster_)
    try:
        everyone = len(cluster_.nodes)
        watch.until(
            lambda o: healthy(RESTARTED)(o) and len(list(o.snapshot.nodes())) == everyone, 120, "every node found"
        )
        killed, hung = cluster_.brokers()[1], cluster_.brokers()[0]
        timeline = Timeline(watch, cluster_)
        timeline.round()
        timeline.round()
        timeline.sleep_into_round(0.5)
        killed.kill()
        hung.pause()
        try:
            for _ in range(7):  # 105 s: `for: 1m` has fired
                timeline.round()
        finally:
            hung.resume()
        faulted_until = len(timeline.observations) - 1
        for victim in (killed, hung):
            states = timeline.states(victim.name)[2:]
            assert Lifecycle.SHUTDOWN not in states, timeline.evidence(victim.name)
            assert states[0] in (Lifecycle.FENCED, Lifecycle.UNREACHABLE), timeline.evidence(victim.name)
            assert set(states[1:]) == {Lifecycle.FENCED}, timeline.evidence(victim.name)
        for victim, cause in ((killed, Cause.PROCESS_GONE), (hung, Cause.HUNG_OR_ISOLATED)):
            timeline.expect_causes(victim.name, {cause}, Lifecycle.FENCED, Lifecycle.UNREACHABLE)
        killed.start()
        for _ in range(12):
            health = timeline.round()
            if all((b := health.broker(v.name)) is not None and b.state is Lifecycle.ACTIVE for v in (killed, hung)):
                break
        timeline.round()  # one more round: resolved
        for victim in (killed, hung):
            assert timeline.states(victim.name)[-1] is Lifecycle.ACTIVE, timeline.evidence(victim.name)
        last = len(timeline.observations) - 1
        pages = frozenset({("KafkaBrokerFenced", killed.name), ("KafkaBrokerFenced", hung.name)})
        replay(
            timeline,
            "discovered-brokers-killed-and-hung",
            [
                *pages_then_resolves(faulted_until, last, pages),
                CauseAt(killed.name, faulted_until, Cause.PROCESS_GONE),
                CauseAt(hung.name, faulted_until, Cause.HUNG_OR_ISOLATED),
            ],
            f"no node listed, every node discovered through bootstrap_controllers: kill -9 of {killed.name} and "
            f"SIGSTOP of {hung.name} 0.5 s after a round for 105 s, then restart and SIGCONT",
            tmp_path,
        )
    finally:
        watch.close()


@pytest.mark.zookeeper
def test_zookeeper_mode_kill_just_after_a_round_is_fenced_pages_and_restarts_quietly(
    zk: Watch, zk_cluster: KafkaCluster, tmp_path: Path
) -> None:
    """kill -9 of a ZooKeeper-mode broker (not the controller) holding a partition's only replica, 0.5 s
    after a round: its session expires after zookeeper.session.timeout.ms (6 s here), ZooKeeper deletes
    /brokers/ids/N and the controller drops it (KafkaController.onBrokerFailure ->
    ControllerChannelManager.removeBroker): FENCED by the controller's word from the first round it shows,
    never SHUTDOWN (it never asked the controller to shut down) and so unplanned in every FENCED round (the
    10 s rule); KafkaBrokerFenced pages with KafkaOfflinePartitions; restarted, it is ACTIVE and both
    resolve."""
    start = zk.until(healthy(ZK), 60, "healthy")
    controller = cluster_health(start, ZK).controller.node
    victim = next(b for b in zk_cluster.brokers() if b.name != controller)
    with topic_around_fault(zk, zk_cluster, "ctlplane-solo-zk", [[victim.node_id]], victim):
        timeline = Timeline(zk, zk_cluster)
        timeline.round()
        timeline.sleep_into_round(0.5)
        victim.kill()
        for _ in range(7):  # 105 s: `for: 1m` has fired by then
            timeline.round()
        killed_until = len(timeline.observations) - 1
        crashed = timeline.states(victim.name)[1:]
        assert crashed[0] in (Lifecycle.UNREACHABLE, Lifecycle.FENCED), timeline.evidence(victim.name)
        assert set(crashed[1:]) == {Lifecycle.FENCED}, timeline.evidence(victim.name)
        assert "no request queue for broker" in timeline.evidence(victim.name)[-1]
        fenced = [b for b in timeline.broker_rounds(victim.name)[1:] if b is not None and b.state is Lifecycle.FENCED]
        assert fenced and all(b.fenced_unplanned for b in fenced), timeline.evidence(victim.name)
        timeline.expect_causes(victim.name, {Cause.PROCESS_GONE}, Lifecycle.FENCED, Lifecycle.UNREACHABLE)
        victim.start()
        for _ in range(12):
            broker = timeline.round().broker(victim.name)
            if (
                broker is not None
                and broker.state is Lifecycle.ACTIVE
                and offline_partitions(timeline.observations[-1], ZK) == 0
            ):
                break
        timeline.round()  # one more round: every alert resolved
        restarted = timeline.states(victim.name)[killed_until + 1 :]
        assert restarted[-1] is Lifecycle.ACTIVE and Lifecycle.SHUTDOWN not in restarted, restarted
        last = len(timeline.observations) - 1
        crash_pages = frozenset({("KafkaBrokerFenced", victim.name), ("KafkaOfflinePartitions", "")})
        replay(
            timeline,
            "kill-broker-after-round",
            [
                *pages_then_resolves(killed_until, last, crash_pages),
                CauseAt(victim.name, killed_until, Cause.PROCESS_GONE),
            ],
            f"kill -9 of {victim.name} (only replica of a partition, not the controller) 0.5 s after a round, "
            "restart after 105 s",
            tmp_path,
        )


@pytest.mark.zookeeper
def test_zookeeper_mode_controlled_shutdown_between_rounds_is_shutdown_and_pages_nothing(
    zk: Watch, zk_cluster: KafkaCluster, tmp_path: Path
) -> None:
    """A ZooKeeper-mode broker's controlled shutdown is over in well under a round: no round reads its
    BrokerState PENDING_CONTROLLED_SHUTDOWN. The controller served its ControlledShutdown request
    (KafkaServer.controlledShutdown -> KafkaController.doControlledShutdown), one for the one broker gone:
    SHUTDOWN with that evidence from the first round, nothing pages."""
    timeline, victim = controlled_shutdown_of_a_leader(
        zk, zk_cluster, "ctlplane-led-zk", "controlled-shutdown-not-restarted", "", tmp_path
    )
    assert "ControlledShutdown request" in timeline.evidence(victim.name)[1], timeline.evidence(victim.name)


@pytest.fixture(scope="module")
def zk_linked(
    zk_cluster: KafkaCluster, kafka_workdir: Path
) -> Iterator[tuple[KafkaCluster, Watch, dict[str, CuttableLink]]]:
    """A ZooKeeper-mode cluster of two brokers on the shared ZooKeeper (its own chroot), each broker reaching
    ZooKeeper through a link of its own (node name -> link) that a test can cut."""
    zookeeper = zk_cluster.zookeeper
    assert zookeeper is not None
    links = {f"broker-{i}": CuttableLink((LOOPBACK, zookeeper.port)) for i in (1, 2)}
    try:
        cluster = start_zk_cluster(
            ZK_LINKED,
            kafka_workdir,
            brokers=2,
            version=ZK_UNDER_TEST,
            control_plane_listener=ZK_LISTENER,
            zookeeper=zookeeper,
            node_overrides={
                name: {"zookeeper.connect": f"{LOOPBACK}:{link.port}/{ZK_LINKED}"} for name, link in links.items()
            },
        )
        watch = Watch(cluster)
        try:
            watch.until(healthy(ZK_LINKED), 120, "healthy ZooKeeper-mode cluster")
            yield cluster, watch, links
        finally:
            watch.close()
            cluster.stop()
    finally:
        for link in links.values():
            link.close()


@pytest.mark.zookeeper
def test_a_zookeeper_mode_broker_cut_off_from_zookeeper_pages_and_its_expired_session_warns(
    zk_linked: tuple[KafkaCluster, Watch, dict[str, CuttableLink]], tmp_path: Path
) -> None:
    """A ZooKeeper-mode broker is alive for the cluster only while it holds its ZooKeeper session (its
    /brokers/ids/N is ephemeral, KafkaZkClient.registerBroker):
    cut off from ZooKeeper for longer than zookeeper.session.timeout.ms (6 s here), its client stops being
    CONNECTED, ZooKeeper expires the session and deletes /brokers/ids/N, and the controller moves its
    leadership away, while its JMX answers and BrokerState stays RUNNING: ctlplane says FENCED (the
    controller dropped it, `_zookeeper_deregistered`) and KafkaZooKeeperSessionLost pages;
    once the network heals the client is told the session expired and starts a new one
    (ZooKeeperClient, SessionExpireListener's ZooKeeperExpiresPerSec), and KafkaZooKeeperSessionExpired warns."""
    cluster_, watch, links = zk_linked
    start = watch.until(healthy(ZK_LINKED), 60, "healthy")
    controller = cluster_health(start, ZK_LINKED).controller.node
    victim = next(b for b in cluster_.brokers() if b.name != controller)
    timeline = Timeline(watch, cluster_)
    timeline.round()
    timeline.sleep_into_round(0.5)
    links[victim.name].cut()
    try:
        for _ in range(6):  # 90 s: `for: 1m` has fired by then
            timeline.round()
    finally:
        links[victim.name].heal()
    cut_until = len(timeline.observations) - 1
    during = [b for b in timeline.broker_rounds(victim.name)[1:] if b is not None]
    assert len(during) == 6 and all(b.up for b in during), timeline.evidence(victim.name)  # JMX answered
    sessions = [_session_state(o, victim.name) for o in timeline.observations[1 : cut_until + 1]]
    assert "CONNECTED" not in sessions[1:], sessions
    # out of the live set while BrokerState stays RUNNING: FENCED by the controller's word, never ACTIVE
    states = [b.state for b in during]
    assert states[0] in (Lifecycle.ACTIVE, Lifecycle.FENCED), timeline.evidence(victim.name)
    assert set(states[1:]) == {Lifecycle.FENCED}, timeline.evidence(victim.name)
    timeline.expect_causes(victim.name, {Cause.ZOOKEEPER_SESSION_LOST}, Lifecycle.FENCED, until=cut_until)
    for _ in range(8):
        timeline.round()
        if _session_state(timeline.observations[-1], victim.name) == "CONNECTED":
            break
    timeline.round()  # one more round: the session alert resolved
    assert _session_state(timeline.observations[-1], victim.name) == "CONNECTED"
    assert timeline.states(victim.name)[-1] is Lifecycle.ACTIVE, timeline.evidence(victim.name)
    last = len(timeline.observations) - 1
    # both fire; alerts/alertmanager.yml lets the session alert, which names the cause, inhibit the fencing one
    lost = frozenset({("KafkaZooKeeperSessionLost", victim.name), ("KafkaBrokerFenced", victim.name)})
    expired = frozenset({("KafkaZooKeeperSessionExpired", victim.name)})
    replay(
        timeline,
        "broker-cut-off-from-zookeeper",
        [
            Expectation("critical", cut_until, lost, node=victim.name),
            CauseAt(victim.name, cut_until, Cause.ZOOKEEPER_SESSION_LOST),
            Expectation("critical", last, frozenset(), node=victim.name),
            Expectation("warning", last, expired, node=victim.name),
        ],
        f"{victim.name}'s link to ZooKeeper cut 0.5 s after a round for 90 s "
        "(JMX answering, zookeeper.session.timeout.ms 6 s), then healed",
        tmp_path,
    )


def _session_state(o: Observation, node: str) -> str | None:
    """The ZooKeeper session state `node` reported in that round (kafka_zookeeper_session_state)."""
    snapshot = read_of(o, ZK_LINKED, node)
    if snapshot is None:
        return None
    return next(
        (dict(s.labels)["state"] for s in snapshot.series_samples("kafka_zookeeper_session_state") if s.value == 1),
        None,
    )
