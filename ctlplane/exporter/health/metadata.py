"""How far behind a broker's metadata is (records and seconds; ZooKeeper mode: the controller's queue for it) and
whether it is frozen."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ctlplane.exporter.catalog import Mode
from ctlplane.exporter.model import NodeSnapshot
from ctlplane.exporter.thresholds import Thresholds


def _loaded(offset: float | None) -> float | None:
    """Kafka reports -1 before a node has published its first metadata image: not loaded, never lag."""
    return offset if offset is not None and math.isfinite(offset) and offset >= 0 else None


def metadata_lag(
    node: NodeSnapshot,
    active: NodeSnapshot | None,
    mode: Mode | None,
    waits: dict[tuple[str, str], tuple[float, float, float]],
    now: float,
) -> tuple[float | None, float | None, float | None, float | None]:
    """(lag records, lag seconds, applied offset, committed offset) for one node.

    ZooKeeper mode has no metadata log: the lag is the active controller's queue of requests for the
    broker, in requests and in how long they wait (`_zookeeper_queue_wait`, which updates `waits`).
    """
    if not node.up:
        return None, None, None, None
    if mode is Mode.ZOOKEEPER:
        if active is None or node.node_id is None:
            return None, None, None, None
        queued = active.value("kafka_controller_channel_queue_size", broker=str(node.node_id))
        return queued, _zookeeper_queue_wait(node, active, queued, waits, now), None, None
    prefix = "kafka_broker"
    if node.value("kafka_broker_last_applied_record_offset") is None:  # a controller-only node
        prefix = "kafka_controller"
    applied = _loaded(node.value(f"{prefix}_last_applied_record_offset"))
    lag_seconds = node.value(f"{prefix}_last_applied_record_lag_seconds")
    timestamp = node.value(f"{prefix}_last_applied_record_timestamp_seconds")
    if applied is None or (timestamp is not None and timestamp <= 0) or (lag_seconds is not None and lag_seconds < 0):
        # Before the first image the applied timestamp is 0 (or -1) and the lag is "now" (~1.7e9 s):
        # a placeholder, not 55 years of staleness (BrokerServerMetrics / ControllerMetadataMetrics).
        lag_seconds = None
    committed = _loaded(active.value("kafka_controller_last_committed_record_offset")) if active else None
    lag_records = max(0.0, committed - applied) if committed is not None and applied is not None else None
    return lag_records, lag_seconds, applied, committed


def _summary(node: NodeSnapshot, series: str, **labels: str) -> tuple[float, float] | None:
    """(count, sum) of a summary sample, or None."""
    sample = node.sample(series, **labels)
    if sample is None:
        return None
    parts = dict(sample.parts)
    count, total = parts.get("count"), parts.get("sum")
    if count is None or total is None or not (math.isfinite(count) and math.isfinite(total)):
        return None
    return count, total


def _zookeeper_queue_wait(
    node: NodeSnapshot,
    active: NodeSnapshot,
    queued: float | None,
    waits: dict[tuple[str, str], tuple[float, float, float]],
    now: float,
) -> float | None:
    """How long metadata requests for this broker have been waiting in the ZooKeeper controller's queue.

    ZooKeeper mode has no metadata log to lag behind; the active controller queues LeaderAndIsr,
    UpdateMetadata and StopReplica for each broker and times how long each waits before it is sent
    (`ControllerChannelManager RequestRateAndQueueTimeMs{broker-id}`, KIP-237, a Yammer Timer whose Mean
    is over the controller's lifetime). The recent wait is the mean over the requests sent since the last
    round (sum and count deltas); when none was sent while requests are queued, the queue is stuck and
    the wait is the time since it last made progress (at most one round more than the oldest request's).
    """
    if node.node_id is None:
        return None
    broker = str(node.node_id)
    summary = _summary(active, "kafka_controller_channel_queue_time_seconds", broker=broker)
    if summary is None:
        return None
    count, total = summary
    key = (active.node, node.node)
    previous = waits.get(key)
    if previous is None or count < previous[0]:  # first sight, or the controller's metrics restarted
        waits[key] = (count, total, now)
        return None
    last_count, last_total, progress_at = previous
    if count > last_count:
        waits[key] = (count, total, now)
        return max(0.0, (total - last_total) / (count - last_count))
    if not queued:
        waits[key] = (count, total, now)
        return 0.0
    return max(0.0, now - progress_at)


def is_frozen(history: Sequence[tuple[float, float]], scrapes: int) -> bool:
    """Applied offset unchanged for `scrapes` consecutive reads while the committed offset moved on."""
    if len(history) < scrapes + 1:
        return False
    window = history[-(scrapes + 1) :]
    applied = {a for a, _ in window}
    return len(applied) == 1 and window[-1][1] > window[0][1] and window[-1][1] > window[-1][0]


def is_stale(
    mode: Mode | None, lag_records: float | None, lag_seconds: float | None, frozen: bool, thresholds: Thresholds
) -> bool:
    """Stale metadata. ZooKeeper mode: the controller's queue for the broker (`lag_records`) or its wait; KRaft:
    the lag in seconds or records, or frozen."""
    if mode is Mode.ZOOKEEPER:
        return (lag_records is not None and lag_records >= thresholds.zk_controller_queue_stale) or (
            lag_seconds is not None and lag_seconds >= thresholds.metadata_stale_seconds
        )
    return (
        frozen
        or (lag_seconds is not None and lag_seconds >= thresholds.metadata_stale_seconds)
        or (lag_records is not None and lag_records >= thresholds.metadata_stale_records)
    )
