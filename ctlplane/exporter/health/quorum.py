"""The metadata quorum's own word (describeMetadataQuorum, describeCluster) where a broker's JMX does not answer."""

from __future__ import annotations

from dataclasses import replace

from ctlplane.exporter.health.model import BrokerHealth, Lifecycle
from ctlplane.exporter.model import ClusterSnapshot, NodeSnapshot, QuorumView
from ctlplane.exporter.thresholds import Thresholds


def quorum_lag(view: QuorumView | None, node_id: int | None) -> tuple[float | None, float | None]:
    """(lag records, lag seconds) of one node as the quorum's leader sees it: its log end offset behind the
    leader's, and the time since it last caught up (describeMetadataQuorum, KIP-836). This is the log the
    broker fetched, not the image it applied; it stands in where the broker's JMX does not answer, and it
    keeps counting for a broker that stopped fetching: the leader keeps an observer it has not heard from
    for five minutes (LeaderState.clearInactiveObservers, OBSERVER_SESSION_TIMEOUT_MS)."""
    if view is None or not view.up or node_id is None:
        return None, None
    replica = view.replica(node_id)
    if replica is None:
        return None, None
    records = view.lag_records(replica)
    return (None if records is None else float(max(0, records))), view.age(replica.last_caught_up_at)


# A broker observer long-polls the leader for metadata without pause (KafkaRaftClient's fetch loop), so a
# live one has fetched within a few seconds; a crashed or frozen one stops at once.
QUORUM_FETCHING_SECONDS = 5.0


def _quorum_word(
    cluster: ClusterSnapshot, active: NodeSnapshot | None, node_id: int | None, gone: bool, thresholds: Thresholds
) -> tuple[Lifecycle, str] | None:
    """What the quorum's own view says of a broker, where it says enough to decide.

    Fenced or not comes from describeCluster (KIP-1073, through bootstrap_servers on 4.0+), the registration
    the controller keeps. Alive comes from describeMetadataQuorum: a replica fetching from the leader within
    QUORUM_FETCHING_SECONDS and caught up within metadata_stale_seconds. Alive alone is not unfenced (a
    fenced broker keeps fetching): ACTIVE needs describeCluster's unfenced, or the active controller's
    FencedBrokerCount saying no broker is fenced. A refused JMX connection (`gone`) is a process that is not
    there: the quorum's word, seconds old, does not bring it back."""
    view = cluster.quorum
    if view is None or not view.up or node_id is None:
        return None
    replica = view.replica(node_id)
    fetched = view.age(replica.last_fetch_at) if replica is not None else None
    caught_up = view.age(replica.last_caught_up_at) if replica is not None else None
    said = "never caught up" if caught_up is None else f"caught up {caught_up:.0f}s ago"
    alive = (
        not gone
        and fetched is not None
        and fetched < QUORUM_FETCHING_SECONDS
        and caught_up is not None
        and caught_up < thresholds.metadata_stale_seconds
    )
    fenced = None if view.fenced is None else view.fenced.get(node_id)
    if fenced is True:
        return Lifecycle.FENCED, f"quorum: fenced (describeCluster), {said}"
    if fenced is False and alive:
        return Lifecycle.ACTIVE, f"quorum: unfenced (describeCluster), fetching, {said}"
    count = active.value("kafka_controller_fenced_brokers") if active is not None else None
    if fenced is None and alive and count == 0:
        return Lifecycle.ACTIVE, f"quorum: fetching, {said}, and controller FencedBrokerCount=0"
    return None


def with_quorum(
    cluster: ClusterSnapshot, active: NodeSnapshot | None, broker: BrokerHealth, gone: bool, thresholds: Thresholds
) -> BrokerHealth:
    """The quorum's view first, where it decides (docs/configuration.md "The quorum's view"). It never overrides a
    broker starting up (INITIAL: a registering broker is fenced until it catches up, KIP-631) or shutting
    down (SHUTDOWN rests on evidence of a controlled shutdown, which a fenced flag does not have)."""
    word = _quorum_word(cluster, active, broker.node_id, gone, thresholds)
    if word is None or broker.state in (Lifecycle.INITIAL, Lifecycle.SHUTDOWN):
        return broker
    state, said = word
    if state is broker.state:
        return replace(broker, evidence=f"{broker.evidence}; {said}", decided_by="quorum")
    return replace(
        broker,
        state=state,
        evidence=f"{said}; its own JMX says {broker.state.value}: {broker.evidence}",
        decided_by="quorum",
        views_disagree=True,
    )
