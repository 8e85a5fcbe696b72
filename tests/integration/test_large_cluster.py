"""A cluster at production size (issue #60): a real KRaft cluster whose broker-1 holds 10,000 partitions (1,000
topics of 10, RF 2, the second replicas on broker-2 and broker-3: 6,000 and 4,000), read at once through every
source ctlplane has: remote JMX, each node's real jmx_exporter javaagent in its default naming (as Amazon MSK
serves it; broker-1's page is ~10 MB, ~100,000 partition lines) with the quorum's view beside it, and the
Admin API alone. Every source reads every broker right, the large one's own series served; no round asks the
cluster anything per topic; the metadata canary and the restart-safety answers hold; a hang and a crash of the
large broker page with their causes through every source, and nothing else pages (each replayed through the
shipped rules).

What the machine holds (2 cores, 24 GiB, `ulimit -n` 20,000, vm.max_map_count 65,530): 10,000 partitions on one
broker cost ~10,100 descriptors and ~20,300 memory maps with the harness's small segments and index files
(localkafka.LARGE_BROKER_OVERRIDES), so 10,000 is near this machine's descriptor limit for one broker.

A large broker can starve its neighbours on 2 cores into a real fencing (an exporter collecting a page for a
core's worth of seconds): the Admin API alone is Kafka's own word (describeCluster's fenced flag), so a broker
fenced outside a fault is told from ctlplane's error in every healthy check's message.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from ctlplane.exporter.config import ScrapeConfig
from ctlplane.exporter.health import Cause, Lifecycle
from ctlplane.exporter.health.restart import Blocker
from ctlplane.exporter.model import Failure, MBeanQuery, NodeSnapshot
from ctlplane.exporter.scraper import PACE_PAUSE_SHARE, PACED_READ_SLACK
from ctlplane.exporter.sources.admin.canary import MetadataCanary
from ctlplane.exporter.sources.endpoint.profiles import profile
from ctlplane.exporter.sources.jmx.base import Endpoint
from ctlplane.exporter.state import Observation
from harness import localkafka
from harness.localkafka import KafkaCluster, KafkaNode, MetricsAgent
from tests.integration import large as large_cluster
from tests.integration.faults import (
    CauseAt,
    SideBySide,
    Source,
    cluster_health,
    healthy,
    pages_then_resolves,
    read_of,
    replay,
)
from tests.integration.watch import DEFAULT_SCRAPE_TIMEOUT, Watch, endpoint_targets, shared_client, targets_of
from tests.kafka_versions import KRAFT_UNDER_TEST

pytestmark = [pytest.mark.kafka, pytest.mark.kraft]

NAME = "large-kraft"
TOPICS = 1_000
# each topic's 10 partitions: broker-1 holds all and leads half; the second replicas on broker-2 and broker-3
REPLICAS = ((1, 2), (2, 1), (1, 3), (3, 1), (1, 2), (2, 1), (1, 3), (3, 1), (1, 2), (2, 1))
LARGE_PARTITIONS = TOPICS * len(REPLICAS)
LARGE_LEADS = TOPICS * sum(1 for replicas in REPLICAS if replicas[0] == 1)
REQUESTS = "kafka.network:type=RequestMetrics,name=RequestsPerSec,request=*,version=*"
# What a client's round could ask per topic (or per partition): a source that did would send ~1,000 a round
PER_TOPIC_REQUESTS = frozenset(
    {"Metadata", "DescribeTopicPartitions", "DescribeConfigs", "ListOffsets", "DescribeLogDirs", "OffsetFetch"}
)


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KafkaCluster, list[Source]]]:
    cluster = localkafka.start_kraft_cluster(
        NAME,
        tmp_path_factory.mktemp(NAME),
        controllers=1,
        brokers=3,
        version=KRAFT_UNDER_TEST,
        metrics_agent=MetricsAgent(),
        broker_overrides=localkafka.LARGE_BROKER_OVERRIDES,
        broker_heap_mb=large_cluster.BROKER_HEAP_MB,
    )
    try:
        with large_cluster.watched(cluster, "large", TOPICS, REPLICAS, LARGE_PARTITIONS) as sources:
            yield cluster, sources
    finally:
        cluster.stop()


def _healthy(cluster: KafkaCluster, sources: list[Source]) -> None:
    """Every source reads every broker ACTIVE and one active controller."""
    for source in sources:
        large_cluster.until_healthy(cluster.name, source, sources)


def _requests(cluster: KafkaCluster) -> dict[str, float]:
    """Every broker's requests received so far by type, summed over versions and brokers."""
    total: dict[str, float] = {}
    for broker in cluster.brokers():
        for reading in shared_client().read(Endpoint("127.0.0.1", broker.jmx_port), [MBeanQuery(REQUESTS, ("Count",))]):
            count = reading.values.get("Count")
            if isinstance(count, float | int):
                request = reading.keys["request"]
                total[request] = total.get(request, 0.0) + float(count)
    return total


def _said(observation: Observation) -> str:
    return large_cluster.said(observation, NAME)


def _age(observation: Observation, page: NodeSnapshot) -> float:
    return observation.snapshot.taken_at - (page.last_read_at or 0.0)


def _oldest_served(last: float) -> float:
    """How old a paced page may be while it is served, by the scraper's own rule: its read took `last`; the next
    starts PACE_PAUSE_SHARE of that after it ended but no sooner than the page interval after it began, at the
    first round after (these rounds are 15 s apart), and is waited for, the last page served, for
    PACED_READ_SLACK times `last` (at least that plus the scrape timeout)."""
    pages = ScrapeConfig()
    pause = max((1 + PACE_PAUSE_SHARE) * last, pages.page_interval_seconds) + 15
    return pause + max(PACED_READ_SLACK * last, last + DEFAULT_SCRAPE_TIMEOUT)


def _the_page_under_way_was_as_slow_as_said(watch: Watch, page: NodeSnapshot, reads: list[str]) -> None:
    """A paced page goes unserved only where its next read ran past the scraper's slack (a loaded host: its
    pages took 4-161 s in suite runs); then the page that comes must have taken that long."""
    said = page.error or ""
    past = re.search(r"its next page under way for \d+s, past (\d+)s", said)
    assert past is not None and page.failure is Failure.TIMEOUT, reads
    landed = watch.until(lambda o: (n := read_of(o, NAME, "broker-1")) is not None and n.up, 900, "the page under way")
    read = read_of(landed, NAME, "broker-1")
    assert read is not None and read.scrape_duration_seconds >= float(past[1]) - 1, (reads, read)
    reads.append(f"{read.scrape_duration_seconds:.1f}s read (the page under way)")


def _restart_answers(observation: Observation) -> Mapping[str, tuple[bool, str | None]]:
    health = observation.health.cluster(NAME)
    assert health is not None
    return {answer.node: (answer.safe, answer.blocker) for answer in health.restart}


def test_every_broker_is_read_through_every_source_and_no_round_asks_anything_per_topic(
    large: tuple[KafkaCluster, list[Source]],
) -> None:
    """Every source reads every broker ACTIVE. Over remote JMX and through its page the large broker's own series
    are served (RUNNING, leading its 5,000 partitions); through its page, every round up (or its last page held
    while the next is collected: a paced node) and no older than the scraper's pace allows; unserved only where
    its next page ran past the scraper's slack, and then that page was as slow as said. Through the Admin API
    alone, four rounds send the brokers no request that could be asked per topic but a handful."""
    cluster, sources = large
    _healthy(cluster, sources)
    jmx, endpoints, admin = (source.watch for source in sources)
    observation = jmx.scrape()
    broker = read_of(observation, NAME, "broker-1")
    assert broker is not None and broker.up, broker
    assert broker.value("kafka_broker_state") == 3.0 and broker.value("kafka_broker_leader_partitions") == LARGE_LEADS

    # its first page is read past the scrape timeout (10.4 s here, cold): that round says "no answer within
    # 10s" while its request is held open, and the next serves the page; from then on every round serves it
    endpoints.until(
        lambda o: (node := read_of(o, NAME, "broker-1")) is not None and node.served, 60, "broker-1's first page read"
    )
    reads: list[str] = []  # each round's read of broker-1, for the failure's message
    for _ in range(4):  # a minute at the 15 s round
        observation = endpoints.scrape()
        page = read_of(observation, NAME, "broker-1")
        assert page is not None
        reads.append(f"{page.scrape_duration_seconds:.1f}s {page.failure or 'read'} {page.error or ''}".strip())
        if not page.served:
            _the_page_under_way_was_as_slow_as_said(endpoints, page, reads)
            continue
        assert page.value("kafka_broker_state") == 3.0, page
        assert page.value("kafka_broker_leader_partitions") == LARGE_LEADS, page
        assert _age(observation, page) <= _oldest_served(page.scrape_duration_seconds), (reads, page)
        assert healthy(NAME)(observation), _said(observation)
        time.sleep(15)

    admin.scrape()
    before = _requests(cluster)
    rounds = 4
    for _ in range(rounds):
        assert healthy(NAME)(seen := admin.scrape()), _said(seen)
        time.sleep(2)
    after = _requests(cluster)
    asked = {request: after.get(request, 0.0) - before.get(request, 0.0) for request in PER_TOPIC_REQUESTS}
    assert sum(asked.values()) <= 3 * rounds, asked  # a per-topic call: ~1,000 a round


def test_the_metadata_canary_and_the_restart_answers_hold_at_this_size(
    large: tuple[KafkaCluster, list[Source]],
) -> None:
    """The metadata canary's changes reach every broker well within the stale threshold, though each broker's
    metadata image holds 1,000 topics; every broker may restart (each of its partitions has a replica in sync to
    spare: RF 2, min.insync.replicas 1), the one controller may not (it is the quorum)."""
    cluster, sources = large
    _healthy(cluster, sources)
    canary = MetadataCanary(
        NAME, tuple(cluster.bootstrap.split(",")), topic_prefix="ctlplane-canary-", interval_seconds=5.0,
        timeout_seconds=5.0,
    ).start()  # fmt: skip
    watch = Watch(cluster, canaries={NAME: canary})
    try:

        def served_twice(o: Observation) -> bool:
            view = o.snapshot.cluster(NAME).canary  # type: ignore[union-attr]  # the canary's cluster
            return (
                view is not None
                and len(view.brokers) == 3
                and all(b.buckets and b.buckets[-1] >= 2 for b in view.brokers)
            )

        observation = watch.until(served_twice, 90, "every broker serves two canary changes")
        view = observation.snapshot.cluster(NAME).canary  # type: ignore[union-attr]
        assert view is not None and view.error is None and not view.errors_total, view
        for health in cluster_health(observation, NAME).brokers:
            assert health.canary_unserved_seconds is not None and not health.stale, health
        answers = _restart_answers(observation)
        assert all(answers[b.name] == (True, None) for b in cluster.brokers()), answers
        assert answers[cluster.controllers()[0].name] == (False, Blocker.QUORUM_MAJORITY), answers
    finally:
        watch.close()


def test_a_large_broker_read_at_its_own_pace_still_lets_every_broker_restart(
    large: tuple[KafkaCluster, list[Source]],
) -> None:
    """broker-1 read through its page with a scrape timeout shorter than the page (2 s against its 4-7 s; in a
    loaded suite its page took up to 161 s), the other nodes over remote JMX: between its pages its last page
    is served (held: paced, or late this round), and the restart answers count that page's ISR counts (no
    older than health.restart_counts_max_age_seconds: the page's time, not its read's start) and name them,
    rather than every broker waiting for good ("isr_counts_unread")."""
    cluster, sources = large
    _healthy(cluster, sources)
    page = next(t for t in endpoint_targets(cluster, profile("jmx_exporter")) if t.node == "broker-1")
    pages = ScrapeConfig(timeout_seconds=2.0, page_interval_seconds=20.0)
    watch = Watch(cluster, timeout=2.0, targets=[page, *targets_of(cluster, omit=["broker-1"])], pages=pages)
    try:

        def held(o: Observation) -> bool:
            node = read_of(o, NAME, "broker-1")
            return node is not None and node.held

        # its first page read in full (~5 s quiet, 161 s seen in a loaded suite), then its next under way
        observation = watch.until(held, 480, "broker-1's last page served while its next is read")
        answers = {a.node: a for a in cluster_health(observation, NAME).restart}
        said = {node: (a.safe, a.blocker, a.reason) for node, a in answers.items()}
        assert all(answers[b.name].safe for b in cluster.brokers()), said
        assert "broker-1's from its page of" in answers["broker-2"].reason, said
    finally:
        watch.close()


def _fault_row(
    cluster: KafkaCluster, sources: list[Source], tmp_path: Path, fault: str, causes: tuple[Cause, Cause]
) -> None:
    """broker-1 (10,000 partitions) hung (SIGSTOP) or killed (kill -9) 0.5 s after a round, resumed or restarted
    90 s later: FENCED through every source with `causes` (through the nodes, through the Admin API alone),
    KafkaBrokerFenced its one page, resolved once it is back; while it is down the others may not restart (its
    partitions at their minimum in sync), and once its replicas are back in sync every broker may again."""
    _healthy(cluster, sources)
    victim: KafkaNode = cluster.brokers()[0]
    rounds = SideBySide(cluster, sources)
    rounds.round()
    rounds.sleep_into_round(0.5)
    victim.pause() if fault == "hung" else victim.kill()
    try:
        rounds.rounds(6)  # 90 s: `for: 1m` has fired
    finally:
        victim.resume() if fault == "hung" else victim.start()
    faulted_until = rounds.last
    # restarted, it loads 10,000 logs (its kill -9 left their directory unclean) and replays the metadata of 1,000
    # topics before it asks to be unfenced: 17 s quiet (the logs 8.6 s), over 3 minutes in a loaded suite (CI)
    rounds.until([victim.name], Lifecycle.ACTIVE, 40)
    for source, timeline in rounds.pairs:
        states = timeline.states(victim.name)[1 : faulted_until + 1]
        assert states[0] in (Lifecycle.ACTIVE, Lifecycle.FENCED, Lifecycle.UNREACHABLE), timeline.evidence(victim.name)
        # the rounds' states, and the evidence of each round of the fault not FENCED (the whole evidence is cut
        # short in the failure's message)
        evidence = timeline.evidence(victim.name)[1 : faulted_until + 1]
        odd = [
            (i, said)
            for i, (state, said) in enumerate(zip(states, evidence, strict=True))
            if i and state is not Lifecycle.FENCED
        ]
        assert not odd, (source.recorded, [state.value for state in states], odd)
        cause = causes[1] if source.admin else causes[0]
        timeline.expect_causes(victim.name, {cause}, Lifecycle.FENCED, Lifecycle.UNREACHABLE, until=faulted_until)
        if not source.admin:
            down = _restart_answers(timeline.observations[faulted_until])
            assert down[victim.name] == (False, Blocker.NOT_ACTIVE), down
            # fencing took it out of every ISR of more than one (KRaft's ReplicationControlManager.handleBrokerFenced),
            # so the partitions it shared are at min.insync.replicas 1: the reason given before "one at a time"
            assert down["broker-2"] == (False, Blocker.AT_MIN_ISR), down
        replay(
            timeline,
            f"{source.recorded}-broker-{fault}",
            [
                *pages_then_resolves(faulted_until, rounds.last, frozenset({("KafkaBrokerFenced", victim.name)})),
                CauseAt(victim.name, faulted_until, cause),
            ],
            f"{source.read_through}; 0.5 s after a round {'SIGSTOP' if fault == 'hung' else 'kill -9'} of "
            f"{victim.name} (10,000 partitions), {'resumed' if fault == 'hung' else 'restarted'} after 90 s",
            tmp_path,
        )
    everyone_safe = {b.name: (True, None) for b in cluster.brokers()}
    sources[0].watch.until(
        lambda o: {n: a for n, a in _restart_answers(o).items() if n in everyone_safe} == everyone_safe,
        180,
        "every broker may restart again, its replicas back in sync",
    )


def test_the_large_broker_hung_pages_once_with_its_cause_through_every_source(
    large: tuple[KafkaCluster, list[Source]], tmp_path: Path
) -> None:
    _fault_row(*large, tmp_path, "hung", (Cause.HUNG_OR_ISOLATED, Cause.NO_NODE_METRICS))


def test_the_large_broker_killed_pages_once_with_its_cause_through_every_source(
    large: tuple[KafkaCluster, list[Source]], tmp_path: Path
) -> None:
    _fault_row(*large, tmp_path, "killed", (Cause.PROCESS_GONE, Cause.NO_NODE_METRICS))
