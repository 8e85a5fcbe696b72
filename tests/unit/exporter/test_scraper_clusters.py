"""Clusters share the scrape workers without starving each other: hung nodes hold only their cluster's share."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest

from ctlplane.exporter.model import Failure, FleetSnapshot, MBeanQuery, RawReading
from ctlplane.exporter.scraper import Scraper, Target, worker_shares
from ctlplane.exporter.sources.jmx.base import Endpoint, JmxError

BROKER_STATE = "kafka.server:type=KafkaServer,name=BrokerState"


class HangingClient:
    """Reads of `hung` ports block until released (then fail as timed out); other ports answer at once."""

    def __init__(self, hung: set[int]) -> None:
        self.hung = hung
        self.gates: dict[int, threading.Event] = {port: threading.Event() for port in hung}
        self.finished: dict[int, int] = {}
        self._changed = threading.Condition()

    def read(self, endpoint: Endpoint, queries: Sequence[MBeanQuery]) -> list[RawReading]:
        port = endpoint.port
        try:
            if port in self.hung:
                self.gates[port].wait(30)
                raise JmxError(f"{endpoint.address}: timed out", Failure.TIMEOUT)
            keys = {"type": "KafkaServer", "name": "BrokerState"}
            return [RawReading(BROKER_STATE, BROKER_STATE, keys, {"Value": 3.0})]
        finally:
            with self._changed:
                self.finished[port] = self.finished.get(port, 0) + 1
                self._changed.notify_all()

    def release(self, *ports: int) -> None:
        for port in ports:
            self.gates[port].set()

    def hold(self, *ports: int) -> None:
        for port in ports:
            self.gates[port] = threading.Event()

    def wait_finished(self, counts: dict[int, int]) -> None:
        with self._changed:
            assert self._changed.wait_for(
                lambda: all(self.finished.get(port, 0) >= n for port, n in counts.items()), timeout=10
            )

    def close(self) -> None:
        for gate in self.gates.values():
            gate.set()


def up_by_cluster(snapshot: FleetSnapshot) -> dict[str, list[bool]]:
    return {cluster.name: [node.up for node in cluster.nodes] for cluster in snapshot.clusters}


def test_a_cluster_of_hung_nodes_cannot_take_the_workers_of_another_cluster() -> None:
    hung = set(range(1000, 1032))
    client = HangingClient(hung)
    targets = [Target("a", f"a{port}", Endpoint("127.0.0.1", port)) for port in sorted(hung)]
    targets += [Target("b", f"b{port}", Endpoint("127.0.0.1", port)) for port in (2000, 2001, 2002)]
    scraper = Scraper(targets, client, interval_seconds=1, timeout_seconds=0.2, workers=16)
    try:
        for round_number in range(1, 6):
            up = up_by_cluster(scraper.scrape_once())
            assert up["b"] == [True, True, True], f"round {round_number}: {up['b']}"
            assert not any(up["a"])
    finally:
        scraper.stop()


def test_a_node_that_timed_out_waits_behind_its_healthy_siblings_and_leaves_them_a_worker() -> None:
    # one cluster, 2 workers: n1 and n2 hang (then time out), n3 and n4 answer at once
    client = HangingClient({1, 2})
    targets = [Target("c", f"n{port}", Endpoint("127.0.0.1", port)) for port in (1, 2, 3, 4)]
    scraper = Scraper(targets, client, interval_seconds=1, timeout_seconds=0.2, workers=2)
    try:
        first = scraper.scrape_once()  # n1 and n2 take both workers before anyone knows they hang
        assert up_by_cluster(first)["c"] == [False, False, False, False]
        client.release(1, 2)
        client.wait_finished({1: 1, 2: 1, 3: 1, 4: 1})
        client.hold(1, 2)
        for round_number in (2, 3, 4):
            nodes = {node.node: node for node in scraper.scrape_once().nodes()}
            assert nodes["n3"].up and nodes["n4"].up, f"round {round_number}: {nodes['n3'].error} {nodes['n4'].error}"
            assert not nodes["n1"].up and not nodes["n2"].up
    finally:
        scraper.stop()


@pytest.mark.parametrize(
    ("workers", "sizes", "expected"),
    [
        (16, {"a": 32, "b": 3}, {"a": 14, "b": 2}),  # at least two each, the rest by size
        (8, {"a": 32, "b": 1}, {"a": 7, "b": 1}),  # never more than a cluster has nodes
        (16, {"a": 10, "b": 10}, {"a": 8, "b": 8}),
        (16, {"only": 100}, {"only": 16}),  # one cluster has every worker, as before
        (16, {"a": 1, "b": 1, "c": 1}, {"a": 1, "b": 1, "c": 1}),  # the rest would sit idle
        (3, {"a": 5, "b": 5}, {"a": 2, "b": 2}),  # fewer than two each: two each all the same, overlapping
        (1, {"only": 3}, {"only": 1}),  # never more than the pool
    ],
)
def test_worker_shares(workers: int, sizes: dict[str, int], expected: dict[str, int]) -> None:
    shares = worker_shares(workers, sizes)
    assert shares == expected
    if workers >= 2 * len(sizes):
        assert sum(shares.values()) <= workers
