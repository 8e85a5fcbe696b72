"""The slow tier: per-RPC request histograms read once per `slow_interval_seconds`, not every round, their
last values kept between reads with the time they were read (a double JMX client at the I/O edge)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

from ctlplane.exporter.catalog import SLOW_SERIES
from ctlplane.exporter.model import MBeanQuery, NodeSnapshot, RawReading
from ctlplane.exporter.scraper import Scraper, Target
from ctlplane.exporter.sources.jmx.base import Endpoint, JmxError

BROKER_STATE = "kafka.server:type=KafkaServer,name=BrokerState"
TOTAL_TIME = "kafka.network:type=RequestMetrics,name=TotalTimeMs,request=*"
HISTOGRAM = {"Count": 10.0, "Mean": 2.0, "50thPercentile": 1.0, "99thPercentile": 9.0}


class TieredClient:
    """A broker with a BrokerState and an UpdateMetadata TotalTimeMs histogram whose Count rises per read."""

    def __init__(self) -> None:
        self.asked: list[set[str]] = []  # per read, the patterns asked for
        self.failing = False
        self.count = 0.0

    def read(self, endpoint: Endpoint, queries: Sequence[MBeanQuery]) -> list[RawReading]:
        patterns = {query.pattern for query in queries}
        self.asked.append(patterns)
        if self.failing:
            raise JmxError(f"{endpoint.address}: connection refused")
        readings = [RawReading(BROKER_STATE, BROKER_STATE, {"name": "BrokerState"}, {"Value": 3.0})]
        if TOTAL_TIME in patterns:
            self.count += 10
            name = "kafka.network:name=TotalTimeMs,request=UpdateMetadata,type=RequestMetrics"
            keys = {"type": "RequestMetrics", "name": "TotalTimeMs", "request": "UpdateMetadata"}
            readings.append(RawReading(TOTAL_TIME, name, keys, {**HISTOGRAM, "Count": self.count}))
        return readings

    def close(self) -> None:
        pass


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _scraper(client: TieredClient, clock: Clock, slow_interval: float | None) -> Scraper:
    target = Target("c1", "b1", Endpoint("127.0.0.1", 1))
    return Scraper(
        [target], client, interval_seconds=15, timeout_seconds=5, workers=2, clock=clock,
        slow_interval_seconds=slow_interval,
    )  # fmt: skip


def _round(scraper: Scraper, clock: Clock) -> NodeSnapshot:
    node = next(scraper.scrape_once().nodes())
    clock.now += 15
    return node


def _total_time(node: NodeSnapshot) -> tuple[float, float | None] | None:
    sample = node.sample("kafka_request_total_time_seconds", request="UpdateMetadata")
    return None if sample is None else (sample.value, sample.read_at)


def test_the_slow_tier_is_read_once_per_slow_interval_and_served_between_with_its_read_time() -> None:
    assert SLOW_SERIES == {"kafka_request_queue_time_seconds", "kafka_request_total_time_seconds"}
    client, clock = TieredClient(), Clock()
    scraper = _scraper(client, clock, slow_interval=60)
    nodes = [_round(scraper, clock) for _ in range(9)]  # rounds at 1000, 1015, ... 1120
    slow_reads = [TOTAL_TIME in asked for asked in client.asked]
    assert slow_reads == [True, False, False, False, True, False, False, False, True]
    assert all(BROKER_STATE in asked for asked in client.asked)  # the rest is read every round
    assert [_total_time(node) for node in nodes] == [
        *[(10.0, 1000.0)] * 4,  # carried with the time it was read: served, never presented as new
        *[(20.0, 1060.0)] * 4,
        (30.0, 1120.0),
    ]
    assert all(node.sample("kafka_broker_state") is not None for node in nodes)
    assert all(node.sample("kafka_broker_state").read_at is None for node in nodes)  # type: ignore[union-attr]


def test_a_node_back_from_down_reads_its_slow_tier_at_once_and_serves_nothing_old() -> None:
    client, clock = TieredClient(), Clock()
    scraper = _scraper(client, clock, slow_interval=60)
    _round(scraper, clock)
    client.failing = True
    down = _round(scraper, clock)
    assert not down.up and _total_time(down) is None
    client.failing = False
    back = _round(scraper, clock)  # 30 s after the last slow read: due again, it may have restarted
    assert TOTAL_TIME in client.asked[-1] and _total_time(back) == (20.0, 1030.0)


def test_without_a_slow_tier_everything_is_read_every_round_with_no_read_times() -> None:
    client, clock = TieredClient(), Clock()
    scraper = _scraper(client, clock, slow_interval=None)
    nodes = [_round(scraper, clock) for _ in range(3)]
    assert all(TOTAL_TIME in asked for asked in client.asked)
    assert [_total_time(node) for node in nodes] == [(10.0, None), (20.0, None), (30.0, None)]


def test_the_nodes_slow_reads_are_spread_over_the_rounds_of_a_slow_interval() -> None:
    """Read together, every node's slow tier would land in one round a minute (1,000 nodes: a round of
    ~11 s among rounds of ~7.5 s, bench/fleet.py); after the first round each round reads a quarter."""
    client, clock = TieredClient(), Clock()
    reads: list[tuple[int, bool]] = []  # (port, the slow tier asked for), one append per read
    reading = client.read

    def read(endpoint: Endpoint, queries: Sequence[MBeanQuery]) -> list[RawReading]:
        reads.append((endpoint.port, any(query.pattern == TOTAL_TIME for query in queries)))
        return reading(endpoint, queries)

    client.read = read  # type: ignore[method-assign]
    targets = [Target("c1", f"b{port}", Endpoint("127.0.0.1", port)) for port in (1, 2, 3, 4)]
    scraper = Scraper(targets, client, interval_seconds=15, timeout_seconds=5, workers=4, clock=clock,
                      slow_interval_seconds=60)  # fmt: skip
    slow_by_round: list[list[int]] = []
    for _ in range(9):
        first = len(reads)
        scraper.scrape_once()
        clock.now += 15
        slow_by_round.append(sorted(port for port, slow in reads[first:] if slow))
    assert slow_by_round[0] == [1, 2, 3, 4]  # values from the first round on
    assert [len(read) for read in slow_by_round[1:]] == [1] * 8  # then a quarter per round
    for port in (1, 2, 3, 4):
        rounds = [i for i, read in enumerate(slow_by_round) if port in read]
        assert all(b - a == 4 for a, b in pairwise(rounds[1:])), (port, rounds)  # every 60 s
