"""A real long GC pause of a broker (#35's `long_gc_pause` cause): the broker's JVM stopped inside a full
collection for as long as the test holds its GC log's pipe (harness/gcpause.py), on a KRaft cluster of its own.

What the evidence allows, proven on the real JVM: while the pause lasts every Java thread is stopped, so the
broker's JMX answers nothing and its heartbeats stop: the controller fences it and ctlplane reads it FENCED,
hung or isolated (nothing ctlplane can read tells a pause from a SIGSTOP then). When the pause ends the
broker's very next heartbeat unfences it (BrokerHeartbeatManager.calculateNextBrokerState: a fenced broker past
its registration record's offset is UNFENCED on asking), and its collectors' time has jumped by the whole
pause between ctlplane's reads either side of it: what `long_gc_pause` compares (health/gc.py), named in any
round that still reads it fenced."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ctlplane.exporter.health import Cause, Lifecycle
from ctlplane.exporter.health.gc import pause_seconds
from ctlplane.exporter.model import NodeSnapshot
from harness.gcpause import GcPausePipe, request_collection
from harness.localkafka import KafkaCluster, start_kraft_cluster
from harness.localkafka.process import java_executable
from tests.integration.faults import Timeline, healthy
from tests.integration.watch import Watch
from tests.kafka_versions import KRAFT_UNDER_TEST

pytestmark = pytest.mark.kraft
NAME = "gc-paused"
VICTIM = "broker-1"
PAUSE_ROUNDS = 3  # 45 s stopped inside a collection: past the broker's 9 s session by far


@pytest.fixture(scope="module")
def paused_cluster(kafka_workdir: Path) -> Iterator[tuple[KafkaCluster, Watch, GcPausePipe]]:
    """1 controller and 2 brokers; broker-1's GC log goes to a pipe the test can stop reading."""
    cluster = start_kraft_cluster(
        NAME, kafka_workdir, controllers=1, brokers=2, version=KRAFT_UNDER_TEST, held=[VICTIM]
    )
    pipe = GcPausePipe(kafka_workdir / f"{NAME}-{VICTIM}-gc.fifo")
    watch = None
    try:
        victim = cluster.node(VICTIM)
        victim.command[victim.command.index("-cp") : victim.command.index("-cp")] = [pipe.jvm_option]
        victim.start()
        cluster.wait_ready(120)
        watch = Watch(cluster)
        watch.until(healthy(NAME), 120, "healthy KRaft cluster")
        yield cluster, watch, pipe
    finally:
        pipe.release()
        if watch is not None:
            watch.close()
        cluster.stop()
        pipe.close()


def _victim(observation_nodes: list[NodeSnapshot]) -> NodeSnapshot:
    return next(n for n in observation_nodes if n.node == VICTIM)


def test_a_broker_stopped_in_a_long_gc_pause_is_fenced_while_it_lasts_and_its_collectors_count_the_pause(
    paused_cluster: tuple[KafkaCluster, Watch, GcPausePipe],
) -> None:
    cluster, watch, pipe = paused_cluster
    victim = cluster.node(VICTIM)
    assert victim.pid is not None
    timeline = Timeline(watch, cluster)
    timeline.round()
    timeline.sleep_into_round(0.5)
    pipe.hold()
    collection = request_collection(victim.pid, java_executable())  # System.gc(): stops at its first log line
    try:
        for _ in range(PAUSE_ROUNDS):
            timeline.round()
    finally:
        pipe.release()
    collection.wait(60)
    paused_until = len(timeline.observations) - 1
    for _ in range(8):
        if timeline.round().broker(VICTIM).state is Lifecycle.ACTIVE:  # type: ignore[union-attr]
            break
    states = timeline.states(VICTIM)
    # stopped: hung by every sign ctlplane can read, and fenced once the controller's session ran out
    paused = states[1 : paused_until + 1]
    assert paused[0] in (Lifecycle.FENCED, Lifecycle.UNREACHABLE), timeline.evidence(VICTIM)
    assert set(paused[1:]) == {Lifecycle.FENCED}, timeline.evidence(VICTIM)
    timeline.expect_causes(
        VICTIM, {Cause.HUNG_OR_ISOLATED}, Lifecycle.FENCED, Lifecycle.UNREACHABLE, until=paused_until
    )
    # the pause over: unfenced, and its collectors' time jumped by the pause between the reads around it
    assert states[-1] is Lifecycle.ACTIVE, timeline.evidence(VICTIM)
    reads = [_victim(list(o.snapshot.nodes())) for o in timeline.observations]
    before, after = reads[0], next(r for r in reads[paused_until + 1 :] if r.up)
    jump = (pause_seconds(after) or 0.0) - (pause_seconds(before) or 0.0)
    assert jump >= (PAUSE_ROUNDS - 1) * 15, f"GC time {pause_seconds(before)} -> {pause_seconds(after)}"
    # a round that read it still fenced after the pause names the pause (the controller usually unfences it
    # within the second the pause ends, before any round)
    after_rounds = [b for b in timeline.broker_rounds(VICTIM)[paused_until + 1 :] if b is not None]
    for broker in after_rounds:
        if broker.up and broker.state is Lifecycle.FENCED:
            assert broker.cause is Cause.LONG_GC_PAUSE, timeline.evidence(VICTIM)
