"""What the metadata canary says of each broker (ClusterSnapshot.canary; sources/admin/canary.py): a broker that
answers Metadata requests without a change the canary made `metadata_stale_seconds` ago serves stale metadata,
whatever its own lag figures say (a ZooKeeper-mode broker that missed UpdateMetadata has none to say it)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ctlplane.exporter.health.model import BrokerHealth
from ctlplane.exporter.model import CanaryView
from ctlplane.exporter.thresholds import Thresholds


def with_canary(
    brokers: Sequence[BrokerHealth], view: CanaryView | None, thresholds: Thresholds, now: float
) -> tuple[BrokerHealth, ...]:
    """Each broker with how long it has answered without the canary's change (0 when it serves it; None where
    the canary has no answer from it), stale with the canary's words past `metadata_stale_seconds`."""
    if view is None:
        return tuple(brokers)
    out = []
    for broker in brokers:
        said = view.broker(broker.node_id)
        unserved = said.unserved_seconds(now) if said is not None else None
        if unserved is None:
            out.append(broker)
            continue
        broker = replace(broker, canary_unserved_seconds=unserved)
        if unserved >= thresholds.metadata_stale_seconds:
            broker = replace(
                broker,
                stale=True,
                evidence=f"{broker.evidence}; metadata canary: answers without a change made {unserved:.0f}s ago",
            )
        out.append(broker)
    return tuple(out)
