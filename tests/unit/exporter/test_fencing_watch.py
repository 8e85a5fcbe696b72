"""FencingWatch (ctlplane/exporter/fencing_watch.py): between rounds, each cluster's active controller is asked
for its fencing gauges, and a change from what the last round read of it starts the next round at once. Here
against a scripted JMX client; on a real cluster: tests/integration/test_fencing_watch.py."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence

from ctlplane.exporter.fencing_watch import FencingWatch, fencing_queries, fencing_word, newly_fenced
from ctlplane.exporter.model import FleetSnapshot, MBeanQuery, RawReading, Sample
from ctlplane.exporter.scraper import Scraper, Target
from ctlplane.exporter.sources.jmx.base import Endpoint, JmxError
from tests.unit.exporter.builders import fleet, kraft_broker, kraft_controller
from tests.unit.exporter.test_scraper import ScriptedClient

REGISTRATION = "kafka.controller:type=KafkaController,name=BrokerRegistrationState,broker=*"
FENCED_COUNT = "kafka.controller:type=KafkaController,name=FencedBrokerCount"
TARGETS = [Target("c1", name, Endpoint("127.0.0.1", port)) for name, port in (("ctl-1", 101), ("ctl-2", 102))]


class Controllers:
    """Answers a fencing poll per port with these registration states (broker id -> state)."""

    def __init__(self, states: Mapping[int, Mapping[int, float]]) -> None:
        self.states = {port: dict(s) for port, s in states.items()}
        self.failing: set[int] = set()
        self.asked: list[int] = []

    def read(self, endpoint: Endpoint, queries: Sequence[MBeanQuery]) -> list[RawReading]:
        self.asked.append(endpoint.port)
        assert {q.pattern for q in queries} >= {REGISTRATION, FENCED_COUNT}, queries
        if endpoint.port in self.failing:
            raise JmxError(f"{endpoint.address}: connection refused")
        states = self.states[endpoint.port]
        readings = [
            RawReading(
                REGISTRATION,
                REGISTRATION.replace("*", str(broker)),
                {"type": "KafkaController", "name": "BrokerRegistrationState", "broker": str(broker)},
                {"Value": state},
            )
            for broker, state in states.items()
        ]
        fenced = sum(1 for state in states.values() if state == 10)
        keys = {"type": "KafkaController", "name": "FencedBrokerCount"}
        return [*readings, RawReading(FENCED_COUNT, FENCED_COUNT, keys, {"Value": float(fenced)})]

    def close(self) -> None:
        pass


def _round(states: Mapping[int, float]) -> FleetSnapshot:
    # ctl-1 active, as the last round read it; ctl-2 a follower
    fenced = sum(1 for state in states.values() if state == 10)
    return fleet(
        kraft_controller("ctl-1", 101, active=True, registrations=states, fenced=fenced),
        kraft_controller("ctl-2", 102, active=False),
        kraft_broker("b1", 1),
    )


def _watch(client: Controllers, latest: list[FleetSnapshot], woken: list[set[tuple[str, int]]]) -> FencingWatch:
    return FencingWatch(lambda: latest[-1], lambda: TARGETS, client, lambda fenced: woken.append(set(fenced)), 2.0)


def test_a_change_the_active_controller_reads_between_rounds_wakes_the_next_round_once() -> None:
    client = Controllers({101: {1: 30, 2: 30}, 102: {}})
    latest, woken = [_round({1: 30, 2: 30})], list[set[tuple[str, int]]]()
    watch = _watch(client, latest, woken)
    assert not watch.poll() and client.asked == [101]  # the same as the round read; the follower not asked
    client.states[101][2] = 10  # the controller fenced broker 2: the round reads it as a suspect
    assert watch.poll() and woken == [{("c1", 2)}]
    assert not watch.poll() and len(woken) == 1  # the same change: once, while its round is under way
    latest.append(_round({1: 30, 2: 10}))  # the woken round read it
    assert not watch.poll()
    client.states[101][2] = 30  # unfenced again: a change from the round too, nobody newly fenced
    assert watch.poll() and woken[1:] == [set()]


def test_a_controller_that_does_not_answer_wakes_nothing_and_is_asked_again() -> None:
    client = Controllers({101: {1: 30}})
    client.failing.add(101)
    woken: list[set[tuple[str, int]]] = []
    watch = _watch(client, [_round({1: 30})], woken)
    assert not watch.poll() and not woken
    assert watch.errors == {("c1", "ctl-1"): "127.0.0.1:101: connection refused"}
    client.failing.clear()
    client.states[101][1] = 10
    assert watch.poll() and woken and not watch.errors


def test_no_active_controller_read_is_no_poll() -> None:
    client = Controllers({101: {1: 10}})
    round_ = fleet(kraft_controller("ctl-1", 101, active=False), kraft_broker("b1", 1))
    woken: list[set[tuple[str, int]]] = []
    assert not _watch(client, [round_], woken).poll() and not client.asked and not woken


def test_the_queries_are_the_scrapers_own_for_the_fencing_gauges() -> None:
    assert {q.pattern for q in fencing_queries()} == {
        REGISTRATION,
        FENCED_COUNT,
        "kafka.controller:type=KafkaController,name=ActiveBrokerCount",
        "kafka.controller:type=ControllerChannelManager,name=QueueSize,broker-id=*",
    }


def test_a_zookeeper_mode_controller_dropping_a_brokers_request_queue_is_a_change_its_length_is_not() -> None:
    """ZooKeeper mode has no registration states: the controller's request queue per broker is made at its
    registration and dropped when its session expires (ControllerChannelManager.removeBroker). Its length
    moves with every request and wakes nothing; a queue gone names the broker as newly fenced."""

    def word(**queues: float) -> frozenset[tuple[str, tuple[tuple[str, str], ...], float]]:
        return fencing_word(
            Sample("kafka_controller_channel_queue_size", (("broker", broker[1:]),), length)
            for broker, length in queues.items()
        )

    before = word(b1=0, b2=3, b3=0)
    assert word(b1=5, b2=0, b3=1) == before
    assert word(b1=0, b3=0) != before and newly_fenced(before, word(b1=0, b3=0)) == {2}
    assert newly_fenced(word(b1=0, b3=0), before) == set()  # registered again: a change, nobody fenced


class _Counting:
    def read(self, endpoint: Endpoint, queries: Sequence[MBeanQuery]) -> list[RawReading]:
        return []

    def close(self) -> None:
        pass


def test_a_woken_scraper_starts_its_next_round_long_before_its_interval() -> None:
    scraper = Scraper([TARGETS[0]], _Counting(), interval_seconds=60, timeout_seconds=1, workers=2)
    second = threading.Event()
    scraper.subscribe(lambda snapshot: second.set() if snapshot.sequence == 2 else None)
    scraper.start()
    try:
        deadline = time.monotonic() + 10
        while scraper.latest().sequence < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not second.wait(0.5)  # nothing starts it before its interval (60 s)
        scraper.wake()
        assert second.wait(10), "the woken round never came"
        assert scraper.woken_rounds_total == 1
    finally:
        scraper.stop(join_seconds=2)


def test_a_broker_the_watch_read_fenced_holds_the_woken_round_no_longer_than_a_suspect() -> None:
    client = ScriptedClient()
    targets = [Target("c1", f"b{port}", Endpoint("127.0.0.1", port), node_id=port) for port in (1, 2)]
    scraper = Scraper(targets, client, interval_seconds=60, timeout_seconds=8, workers=4)
    try:
        scraper.scrape_once()
        client.stalled.add(2)  # hung since: its read would hold the round for the whole timeout (8 s)
        scraper.wake(fenced={("c1", 2)})
        started = time.monotonic()
        nodes = {n.node: n for n in scraper.scrape_once().nodes()}
        assert time.monotonic() - started < 4, "the round waited for the fenced broker's read"
        assert not nodes["b2"].up and nodes["b1"].up
        assert nodes["b2"].error == "no answer within 1s (the controller has fenced it: the round waits no longer)"
        client.release.set()
        time.sleep(0.2)  # its read done: the next round, not woken, waits for it as for any node
        assert {n.node: n.up for n in scraper.scrape_once().nodes()} == {"b1": True, "b2": True}
    finally:
        client.release.set()


def test_a_round_under_way_stops_waiting_for_a_broker_the_watch_reads_fenced() -> None:
    """The first round after a broker hangs has no reason to suspect it and waits for its read; the fencing
    watch reading the controller fencing it meanwhile ends that wait, so the round it wakes (the one that
    publishes the fencing) does not start behind the hung broker's RMI timeouts. A wake naming nobody
    fenced ends no wait."""
    client = ScriptedClient()
    targets = [Target("c1", f"b{port}", Endpoint("127.0.0.1", port), node_id=port) for port in (1, 2)]
    scraper = Scraper(targets, client, interval_seconds=60, timeout_seconds=3, workers=4)
    try:
        scraper.scrape_once()
        client.stalled.add(2)  # hung since the last round: this round waits for it as for any node
        waker = threading.Timer(0.5, scraper.wake, kwargs={"fenced": {("c1", 2)}})
        waker.start()
        started = time.monotonic()
        nodes = {n.node: n for n in scraper.scrape_once().nodes()}
        assert time.monotonic() - started < 2, "the round waited for the fenced broker's read"
        assert nodes["b1"].up and not nodes["b2"].up
        assert nodes["b2"].error is not None
        assert nodes["b2"].error.startswith("no answer within 0.5s (the controller has fenced it"), nodes["b2"].error
        client.release.set()
        time.sleep(0.2)
        scraper.scrape_once()  # the woken round; its hung read finished late, then a round as any
        client.release.clear()
        client.stalled = {1}
        nobody = threading.Timer(0.5, scraper.wake)
        nobody.start()
        started = time.monotonic()
        nodes = {n.node: n for n in scraper.scrape_once().nodes()}
        assert time.monotonic() - started >= 2.5 and not nodes["b1"].up  # waited the round's timeout (3 s)
    finally:
        client.release.set()
        scraper.stop(join_seconds=2)


def test_a_round_with_no_fresh_read_to_wait_for_does_not_wait_its_timeout() -> None:
    """No node to read (or every node a suspect): the round's wait has nothing to wait for and ends at once,
    as concurrent.futures.wait([]) did, not at the round's timeout."""
    scraper = Scraper([], _Counting(), interval_seconds=60, timeout_seconds=5, workers=2)
    started = time.monotonic()
    scraper.scrape_once()
    assert time.monotonic() - started < 2
