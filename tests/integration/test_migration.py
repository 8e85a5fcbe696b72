"""A real ZooKeeper -> KRaft migration (KIP-866), phase by phase, read by ctlplane.

ZooKeeper brokers and a KRaft controller with the migration flag (PRE_MIGRATION), the brokers rolled with
the flag (MIGRATION: the KRaft leader takes over /controller and drives the ZooKeeper brokers through its
own ControllerChannelManager), one and then every broker rolled as a KRaft broker (still MIGRATION: dual
write), and the controller rolled without the flag (POST_MIGRATION). At each phase: ZooKeeper brokers are
ZooKeeper-mode brokers (a migrating one runs a raft observer, which once made ctlplane call it a KRaft
combined node), the KRaft leader is the one active controller, the phase is named, and every broker is
ACTIVE with a metadata lag from the right source. About 45 s on 3.9.2 (`make test`); `make test-matrix` runs
it on every ZooKeeper release from 3.6 (metadata transactions, which a migration needs).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ctlplane.exporter.catalog import Mode, Role
from ctlplane.exporter.health import ClusterHealth, Lifecycle
from ctlplane.exporter.state import Observation
from harness.localkafka import KafkaCluster, ZooKeeperServer, major_minor
from harness.localkafka.migration import (
    enable_migration_on_brokers,
    finalize_migration,
    roll_brokers_to_kraft,
    start_migrating_cluster,
)
from tests.integration.faults import Expectation, Timeline, cluster_health, pages_then_resolves, replay
from tests.integration.watch import Watch
from tests.kafka_versions import ZK_LISTENER, ZK_NAME, ZK_UNDER_TEST

MIGRATING = f"{ZK_NAME}-migration"
DUAL_WRITE = f"{ZK_NAME}-dual-write"

pytestmark = [
    pytest.mark.zookeeper,
    pytest.mark.skipif(
        major_minor(ZK_UNDER_TEST) < (3, 6) or not ZK_LISTENER,
        reason="a migration needs 3.6+; run once per release (the entry with the listener)",
    ),
]


@pytest.fixture  # one test, and its cluster gone before the next test starts its own
def migrating(kafka_workdir: Path, zookeeper: ZooKeeperServer) -> Iterator[tuple[KafkaCluster, Watch]]:
    cluster = start_migrating_cluster(MIGRATING, kafka_workdir, brokers=3, version=ZK_UNDER_TEST, zookeeper=zookeeper)
    watch = Watch(cluster, timeout=2.0)
    try:
        yield cluster, watch
    finally:
        watch.close()
        cluster.stop()


def _phase(name: str | None, modes: dict[str, Mode], cluster: str = MIGRATING) -> Callable[[Observation], bool]:
    """`cluster` says migration phase `name`, its brokers have `modes`, every broker is ACTIVE with one
    active controller, and every broker's metadata lag is known."""

    def check(o: Observation) -> bool:
        snapshot, health = o.snapshot.cluster(cluster), cluster_health(o, cluster)
        if snapshot is None or not all(n.up for n in snapshot.nodes):
            return False
        return (
            health.migration_phase == name
            and {n.node: n.mode for n in snapshot.nodes if n.role is not Role.CONTROLLER} == modes
            and all(b.state is Lifecycle.ACTIVE and b.metadata_lag_records is not None for b in health.brokers)
            and health.active_controllers == 1
        )

    return check


def _controller_is_the_kraft_leader(health: ClusterHealth) -> None:
    assert health.controller.node == "controller-1", health.controller
    assert health.controller.claimants == ("controller-1",), health.controller


def test_every_phase_of_a_migration_reads_right(migrating: tuple[KafkaCluster, Watch]) -> None:
    cluster, watch = migrating
    zookeeper_brokers = {b.name: Mode.ZOOKEEPER for b in cluster.brokers()}

    # PRE_MIGRATION: the ZooKeeper brokers' own controller still claims too; it is not a second controller.
    # Waited for with every node read: the controller can say the phase before a just-started broker's first
    # read has come back (a node not read yet has no mode, by design; CI saw it once on a loaded machine)
    def pre_migration(o: Observation) -> bool:
        snapshot = o.snapshot.cluster(MIGRATING)
        every_node_read = snapshot is not None and all(n.up for n in snapshot.nodes)
        return every_node_read and cluster_health(o, MIGRATING).migration_phase == "PRE_MIGRATION"

    o = watch.until(pre_migration, 60, "PRE_MIGRATION, every node read")
    health, snapshot = cluster_health(o, MIGRATING), o.snapshot.cluster(MIGRATING)
    assert health.mode is Mode.MIGRATION
    assert snapshot is not None and {n.node: (n.mode, n.role) for n in snapshot.nodes} == {
        **dict.fromkeys(zookeeper_brokers, (Mode.ZOOKEEPER, Role.BROKER)),
        "controller-1": (Mode.MIGRATION, Role.CONTROLLER),
    }
    _controller_is_the_kraft_leader(health)

    # MIGRATION: brokers rolled with the flag run a raft observer and stay ZooKeeper-mode brokers; the KRaft
    # leader is their controller, so their metadata lag is its queue for each (MigrationPropagator)
    enable_migration_on_brokers(cluster)
    in_migration = _phase("MIGRATION", zookeeper_brokers)

    def raft_observers(o: Observation) -> bool:
        # each rolled broker's raft observer, read as a broker's: its raft MBeans register late in the
        # broker's start-up, after ctlplane's first read of the restarted node, and are looked up again
        # within RESOLVE_SOON_SECONDS (10 s); the phase and ACTIVE can be seen before that (CI saw it)
        snapshot = o.snapshot.cluster(MIGRATING)
        nodes = [snapshot.node(broker.name) if snapshot else None for broker in cluster.brokers()]
        return all(n is not None and n.role is Role.BROKER and n.has("kafka_raft_current_leader") for n in nodes)

    o = watch.until(lambda o: in_migration(o) and raft_observers(o), 120, "MIGRATION, brokers ACTIVE as observers")
    snapshot = o.snapshot.cluster(MIGRATING)
    assert snapshot is not None
    kraft_leader = snapshot.node("controller-1")
    assert kraft_leader is not None
    queues = {dict(s.labels)["broker"] for s in kraft_leader.series_samples("kafka_controller_channel_queue_size")}
    assert queues == {str(b.node_id) for b in cluster.brokers()}, queues
    _controller_is_the_kraft_leader(cluster_health(o, MIGRATING))

    # hybrid: one KRaft broker beside two ZooKeeper ones, then all KRaft; dual write keeps MIGRATION
    first = cluster.brokers()[0].name
    roll_brokers_to_kraft(cluster, count=1)
    watch.until(_phase("MIGRATION", {**zookeeper_brokers, first: Mode.KRAFT}), 120, "hybrid cluster")
    roll_brokers_to_kraft(cluster)
    kraft_brokers = dict.fromkeys(zookeeper_brokers, Mode.KRAFT)
    o = watch.until(_phase("MIGRATION", kraft_brokers), 120, "every broker KRaft, dual write")
    assert cluster_health(o, MIGRATING).mode is Mode.MIGRATION

    # finalized: the controller without the flag writes POST_MIGRATION; the cluster is KRaft
    finalize_migration(cluster)
    o = watch.until(_phase("POST_MIGRATION", kraft_brokers), 120, "POST_MIGRATION")
    health = cluster_health(o, MIGRATING)
    assert health.mode is Mode.KRAFT
    _controller_is_the_kraft_leader(health)


@pytest.fixture
def dual_writing(kafka_workdir: Path, zookeeper: ZooKeeperServer) -> Iterator[tuple[KafkaCluster, Watch]]:
    """A cluster of its own in the MIGRATION phase: ZooKeeper brokers rolled with the flag, the KRaft leader
    their controller, writing every metadata change to ZooKeeper too (dual write)."""
    cluster = start_migrating_cluster(DUAL_WRITE, kafka_workdir, brokers=3, version=ZK_UNDER_TEST, zookeeper=zookeeper)
    watch = Watch(cluster, timeout=2.0)
    try:
        enable_migration_on_brokers(cluster)
        yield cluster, watch
    finally:
        watch.close()
        cluster.stop()


@pytest.mark.matrix
def test_a_zookeeper_broker_killed_during_dual_write_is_fenced_pages_and_restarts_quietly(
    dual_writing: tuple[KafkaCluster, Watch], tmp_path: Path
) -> None:
    """kill -9 of a ZooKeeper broker 0.5 s after a round while the KRaft leader drives the migration: a
    migrating ZooKeeper broker registers with the KRaft controller and heartbeats to it (KafkaServer.scala:
    with the migration flag it starts a BrokerLifecycleManager with isZkBroker = true; the registration
    carries isMigratingZkBroker, ClusterControlManager), so the controller fences it after the session
    timeout as it would a KRaft broker. A crash: FENCED, never SHUTDOWN, KafkaBrokerFenced pages; restarted with the
    flag it comes back ACTIVE and the page resolves. Matrix only (about 4 min)."""
    cluster, watch = dual_writing
    zookeeper_brokers = {b.name: Mode.ZOOKEEPER for b in cluster.brokers()}
    watch.until(_phase("MIGRATION", zookeeper_brokers, DUAL_WRITE), 120, "MIGRATION, ZooKeeper brokers ACTIVE")
    victim = cluster.brokers()[1]
    timeline = Timeline(watch, cluster)
    timeline.round()
    timeline.round()
    timeline.sleep_into_round(0.5)
    victim.kill()
    for _ in range(7):  # 105 s: long enough for `for: 1m` to fire
        timeline.round()
    killed_until = len(timeline.observations) - 1
    crashed = timeline.states(victim.name)[2:]
    assert Lifecycle.SHUTDOWN not in crashed, timeline.evidence(victim.name)
    assert crashed[0] in (Lifecycle.FENCED, Lifecycle.UNREACHABLE), timeline.evidence(victim.name)
    assert set(crashed[1:]) == {Lifecycle.FENCED}, timeline.evidence(victim.name)
    assert all(cluster_health(o, DUAL_WRITE).migration_phase == "MIGRATION" for o in timeline.observations)
    victim.start()
    for _ in range(12):
        broker = timeline.round().broker(victim.name)
        if broker is not None and broker.state is Lifecycle.ACTIVE:
            break
    timeline.round()  # one more round: every alert resolved
    restarted = timeline.states(victim.name)[killed_until + 1 :]
    assert restarted[-1] is Lifecycle.ACTIVE, timeline.evidence(victim.name)
    assert Lifecycle.SHUTDOWN not in restarted, timeline.evidence(victim.name)
    last = len(timeline.observations) - 1
    pages = frozenset({("KafkaBrokerFenced", victim.name)})
    replay(
        timeline,
        "kill-zookeeper-broker-during-dual-write",
        [*pages_then_resolves(killed_until, last, pages), Expectation("warning", last, frozenset(), ever=True)],
        f"kill -9 of the migrating ZooKeeper broker {victim.name} 0.5 s after a round during dual write, "
        "restart after 105 s",
        tmp_path,
    )
