"""A dynamic metadata quorum (KIP-853) on a real KRaft cluster: a controller formatted outside the initial
voters runs as an observer controller until `kafka-metadata-quorum add-controller` adds it; another removed
with `remove-controller` is one again until it stops. ctlplane, given only the controllers' addresses, finds
every node (the observer controller as a controller), serves the voter set with its directory ids and each
controller's time outside it, and marks each change as an event on the dashboard's timeline; nothing pages.
Recorded and replayed through the shipped rules like the fault table's rows."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from ctlplane.dashboard.timeline import Event, EventKind, timeline
from ctlplane.exporter.catalog import Role
from ctlplane.exporter.health import evaluate
from ctlplane.exporter.health.model import ClusterHealth, HealthMemory, Redundancy
from ctlplane.exporter.state import Observation
from ctlplane.exporter.thresholds import Thresholds
from harness.localkafka import (
    KafkaCluster,
    add_controller,
    directory_id,
    major_minor,
    remove_controller,
    start_kraft_cluster,
)
from tests.integration.faults import SeriesAt, Timeline, pages_nothing, replay
from tests.integration.watch import Watch, discovered_watch
from tests.kafka_versions import KRAFT_UNDER_TEST

pytestmark = [
    pytest.mark.kraft,
    pytest.mark.skipif(
        major_minor(KRAFT_UNDER_TEST) < (4, 0),
        reason="a dynamic quorum needs Kafka 3.9+ (KIP-853), and its voter metrics (number-of-voters) 4.0+",
    ),
]
NAME = "dynamic"


@pytest.fixture(scope="module")
def dynamic(kafka_workdir: Path) -> Iterator[tuple[KafkaCluster, Watch]]:
    """3 initial voters (controller-1..3, ids 101-103), controller-4 (id 104) formatted with
    --no-initial-controllers, one broker; ctlplane given only the controllers' addresses (discovery)."""
    cluster = start_kraft_cluster(NAME, kafka_workdir, version=KRAFT_UNDER_TEST, controllers=4, brokers=1,
                                  dynamic_voters=3)  # fmt: skip
    watch = discovered_watch(cluster)
    try:
        yield cluster, watch
    finally:
        watch.close()
        cluster.stop()


def _voters(health: ClusterHealth) -> list[tuple[str, int | None, str | None]]:
    assert health.voter_set is not None
    return [(m.node, m.node_id, m.directory_id) for m in health.voter_set.voters]


def _observers(health: ClusterHealth) -> list[str]:
    assert health.voter_set is not None
    return [m.node for m in health.voter_set.observers]


def test_a_controller_added_and_another_removed_follow_the_voter_set_and_page_nothing(
    dynamic: tuple[KafkaCluster, Watch], tmp_path: Path
) -> None:
    cluster, watch = dynamic
    dirs = {n.node_id: directory_id(n) for n in cluster.controllers()}

    def found(o: Observation) -> bool:
        health, snapshot = o.health.cluster(NAME), o.snapshot.cluster(NAME)
        return (
            health is not None
            and snapshot is not None
            and health.voter_set is not None
            and health.voter_set.source == "quorum"
            and _observers(health) == ["controller-104"]
            and len(snapshot.nodes) == 5
            and all(n.up for n in snapshot.nodes)
        )

    first = watch.until(found, 90, "every node discovered, controller-104 an observer controller")
    # the observer controller is found as a controller: the quorum names it an observer, and describeCluster
    # through the controllers names it a controller (before the fix it read as a broker and a controller)
    snapshot = first.snapshot.cluster(NAME)
    assert snapshot is not None
    assert {n.node: n.role for n in snapshot.nodes} == {
        **{f"controller-{i}": Role.CONTROLLER for i in (101, 102, 103, 104)},
        "broker-1": Role.BROKER,
    }
    # from the controllers' JMX alone: raft state observer, no voter; the voters' own count says 3
    alone = replace(snapshot, quorum=None)
    by_jmx, _ = evaluate(replace(first.snapshot, clusters=(alone,)), HealthMemory(), Thresholds())
    assert _observers(by_jmx.clusters[0]) == ["controller-104"]
    assert by_jmx.clusters[0].redundancy == Redundancy(3, 3, "jmx")

    timeline = Timeline(watch, cluster, also=frozenset({"kafka_quorum_voter_info", "kafka_quorum_voters"}))
    baseline = timeline.round()
    assert _voters(baseline) == [(f"controller-{i}", i, dirs[i]) for i in (101, 102, 103)]
    assert baseline.redundancy == Redundancy(3, 3, "quorum")
    timeline.sleep_into_round(0.5)
    add_controller(cluster, cluster.node("controller-4"))
    added = timeline.round()
    assert _voters(added) == [(f"controller-{i}", i, dirs[i]) for i in (101, 102, 103, 104)], added.voter_set
    assert _observers(added) == [] and added.redundancy == Redundancy(4, 4, "quorum")
    timeline.sleep_into_round(0.5)
    remove_controller(cluster, cluster.node("controller-3"))
    removed = timeline.round()
    assert _voters(removed) == [(f"controller-{i}", i, dirs[i]) for i in (101, 102, 104)], removed.voter_set
    # removed, and still running: an observer controller until it is stopped
    assert _observers(removed) == ["controller-103"]
    timeline.sleep_into_round(0.5)
    cluster.node("controller-3").stop()
    for _ in range(4):  # the leader lists a silent observer for 5 minutes: ctlplane takes 30 s of silence
        last = timeline.round()
        if not _observers(last):
            break
    assert _observers(last) == [], last.voter_set
    events = [(e.kind, e.node) for e in reversed(timeline_events(timeline))]
    assert events == [(EventKind.VOTER_ADDED, "controller-104"), (EventKind.VOTER_REMOVED, "controller-103")], events
    end = len(timeline.observations) - 1
    replay(
        timeline,
        "dynamic-voters-added-and-removed",
        [
            *pages_nothing(end),
            SeriesAt(f'count(kafka_quorum_voter_info{{cluster="{NAME}"}})', 0, 3),
            SeriesAt(f'count(kafka_quorum_voter_info{{cluster="{NAME}",node_id="104"}})', 1, 1),
            SeriesAt(f'sum(kafka_quorum_voters{{cluster="{NAME}"}})', 1, 4),
            SeriesAt(f'count(kafka_quorum_voter_info{{cluster="{NAME}",node_id="103"}}) or vector(0)', 2, 0),
            SeriesAt(f'sum(kafka_quorum_voters{{cluster="{NAME}"}})', end, 3),
        ],
        "controller-4 formatted with --no-initial-controllers added with add-controller, then controller-3 removed "
        "with remove-controller and stopped",
        tmp_path,
    )


def timeline_events(row: Timeline) -> list[Event]:
    return [e for e in timeline(row.observations) if e.kind in (EventKind.VOTER_ADDED, EventKind.VOTER_REMOVED)]
