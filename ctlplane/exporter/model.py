"""Immutable snapshot types: what one scrape round saw. Everything downstream is a function of these."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from types import MappingProxyType

from ctlplane.exporter.catalog import Mode, Role

LabelPairs = tuple[tuple[str, str], ...]  # sorted (name, value) pairs


class Failure(StrEnum):
    """Why a node could not be read: the health model tells a stopped process from a hung one."""

    GONE = "gone"  # connection refused or reset: no process listens (stopped, crashed, restarting)
    TIMEOUT = "timeout"  # no answer in time: the process hangs, or the network drops packets
    # its JMX or metrics endpoint refused ctlplane's credentials (JMX login, HTTP 401/403): the operator's to
    # fix, never a fault of the node (it answered)
    AUTH = "auth"
    # Not a failure of the node: its page takes longer than a round (a large broker behind jmx_exporter), so
    # it is read at its own pace, or its large page ran late this once, and this round serves its last
    # complete read (NodeSnapshot.held)
    PACED = "paced"
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class MBeanQuery:
    """What to read from one node: every MBean matching `pattern`, these attributes."""

    pattern: str
    attributes: tuple[str, ...]
    only: tuple[tuple[str, frozenset[str]], ...] = ()  # keep MBeans whose key has one of these values
    # Registered at run time as the controller's state moves (a won election, a broker's registration): a
    # client must not keep "no such MBean here", or the list of those there, for long
    # (MetricSpec.follows_controller).
    follows_controller: bool = False
    slow: bool = False  # every series it feeds is on the slow tier (MetricSpec.slow)
    registered_once: bool = False  # its MBeans, once found, stay for the JVM's life (MetricSpec.registered_once)
    # No catalogue row expects its MBeans on the node it is asked of, by that node's mode and role
    # (readings.queries_for): a client that found none there need not look again for long
    unexpected: bool = False
    # It follows the controller, and the node it is asked of was not the active controller at its last read
    # (readings.queries_for): looked for again at the usual pace, not soon; the read that finds the node
    # active asks again for it without the mark, at once (Scraper._read)
    dormant: bool = False

    def accepts(self, keys: Mapping[str, str]) -> bool:
        return all(keys.get(key) in values for key, values in self.only)


@dataclass(frozen=True, slots=True)
class RawReading:
    """The attributes read from one concrete MBean, before the catalogue maps them to series."""

    pattern: str  # the MBeanQuery.pattern that matched
    object_name: str
    keys: Mapping[str, str]  # ObjectName key properties
    values: Mapping[str, float | str]  # attribute -> number or string; missing attributes are absent


@dataclass(frozen=True, slots=True)
class Sample:
    """One value of one series on one node (labels other than cluster/node/role)."""

    series: str
    labels: LabelPairs
    value: float
    # Extra samples of a summary: (suffix or quantile marker, labels, value) kept in one Sample so the
    # family renderer sees count, sum and quantiles together.
    parts: tuple[tuple[str, float], ...] = ()
    # Unix seconds the value was read, for a series of the slow tier (MetricSpec.slow): it is served until
    # the next slow read, with this time, not as if read in every round. None: read in the node's round.
    read_at: float | None = None


@dataclass(frozen=True)
class NodeSnapshot:
    cluster: str
    node: str  # the `node` label
    address: str  # JMX host:port
    role: Role
    mode: Mode | None  # None until the node has been read once
    node_id: int | None
    version: str | None
    up: bool
    scrape_duration_seconds: float
    error: str | None
    errors_total: int
    scraped_at: float
    samples: tuple[Sample, ...] = ()
    failure: Failure | None = None  # set when up is False
    # unix seconds its last successful read took its values (before any: when ctlplane began watching it); None
    # where the snapshot was not made by a scraper (ctlplane_last_read_age_seconds)
    last_read_at: float | None = None
    _index: Mapping[tuple[str, LabelPairs], Sample] = field(
        default_factory=lambda: MappingProxyType({}), repr=False, compare=False
    )
    # series -> its samples in `samples` order: /metrics asks every node for every catalogue series, and a
    # scan per question was ~1.1 s of a 1,000-node render
    _by_series: Mapping[str, tuple[Sample, ...]] = field(
        default_factory=lambda: MappingProxyType({}), repr=False, compare=False
    )

    def __post_init__(self) -> None:
        index = {(sample.series, sample.labels): sample for sample in self.samples}
        object.__setattr__(self, "_index", MappingProxyType(index))
        grouped: dict[str, list[Sample]] = {}
        for sample in self.samples:
            grouped.setdefault(sample.series, []).append(sample)
        by_series = {series: tuple(members) for series, members in grouped.items()}
        object.__setattr__(self, "_by_series", MappingProxyType(by_series))

    def sample(self, series: str, **labels: str) -> Sample | None:
        """The sample of `series` with exactly these extra labels, or None if the node lacks it."""
        return self._index.get((series, tuple(sorted(labels.items()))))

    def value(self, series: str, **labels: str) -> float | None:
        """The value of `series` with exactly these extra labels, or None if the node lacks it."""
        sample = self.sample(series, **labels)
        return None if sample is None else sample.value

    def state(self, series: str) -> str | None:
        """The string a STATE series carries (its `state` label where the value is 1), or None."""
        return next((dict(s.labels).get("state") for s in self.series_samples(series) if s.value == 1), None)

    def has(self, series: str) -> bool:
        return series in self._by_series

    @property
    def held(self) -> bool:
        """Not read this round but served: its page takes longer than a round (or its large page is late this
        once: scraper.py, "paced"), and `samples` are its last complete read's, taken at `scraped_at`. The
        health model reads it as a node not read this round (its lifecycle from the controllers and the
        quorum's view); /metrics serves its series and `ctlplane_up` 1."""
        return not self.up and self.failure is Failure.PACED

    @property
    def served(self) -> bool:
        """Whether its own series are served this round (`ctlplane_up` 1): read this round, or `held`."""
        return self.up or self.held

    def series_samples(self, series: str) -> Iterator[Sample]:
        return iter(self._by_series.get(series, ()))


# An observer that has not fetched for this long is only remembered by the leader (Member.current): a
# running observer fetches back to back, the leader parking each fetch for at most 500 ms
# (KafkaRaftClient.MAX_FETCH_WAIT_MS)
OBSERVER_HEARD_WITHIN_SECONDS = 30.0


@dataclass(frozen=True, slots=True)
class QuorumReplica:
    """One replica of the KRaft metadata log as the quorum leader sees it (QuorumInfo.ReplicaState)."""

    replica_id: int
    voter: bool  # a controller; observers are brokers
    log_end_offset: int
    last_fetch_at: float | None  # unix seconds; None where the leader has not heard from it
    last_caught_up_at: float | None
    # its metadata log directory's id (ReplicaState.replicaDirectoryId, DescribeQuorum v2, Kafka 3.9+, KIP-853):
    # a voter is the pair (id, directory); None where the answer has none (Uuid.ZERO_UUID)
    directory_id: str | None = None


@dataclass(frozen=True)
class Member:
    """A node as one of the cluster's answers names it (describeCluster, the quorum's voters and observers):
    what discovery (ctlplane/exporter/discovery/answers.py) finds the nodes to watch from."""

    node_id: int
    role: Role  # BROKER, CONTROLLER, or COMBINED when answers name it as both
    host: str | None = None  # from describeCluster or a voter's endpoint; None where no answer said
    # False for an observer the quorum's leader only remembers: it keeps one for 5 minutes after its last
    # fetch (LeaderState.OBSERVER_SESSION_TIMEOUT_MS), so such a mention says the node was there, not that
    # it still is. Every other mention (describeCluster, the voter set) is of the cluster as it is now.
    current: bool = True


# The `node` label of a node ctlplane knows from the cluster's answers: discovery's default
# (discovery.node_name), and every node of a cluster watched through the Admin API alone.
DEFAULT_NODE_NAME = "{role}-{id}"


def member_label(member: Member, template: str = DEFAULT_NODE_NAME) -> str:
    role = member.role.value if member.role is not Role.UNKNOWN else "node"
    return template.replace("{role}", role).replace("{id}", str(member.node_id))


def merge_roles(first: Role, second: Role) -> Role:
    if first is second or second is Role.UNKNOWN:
        return first
    if first is Role.UNKNOWN:
        return second
    return Role.COMBINED


def merged(members: Iterable[Member]) -> dict[int, Member]:
    """One Member per id: the roles each answer gave it, and the first host any answer gave."""
    out: dict[int, Member] = {}
    for member in members:
        seen = out.get(member.node_id)
        out[member.node_id] = (
            member
            if seen is None
            else replace(
                seen,
                role=merge_roles(seen.role, member.role),
                host=seen.host or member.host,
                current=seen.current or member.current,
            )
        )
    return out


@dataclass(frozen=True)
class QuorumView:
    """The metadata quorum's own view of a cluster, from the Admin API's describeMetadataQuorum (KIP-836):
    what the leader says of every voter and observer, readable while a node's own JMX is not."""

    read_at: float  # unix seconds the answer arrived (or the read failed)
    error: str | None = None  # why there is no answer (then the fields below are empty)
    # the cluster refused ctlplane's credentials or its principal's rights (the error says which): the
    # operator's to fix, not a fault of the cluster (sources/admin/client.py is_refusal)
    refused: bool = False
    leader_id: int | None = None
    leader_epoch: int | None = None
    high_watermark: int | None = None
    replicas: tuple[QuorumReplica, ...] = ()
    # Broker id -> fenced, from describeCluster(includeFencedBrokers) (KIP-1073, brokers of 4.0+), asked
    # through bootstrap_servers only (controllers answer DescribeCluster with themselves, KIP-919); None
    # where it was not asked or the brokers cannot say (then `registrations_error` says why).
    fenced: Mapping[int, bool] | None = None
    registrations_error: str | None = None
    # Every node the answers named (describeCluster's nodes with their hosts, the voters and observers), for
    # discovery; asked also where describeMetadataQuorum failed (ZooKeeper mode has no quorum to describe)
    members: tuple[Member, ...] = ()
    members_error: str | None = None  # why describeCluster did not answer
    # the brokers said they have no metadata quorum to describe (ZooKeeper mode: DescribeQuorum unsupported),
    # so describeCluster's brokers are the whole cluster
    no_quorum: bool = False
    # describeCluster's controller: the active controller where ZooKeeper-mode brokers or KRaft controllers
    # (KIP-919) answer; a random live broker where KRaft brokers do (KafkaApis.handleDescribeCluster), so
    # not a controller's identity there. None where describeCluster did not answer or named none.
    controller_id: int | None = None

    @property
    def up(self) -> bool:
        return self.error is None

    def replica(self, replica_id: int | None) -> QuorumReplica | None:
        return next((r for r in self.replicas if r.replica_id == replica_id), None)

    def age(self, at: float | None) -> float | None:
        """Seconds from `at` (a replica's last fetch or catch-up) to this answer, never negative."""
        return None if at is None else max(0.0, self.read_at - at)

    def lag_records(self, replica: QuorumReplica) -> int | None:
        """The leader's log end offset minus the replica's: the Lag column of kafka-metadata-quorum.sh
        describe --replication (MetadataQuorumCommand.quorumInfoToRows); None without the leader's row."""
        leader = self.replica(self.leader_id)
        return None if leader is None else leader.log_end_offset - replica.log_end_offset


# Buckets of the canary's propagation histogram (seconds): a healthy broker serves a change within tens of ms
CANARY_BUCKETS: tuple[float, ...] = (0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


@dataclass(frozen=True)
class CanaryBroker:
    """What one broker answered the metadata canary (sources/admin/canary.py)."""

    node_id: int
    # it answered the last Metadata request (with or without the change); False: no answer, so nothing said
    answered: bool
    # unix time of the oldest change it has answered without serving; None when it serves the latest
    unserved_since: float | None = None
    error: str | None = None  # why it did not answer, or refused
    # the propagation histogram: per bucket of CANARY_BUCKETS (cumulative, +Inf last), and the sum
    buckets: tuple[int, ...] = ()
    seconds_total: float = 0.0

    def unserved_seconds(self, now: float) -> float | None:
        """How long, at `now`, it has answered without the latest change: 0 when it serves it, None where it
        did not answer (then it said nothing)."""
        if not self.answered:
            return None
        return 0.0 if self.unserved_since is None else max(0.0, now - self.unserved_since)


@dataclass(frozen=True)
class CanaryView:
    """The metadata canary of one cluster: the change it made last, and each broker's answers."""

    read_at: float
    topic: str | None = None  # the latest change: the canary topic it created
    changed_at: float | None = None  # unix time the change was asked for
    brokers: tuple[CanaryBroker, ...] = ()
    changes_total: int = 0
    # why a change could not be made or asked, by reason (not_authorized, timeout, ...), since start
    errors_total: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    error: str | None = None  # the last error, in Kafka's words

    def broker(self, node_id: int | None) -> CanaryBroker | None:
        return next((b for b in self.brokers if b.node_id == node_id), None)


@dataclass(frozen=True)
class ClusterSnapshot:
    name: str
    nodes: tuple[NodeSnapshot, ...]
    quorum: QuorumView | None = None  # None: the cluster has no bootstrap address configured
    # Watched through the Admin API alone (config: a bootstrap address, no node listed, no discovery): no node
    # of it is ever read, its quorum's view is all the evidence (health/admin.py). Not merely no node yet: a
    # discovering cluster has none until its first answer, and then reads them.
    admin_only: bool = False
    canary: CanaryView | None = None  # None: no canary configured (ClusterConfig.canary)

    @property
    def mode(self) -> Mode | None:
        """The cluster's mode: what its reachable nodes say, migration winning over plain KRaft; for a cluster
        watched through the Admin API alone, what its answers say (a quorum, or brokers that have none)."""
        modes = {node.mode for node in self.nodes if node.mode is not None}
        for mode in (Mode.MIGRATION, Mode.KRAFT, Mode.ZOOKEEPER):
            if mode in modes:
                return mode
        if self.admin_only and self.quorum is not None:
            if self.quorum.no_quorum:
                return Mode.ZOOKEEPER
            if self.quorum.up:
                return Mode.KRAFT
        return None

    def node(self, name: str) -> NodeSnapshot | None:
        return next((node for node in self.nodes if node.node == name), None)

    def unwatched(self) -> list[Member]:
        """The nodes this round's answers name that no node ctlplane reads is (by node id): not listed and
        not discovered, or listed but never read. Discovery on or off: the cluster's own word on what it has."""
        if self.quorum is None or self.admin_only:  # the Admin API alone watches every node it names
            return []
        read = {node.node_id for node in self.nodes if node.node_id is not None}
        return [member for node_id, member in sorted(merged(self.quorum.members).items()) if node_id not in read]

    def unknown(self) -> list[NodeSnapshot]:
        """The nodes ctlplane reads that this round's answers do not name (by the id the node itself reports):
        listed under the wrong cluster, or a JMX address that reaches another cluster's node. Only where the
        answers are whole: describeCluster answered, and the quorum too (its voters; the brokers it hears
        fetching) or the brokers said there is none (ZooKeeper mode). A live node is in them: a running
        broker fetches metadata (an observer) or is registered (describeCluster)."""
        quorum = self.quorum
        if quorum is None or quorum.members_error is not None or not (quorum.up or quorum.no_quorum):
            return []
        named = set(merged(quorum.members))
        return [
            node
            for node in self.nodes
            if node.up and node.node_id is not None and node.node_id not in named and node.mode is not None
        ]


@dataclass(frozen=True)
class FleetSnapshot:
    """One scrape round over every configured cluster."""

    sequence: int  # 1 for the first round; 0 for the empty snapshot served before it ends
    taken_at: float  # unix time at which the round started
    round_duration_seconds: float
    clusters: tuple[ClusterSnapshot, ...]
    woken_rounds_total: int = 0  # rounds started early since ctlplane started (Scraper.wake), this one among them

    def nodes(self) -> Iterator[NodeSnapshot]:
        for cluster in self.clusters:
            yield from cluster.nodes

    def cluster(self, name: str) -> ClusterSnapshot | None:
        return next((cluster for cluster in self.clusters if cluster.name == name), None)
