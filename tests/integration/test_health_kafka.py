"""Health faults on real clusters: fencing, controller failover, controlled shutdown, stale metadata."""

from __future__ import annotations

import threading
import time

import pytest

from ctlplane.exporter.catalog import Mode
from ctlplane.exporter.health import Lifecycle
from ctlplane.exporter.releases import catalogue_series
from ctlplane.exporter.state import Observation
from ctlplane.exporter.thresholds import Thresholds
from harness.localkafka import KafkaCluster, create_topic, delete_topic
from tests.integration.watch import Watch
from tests.kafka_versions import KRAFT_NAME, KRAFT_UNDER_TEST, ZK_NAME

# Kafka 4.1+ controllers name each broker's registration (KAFKA-18666), earlier ones only count the fenced
PER_BROKER_REGISTRATION = "kafka_controller_broker_registration_state" in catalogue_series(
    Mode.KRAFT, KRAFT_UNDER_TEST, listener=False
)
INTERVAL = 1.0  # Watch.until scrapes about once a second (plus the round itself)


def _cluster(o: Observation, name: str):  # type: ignore[no-untyped-def]
    health = o.health.cluster(name)
    assert health is not None
    return health


@pytest.fixture(scope="module")
def kraft(kraft_cluster: KafkaCluster) -> Watch:
    watch = Watch(kraft_cluster, timeout=2.0, thresholds=Thresholds(metadata_stale_seconds=5.0))
    watch.until(
        lambda o: (
            all(n.up for n in o.snapshot.nodes())
            and all(b.state is Lifecycle.ACTIVE for b in _cluster(o, KRAFT_NAME).brokers)
            and _cluster(o, KRAFT_NAME).active_controllers == 1
        ),
        120,
        "healthy KRaft cluster",
    )
    return watch


def _state(o: Observation, broker: str) -> Lifecycle:
    b = _cluster(o, KRAFT_NAME).broker(broker)
    assert b is not None
    return b.state


@pytest.mark.kraft
def test_stalled_kraft_broker_is_fenced_then_active_again(kraft: Watch, kraft_cluster: KafkaCluster) -> None:
    victim = kraft_cluster.brokers()[0]
    victim.pause()
    try:
        # broker.session.timeout.ms (9 s) + two scrape intervals, with room for a loaded machine
        fenced = kraft.until(
            lambda o: _state(o, victim.name) is Lifecycle.FENCED, 6 + 2 * INTERVAL + 20, "stalled broker FENCED"
        )
        broker = _cluster(fenced, KRAFT_NAME).broker(victim.name)
        # the controller's word: its registration state, or (Kafka < 4.1, no per-broker gauge) its count
        assert broker is not None and not broker.up and "controller" in broker.evidence
        assert "FENCED" in broker.evidence or "FencedBrokerCount" in broker.evidence, broker.evidence
        other = next(b for b in kraft_cluster.brokers() if b is not victim)
        assert _state(fenced, other.name) is Lifecycle.ACTIVE
    finally:
        victim.resume()
    kraft.until(lambda o: _state(o, victim.name) is Lifecycle.ACTIVE, 60, "resumed broker ACTIVE")


@pytest.mark.kraft
def test_a_broker_missing_from_the_config_is_counted_fenced_when_the_controller_fences_it(
    kraft_cluster: KafkaCluster,
) -> None:
    """Issue #33's case: a broker nobody listed hangs. Its own series cannot exist, but the controller's
    FencedBrokerCount counts it, and kafka_cluster_fenced_brokers_unnamed (KafkaFencedBrokerUnnamed's
    series, alerts/tests/brokers.test.yml) says so; a broker ctlplane names fenced is not counted twice."""
    unlisted, listed = kraft_cluster.brokers()[1], kraft_cluster.brokers()[0]
    watch = Watch(kraft_cluster, timeout=2.0, omit={unlisted.name})
    try:
        watch.until(lambda o: _cluster(o, KRAFT_NAME).fenced_unnamed == 0, 60, "nothing fenced, nothing unnamed")
        unlisted.pause()
        try:
            # broker.session.timeout.ms (9 s) + two scrape intervals, with room for a loaded machine
            fenced = watch.until(
                lambda o: _cluster(o, KRAFT_NAME).fenced_unnamed == 1, 6 + 2 * INTERVAL + 20, "one unnamed fenced"
            )
            assert unlisted.name not in {n.node for n in fenced.snapshot.nodes()}
            assert _state(fenced, listed.name) is Lifecycle.ACTIVE
            listed.pause()
            try:
                if PER_BROKER_REGISTRATION:
                    # the listed one is named FENCED by its registration, so not counted again
                    both = watch.until(
                        lambda o: _state(o, listed.name) is Lifecycle.FENCED, 6 + 2 * INTERVAL + 20, "listed FENCED"
                    )
                    assert _cluster(both, KRAFT_NAME).fenced_unnamed == 1
                else:
                    # before 4.1 the count alone cannot say which two: the listed one stays UNREACHABLE and
                    # both are unnamed (one page for the pair, never none)
                    watch.until(
                        lambda o: _cluster(o, KRAFT_NAME).fenced_unnamed == 2, 6 + 2 * INTERVAL + 20, "two unnamed"
                    )
            finally:
                listed.resume()
        finally:
            unlisted.resume()
        watch.until(lambda o: _cluster(o, KRAFT_NAME).fenced_unnamed == 0, 60, "unfenced again: none unnamed")
        watch.until(lambda o: _state(o, listed.name) is Lifecycle.ACTIVE, 60, "listed broker ACTIVE again")
    finally:
        watch.close()


@pytest.mark.kraft
def test_stalled_active_controller_fails_over_once(kraft: Watch, kraft_cluster: KafkaCluster) -> None:
    start = kraft.until(lambda o: _cluster(o, KRAFT_NAME).active_controllers == 1, 30, "one active controller")
    before = _cluster(start, KRAFT_NAME).controller
    old = kraft_cluster.node(before.node)  # type: ignore[arg-type]
    old.pause()
    try:
        moved = kraft.until(
            lambda o: _cluster(o, KRAFT_NAME).controller.node not in (None, old.name), 60, "a new active controller"
        )
        after = _cluster(moved, KRAFT_NAME).controller
        assert after.failovers_total == before.failovers_total + 1
        assert after.epoch is not None and before.epoch is not None and after.epoch > before.epoch
        # observers (brokers) learn the new leader a moment later; they must converge on the same node
        kraft.until(
            lambda o: (
                {n.value("kafka_raft_current_leader") for n in o.snapshot.nodes() if n.up} == {float(after.node_id)}
            ),  # type: ignore[arg-type]
            30,
            "raft current-leader agrees with the new active controller on every reachable node",
        )
    finally:
        old.resume()
    # the resumed old leader learns the new epoch: no second failover, exactly one claimant again
    settled = kraft.until(
        lambda o: all(n.up for n in o.snapshot.nodes()) and _cluster(o, KRAFT_NAME).active_controllers == 1,
        60,
        "quorum settled",
    )
    for _ in range(5):
        settled = kraft.scrape()
    assert _cluster(settled, KRAFT_NAME).controller.failovers_total == before.failovers_total + 1
    assert _cluster(settled, KRAFT_NAME).controller.node == after.node


@pytest.mark.kraft
def test_controlled_shutdown_is_shutdown_not_fenced(kraft: Watch, kraft_cluster: KafkaCluster) -> None:
    victim = kraft_cluster.brokers()[-1]
    # Like every production broker, the victim leads partitions: a broker that leads none is approved at
    # once and fenced (SHUTDOWN_NOW) in well under a scrape, with no inControlledShutdown left in its
    # registration (ReplicationControlManager), which ctlplane cannot tell from a crash, so it pages.
    other = kraft_cluster.brokers()[0]
    create_topic(kraft_cluster, "ctlplane-shutdown", [[victim.node_id, other.node_id]] * 4)
    kraft.until(lambda o: _state(o, victim.name) is Lifecycle.ACTIVE, 60, "topic created")
    seen: list[Lifecycle] = []
    stopping = threading.Event()

    def watch_while_stopping() -> None:
        while not stopping.is_set():
            seen.append(_state(kraft.scrape(), victim.name))
            time.sleep(0.2)

    watcher = threading.Thread(target=watch_while_stopping)
    watcher.start()
    try:
        victim.stop()  # SIGTERM: controlled shutdown; returns once the process has exited
    finally:
        stopping.set()
        watcher.join()
    try:
        for _ in range(10):  # past broker.session.timeout.ms: the controller fences the departed broker
            seen.append(_state(kraft.scrape(), victim.name))
            time.sleep(0.5)
        assert Lifecycle.SHUTDOWN in seen, seen
        after = seen[seen.index(Lifecycle.SHUTDOWN) :]
        assert set(after) == {Lifecycle.SHUTDOWN}, f"after the shutdown began: {after}"
    finally:
        victim.start()
    kraft.until(lambda o: _state(o, victim.name) is Lifecycle.ACTIVE, 90, "restarted broker ACTIVE")
    delete_topic(kraft_cluster, "ctlplane-shutdown")


@pytest.mark.kraft
def test_metadata_goes_stale_without_a_quorum_and_fresh_after(kraft: Watch, kraft_cluster: KafkaCluster) -> None:
    paused = kraft_cluster.controllers()[:2]  # 2 of 3 voters: no leader can commit
    for controller in paused:
        controller.pause()
    broker = kraft_cluster.brokers()[0].name
    try:
        stale = kraft.until(
            lambda o: (b := _cluster(o, KRAFT_NAME).broker(broker)) is not None and b.stale,
            60,
            "broker metadata stale",
        )
        b = _cluster(stale, KRAFT_NAME).broker(broker)
        assert b is not None and b.metadata_lag_seconds is not None and b.metadata_lag_seconds >= 5.0
    finally:
        for controller in paused:
            controller.resume()
    kraft.until(
        lambda o: (
            (b := _cluster(o, KRAFT_NAME).broker(broker)) is not None
            and not b.stale
            and b.metadata_lag_seconds is not None
            and b.metadata_lag_seconds < 5.0
        ),
        90,
        "metadata fresh again",
    )


@pytest.mark.zookeeper
def test_zookeeper_controller_moves_when_the_active_one_stops(zk_cluster: KafkaCluster) -> None:
    watch = Watch(zk_cluster, timeout=2.0)
    start = watch.until(
        lambda o: _cluster(o, ZK_NAME).active_controllers == 1 and all(n.up for n in o.snapshot.nodes()),
        60,
        "one ZooKeeper-mode controller",
    )
    before = _cluster(start, ZK_NAME).controller
    old = zk_cluster.node(before.node)  # type: ignore[arg-type]
    old.stop()
    try:
        moved = watch.until(
            lambda o: (
                _cluster(o, ZK_NAME).controller.node not in (None, old.name)
                and _cluster(o, ZK_NAME).active_controllers == 1
            ),
            60,
            "a new ZooKeeper-mode controller",
        )
        assert _cluster(moved, ZK_NAME).controller.failovers_total == before.failovers_total + 1
        # SHUTDOWN when a round saw it shutting down; otherwise UNREACHABLE, or FENCED once the new
        # controller's queues are read and have none for it (it deregistered: health.lifecycle.zookeeper_deregistered)
        assert _state_zk(moved, old.name) in (Lifecycle.SHUTDOWN, Lifecycle.UNREACHABLE, Lifecycle.FENCED)
    finally:
        old.start()
    watch.until(lambda o: all(n.up for n in o.snapshot.nodes()), 60, "restarted broker read again")
    watch.close()


def _state_zk(o: Observation, broker: str) -> Lifecycle:
    b = _cluster(o, ZK_NAME).broker(broker)
    assert b is not None
    return b.state
