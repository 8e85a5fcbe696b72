"""What follows the controller (a ZooKeeper controller's per-broker request queues, a KRaft controller's
registration gauges) is asked of a node that was not the active controller at its last read as `dormant`
(a client looks it up again at the usual pace, not every 10 s: at 1,000 nodes that was ~1,200 lookups a
round), and the read that first finds the node active asks for it again unmarked, so that round has it."""

from __future__ import annotations

from collections.abc import Sequence

from ctlplane.exporter.model import MBeanQuery, NodeSnapshot, RawReading
from ctlplane.exporter.scraper import Scraper, Target
from ctlplane.exporter.sources.jmx.base import Endpoint

BROKER_STATE = "kafka.server:type=KafkaServer,name=BrokerState"
ACTIVE = "kafka.controller:type=KafkaController,name=ActiveControllerCount"
CHANNEL_MANAGER = "kafka.controller:type=ControllerChannelManager,"
QUEUES = CHANNEL_MANAGER + "name=QueueSize,broker-id=*"
QUEUE_TIMES = CHANNEL_MANAGER + "name=RequestRateAndQueueTimeMs,broker-id=*"


class ZooKeeperBroker:
    """A ZooKeeper-mode broker that wins the controller's election when `elected` is set: from then on it
    has a request queue for broker 2, which a client finds only by looking the pattern up afresh (an
    unmarked query; a dormant one was looked up, and found empty, before the election)."""

    def __init__(self) -> None:
        self.elected = False
        self.asked: list[list[tuple[str, bool]]] = []  # per client call: (pattern, dormant) of its queues' queries

    def read(self, endpoint: Endpoint, queries: Sequence[MBeanQuery]) -> list[RawReading]:
        self.asked.append([(q.pattern, q.dormant) for q in queries if q.pattern in (QUEUES, QUEUE_TIMES)])
        patterns = {q.pattern for q in queries}
        readings = []
        if BROKER_STATE in patterns:
            readings.append(RawReading(BROKER_STATE, BROKER_STATE, {"name": "BrokerState"}, {"Value": 3.0}))
        if ACTIVE in patterns:
            value = 1.0 if self.elected else 0.0
            readings.append(RawReading(ACTIVE, ACTIVE, {"name": "ActiveControllerCount"}, {"Value": value}))
        for query in queries:
            if query.pattern == QUEUES and self.elected and not query.dormant:
                name = "kafka.controller:type=ControllerChannelManager,name=QueueSize,broker-id=2"
                readings.append(RawReading(QUEUES, name, {"name": "QueueSize", "broker-id": "2"}, {"Value": 0.0}))
        return readings

    def close(self) -> None:
        pass


def _rounds(scraper: Scraper, now: list[float], count: int) -> list[NodeSnapshot]:
    nodes = []
    for _ in range(count):
        nodes.append(next(scraper.scrape_once().nodes()))
        now[0] += 15  # the scraper's clock
    return nodes


def _queues(node: NodeSnapshot) -> list[float]:
    return [s.value for s in node.samples if s.series == "kafka_controller_channel_queue_size"]


def test_a_broker_elected_controller_has_its_queues_read_in_the_round_that_first_reads_it_active() -> None:
    broker, now = ZooKeeperBroker(), [1000.0]
    scraper = Scraper([Target("c1", "b1", Endpoint("127.0.0.1", 1))], broker, interval_seconds=15,
                      timeout_seconds=5, workers=1, clock=lambda: now[0])  # fmt: skip
    before = _rounds(scraper, now, 2)
    # unidentified at first: asked unmarked; then a ZooKeeper-mode broker, not the controller: dormant
    assert broker.asked[0] == [(QUEUES, False), (QUEUE_TIMES, False)]
    assert broker.asked[1] == [(QUEUES, True), (QUEUE_TIMES, True)]
    assert [_queues(node) for node in before] == [[], []]

    broker.elected = True
    elected = _rounds(scraper, now, 2)
    # the read that finds it active asks again, unmarked, in the same read: that round has the queue, once
    assert [_queues(node) for node in elected] == [[0.0], [0.0]]
    assert {dormant for _, dormant in broker.asked[2]} == {True}
    assert {dormant for _, dormant in broker.asked[3]} == {False}  # the second call of that read
    assert {dormant for _, dormant in broker.asked[4]} == {False}  # the next round: one call, unmarked
    assert len(broker.asked) == 5

    broker.elected = False
    _rounds(scraper, now, 2)
    assert {dormant for _, dormant in broker.asked[-1]} == {True}  # no longer the controller: dormant again
    assert len(broker.asked) == 7  # and one call per read
