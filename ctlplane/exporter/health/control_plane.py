"""The KIP-291 control-plane listener of a ZooKeeper-mode broker: whether it has one, how full its request
queue is, and whether it is saturated (its queue or its threads)."""

from __future__ import annotations

import math

from ctlplane.exporter.catalog import Mode
from ctlplane.exporter.model import NodeSnapshot
from ctlplane.exporter.thresholds import CONTROL_PLANE_QUEUE_CAPACITY, Thresholds

IDLE_RATIOS = ("kafka_control_plane_request_handler_idle_ratio", "kafka_control_plane_network_processor_idle_ratio")


def control_plane_listener(node: NodeSnapshot, thresholds: Thresholds) -> tuple[bool | None, float | None, bool]:
    """(has a dedicated listener: None where its JMX did not say or it is no ZooKeeper-mode broker, the queue's
    fill ratio, saturated). Saturated: the queue at `control_plane_queue_saturation_ratio` of its capacity, or
    a thread pool idle below `control_plane_idle_saturation_ratio` (a NaN idle ratio is no data)."""
    queue = node.value("kafka_control_plane_request_queue_size") if node.up else None
    queue_ratio = queue / CONTROL_PLANE_QUEUE_CAPACITY if queue is not None else None
    idle = (
        [v for name in IDLE_RATIOS if (v := node.value(name)) is not None and math.isfinite(v)]
        if queue is not None
        else []
    )
    saturated = (queue_ratio is not None and queue_ratio >= thresholds.control_plane_queue_saturation_ratio) or (
        any(v < thresholds.control_plane_idle_saturation_ratio for v in idle)
    )
    listener = (queue is not None) if node.up and node.mode is Mode.ZOOKEEPER else None
    return listener, queue_ratio, saturated
