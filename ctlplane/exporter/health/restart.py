"""Whether each node may be restarted now without losing availability: a pure function of the round's readings
and the health decided from them, for operators and for scripts that roll a cluster one node at a time.

A broker: every partition must keep at least min.insync.replicas in sync without it, and none may be offline.
Each leader counts its partitions whose ISR is below min.insync.replicas (UnderMinIsrPartitionCount, KIP-164,
1.0+) and those exactly at it (AtMinIsrPartitionCount, KIP-427, 2.3+; Partition.isAtMinIsr compares with
min(min.insync.replicas, replication factor), so a partition of one replica counts); the active controller
counts partitions with no leader (OfflinePartitionsCount). With all three 0 across the cluster every partition
has an in-sync replica to spare, so any one broker may go. The counts do not say which brokers are in a
partition's ISR, so one partition at its minimum makes every broker wait, the one outside its ISR too: the
answer errs towards "wait", never towards an offline partition. A broker not ACTIVE leads no partition (fencing
moves its leaderships away), so the serving brokers' counts are the ones needed. One broker at a time: while
another broker is not ACTIVE (restarting, fenced), none is safe, whatever the counts. A broker read at its
own pace (a large page behind jmx_exporter, its last page served: NodeSnapshot.held) counts with that page's
counts while it is no older than `counts_max_age_seconds`, and the answer says how old they are: a large
broker read so would otherwise keep every answer at "wait" for good.

A KRaft controller that votes: the quorum must keep a caught-up majority without it (Redundancy, the quorum's
view or the voters' raft metrics). A voter caught up with the leader leaves one fewer; one behind leaves the
count as it is. A controller outside the voter set (an observer) does not count. ZooKeeper mode's controller is
a broker (the broker's rule); the ZooKeeper ensemble is not watched.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from enum import StrEnum

from ctlplane.exporter.catalog import Mode, Role
from ctlplane.exporter.health.model import BrokerHealth, Lifecycle, Redundancy, RestartSafety, VoterSet
from ctlplane.exporter.model import ClusterSnapshot, NodeSnapshot

UNDER_MIN_ISR = "kafka_broker_under_min_isr_partitions"
AT_MIN_ISR = "kafka_broker_at_min_isr_partitions"
OFFLINE = "kafka_controller_offline_partitions"


class Blocker(StrEnum):
    """Why a node may not be restarted now (the `reason` label of kafka_node_restart_blocked)."""

    NOT_ACTIVE = "not_active"  # the broker itself is not serving
    ANOTHER_NOT_ACTIVE = "another_broker_not_active"  # one at a time
    COUNTS_UNREAD = "isr_counts_unread"  # a broker's ISR counts, or the controller's offline count, not read
    OFFLINE_PARTITIONS = "offline_partitions"
    UNDER_MIN_ISR = "under_min_isr"
    AT_MIN_ISR = "at_min_isr"
    QUORUM_UNREAD = "quorum_unread"  # no evidence of the voters' state
    QUORUM_MAJORITY = "quorum_majority"  # the quorum would lose its caught-up majority


def _total(nodes: Sequence[NodeSnapshot], series: str) -> float | None:
    values = [node.value(series) for node in nodes]
    if any(v is None or not math.isfinite(v) for v in values):
        return None
    return float(sum(v for v in values if v is not None))


def _counted(node: NodeSnapshot, now: float, max_age: float) -> bool:
    """Whether the node's ISR counts count this round: read now, or its held page young enough."""
    return node.up or (node.held and now - node.scraped_at <= max_age)


def _held_counts(read: Sequence[NodeSnapshot], now: float) -> str:
    """What the answer adds where some counts are a held page's: whose, and how old."""
    held = [f"{n.node}'s from its page of {max(0.0, now - n.scraped_at):.0f}s ago" for n in read if n.held]
    return f" (ISR counts: {', '.join(held)}, held while its next page is read)" if held else ""


def _partitions_blocker(
    brokers: Sequence[BrokerHealth],
    nodes: Mapping[str, NodeSnapshot],
    active: NodeSnapshot | None,
    now: float,
    counts_max_age_seconds: float,
) -> tuple[tuple[Blocker, str] | None, str]:
    """The cluster's partitions, once a round: what stops any broker from going, and what the answers add about
    the counts (a held page's, and how old). A broker not ACTIVE leads no partition (fencing moves its
    leaderships away), so the counts needed are the serving brokers', each read now or held young enough."""
    serving = [b for b in brokers if b.state is Lifecycle.ACTIVE]
    read = [nodes[b.node] for b in serving if b.node in nodes and _counted(nodes[b.node], now, counts_max_age_seconds)]
    note = _held_counts(read, now)
    under, at = _total(read, UNDER_MIN_ISR), _total(read, AT_MIN_ISR)
    offline = active.value(OFFLINE) if active is not None and active.up else None
    if len(read) < len(serving) or under is None or at is None:
        unread = "not every broker's count of partitions at or below min.insync.replicas was read"
        return (Blocker.COUNTS_UNREAD, unread), note
    if offline is None:
        return (Blocker.COUNTS_UNREAD, "the active controller's count of offline partitions was not read"), note
    if offline > 0:
        return (Blocker.OFFLINE_PARTITIONS, f"{offline:g} partition(s) offline"), note
    if under > 0:
        return (Blocker.UNDER_MIN_ISR, f"{under:g} partition(s) below min.insync.replicas"), note
    if at > 0:
        return (
            Blocker.AT_MIN_ISR,
            f"{at:g} partition(s) at min.insync.replicas: one more replica out of sync and acks=all writes fail",
        ), note
    return None, note


def _broker_blocker(
    broker: BrokerHealth, brokers: Sequence[BrokerHealth], partitions: tuple[Blocker, str] | None
) -> tuple[Blocker, str] | None:
    if broker.state is not Lifecycle.ACTIVE:
        return Blocker.NOT_ACTIVE, f"it is {broker.state.value}"
    if partitions is not None:  # the partitions first, the most telling reason
        return partitions
    others = [b for b in brokers if b.node != broker.node and b.state is not Lifecycle.ACTIVE]
    if others:
        named = ", ".join(f"{b.node} is {b.state.value}" for b in others)
        return Blocker.ANOTHER_NOT_ACTIVE, f"{named}: one broker at a time"
    return None


def _controller_blocker(
    node: str, redundancy: Redundancy | None, voter_set: VoterSet | None
) -> tuple[Blocker, str] | None:
    member = next((m for m in voter_set.members if m.node == node), None) if voter_set is not None else None
    if member is not None and not member.voter:
        return None  # an observer: the quorum does not count it
    if redundancy is None:
        return Blocker.QUORUM_UNREAD, "the voters' state was not read"
    left = redundancy.caught_up - (0 if member is not None and member.caught_up is False else 1)
    if left < redundancy.majority:
        return Blocker.QUORUM_MAJORITY, (
            f"the quorum would keep {left} caught-up voter(s) of the {redundancy.majority} of "
            f"{redundancy.voters} a majority needs"
        )
    return None


def restart_safety(
    cluster: ClusterSnapshot,
    brokers: Sequence[BrokerHealth],
    active: NodeSnapshot | None,
    redundancy: Redundancy | None,
    voter_set: VoterSet | None,
    *,
    now: float,
    counts_max_age_seconds: float,
) -> tuple[RestartSafety, ...]:
    """Every node's answer: brokers by the partitions' ISR counts, KRaft controllers by the quorum's majority,
    a combined node by both."""
    nodes = {node.node: node for node in cluster.nodes}
    by_node = {b.node: b for b in brokers}
    partitions, counts_note = (
        _partitions_blocker(brokers, nodes, active, now, counts_max_age_seconds) if brokers else (None, "")
    )
    kraft = cluster.mode is not Mode.ZOOKEEPER
    answers = []
    for node in cluster.nodes:
        blockers = []
        if node.node in by_node:
            blockers.append(_broker_blocker(by_node[node.node], brokers, partitions))
        if kraft and node.role in (Role.CONTROLLER, Role.COMBINED):
            blockers.append(_controller_blocker(node.node, redundancy, voter_set))
        if node.node not in by_node and not (kraft and node.role in (Role.CONTROLLER, Role.COMBINED)):
            continue  # neither: a node of unknown role, never read
        blocker = next((b for b in blockers if b is not None), None)
        if blocker is None:
            said = f"safe: nothing depends on it alone{counts_note if node.node in by_node else ''}"
            answers.append(RestartSafety(node.node, node.role, True, None, said))
        else:
            said = blocker[1] + (counts_note if blocker is partitions else "")
            answers.append(RestartSafety(node.node, node.role, False, blocker[0].value, said))
    return tuple(answers)
