"""Combined-mode KRaft (process.roles=broker,controller) on a real cluster of three combined nodes.

A combined node registers the broker's and the controller's MBeans in one JVM, and the two share the Yammer
names they both use (RequestChannel's queues, KafkaRequestHandlerPool's idle meter: Yammer's getOrAdd hands
the second pool the first one's metric). ctlplane reads it as one node of role `combined`: a broker whose
lifecycle the quorum decides and a voter that may be the active controller. Marked `matrix`: `make
test-matrix` runs it on every KRaft release; `make test` leaves it out for time.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ctlplane.exporter.catalog import Role
from ctlplane.exporter.health import Lifecycle
from harness.localkafka import KafkaCluster, start_kraft_cluster
from tests.integration.faults import Expectation, Timeline, cluster_health, healthy, replay
from tests.integration.watch import Watch
from tests.kafka_versions import KRAFT_NAME, KRAFT_UNDER_TEST

COMBINED = f"{KRAFT_NAME}-combined"

pytestmark = [pytest.mark.kraft, pytest.mark.matrix]


@pytest.fixture(scope="module")
def combined(kafka_workdir: Path) -> Iterator[tuple[KafkaCluster, Watch]]:
    cluster = start_kraft_cluster(
        COMBINED, kafka_workdir, controllers=3, brokers=0, combined=True, version=KRAFT_UNDER_TEST
    )
    watch = Watch(cluster, timeout=2.0)
    try:
        watch.until(healthy(COMBINED), 120, "healthy combined-mode cluster")
        yield cluster, watch
    finally:
        watch.close()
        cluster.stop()


def test_every_combined_node_is_read_as_both_a_broker_and_a_voter(combined: tuple[KafkaCluster, Watch]) -> None:
    cluster, watch = combined
    observation = watch.until(healthy(COMBINED), 60, "healthy")
    snapshot = observation.snapshot.cluster(COMBINED)
    assert snapshot is not None
    assert {n.node: n.role for n in snapshot.nodes} == {n.name: Role.COMBINED for n in cluster.nodes}
    for node in snapshot.nodes:
        assert node.has("kafka_broker_state") and node.has("kafka_controller_active"), node.node
        for sample in node.samples:
            if sample.series.endswith("_ratio"):  # the shared idle meter is marked by both pools
                assert 0.0 <= sample.value <= 1.0, (node.node, sample)
    health = cluster_health(observation, COMBINED)
    assert {b.node for b in health.brokers} == {n.name for n in cluster.nodes}
    assert health.controller.node in {n.name for n in cluster.nodes}
    assert all(b.metadata_lag_records is not None for b in health.brokers), health.brokers


def test_kill_of_a_standby_combined_node_is_a_fenced_broker_that_pages_and_no_failover(
    combined: tuple[KafkaCluster, Watch], tmp_path: Path
) -> None:
    """kill -9 of a combined node that is not the active controller, 0.5 s after a round: its broker half is
    fenced by the active controller (session timeout) and pages as a crash; the quorum keeps its leader (2
    of 3 voters), so no failover and no controller alert; restarted, it is ACTIVE and everything resolves."""
    cluster, watch = combined
    start = watch.until(healthy(COMBINED), 60, "healthy")
    leader = cluster_health(start, COMBINED).controller
    victim = next(n for n in cluster.nodes if n.name != leader.node)
    timeline = Timeline(watch, cluster)
    timeline.round()
    timeline.sleep_into_round(0.5)
    victim.kill()
    try:
        for _ in range(6):  # 90 s: `for: 1m` of KafkaBrokerFenced has fired by then
            timeline.round()
    finally:
        victim.start()
    killed_until = len(timeline.observations) - 1
    crashed = timeline.states(victim.name)[1:]
    assert Lifecycle.SHUTDOWN not in crashed, timeline.evidence(victim.name)
    assert set(crashed[1:]) == {Lifecycle.FENCED}, timeline.evidence(victim.name)
    controllers = [cluster_health(o, COMBINED).controller for o in timeline.observations]
    assert {c.node for c in controllers} == {leader.node}, controllers
    for _ in range(12):
        broker = timeline.round().broker(victim.name)
        if broker is not None and broker.state is Lifecycle.ACTIVE:
            break
    timeline.round()  # one more round: every alert resolved
    assert timeline.states(victim.name)[-1] is Lifecycle.ACTIVE, timeline.evidence(victim.name)
    last = len(timeline.observations) - 1
    replay(
        timeline,
        "combined-kill-standby",
        [
            Expectation("critical", killed_until, frozenset({("KafkaBrokerFenced", victim.name)})),
            Expectation("critical", last, frozenset()),
        ],
        f"kill -9 of combined node {victim.name} (a standby voter) 0.5 s after a round, restart after 90 s",
        tmp_path,
    )
    watch.until(healthy(COMBINED), 120, "healthy again")
