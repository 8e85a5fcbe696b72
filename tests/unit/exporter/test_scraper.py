"""Scrape rounds with an in-process JmxClient double at the I/O edge (no JMX, no network)."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from ctlplane.exporter.model import Failure, MBeanQuery, RawReading
from ctlplane.exporter.scraper import Scraper, Target
from ctlplane.exporter.sources.base import ReadTimeouts
from ctlplane.exporter.sources.jmx.base import Endpoint, JmxError

BROKER_STATE = "kafka.server:type=KafkaServer,name=BrokerState"


class ScriptedClient:
    """Answers per port: a BrokerState of 3, a JmxError, or a read that blocks until released."""

    def __init__(self) -> None:
        self.failing: set[int] = set()
        self.stalled: set[int] = set()
        self.release = threading.Event()
        self.reads: list[int] = []

    def read(self, endpoint: Endpoint, queries: Sequence[MBeanQuery]) -> list[RawReading]:
        self.reads.append(endpoint.port)
        if endpoint.port in self.failing:
            raise JmxError(f"{endpoint.address}: connection refused")
        if endpoint.port in self.stalled:
            self.release.wait(10)
        return [RawReading(BROKER_STATE, BROKER_STATE, {"type": "KafkaServer", "name": "BrokerState"}, {"Value": 3.0})]

    def configure(self, timeouts: ReadTimeouts) -> None:
        self.timeouts = timeouts

    def close(self) -> None:
        self.release.set()


def scraper(client: ScriptedClient, timeout: float = 0.3) -> Scraper:
    targets = [Target("c1", f"b{port}", Endpoint("127.0.0.1", port)) for port in (1, 2, 3)]
    return Scraper(targets, client, interval_seconds=1, timeout_seconds=timeout, workers=4)


def test_a_failing_node_is_an_error_value_and_the_rest_are_served() -> None:
    client = ScriptedClient()
    client.failing.add(2)
    snapshot = scraper(client).scrape_once()
    nodes = {n.node: n for n in snapshot.nodes()}
    assert [nodes[f"b{i}"].up for i in (1, 2, 3)] == [True, False, True]
    assert nodes["b2"].error == "127.0.0.1:2: connection refused" and nodes["b2"].errors_total == 1
    assert nodes["b1"].value("kafka_broker_state") == 3.0


def test_a_stalled_node_is_down_within_the_timeout_and_not_read_again_until_it_returns() -> None:
    client = ScriptedClient()
    client.stalled.add(3)
    s = scraper(client)
    first = s.scrape_once()
    assert first.round_duration_seconds < 2
    assert {n.node: n.up for n in first.nodes()} == {"b1": True, "b2": True, "b3": False}
    second = s.scrape_once()
    b3 = next(n for n in second.nodes() if n.node == "b3")
    assert not b3.up and "still running" in (b3.error or "")
    assert client.reads.count(3) == 1
    client.stalled.clear()
    client.release.set()
    # rounds that wait for nothing take a millisecond: give the released read's thread time to run
    # (CI once ran out of 20 back-to-back rounds on a loaded machine before it had)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not all(n.up for n in s.scrape_once().nodes()):
        time.sleep(0.05)
    assert all(n.up for n in s.latest().nodes()) and s.latest().sequence >= 3
    s.stop()


def test_identity_survives_while_the_node_is_down() -> None:
    client = ScriptedClient()
    s = scraper(client)
    s.scrape_once()
    client.failing.add(1)
    b1 = next(n for n in s.scrape_once().nodes() if n.node == "b1")
    assert not b1.up and b1.mode is not None and b1.role.value == "broker"


def test_subscribers_get_every_snapshot_and_a_failing_subscriber_does_not_stop_the_round() -> None:
    client = ScriptedClient()
    s = scraper(client)
    seen: list[int] = []

    def broken(_: object) -> None:
        raise RuntimeError("subscriber bug")

    s.subscribe(broken)
    s.subscribe(lambda snapshot: seen.append(snapshot.sequence))
    s.scrape_once()
    s.scrape_once()
    assert seen == [1, 2] and s.latest().sequence == 2


class PacedClient:
    """Each read of a port takes the next of its scripted outcomes: seconds to answer, or None for a read
    that fails as a timeout (what a hung broker's read does once the RMI timeouts run out)."""

    def __init__(self, script: dict[int, list[float | None]]) -> None:
        self.script = script
        self.answered = {port: threading.Semaphore(0) for port in script}  # released as each read returns

    def read(self, endpoint: Endpoint, queries: Sequence[MBeanQuery]) -> list[RawReading]:
        outcome = self.script[endpoint.port].pop(0) if self.script[endpoint.port] else 0.0
        try:
            if outcome is None:
                raise JmxError(f"{endpoint.address}: timed out", Failure.TIMEOUT)
            time.sleep(outcome)
            return [
                RawReading(BROKER_STATE, BROKER_STATE, {"type": "KafkaServer", "name": "BrokerState"}, {"Value": 3.0})
            ]
        finally:
            self.answered[endpoint.port].release()

    def close(self) -> None:
        pass


def test_after_a_timeout_the_round_waits_for_a_node_as_long_as_its_reads_usually_take() -> None:
    # b1 answers in 1.3 s (a node far away), then times out once, then answers in 1.3 s again: waited for
    # three times its usual read, so it is up at once. b2 answered fast, times out, then answers in 2.5 s:
    # waited for SUSPECT_WAIT_SECONDS (or while the round waits for b1), so it is down that round only.
    client = PacedClient({1: [1.3, None, 1.3], 2: [0.0, None, 2.5, 0.0], 3: []})
    s = Scraper(
        [Target("c1", f"b{port}", Endpoint("127.0.0.1", port)) for port in (1, 2, 3)],
        client,
        interval_seconds=10,
        timeout_seconds=8,
        workers=4,
    )
    rounds = [s.scrape_once() for _ in range(3)]
    for _ in range(3):  # b2's slow third read ends before the next round, as it would within a 15 s interval
        assert client.answered[2].acquire(timeout=30)
    rounds.append(s.scrape_once())
    up = [{n.node: n.up for n in r.nodes()} for r in rounds]
    assert up[0] == {"b1": True, "b2": True, "b3": True}
    assert up[1] == {"b1": False, "b2": False, "b3": True}  # both timed out
    assert up[2] == {"b1": True, "b2": False, "b3": True}, rounds[2]
    b2 = rounds[2].cluster("c1").node("b2")  # type: ignore[union-attr]
    assert b2 is not None and "its last read timed out" in (b2.error or "") and b2.scrape_duration_seconds == 1.0
    assert up[3] == {"b1": True, "b2": True, "b3": True}
    s.stop()


def test_new_targets_are_read_from_the_next_round_and_the_kept_ones_keep_their_memory() -> None:
    client = ScriptedClient()
    client.failing.add(2)
    s = scraper(client)
    s.scrape_once()
    s.scrape_once()
    kept = list(s.targets)
    s.set_targets(
        [*kept[:2], Target("c1", "b4", Endpoint("127.0.0.1", 4)), Target("c2", "x5", Endpoint("127.0.0.1", 5))]
    )
    snapshot = s.scrape_once()
    nodes = {n.node: n for n in snapshot.nodes()}
    assert set(nodes) == {"b1", "b2", "b4", "x5"}  # b3 left out, b4 and a new cluster's x5 read at once
    assert nodes["b2"].errors_total == 3  # its counter went on
    assert nodes["b4"].up and nodes["x5"].up and [c.name for c in snapshot.clusters] == ["c1", "c2"]


def test_a_cluster_with_no_node_to_read_yet_is_in_the_snapshot_with_its_quorum_view() -> None:
    from ctlplane.exporter.model import QuorumView

    class Quorum:
        def read(self) -> QuorumView:
            return QuorumView(read_at=1.0, leader_id=101)

        def close(self) -> None:
            pass

    s = Scraper(
        [], ScriptedClient(), interval_seconds=1, timeout_seconds=0.3, workers=2, quorum_sources={"d": Quorum()}
    )
    assert [c.name for c in s.latest().clusters] == ["d"]
    cluster = s.scrape_once().cluster("d")
    assert cluster is not None and cluster.quorum is not None and cluster.quorum.leader_id == 101
