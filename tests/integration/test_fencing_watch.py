"""The fencing watch (ctlplane/exporter/fencing_watch.py) on real Kafka: a broker SIGSTOPped just after a round
is fenced by the controller after its session (KRaft: broker.session.timeout.ms 9 s; ZooKeeper mode: its
ZooKeeper session, 6 s here, after which the controller drops its request queue); the watch reads the change
on the active controller and wakes a round that publishes FENCED, unplanned, long before the next round at its
interval (60 s here) would have. Its resumption, unfenced, wakes one too. Then the same broker, leading
partitions, restarted cleanly: the rounds the watch wakes at each step of the restart (controlled shutdown,
fenced or deregistered, registered, unfenced) never read an unplanned fencing, the one thing the fast page
(`for: 10s`) waits on. The time the watch buys each page: docs/alerts.md "How fast a page comes"."""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import pytest

from ctlplane.exporter.fencing_watch import FencingWatch
from ctlplane.exporter.health import Lifecycle
from ctlplane.exporter.state import Observation
from harness.localkafka import KafkaCluster, KafkaNode, create_topic, delete_topic
from tests.integration.faults import healthy
from tests.integration.watch import Watch

INTERVAL = 60.0  # the rounds' own pace: a fencing published before the second round was woken for
TOPIC = "ctlplane-fencing-watch"


def _unplanned(observation: Observation, cluster: str, node: str) -> bool:
    health = observation.health.cluster(cluster)
    broker = health.broker(node) if health is not None else None
    return broker is not None and broker.fenced_unplanned


def _state(observation: Observation, cluster: str, node: str) -> Lifecycle | None:
    health = observation.health.cluster(cluster)
    broker = health.broker(node) if health is not None else None
    return broker.state if broker is not None else None


@pytest.mark.kraft
def test_a_broker_fenced_between_rounds_is_published_by_a_round_the_watch_wakes(kraft_cluster: KafkaCluster) -> None:
    watch = Watch(kraft_cluster)
    watch.until(healthy(kraft_cluster.name), 120, "healthy KRaft cluster")
    _fenced_then_restarted(kraft_cluster, watch, kraft_cluster.brokers()[0])


@pytest.mark.zookeeper
def test_a_zookeeper_mode_broker_deregistered_between_rounds_is_published_by_a_round_the_watch_wakes(
    zk_cluster: KafkaCluster,
) -> None:
    """ZooKeeper mode has no registration states: the watch reads the controller's request queues (one per
    registered broker) and ActiveBrokerCount. The victim is not the controller: the same controller's count
    of ControlledShutdown requests is what tells its crash from its clean stop."""
    watch = Watch(zk_cluster)
    start = watch.until(healthy(zk_cluster.name), 120, "healthy ZooKeeper-mode cluster")
    health = start.health.cluster(zk_cluster.name)
    assert health is not None and health.controller is not None
    controller = health.controller.node
    _fenced_then_restarted(zk_cluster, watch, next(b for b in zk_cluster.brokers() if b.name != controller))


def _fenced_then_restarted(cluster: KafkaCluster, watch: Watch, victim: KafkaNode) -> None:
    name, scraper = cluster.name, watch.scraper
    scraper.configure(replace(scraper.plan, interval_seconds=INTERVAL))
    rounds: list[Observation] = []
    seen = threading.Condition()

    def record(observation: Observation) -> None:
        with seen:
            rounds.append(observation)
            seen.notify_all()

    def first(state: Lifecycle, after: int, timeout: float) -> Observation | None:
        deadline = time.monotonic() + timeout
        with seen:
            while True:
                found = next((o for o in rounds[after:] if _state(o, name, victim.name) is state), None)
                left = deadline - time.monotonic()
                if found is not None or left <= 0:
                    return found
                seen.wait(left)

    watch.state.subscribe(record)
    other = next(b for b in cluster.brokers() if b is not victim)
    create_topic(cluster, TOPIC, [[victim.node_id, other.node_id]] * 2)  # it leads both partitions
    fencing = FencingWatch(scraper.latest, lambda: scraper.targets, scraper.client, scraper.wake, poll_seconds=1.0)
    scraper.start()
    try:
        with seen:
            seen.wait_for(lambda: bool(rounds), 30)
        start = rounds[0].snapshot.taken_at  # the loop's first round; the next one at its interval is 60 s on
        fencing.start()
        victim.pause()
        try:
            fenced = first(Lifecycle.FENCED, 0, 45)
            assert fenced is not None, [(o.snapshot.sequence, _state(o, name, victim.name)) for o in rounds]
            assert fenced.snapshot.taken_at < start + INTERVAL - 10, (fenced.snapshot.taken_at - start, rounds)
            assert scraper.woken_rounds_total >= 1
            assert _unplanned(fenced, name, victim.name), fenced.health.cluster(name)
        finally:
            victim.resume()
        woken = scraper.woken_rounds_total
        back = first(Lifecycle.ACTIVE, rounds.index(fenced) + 1, 45)
        assert back is not None and scraper.woken_rounds_total > woken, rounds  # unfenced: a round woken too

        # a clean restart of a leader, read by the rounds the watch wakes: never an unplanned fencing
        restart_from, woken = rounds.index(back), scraper.woken_rounds_total
        victim.stop()  # SIGTERM: a controlled shutdown
        victim.start()
        victim.wait_ready(120)
        assert first(Lifecycle.ACTIVE, len(rounds), 60) is not None, "not ACTIVE again after its restart"
        during = rounds[restart_from:]
        read = [(_state(o, name, victim.name), _unplanned(o, name, victim.name)) for o in during]
        assert scraper.woken_rounds_total > woken, read  # the restart's steps woke rounds
        assert {state for state, _ in read} - {Lifecycle.ACTIVE}, read  # and they read it out of ACTIVE
        assert not [r for r in read if r[1]], read
    finally:
        fencing.stop()
        scraper.stop(join_seconds=15)
        watch.close()
        victim.resume()
        delete_topic(cluster, TOPIC)
