"""The dashboard's bounded memory of past rounds: downsampled lines and capped events, not snapshots."""

from __future__ import annotations

import pytest

from ctlplane.dashboard.timeline import EventKind
from ctlplane.dashboard.trail import Trail
from ctlplane.exporter.health import Lifecycle
from ctlplane.exporter.model import ClusterSnapshot
from ctlplane.exporter.state import Observation
from tests.unit.dashboard.builders import T0, broker, cluster_health, node, observation


def _round(sequence: int, at: float, *, queue: float = 1.0, idle: float = 0.9, up: bool = True) -> Observation:
    snapshot = ClusterSnapshot(
        "c1",
        (
            node(
                "b1",
                at=at,
                up=up,
                kafka_control_plane_request_queue_size=queue,
                kafka_control_plane_request_handler_idle_ratio=idle,
            ),
        ),
    )
    state = Lifecycle.ACTIVE if up else Lifecycle.UNREACHABLE
    return observation(((snapshot, cluster_health(brokers=(broker("b1", state),))),), at=at, sequence=sequence)


def test_readings_in_one_bucket_merge_into_the_worse_one() -> None:
    trail = Trail(window_seconds=3600, max_points=360)  # one point per 10 s
    trail.add(_round(1, T0, queue=2.0, idle=0.5))
    trail.add(_round(2, T0 + 3, queue=7.0, idle=0.8))  # same bucket: the spike and the busier idle stay
    trail.add(_round(3, T0 + 6, queue=1.0, idle=0.9))
    trail.add(_round(4, T0 + 10, queue=1.0, idle=0.9))  # next bucket
    lines = trail.cluster("c1")
    queue = lines.lines_of("kafka_control_plane_request_queue_size")["b1"]
    idle = lines.lines_of("kafka_control_plane_request_handler_idle_ratio")["b1"]
    assert (queue.times, queue.values) == ((T0 + 6, T0 + 10), (7.0, 1.0))
    assert idle.values == (0.5, 0.9)


def test_lines_keep_the_window_and_at_most_max_points() -> None:
    trail = Trail(window_seconds=600, max_points=20)  # one point per 30 s
    for i in range(1, 1001):  # 1,000 rounds at 1 s: ~17 minutes
        trail.add(_round(i, T0 + i, queue=float(i)))
    line = trail.cluster("c1").lines_of("kafka_control_plane_request_queue_size")["b1"]
    assert len(line.times) <= 21
    assert min(line.times) >= T0 + 1000 - 600
    assert line.values[-1] == 1000.0


def test_an_unreachable_round_is_a_gap_and_a_line_gone_quiet_is_dropped() -> None:
    trail = Trail(window_seconds=60, max_points=60)
    trail.add(_round(1, T0, queue=3.0))
    trail.add(_round(2, T0 + 15, up=False))
    assert trail.cluster("c1").lines_of("kafka_control_plane_request_queue_size")["b1"].values == (3.0, None)
    for i in range(3, 10):  # down for two minutes: nothing left to draw
        trail.add(_round(i, T0 + 15 * i, up=False))
    assert "b1" not in trail.cluster("c1").lines_of("kafka_control_plane_request_queue_size")


def test_series_a_node_does_not_have_cost_nothing() -> None:
    trail = Trail()
    trail.add(_round(1, T0))
    assert set(trail.cluster("c1").lines) == {
        "kafka_control_plane_request_queue_size",
        "kafka_control_plane_request_handler_idle_ratio",
        "metadata_lag_records",
        "metadata_lag_seconds",
    }


def test_events_are_folded_as_rounds_come_capped_and_newest_first() -> None:
    trail = Trail(max_events=3)
    for i in range(1, 9):  # reachable, unreachable, reachable, ...: an event per round after the first
        trail.add(_round(i, T0 + 15 * i, up=i % 2 == 1))
    events = trail.cluster("c1").events
    assert [e.at for e in events] == [T0 + 120, T0 + 105, T0 + 90]
    assert [e.kind for e in events] == [EventKind.UNREACHABLE, EventKind.REACHABLE, EventKind.UNREACHABLE]


def test_a_repeated_or_older_round_and_the_pre_scrape_round_are_ignored() -> None:
    trail = Trail()
    trail.add(_round(0, T0 - 15, queue=9.0))  # the empty pre-scrape observation has sequence 0
    trail.add(_round(1, T0, queue=1.0))
    trail.add(_round(1, T0, queue=5.0))  # polled twice
    trail.add(_round(2, T0 - 30, queue=5.0))
    line = trail.cluster("c1").lines_of("kafka_control_plane_request_queue_size")["b1"]
    assert line.values == (1.0,)


def test_bad_limits_are_refused() -> None:
    with pytest.raises(ValueError):
        Trail(max_points=0)
