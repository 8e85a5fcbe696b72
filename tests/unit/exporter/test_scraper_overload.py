"""Scrape rounds under overload: late reads are kept, a node never has two reads queued or running."""

from __future__ import annotations

import itertools
import threading
from collections import Counter
from collections.abc import Sequence

from ctlplane.exporter.model import FleetSnapshot, MBeanQuery, NodeSnapshot, RawReading
from ctlplane.exporter.scraper import Scraper, Target
from ctlplane.exporter.sources.jmx.base import Endpoint

BROKER_STATE = "kafka.server:type=KafkaServer,name=BrokerState"


class GatedClient:
    """Each read of a port blocks while that port is held; the value read is the read's number for the port."""

    def __init__(self) -> None:
        self.held: dict[int, threading.Event] = {}
        self.started: list[int] = []
        self.finished: Counter[int] = Counter()
        self._changed = threading.Condition()

    def hold(self, port: int) -> None:
        self.held[port] = threading.Event()

    def release(self, port: int) -> None:
        self.held.pop(port).set()

    def wait_finished(self, port: int, count: int) -> None:
        with self._changed:
            assert self._changed.wait_for(lambda: self.finished[port] >= count, timeout=10)

    def read(self, endpoint: Endpoint, queries: Sequence[MBeanQuery]) -> list[RawReading]:
        port = endpoint.port
        self.started.append(port)
        number = self.started.count(port)
        gate = self.held.get(port)
        if gate is not None:
            gate.wait(10)
        with self._changed:
            self.finished[port] += 1
            self._changed.notify_all()
        keys = {"type": "KafkaServer", "name": "BrokerState"}
        return [RawReading(BROKER_STATE, BROKER_STATE, keys, {"Value": float(number)})]

    def close(self) -> None:
        for gate in self.held.values():
            gate.set()


def scraper(client: GatedClient, workers: int, clock: itertools.count[float]) -> Scraper:
    targets = [Target("c1", f"b{port}", Endpoint("127.0.0.1", port)) for port in (1, 2, 3)]
    return Scraper(
        targets, client, interval_seconds=1, timeout_seconds=0.2, workers=workers, clock=lambda: float(next(clock))
    )


def by_name(snapshot: FleetSnapshot) -> dict[str, NodeSnapshot]:
    return {n.node: n for n in snapshot.nodes()}


def test_a_read_that_finishes_after_its_round_is_served_by_the_next_snapshot_once() -> None:
    client = GatedClient()
    s = scraper(client, workers=4, clock=itertools.count(1000.0))
    client.hold(3)
    first_round = s.scrape_once()
    first = by_name(first_round)
    assert first["b1"].up and not first["b3"].up and "no answer" in (first["b3"].error or "")
    client.release(3)
    client.wait_finished(3, 1)
    client.hold(3)  # the next read of b3 hangs, so the snapshot can only have the late one
    second = s.scrape_once()
    b3 = by_name(second)["b3"]
    assert b3.up and b3.value("kafka_broker_state") == 1.0  # the first read's value
    assert first_round.taken_at < b3.scraped_at < second.taken_at  # when it was read: during the first round
    third = by_name(s.scrape_once())
    # the late result is used once; the second read still hangs
    assert not third["b3"].up and "still running" in (third["b3"].error or "")
    assert third["b1"].up and third["b1"].value("kafka_broker_state") == 3.0
    assert client.started.count(3) == 2
    client.release(3)
    s.stop()


def test_a_newer_read_wins_over_a_late_one() -> None:
    client = GatedClient()
    s = scraper(client, workers=4, clock=itertools.count(1000.0))
    client.hold(2)
    assert not by_name(s.scrape_once())["b2"].up
    client.release(2)
    client.wait_finished(2, 1)
    b2 = by_name(s.scrape_once())["b2"]
    assert b2.up and b2.value("kafka_broker_state") == 2.0
    s.stop()


def test_overloaded_pool_never_queues_a_second_read_and_degrades_to_the_reads_that_finished() -> None:
    client = GatedClient()
    s = scraper(client, workers=1, clock=itertools.count(1000.0))
    for port in (1, 2, 3):
        client.hold(port)
    first = by_name(s.scrape_once())  # b1 runs (held); b2 and b3 wait in the pool's queue
    assert not any(n.up for n in first.values())
    assert "no answer" in (first["b1"].error or "")
    assert "queued" in (first["b2"].error or "") and "queued" in (first["b3"].error or "")
    second = by_name(s.scrape_once())  # nothing new is submitted: every node has its read
    assert "still running" in (second["b1"].error or "")
    assert "previous read still queued" in (second["b2"].error or "")
    client.release(1)
    client.wait_finished(1, 1)
    third = by_name(s.scrape_once())  # b1 answered late; b2 now runs, b3 still queued
    assert third["b1"].up and not third["b2"].up and not third["b3"].up
    for port in (2, 3):
        client.release(port)
    client.wait_finished(3, 1)
    fourth = by_name(s.scrape_once())
    assert all(n.up for n in fourth.values())
    # one read per node per completion: b1 read twice (third round resubmitted it), b2 and b3 once each
    # before the fourth round, never two of the same node waiting in the queue
    assert Counter(client.started[:4]) == Counter({1: 2, 2: 1, 3: 1})
    assert [n.errors_total for n in fourth.values()] == [2, 3, 3]
    s.stop()
