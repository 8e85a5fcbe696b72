"""What the health model decides, as values: a broker's lifecycle and evidence, the controller's identity, a
cluster's and the fleet's health, and the memory one round lends the next."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from types import MappingProxyType
from typing import TypeVar

from ctlplane.exporter.catalog import Mode, Role
from ctlplane.exporter.model import Member, NodeSnapshot

T = TypeVar("T")


class Lifecycle(StrEnum):
    """KIP-631's broker lifecycle, plus UNREACHABLE when ctlplane cannot read the node."""

    INITIAL = "INITIAL"  # registering / catching up on metadata
    FENCED = "FENCED"
    ACTIVE = "ACTIVE"
    SHUTDOWN = "SHUTDOWN"  # controlled shutdown under way or done
    UNREACHABLE = "UNREACHABLE"


# BrokerRegistrationState values (metadata/.../controller/BrokerRegistrationState.java, Kafka 4.1+).
REGISTRATION_STATES: Mapping[float, Lifecycle] = MappingProxyType(
    {-1.0: Lifecycle.INITIAL, 10.0: Lifecycle.FENCED, 20.0: Lifecycle.SHUTDOWN, 30.0: Lifecycle.ACTIVE}
)


# BrokerState's numbers are the same on every release ctlplane claims: org.apache.kafka.metadata.BrokerState
# (2.8+) and KafkaServer.scala's BrokerStates before it (RunningAsBroker=3, RecoveringFromUncleanShutdown=2,
# PendingControlledShutdown=6, BrokerShuttingDown=7); ctlplane names them with the 2.8+ names everywhere.
class BrokerState(IntEnum):
    """kafka_broker_state's values (a gauge reads them as floats: `value == BrokerState.RUNNING` holds)."""

    NOT_RUNNING = 0
    STARTING = 1
    RECOVERY = 2
    RUNNING = 3
    PENDING_CONTROLLED_SHUTDOWN = 6
    SHUTTING_DOWN = 7
    UNKNOWN = 127


BROKER_STATE_NAMES: Mapping[float, str] = MappingProxyType({float(state): state.name for state in BrokerState})


class Cause(StrEnum):
    """Why a broker is not ACTIVE, or not read, in one word an alert and a runbook section can carry
    (ctlplane/exporter/health/cause.py decides it from the snapshot's evidence)."""

    PROCESS_GONE = "process_gone"  # its JMX port refuses or resets connections: no process listens
    # its JMX port times out: a stopped or wedged JVM, or a network that drops ctlplane's packets and the
    # controller's alike; Kafka's evidence cannot tell the two apart
    HUNG_OR_ISOLATED = "hung_or_isolated"
    CUT_OFF_FROM_CONTROLLER = "cut_off_from_controller"  # its own JMX says RUNNING while the controller fences it
    # ... and the active controller's TimedOutBrokerHeartbeatCount rose: heartbeats arrived and expired on its
    # event queue (QuorumController.processBrokerHeartbeat's timeout path)
    CONTROLLER_OVERLOADED = "controller_overloaded"
    # its own JMX says RUNNING while the controller fences it, and its JVM spent gc_pause_seconds or more
    # collecting garbage between two reads: the pause stopped its heartbeats
    LONG_GC_PAUSE = "long_gc_pause"
    ZOOKEEPER_SESSION_LOST = "zookeeper_session_lost"  # ZooKeeper mode: its session is not CONNECTED
    CONTROLLED_SHUTDOWN = "controlled_shutdown"
    STARTING = "starting"  # loading logs, registering, catching up on metadata
    JMX_UNREACHABLE = "jmx_unreachable"  # only ctlplane cannot read it: the quorum says it is fine
    JMX_AUTH_FAILED = "jmx_auth_failed"  # ctlplane's JMX credentials are refused
    # no node metrics at all (the Admin API alone, health/admin.py): the cluster's answers say fenced or gone,
    # never why
    NO_NODE_METRICS = "no_node_metrics"
    UNKNOWN = "unknown"  # not ACTIVE, and the evidence names none of the above


@dataclass(frozen=True)
class BrokerHealth:
    cluster: str
    node: str
    role: Role
    node_id: int | None
    up: bool
    state: Lifecycle
    evidence: str  # why this state, in words an operator can check
    metadata_lag_records: float | None
    metadata_lag_seconds: float | None
    stale: bool
    frozen: bool
    control_plane_listener: bool | None
    control_plane_queue_ratio: float | None
    control_plane_saturated: bool
    # Which view decided `state`: "jmx" (what the nodes say of themselves) or "quorum" (the quorum's own
    # view, Admin API, where the cluster has one and it says enough); `views_disagree` when the two differ.
    decided_by: str = "jmx"
    views_disagree: bool = False
    # Where the metadata lag figures came from: "jmx" (the broker's applied offset and record time, the
    # image it serves), "quorum" (what the quorum's leader last saw the broker fetch: describeMetadataQuorum,
    # where the broker's JMX did not answer but did not refuse either), or None (no figure).
    metadata_lag_source: str | None = None
    # FENCED with evidence that no planned stop reads the same (`fenced_unplanned`): the alert rules page
    # on it sooner than on a FENCED that a clean stop or a restart could also explain.
    fenced_unplanned: bool = False
    # Why it is not ACTIVE (or not read); None for an ACTIVE broker whose JMX answers
    cause: Cause | None = None
    # How long it has answered the metadata canary without its latest change (0: it serves it); None without
    # a canary or an answer from this broker (health/canary.py)
    canary_unserved_seconds: float | None = None


@dataclass(frozen=True)
class ControllerView:
    claimants: tuple[str, ...]  # nodes whose ActiveControllerCount is 1
    node: str | None  # the active controller's node label, if one is known
    node_id: int | None
    epoch: float | None  # KRaft quorum epoch; ZooKeeper mode does not expose the controller epoch
    failovers_total: int
    last_failover_at: float | None
    reachable_controllers: int
    # False where no evidence says who the active controller is, or that there is none: a cluster watched
    # through the Admin API alone whose answer did not come this round (then no count is served)
    known: bool = True


@dataclass(frozen=True)
class UnknownReading:
    """A judgement no source served the evidence for this round (health/unknown.py): its name, and what it
    lacks."""

    reading: str
    lacks: str

    @property
    def words(self) -> str:
        """The reading as an operator reads it ("quorum spare voters")."""
        return self.reading.replace("_", " ")


@dataclass(frozen=True)
class ClusterHealth:
    name: str
    mode: Mode | None
    controller: ControllerView
    brokers: tuple[BrokerHealth, ...]  # every node with the broker role (and unreachable ones)
    evaluated_at: float
    error: str | None = None  # set when this cluster's health could not be evaluated this round
    # ZooKeeper -> KRaft migration (KIP-866) as the KRaft controllers say: PRE_MIGRATION, MIGRATION,
    # POST_MIGRATION; None for a cluster born KRaft (NONE) or in ZooKeeper mode
    migration_phase: str | None = None
    # The quorum's own view (ClusterSnapshot.quorum): its leader, and whether the controllers' JMX claims
    # someone else (a zombie controller, or a partition between ctlplane and the nodes)
    quorum_leader_id: int | None = None
    controller_views_disagree: bool = False
    # KRaft: the brokers the active controller counts fenced (FencedBrokerCount) for which ctlplane names no
    # broker fenced: brokers it does not watch, or watches but cannot read. None where no controller says.
    fenced_unnamed: int | None = None
    # KRaft: the quorum's voters and how many more can fail (health/quorum.py); None in ZooKeeper mode or
    # where neither the quorum nor a controller's raft metrics answered
    redundancy: Redundancy | None = None
    # KRaft: each controller read this round whose raft state says it is a voter, with its raft state and
    # how long it has been outside leader/follower (0 in step): a long election is a stuck one
    elections: tuple[ElectionState, ...] = ()
    # KRaft: the voter set (ids, directory ids) and the observer controllers beside it (health/quorum.py)
    voter_set: VoterSet | None = None
    # every broker's and KRaft controller's answer to "may it be restarted now?" (health/restart.py)
    restart: tuple[RestartSafety, ...] = ()
    # the judgements no source served the evidence for (health/unknown.py): unknown, never healthy
    unknown: tuple[UnknownReading, ...] = ()

    @property
    def active_controllers(self) -> int:
        return len(self.controller.claimants)

    def broker(self, node: str) -> BrokerHealth | None:
        return next((b for b in self.brokers if b.node == node), None)

    def restart_answer(self, node: str) -> RestartSafety | None:
        return next((r for r in self.restart if r.node == node), None)


@dataclass(frozen=True)
class ElectionState:
    """A KRaft controller's raft state as its own JMX says, and how long it has been out of step with the quorum
    (candidate, prospective, unattached, voted...: electing, or unable to reach a leader; or a follower the
    leader has not seen caught up)."""

    node: str
    role: Role
    state: str
    out_of_step_seconds: float


@dataclass(frozen=True)
class Redundancy:
    """How many voter failures a KRaft quorum survives: its voters, those caught up with the leader, and
    the majority it needs (a leader is elected and commits with a majority of the voters, KIP-595)."""

    voters: int
    caught_up: int
    source: str  # "quorum": describeMetadataQuorum (the leader's word); "jmx": the controllers' raft metrics

    @property
    def majority(self) -> int:
        return self.voters // 2 + 1

    @property
    def spare(self) -> int:
        """Voters that can still fail (or fall behind) before the quorum has no majority caught up: 0 is one
        failure from losing its leader's commits, below 0 it has lost them."""
        return self.caught_up - self.majority


@dataclass(frozen=True)
class QuorumMember:
    """A KRaft controller process in or beside the voter set: a voter, or an observer controller (KIP-853: a
    controller that runs and fetches the metadata log but is not a voter, until `kafka-metadata-quorum
    add-controller` adds it, or since `remove-controller` removed it)."""

    node: str  # the watched node's label, else `controller-<id>`
    node_id: int | None
    role: Role
    directory_id: str | None  # where the quorum's view gives it (3.9+)
    voter: bool
    observer_seconds: float = 0.0  # how long ctlplane has seen it run outside the voter set (0 for a voter)
    # a voter caught up with the leader (as Redundancy counts it); None for an observer, or unknown
    caught_up: bool | None = None


@dataclass(frozen=True)
class VoterSet:
    """The quorum's voters and the controllers that run outside them. `source` "quorum": describeMetadataQuorum
    (ids and directory ids, the leader's word); "jmx": the controllers' own raft state (no directory ids)."""

    members: tuple[QuorumMember, ...]  # voters first, each part by node id
    source: str

    @property
    def voters(self) -> tuple[QuorumMember, ...]:
        return tuple(m for m in self.members if m.voter)

    @property
    def observers(self) -> tuple[QuorumMember, ...]:
        return tuple(m for m in self.members if not m.voter)


@dataclass(frozen=True)
class RestartSafety:
    """Whether a node may be restarted now without losing availability (health/restart.py)."""

    node: str
    role: Role
    safe: bool
    blocker: str | None  # restart.Blocker's value where not safe
    reason: str  # in words an operator can check


@dataclass(frozen=True)
class FleetHealth:
    clusters: tuple[ClusterHealth, ...]

    def cluster(self, name: str) -> ClusterHealth | None:
        return next((c for c in self.clusters if c.name == name), None)


@dataclass(frozen=True)
class ClusterMemory:
    leader: tuple[str, float | None] | None = None  # (node label, epoch) of the last known controller
    failovers_total: int = 0
    last_failover_at: float | None = None
    # node -> recent (applied offset, committed offset) pairs, newest last
    offsets: Mapping[str, tuple[tuple[float, float], ...]] = field(default_factory=lambda: MappingProxyType({}))
    states: Mapping[str, Lifecycle] = field(default_factory=lambda: MappingProxyType({}))  # last lifecycle
    broker_state_read: frozenset[str] = frozenset()  # nodes whose last read had BrokerState
    # node -> its JVM's start time (kafka_node_start_time_seconds) when last read with BrokerState RUNNING
    running_since: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    # node -> (its JVM's start time, seconds its collectors had spent) at its last read (health/gc.py)
    gc_seconds: Mapping[str, tuple[float, float]] = field(default_factory=lambda: MappingProxyType({}))
    # broker -> the longest GC time between two reads, at least gc_pause_seconds, since it was last ACTIVE
    gc_paused: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    leading: frozenset[str] = frozenset()  # brokers whose last answered read had LeaderCount > 0
    unplanned: frozenset[str] = frozenset()  # brokers last FENCED with the unplanned flag (held_fenced)
    # (active controller, its TimedOutBrokerHeartbeatCount) as last read: a rise names an overloaded controller
    timed_out_heartbeats: tuple[str, float] | None = None
    # The Admin API alone: broker id -> the broker as last named, every broker the answers named since ctlplane started
    # (health/admin.py): one no answer names any more is not gone from the cluster unless Kafka says so
    admin_brokers: Mapping[int, Member] = field(default_factory=lambda: MappingProxyType({}))
    # ZooKeeper mode: broker -> (active controller, ControlledShutdown requests it had handled) in the last
    # round the broker was read ACTIVE (lifecycle.zookeeper_shutdown_requests)
    shutdown_baselines: Mapping[str, tuple[str, float]] = field(default_factory=lambda: MappingProxyType({}))
    # KRaft controller -> when its raft state was first read outside leader/follower (an election under way)
    out_of_step_since: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    # controller -> when it was first seen running outside the voter set (an observer controller)
    observer_since: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    # The highest raft epoch seen: a claimant below it has been deposed, even when no node that knows the
    # newer epoch can be read this round. Forgotten after EPOCH_FLOOR_ROUNDS rounds in which every reachable
    # node reports less (a cluster rebuilt from scratch starts again at epoch 1).
    epoch_floor: float | None = None
    epoch_floor_unseen_rounds: int = 0
    # ZooKeeper mode: (active controller, broker) -> the controller's queue-time summary for that broker as
    # last read (count, sum of seconds) and when its queue last made progress (a request left it or it was empty)
    queue_waits: Mapping[tuple[str, str], tuple[float, float, float]] = field(
        default_factory=lambda: MappingProxyType({})
    )


def last_reads(
    nodes: Sequence[NodeSnapshot], last: Mapping[str, T], known: set[str], read: Callable[[NodeSnapshot], T | None]
) -> dict[str, T]:
    """A per-node reading the memory keeps: `read` of each node read this round where it gives one, the last
    one kept for the cluster's other nodes (unread this round), none for nodes the cluster no longer has."""
    kept = {node: value for node, value in last.items() if node in known}
    for node in nodes:
        if node.up and (value := read(node)) is not None:
            kept[node.node] = value
    return kept


@dataclass(frozen=True)
class HealthMemory:
    clusters: Mapping[str, ClusterMemory] = field(default_factory=lambda: MappingProxyType({}))
