"""The positive evidence that a node left its cluster for good (docs/configuration.md "When a node leaves for good").

Pure: discovery (answers.py) keeps every node it has seen, whatever the answers stop naming, and
lets one go only on what this module finds in a round's snapshot, round after round.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Protocol

from ctlplane.exporter.catalog import START_TIME, Mode, Role
from ctlplane.exporter.model import ClusterSnapshot, Member, merged

REGISTRATION_STATE = "kafka_controller_broker_registration_state"
UNREGISTERED_STATE = -1.0  # BrokerRegistrationState.UNREGISTERED: the gauge's value for an id it no longer holds


class Departure(StrEnum):
    """The positive evidence that a node left the cluster: the `reason` of the forgotten-nodes counter."""

    UNREGISTERED = "unregistered"  # KRaft: no registration left (`kafka-cluster.sh unregister`)
    VOTER_REMOVED = "voter_removed"  # KRaft: not in the voter set (`kafka-metadata-quorum remove-controller`)
    CLEAN_SHUTDOWN = "clean_shutdown"  # ZooKeeper mode: shut down cleanly, and describeCluster lost it
    MOVED = "moved"  # DNS: gone from the names' answer, and its node id now answers at another address


class Leaver(Protocol):
    """A watched node as `departures` needs it: its `node` label and what the cluster's answers said of it."""

    @property
    def node(self) -> str: ...

    @property
    def member(self) -> Member: ...


def departures(
    cluster: ClusterSnapshot,
    watched: Mapping[int, Leaver],
    shut_down: frozenset[str],
    unregistered: Mapping[int, str] = MappingProxyType({}),
) -> dict[int, tuple[Departure, str]]:
    """The watched nodes this round shows to have left the cluster, with the evidence; `shut_down`: the
    nodes whose lifecycle is SHUTDOWN (a controlled shutdown seen, ctlplane/exporter/health/); `unregistered`: the
    brokers a controller's own metrics saw unregistered (`RegistrationsSeen`).

    Absence from an answer is never evidence (ctlplane/exporter/discovery/answers.py's docstring); these are:
    - a KRaft broker missing from describeCluster asked with includeFencedBrokers (KIP-1073, brokers of
      4.0+): that answer lists every registered broker, fenced or not (Strimzi's KafkaNodeUnregistration
      lists the registered brokers the same way), so a broker missing from it has been unregistered;
    - a KRaft broker whose registration gauge a controller removed while running (`RegistrationsSeen`): the
      same evidence where only `bootstrap_controllers` is asked;
    - a controller missing from the voters of a describeMetadataQuorum answer: the leader always lists the
      whole voter set (an observer is forgotten after 5 minutes, a voter never), so it was removed (KIP-853);
    - a ZooKeeper-mode broker seen going through a controlled shutdown, that describeCluster no longer names
      (its ZooKeeper registration is gone): it stopped on purpose and has not come back.
    A node whose JMX answers is running, so it has not left whatever the answers say."""
    quorum = cluster.quorum
    if quorum is None:
        return {}
    named = {node_id for node_id, member in merged(quorum.members).items() if member.current}
    voters = {r.replica_id for r in quorum.replicas if r.voter} if quorum.up else None
    nodes = {node.node: node for node in cluster.nodes}
    found: dict[int, tuple[Departure, str]] = {}
    for node_id, node in watched.items():
        read = nodes.get(node.node)
        if node_id in named or read is None or read.up:
            continue
        role = node.member.role
        evidence: tuple[Departure, str] | None = None
        if role in (Role.BROKER, Role.COMBINED):
            if quorum.fenced is not None:
                evidence = (Departure.UNREGISTERED, "describeCluster with fenced brokers no longer lists it")
            elif node_id in unregistered:
                evidence = (Departure.UNREGISTERED, unregistered[node_id])
            elif read.mode is Mode.ZOOKEEPER and quorum.members_error is None and node.node in shut_down:
                evidence = (
                    Departure.CLEAN_SHUTDOWN,
                    "it shut down cleanly and describeCluster no longer lists it",
                )
            else:
                continue
        if role in (Role.CONTROLLER, Role.COMBINED):
            if voters is None or node_id in voters:
                continue
            removed = (Departure.VOTER_REMOVED, "not in the quorum's voter set (describeMetadataQuorum)")
            evidence = removed if evidence is None else (evidence[0], f"{evidence[1]}; {removed[1]}")
        if evidence is not None:
            found[node_id] = evidence
    return found


@dataclass(frozen=True)
class ControllerRegistrations:
    """The brokers one controller JVM holds a registration for, as its own metrics show them."""

    started_at: float  # the JVM's start (kafka_node_start_time_seconds): another value is another process
    brokers: frozenset[int]


@dataclass(frozen=True)
class RegistrationsSeen:
    """Each controller's registrations, round after round, and the brokers seen unregistered from them.

    Kafka 4.1+ controllers keep a `BrokerRegistrationState,broker=<id>` gauge per registered broker
    (KIP-1131). It is added when a metadata delta changes a registration and removed only when a delta
    removes it: ControllerMetricsChanges.handleBrokerChange passes a null registration to
    ControllerMetadataMetrics.setBrokerRegistrationState, which calls removeBrokerRegistrationStateMetric
    (4.3.1, bytecode); publishing a snapshot touches no per-broker gauge. So a gauge that one JVM showed and
    no longer shows is an unregistration (`kafka-cluster.sh unregister`). A gauge merely absent is not: a
    controller that loaded its image from a snapshot has none for brokers registered before (KAFKA-20370),
    which is why the JVM must be the same one (its start time) on both sides."""

    controllers: Mapping[str, ControllerRegistrations] = field(default_factory=lambda: MappingProxyType({}))
    unregistered: Mapping[int, str] = field(default_factory=lambda: MappingProxyType({}))  # broker id -> evidence

    def after(self, cluster: ClusterSnapshot) -> RegistrationsSeen:
        """These registrations after one round: a controller not read this round keeps its last reading (a
        JMX blip is not a restart); a broker is unregistered from the round a controller's JVM dropped its
        gauge until any controller holds a registration for it again (it came back)."""
        now = _registrations(cluster)
        unregistered = dict(self.unregistered)
        for controller, held in now.items():
            before = self.controllers.get(controller)
            if before is None or before.started_at != held.started_at:
                continue
            for broker in sorted(before.brokers - held.brokers):
                unregistered[broker] = f"controller {controller} dropped its registration (BrokerRegistrationState)"
        for held in now.values():
            for broker in held.brokers:
                unregistered.pop(broker, None)
        return RegistrationsSeen(MappingProxyType({**self.controllers, **now}), MappingProxyType(unregistered))


def _registrations(cluster: ClusterSnapshot) -> dict[str, ControllerRegistrations]:
    """What each controller read this round holds; none from a controller without the gauges (before 4.1)
    or whose JVM start time was not read."""
    out: dict[str, ControllerRegistrations] = {}
    for node in cluster.nodes:
        if not node.up or node.role not in (Role.CONTROLLER, Role.COMBINED):
            continue
        started_at = node.value(START_TIME)
        if started_at is None:
            continue
        brokers = frozenset(
            int(broker)
            for sample in node.series_samples(REGISTRATION_STATE)
            if sample.value != UNREGISTERED_STATE and (broker := dict(sample.labels).get("broker", "")).isdigit()
        )
        out[node.node] = ControllerRegistrations(started_at, brokers)
    return out
