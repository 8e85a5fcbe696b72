"""The one place a broker's state is decided: the evidence read, then an ordered list of rules, then the cause.

Each broker's first reading is `lifecycle.broker_lifecycle`: its own BrokerState against the controller's
registration gauge and its last state. The rules below then apply in this order, each to the brokers the
rules before it left, each a function of the round's snapshot and the last round's memory:

1. `infer_fenced` (KRaft): where no controller gives a per-broker registration, FencedBrokerCount names how
   many are fenced; the stale or unreachable brokers are they when they number exactly that.
2. `zookeeper_deregistered` (ZooKeeper mode): a broker whose session expired and whose request queue the
   active controller dropped (KafkaController.onBrokerFailure) is fenced in all but name: FENCED.
3. `zookeeper_shutdown_requests` (ZooKeeper mode): a broker gone since it was last read ACTIVE is SHUTDOWN when
   the same active controller handled exactly as many ControlledShutdown requests since as brokers vanished.
4. `controlled_shutdown_evidence` (KRaft 4.1+): gone and FENCED, yet ControlledShutdownBrokerCount covers every
   broker that could hold the registration's inControlledShutdown flag: SHUTDOWN.
5. `with_quorum`: the quorum's view (describeCluster's fenced flags, 4.0+; the quorum leader's record of each
   observer) decides where it speaks, never over INITIAL (a registering broker is fenced until it catches
   up, KIP-631) nor SHUTDOWN (which rests on evidence of a controlled shutdown).
6. `held_fenced`: in a round with no word on fencing at all (every controller read timed out), a broker FENCED
   last round and gone still stays FENCED, so its page's `for:` is not restarted; otherwise
   `fenced_unplanned` flags a FENCED that no planned stop or restart reads the same (RUNNING yet fenced; a
   leader gone where the controllers name controlled shutdowns; in ZooKeeper mode, gone with no
   ControlledShutdown request served since it was last ACTIVE).
7. The cause (`cause.with_cause`), from the state and the evidence behind it, a long GC pause among them
   (`gc.gc_pauses`).

Each rule cites the Kafka behaviour it rests on where it is written; docs/health-model.md tells the same
order to a reader.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from ctlplane.exporter.health.cause import heartbeats_timing_out, with_cause
from ctlplane.exporter.health.gc import gc_pauses
from ctlplane.exporter.health.lifecycle import (
    any_fencing_word,
    controlled_shutdown_evidence,
    controllers_say,
    fenced_unplanned,
    held_fenced,
    infer_fenced,
    shutdown_requests,
    zookeeper_deregistered,
    zookeeper_shutdown_requests,
    zookeeper_unasked,
)
from ctlplane.exporter.health.model import BrokerHealth, ClusterMemory
from ctlplane.exporter.health.quorum import with_quorum
from ctlplane.exporter.model import ClusterSnapshot, Failure, NodeSnapshot
from ctlplane.exporter.thresholds import Thresholds


@dataclass(frozen=True)
class Decided:
    """The brokers as decided, and what of the deciding the next round's memory keeps."""

    brokers: tuple[BrokerHealth, ...]
    leading: frozenset[str]  # brokers that led partitions when last read
    shutdown_requests: tuple[str, float] | None  # (active controller, its ControlledShutdown requests)
    gc_paused: Mapping[str, float]


def decide_brokers(
    cluster: ClusterSnapshot,
    active: NodeSnapshot | None,
    first: Sequence[BrokerHealth],
    registered: frozenset[str],
    memory: ClusterMemory,
    thresholds: Thresholds,
) -> Decided:
    """The rules above, in their order, on each broker's first reading (`first`; `registered`: the brokers a
    controller gave a registration state for)."""
    nodes = {node.node: node for node in cluster.nodes}
    vanished = frozenset(node.node for node in cluster.nodes if node.failure is Failure.GONE)
    brokers = infer_fenced(cluster, active, list(first), registered)
    brokers = zookeeper_deregistered(cluster, active, brokers)
    requests = shutdown_requests(cluster, active)
    brokers = zookeeper_shutdown_requests(brokers, nodes, memory, requests)
    controlled_shutdowns = controllers_say(active, cluster, "kafka_controller_controlled_shutdown_brokers")
    brokers = controlled_shutdown_evidence(controlled_shutdowns, brokers, vanished)
    brokers = [with_quorum(cluster, active, b, b.node in vanished, thresholds) for b in brokers]
    leading = _leading(cluster, memory)
    names_shutdown = controlled_shutdowns is not None
    fencing_word = any_fencing_word(cluster)  # once per round: it scans every node
    planned = [
        held_fenced(b, memory, fencing_word)
        or replace(
            b,
            fenced_unplanned=fenced_unplanned(
                b,
                nodes[b.node],
                nodes[b.node].mode or cluster.mode,
                names_shutdown,
                b.node in leading,
                # once unplanned, a later request (another broker's clean restart) does not make it planned
                zookeeper_unasked(b, memory, requests) or b.node in memory.unplanned,
            ),
        )
        for b in brokers
    ]
    timed_out = heartbeats_timing_out(active, memory.timed_out_heartbeats)
    paused = gc_pauses(planned, nodes, memory.gc_seconds, memory.gc_paused, thresholds.gc_pause_seconds)
    final = tuple(
        with_cause(b, nodes[b.node], nodes[b.node].mode or cluster.mode, timed_out, paused.get(b.node)) for b in planned
    )
    return Decided(final, leading, requests, paused)


def _leading(cluster: ClusterSnapshot, memory: ClusterMemory) -> frozenset[str]:
    """Brokers that led partitions when last read (a gone broker keeps its last word)."""
    known = {node.node for node in cluster.nodes}
    leading = set(memory.leading & known)
    for node in cluster.nodes:
        if node.up and (count := node.value("kafka_broker_leader_partitions")) is not None:
            (leading.add if count > 0 else leading.discard)(node.node)
    return frozenset(leading)
