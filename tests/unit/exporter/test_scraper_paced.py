"""A node whose page takes longer than a round (a large broker behind jmx_exporter) is read at its own pace:
one read at a time, never abandoned and asked again, a pause after each page, and its last page served in
between (NodeSnapshot.held); a single late answer (a hang the node came back from) paces nothing."""

from __future__ import annotations

import itertools
import re
import threading
import time
from collections.abc import Callable, Sequence

from ctlplane.exporter.model import Failure, MBeanQuery, NodeSnapshot, RawReading
from ctlplane.exporter.scraper import PACE_PAUSE_SHARE, PACED_PAGE_BYTES, Scraper, Target
from ctlplane.exporter.sources.base import CollectedReadings, ReadError
from ctlplane.exporter.sources.jmx.base import Endpoint

BROKER_STATE = "kafka.server:type=KafkaServer,name=BrokerState"
APP_QUERY, APP_INFO = "kafka.server:type=app-info,id=*", "kafka.server:type=app-info,id=1"  # its node id
TIMEOUT = 0.3
PAGE = 0.9  # three round timeouts


class SlowPages:
    """A node source whose every read takes `seconds` (a page collected before its first byte: its values
    are as of the end), and reads as the read's number; `page=False` answers as a JMX read does."""

    def __init__(self, seconds: float, page: bool = True, large: bool = True) -> None:
        self.seconds = seconds
        self.page = page
        self.large = large
        self.gone = False  # the process has exited: a connection refused at once
        self.started: list[float] = []
        self.running = 0
        self.most_running = 0
        self._lock = threading.Lock()

    def read(self, endpoint: Endpoint, queries: Sequence[MBeanQuery]) -> list[RawReading]:
        with self._lock:
            self.started.append(time.monotonic())
            self.running += 1
            self.most_running = max(self.most_running, self.running)
            number = len(self.started)
        if self.gone:
            with self._lock:
                self.running -= 1
            raise ReadError("connection refused", Failure.GONE)
        time.sleep(self.seconds)
        with self._lock:
            self.running -= 1
        keys = {"type": "KafkaServer", "name": "BrokerState"}
        readings = [
            RawReading(BROKER_STATE, BROKER_STATE, keys, {"Value": float(number)}),
            RawReading(APP_QUERY, APP_INFO, {"type": "app-info", "id": "1"}, {"Version": "4.3.1"}),
        ]
        # a large broker's page (PACED_PAGE_BYTES), or a small one with `large=False`
        size = PACED_PAGE_BYTES if self.large else 1_000_000
        return CollectedReadings(readings, self.seconds, size) if self.page else readings

    def close(self) -> None:
        pass


def _scraper(source: SlowPages, page_interval: float = 0.0) -> Scraper:
    target = Target("c1", "b1", Endpoint("127.0.0.1", 1))
    return Scraper(
        [target], source, interval_seconds=1, timeout_seconds=TIMEOUT, workers=2, page_interval_seconds=page_interval
    )


def _round(scraper: Scraper) -> NodeSnapshot:
    return scraper.scrape_once().clusters[0].nodes[0]


def _until(scraper: Scraper, check: Callable[[NodeSnapshot], bool], done: str, within: float = 10.0) -> NodeSnapshot:
    deadline = time.monotonic() + within
    while True:
        node = _round(scraper)
        if check(node):
            return node
        assert time.monotonic() < deadline, f"not within {within:g}s: {done}; last: {node}"
        time.sleep(0.05)


def _paced(node: NodeSnapshot) -> bool:
    """Held between its pages as a paced node (not a large page late once)."""
    return node.held and "read at its own pace" in (node.error or "")


def test_a_page_slower_than_a_round_twice_is_read_at_its_pace_and_served_between_pages() -> None:
    source = SlowPages(PAGE)
    scraper = _scraper(source)
    try:
        first = _round(scraper)
        assert not first.up and not first.held and first.failure is Failure.TIMEOUT  # not yet known slow
        _until(scraper, lambda node: node.up and node.value("kafka_broker_state") == 2.0, "the second page served")
        held = _until(scraper, lambda node: node.held, "the second page held while the next is due or under way")
        assert not held.up and held.failure is Failure.PACED and held.value("kafka_broker_state") == 2.0
        assert held.last_read_at == held.scraped_at and "read at its own pace" in (held.error or "")
        served = {held.value("kafka_broker_state")}
        for _ in range(30):
            node = _round(scraper)
            assert node.up or node.held, node  # never unread between its pages
            served.add(node.value("kafka_broker_state"))
            time.sleep(0.1)
        assert {3.0, 4.0} <= served
        assert source.most_running == 1  # one read in flight at a time, never re-asked
        gaps = [b - a for a, b in zip(source.started[1:], source.started[2:], strict=False)]
        # from the second page on, each next read starts a pause after the last ended
        assert all(gap >= PAGE * (1 + PACE_PAUSE_SHARE) - 0.05 for gap in gaps), gaps
        assert held.errors_total == _round(scraper).errors_total  # a held round is no failed read
    finally:
        scraper.stop(join_seconds=0)


def test_one_late_answer_paces_nothing_nor_do_slow_small_pages_or_jmx() -> None:
    """A node back from a hang answers late once; a small page slow every time is a loaded host or a sick node,
    not a large broker; a JMX read never touches the per-partition MBeans that make a page large."""
    for source in (SlowPages(PAGE), SlowPages(PAGE, page=False), SlowPages(PAGE, large=False)):
        scraper = _scraper(source)
        try:
            assert not _round(scraper).up  # the first read hangs for three rounds' timeouts...
            source.seconds = 0.01  # ...and the node is fast again once back
            _until(scraper, lambda node: node.up, "the slow first read served once it answers")
            node = _until(
                scraper, lambda node: node.up and node.value("kafka_broker_state") >= 2.0, "read again at once"
            )
            assert not node.held and source.most_running == 1
            for _ in range(5):
                assert _round(scraper).up
            if not source.page or not source.large:
                source.seconds = PAGE  # slow JMX reads or small pages, however many: never held
                for _ in range(15):
                    assert not _round(scraper).held
                    time.sleep(0.1)
        finally:
            scraper.stop(join_seconds=0)


def test_a_large_page_late_once_serves_its_last_page_rather_than_nothing() -> None:
    """A large broker's page usually inside the round's wait (4-7 s of 10 on a real 10,000-partition broker)
    runs past it once (a loaded host): that round serves its last page, held, rather than no answer, and the
    late page is served by the next round; the node is not paced by one late page. A small page late once is
    the node's error as before."""
    late = _late_once(SlowPages(0.2))
    assert late.held and late.served and late.failure is Failure.PACED, late
    assert late.value("kafka_broker_state") == 2.0, late
    assert "late this round" in (late.error or "") and late.errors_total == 0, late
    small = _late_once(SlowPages(0.2, large=False))
    assert not small.up and not small.held and small.failure is Failure.TIMEOUT, small


def _late_once(source: SlowPages) -> NodeSnapshot:
    """The round whose read of `source` runs past the round's wait (its last page's time: 0.2 s), within
    twice that plus the wait; then the late page is served, and the node is read again as before."""
    scraper = _scraper(source)
    try:
        _until(scraper, lambda node: node.up and node.value("kafka_broker_state") == 2.0, "two pages read")
        source.seconds = TIMEOUT + 0.15
        late = _round(scraper)
        source.seconds = 0.2
        node = _until(scraper, lambda node: node.up, "the late page served, or one after it")
        assert (node.value("kafka_broker_state") or 0.0) >= 3.0, node
        reads = len(source.started)
        _until(scraper, lambda node: node.up and len(source.started) > reads, "read again")
        assert source.most_running == 1
        return late
    finally:
        scraper.stop(join_seconds=0)


def test_a_paced_read_running_past_its_slack_is_the_nodes_error() -> None:
    source = SlowPages(PAGE)
    scraper = _scraper(source)
    try:
        _until(scraper, _paced, "paced")
        source.seconds = 30.0  # the node hangs: its next page does not come
        node = _until(
            scraper, lambda node: not node.up and not node.held, "the read past twice the page's time is an error"
        )
        assert node.failure is Failure.TIMEOUT and "not answering as it did" in (node.error or ""), node
        assert re.search(r"its next page under way for \d+s, past \d+s \(its last took [\d.]+s\)", node.error or "")
        assert node.samples == ()
    finally:
        scraper.stop(join_seconds=0)


def test_a_paced_nodes_pages_start_at_most_once_a_page_interval() -> None:
    """A page costs its broker about a core while it is collected: a paced node is asked at most once per
    page_interval_seconds, its last page served in between."""
    source = SlowPages(PAGE)
    scraper = _scraper(source, page_interval=2.0)
    try:
        _until(scraper, _paced, "paced")
        for _ in range(50):
            node = _round(scraper)
            assert node.up or node.held, node
            time.sleep(0.1)
        starts = source.started[1:]  # from the second page on, the node is paced
        gaps = [b - a for a, b in itertools.pairwise(starts)]
        assert gaps and all(gap >= 2.0 - 0.05 for gap in gaps), gaps
    finally:
        scraper.stop(join_seconds=0)


def _in_its_pause(scraper: Scraper, source: SlowPages) -> None:
    """Until the node is paced, its node id known, and its last page has ended: it is in its pause."""
    _until(scraper, lambda node: _paced(node) and node.node_id == 1, "paced, its node id known")
    deadline = time.monotonic() + 5
    while source.running:
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_a_paced_node_the_controller_fences_is_read_at_once_rather_than_after_its_pause() -> None:
    """A large broker crashes while its page is held: the fencing watch's hint starts its next read at once,
    not a page interval later, so the woken round says how it failed (a connection refused: process gone)
    instead of serving its last page with no cause for the fencing."""
    source = SlowPages(PAGE)
    scraper = _scraper(source, page_interval=30.0)
    try:
        _in_its_pause(scraper, source)
        reads = len(source.started)
        assert _round(scraper).held and len(source.started) == reads  # the pause holds
        source.gone = True
        scraper.wake(fenced={("c1", 1)})
        node = _until(scraper, lambda node: not node.held, "read at once once fenced", within=3.0)
        assert node.failure is Failure.GONE and len(source.started) == reads + 1, node
    finally:
        scraper.stop(join_seconds=0)


def test_a_paced_node_whose_read_failed_is_read_again_every_round_not_after_its_pause() -> None:
    """A large broker killed while paced: once a read of it fails (refused: the process is gone), it is no
    longer paced, so each next round reads it again and says how it failed, rather than waiting out the pause
    of its last page with no read and a timeout it never had ("previous read still running")."""
    source = SlowPages(PAGE)
    scraper = _scraper(source, page_interval=30.0)
    try:
        _in_its_pause(scraper, source)
        source.gone = True
        scraper.wake(fenced={("c1", 1)})
        assert _round(scraper).failure is Failure.GONE
        for _ in range(3):  # no hint now: read again all the same
            reads = len(source.started)
            node = _round(scraper)
            assert node.failure is Failure.GONE and len(source.started) == reads + 1, node
    finally:
        scraper.stop(join_seconds=0)


def test_a_paced_node_the_controller_fences_while_its_read_is_under_way_serves_its_last_page_no_more() -> None:
    """A large broker hangs while its next page is being collected: once the fencing watch reads the
    controller fencing it, its last page is no longer served (which would read as a node with nothing wrong
    to name); the round says its read is not answering (a timeout: hung), until a page comes again."""
    source = SlowPages(PAGE)
    scraper = _scraper(source, page_interval=0.0)
    try:
        _until(scraper, lambda node: _paced(node) and node.node_id == 1, "paced, its node id known")
        source.seconds = 30.0  # the node hangs: its next page does not come
        _until(scraper, lambda node: _paced(node) and source.running > 0, "held, its next read under way")
        scraper.wake(fenced={("c1", 1)})
        for _ in range(3):  # the hint's round and the next ones: within the slack, yet not served
            node = _round(scraper)
            assert not node.served and node.failure is Failure.TIMEOUT and node.samples == (), node
    finally:
        scraper.stop(join_seconds=0)
