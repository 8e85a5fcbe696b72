"""Between rounds, the active controller's word on fencing, read every few seconds; a change starts a round
at once (Scraper.wake).

A broker that crashes or hangs is fenced by the controller when its session runs out
(`broker.session.timeout.ms`, 9 s; BrokerHeartbeatManager). A round reads that when it comes: up to a whole
interval (15 s) later, the largest wait ctlplane adds before a page (docs/alerts.md "How fast a page comes").
So each cluster's active controller (as the last round's read decides it: health.find_active_controller) is asked every
`scrape.fencing_poll_seconds` for the gauges that move when a broker is fenced, unfenced or goes: the
per-broker BrokerRegistrationState (Kafka 4.1+, ControllerMetadataMetricsPublisher), FencedBrokerCount and
ActiveBrokerCount (3.1+; in ZooKeeper mode the live brokers, ControllerContext), and in ZooKeeper mode which
brokers the controller keeps a request queue for (ControllerChannelManager's QueueSize,broker-id=N, made when
a broker registers and removed when its session expires: every release ctlplane reads; its value, the queue's
length, moves all the time and is not compared). When what it says differs
from what the last round read of that node, the scraper starts the next round now. The round decides, as
every round does: the watch adds no evidence of its own, only an earlier round.

The read is the node source's, over the node's own connection: a few MBeans over JMX (one query pattern and
two gauges), a metrics endpoint's whole page. A controller that does not answer is asked again at the next
poll; the rounds go on as before.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Iterable

from ctlplane.exporter.catalog import CATALOG
from ctlplane.exporter.health.controller import find_active_controller
from ctlplane.exporter.health.model import REGISTRATION_STATES, Lifecycle
from ctlplane.exporter.model import FleetSnapshot, MBeanQuery, Sample
from ctlplane.exporter.readings import plan_queries, samples_from_readings
from ctlplane.exporter.scraper import Target
from ctlplane.exporter.sources.base import NodeSource

log = logging.getLogger(__name__)

# The series whose change means a broker was fenced, unfenced, shut down or gone (catalog.py)
FENCING_SERIES = frozenset(
    {
        "kafka_controller_broker_registration_state",
        "kafka_controller_fenced_brokers",
        "kafka_controller_active_brokers",
        "kafka_controller_channel_queue_size",
    }
)
REGISTRATION = "kafka_controller_broker_registration_state"
QUEUE = "kafka_controller_channel_queue_size"  # its presence per broker is the word, not its value
OFF_RECHECK_SECONDS = 5.0

# What a controller said: (series, labels, value) of the fencing series
Word = frozenset[tuple[str, tuple[tuple[str, str], ...], float]]


def fencing_queries() -> tuple[MBeanQuery, ...]:
    """The scraper's queries for the fencing series' MBeans (readings.plan_queries)."""
    patterns = {spec.mbean for spec in CATALOG if spec.series in FENCING_SERIES}
    return tuple(query for query in plan_queries() if query.pattern in patterns)


def fencing_word(samples: Iterable[Sample]) -> Word:
    """What a node's read says of fencing: its fencing series, label by label (a request queue: there or not)."""
    return frozenset(
        (s.series, s.labels, 1.0 if s.series == QUEUE else s.value) for s in samples if s.series in FENCING_SERIES
    )


def newly_fenced(before: Word, now: Word) -> set[int]:
    """Broker ids whose registration state reads FENCED now and did not before (Kafka 4.1+), or whose request
    queue the ZooKeeper-mode controller dropped since (its session expired: KafkaController.onBrokerFailure)."""
    fenced = {
        dict(labels).get("broker", "")
        for series, labels, value in now - before
        if series == REGISTRATION and REGISTRATION_STATES.get(value) is Lifecycle.FENCED
    }
    dropped = {dict(labels).get("broker", "") for series, labels, _ in before - now if series == QUEUE}
    return {int(broker) for broker in fenced | dropped if broker.isdigit()}


class FencingWatch:
    """Polls every cluster's active controller for its fencing word and calls `wake` when it differs from the
    last round's read of that node. `configure` changes its poll at any time (a reload)."""

    def __init__(
        self,
        latest: Callable[[], FleetSnapshot],
        targets: Callable[[], Iterable[Target]],
        client: NodeSource,
        wake: Callable[[Collection[tuple[str, int]]], None],
        poll_seconds: float,
    ) -> None:
        self.latest = latest
        self.targets = targets
        self.client = client
        self.wake = wake
        self.poll_seconds = poll_seconds
        self.queries = fencing_queries()
        # (cluster, node) -> the word a wake was last asked for: asked once per change, not at every poll
        # until the round it started is published
        self._woken_for: dict[tuple[str, str], Word] = {}
        self.errors: dict[tuple[str, str], str] = {}  # a controller's last failed poll, while it fails
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def poll(self) -> bool:
        """Ask every active controller once; True when a round was woken."""
        snapshot = self.latest()
        by_name = {(t.cluster, t.node): t for t in self.targets()}
        woke = False
        fenced: set[tuple[str, int]] = set()
        # the node the round's own health reads the fencing from (its epoch floor aside)
        active = (find_active_controller(cluster) for cluster in snapshot.clusters)
        for node in (node for node in active if node is not None):
            key = (node.cluster, node.node)
            target = by_name.get(key)
            if target is None:  # left the watched set since the round
                continue
            said = fencing_word(node.samples)
            try:
                readings = self.client.read(target.endpoint, self.queries)
                now = fencing_word(samples_from_readings(readings))
            except Exception as exc:  # a controller that does not answer: the rounds say so, not the watch
                if self.errors.get(key) != str(exc):
                    log.info("fencing poll of %s/%s failed (the rounds go on): %s", *key, exc)
                self.errors[key] = str(exc)
                continue
            self.errors.pop(key, None)
            if now != said and self._woken_for.get(key) != now:
                log.debug("fencing changed on %s/%s: a round now", *key)
                self._woken_for[key] = now
                woke = True
                fenced.update((node.cluster, broker) for broker in newly_fenced(said, now))
            elif now == said:
                self._woken_for.pop(key, None)
        if woke:
            self.wake(fenced)
        return woke

    def configure(self, poll_seconds: float) -> None:
        """Poll this often from the next poll on (0: off); a reload's scrape.fencing_poll_seconds."""
        self.poll_seconds = poll_seconds

    def start(self) -> FencingWatch:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="fencing-watch", daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        # off (0) it only looks again now and then, for a reload that turns it on
        while not self._stop.wait(self.poll_seconds or OFF_RECHECK_SECONDS):
            if self.poll_seconds <= 0:
                continue
            try:
                self.poll()
            except Exception:  # a bug here must not end the watch for good
                log.exception("fencing poll failed")

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
