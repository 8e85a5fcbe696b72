"""A JVM's garbage-collection time between two reads: the evidence that a broker fenced while its process runs
was stopped by its own GC pause rather than cut off from the controller.

A stop-the-world pause stops every Kafka thread, the heartbeat sender's too (BrokerLifecycleManager), and JMX
answers nothing meanwhile; once the pause ends the broker reads RUNNING while the controller, which saw no
heartbeat for broker.session.timeout.ms, has fenced it. The collectors' CollectionTime then shows the pause as
a jump since the last read of the same JVM. ZGC's and Shenandoah's "... Cycles" collectors count concurrent
work that stops nothing, so they are left out of the sum.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ctlplane.exporter.catalog import START_TIME
from ctlplane.exporter.health.model import BrokerHealth, Lifecycle
from ctlplane.exporter.model import NodeSnapshot

GC_SECONDS = "kafka_jvm_gc_collection_seconds_total"
CONCURRENT_COLLECTOR_SUFFIX = " Cycles"  # "ZGC Cycles", "Shenandoah Cycles": concurrent, not pauses


def pause_seconds(node: NodeSnapshot) -> float | None:
    """Seconds the node's stop-the-world collectors have spent since its JVM started; None if not read."""
    samples = [
        s
        for s in node.series_samples(GC_SECONDS)
        if not dict(s.labels).get("collector", "").endswith(CONCURRENT_COLLECTOR_SUFFIX)
    ]
    return sum(s.value for s in samples) if samples else None


def gc_read(node: NodeSnapshot) -> tuple[float, float] | None:
    """(its JVM's start time, `pause_seconds`) of a node read with both (ClusterMemory.gc_seconds keeps it)."""
    started, total = node.value(START_TIME), pause_seconds(node)
    return (started, total) if started is not None and total is not None else None


def gc_since_last_read(node: NodeSnapshot, last: Mapping[str, tuple[float, float]]) -> float | None:
    """Seconds of GC pauses since the last read of the same JVM (its start time); None without both reads."""
    now, before = gc_read(node), last.get(node.node)
    if not node.up or now is None or before is None or before[0] != now[0]:
        return None
    return max(0.0, now[1] - before[1])


def gc_pauses(
    brokers: Sequence[BrokerHealth],
    nodes: Mapping[str, NodeSnapshot],
    last_read: Mapping[str, tuple[float, float]],
    last_paused: Mapping[str, float],
    threshold_seconds: float,
) -> dict[str, float]:
    """Broker -> the longest GC time between two reads, of at least `threshold_seconds`, since it was last
    ACTIVE: the pause that fenced it stays its evidence until the controller unfences it."""
    paused = {}
    for broker in brokers:
        if broker.state is Lifecycle.ACTIVE:
            continue
        seen = gc_since_last_read(nodes[broker.node], last_read)
        longest = max(
            last_paused.get(broker.node, 0.0), seen if seen is not None and seen >= threshold_seconds else 0.0
        )
        if longest > 0.0:
            paused[broker.node] = longest
    return paused
