"""The JSON documents of /api/v1/snapshot and /api/v1/health, as models: their schema in /openapi.json and
/api/docs, and what a test holds every document the API writes to (jsonapi.py writes and reads them).

Every field of the snapshot and health values (ctlplane/exporter/model.py, health/model.py) is in a document,
but those OMITTED names with a reason; tests/unit/exporter/http/test_schema.py fails when a value gains a field
the documents do not carry.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ctlplane.exporter.catalog import Mode, Role
from ctlplane.exporter.health.model import Cause, Lifecycle
from ctlplane.exporter.model import Failure


class _Document(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SampleDocument(_Document):
    series: str = Field(description="the series name, as on /metrics")
    labels: dict[str, str] = Field(description="its labels but cluster, node and role")
    value: float | None = Field(description="null where Kafka reports NaN (JSON has none)")
    parts: dict[str, float | None] | None = Field(
        default=None, description="a summary's count, sum and quantiles; absent for other series"
    )
    read_at: float | None = Field(
        default=None, description="unix seconds a slow-tier value was read; absent when read this round"
    )


class NodeDocument(_Document):
    node: str = Field(description="the `node` label")
    address: str = Field(description="where it is read: JMX host:port or the metrics endpoint's URL")
    role: Role = Field(
        description="broker, controller, combined (process.roles=broker,controller) or unknown (never read yet)"
    )
    mode: Mode | None = Field(description="null until the node has been read once")
    node_id: int | None = Field(description="its broker.id or node.id, as it says; null until read")
    version: str | None = Field(description="its Kafka release")
    up: bool = Field(description="whether this round's read answered (false too for a node read at its own pace)")
    error: str | None = Field(description="why the last read failed, one line")
    failure: Failure | None = Field(description="the kind of failure, where `up` is false")
    scrape_duration_seconds: float = Field(
        description="how long this round's read took (a read that did not answer: how long it was waited for)"
    )
    errors_total: int = Field(description="failed reads of this node since ctlplane started")
    scraped_at: float = Field(
        description="unix seconds its served values were taken (a node read at its own pace: its last page's)"
    )
    last_read_at: float | None = Field(
        default=None,
        description="unix seconds of its last successful read (before any: when ctlplane began watching it)",
    )
    control_plane_listener: bool | None = Field(description="whether it has a KIP-291 control-plane listener")
    samples: list[SampleDocument] = Field(description="every series read from it this round")


class ReplicaDocument(_Document):
    replica_id: int = Field(description="the node id")
    voter: bool = Field(description="a controller; observers are brokers")
    log_end_offset: int = Field(description="the end of its metadata log as the leader last saw it")
    last_fetch_at: float | None = Field(
        description="unix seconds of its last fetch from the leader; null where the leader has not heard from it"
    )
    last_caught_up_at: float | None = Field(
        description="unix seconds it was last caught up with the leader; null where never"
    )
    directory_id: str | None = Field(
        default=None, description="its metadata log directory's id (3.9+, KIP-853); null where the answer has none"
    )


class MemberDocument(_Document):
    node_id: int = Field(description="the node id")
    role: Role = Field(description="broker, controller, or combined when the answers name it as both")
    host: str | None = Field(
        description="its host as describeCluster or its voter endpoint gives it; null where no answer said"
    )
    current: bool = Field(
        default=True,
        description="false for an observer the quorum's leader only remembers (5 minutes after its last fetch)",
    )


class QuorumDocument(_Document):
    """The cluster's own answers through the Admin API (describeMetadataQuorum, describeCluster)."""

    read_at: float = Field(description="unix seconds the answer arrived (or the read failed)")
    error: str | None = Field(description="why there is no answer, one line; the fields below are then empty")
    refused: bool = Field(
        default=False,
        description="the cluster refused ctlplane's credentials (the error starts `authentication failed:`) or its "
        "principal's rights (`not authorised:`): the operator's to fix, not a fault of the cluster",
    )
    leader_id: int | None = Field(description="the quorum's leader: the active controller")
    leader_epoch: int | None = Field(description="the leader's epoch")
    high_watermark: int | None = Field(description="the metadata log's high watermark")
    replicas: list[ReplicaDocument] = Field(description="voters and observers as the leader sees them")
    fenced: dict[str, bool] | None = Field(description="broker id -> fenced (describeCluster, 4.0+)")
    registrations_error: str | None = Field(
        description="why there are no fenced flags (brokers before 4.0, or describeCluster did not answer)"
    )
    members: list[MemberDocument] = Field(description="every node the answers named")
    members_error: str | None = Field(description="why describeCluster did not answer")
    no_quorum: bool = Field(
        default=False, description="the brokers have no metadata quorum to describe (ZooKeeper mode)"
    )
    controller_id: int | None = Field(
        default=None, description="describeCluster's controller (a random live broker where KRaft brokers answer)"
    )


class CanaryBrokerDocument(_Document):
    """What one broker answered the metadata canary."""

    node_id: int = Field(description="its broker id")
    answered: bool = Field(description="it answered the last Metadata request, with or without the change")
    unserved_since: float | None = Field(
        description="unix seconds of the oldest change it answered without; null when it serves the latest"
    )
    error: str | None = Field(description="why it did not answer, or refused")
    buckets: list[int] = Field(description="its propagation histogram: cumulative counts per bucket, +Inf last")
    seconds_total: float = Field(description="the histogram's sum: seconds of propagation observed")


class CanaryDocument(_Document):
    """The metadata canary (docs/canary.md): the change it made last and each broker's answers."""

    read_at: float = Field(description="unix seconds of its last news")
    topic: str | None = Field(description="the canary topic of the latest change")
    changed_at: float | None = Field(description="unix seconds the latest change was asked for")
    brokers: list[CanaryBrokerDocument] = Field(description="each broker describeCluster named")
    changes_total: int = Field(description="changes made since the exporter started")
    errors_total: dict[str, int] = Field(description="failed steps since the exporter started, by reason")
    error: str | None = Field(description="the last error, in Kafka's words; null after a change succeeds")


class ClusterDocument(_Document):
    name: str = Field(description="the `cluster` label")
    mode: Mode | None = Field(description="zookeeper, kraft or migration, as its nodes say; null until one is read")
    admin_only: bool = Field(default=False, description="watched through the Admin API alone")
    nodes: list[NodeDocument] = Field(description="every node watched")
    quorum: QuorumDocument | None = Field(default=None, description="absent without a bootstrap address")
    canary: CanaryDocument | None = Field(default=None, description="absent without a canary configured")


class SnapshotDocument(_Document):
    """/api/v1/snapshot: every node's readings of the last round."""

    schema_: int = Field(alias="schema", description="the document's version")
    sequence: int = Field(description="the round's number, 1 for the first")
    taken_at: float = Field(description="unix seconds the round started")
    round_duration_seconds: float = Field(description="how long the round took")
    woken_rounds_total: int = Field(
        default=0,
        description="rounds started before their time since ctlplane started, because an active controller's "
        "fencing gauges changed between rounds (scrape.fencing_poll_seconds)",
    )
    clusters: list[ClusterDocument] = Field(description="every cluster served")


class RedundancyDocument(_Document):
    voters: int = Field(description="the quorum's voters")
    caught_up: int = Field(description="voters caught up with the leader")
    spare: int = Field(description="how many more voters may fail with a caught-up majority left")
    source: str = Field(description="quorum (the leader's word) or jmx (the controllers' raft metrics)")


class VoterDocument(_Document):
    node: str = Field(description="the watched node's label, else `controller-<id>`")
    node_id: int | None = Field(description="its node id")
    role: Role = Field(description="controller or combined")
    directory_id: str | None = Field(
        description="its metadata log directory's id where the quorum's view gives it (3.9+)"
    )
    voter: bool = Field(description="in the voter set; false for an observer controller (KIP-853)")
    observer_seconds: float = Field(
        description="how long ctlplane has seen it run outside the voter set (0 for a voter)"
    )
    caught_up: bool | None = Field(description="caught up with the leader; null where no answer says")


class VoterSetDocument(_Document):
    source: str = Field(description="quorum (describeMetadataQuorum) or jmx (the controllers' raft metrics)")
    members: list[VoterDocument] = Field(description="voters first, then observer controllers, each part by node id")


class ElectionDocument(_Document):
    node: str = Field(description="the `node` label")
    role: Role = Field(description="controller or combined")
    state: str = Field(description="raft current-state as the controller's own JMX says")
    out_of_step_seconds: float = Field(
        description="how long it has been outside leader/follower (a long election is a stuck one)"
    )


class ControllerDocument(_Document):
    claimants: list[str] = Field(description="nodes whose ActiveControllerCount is 1")
    node: str | None = Field(description="the active controller")
    node_id: int | None = Field(description="the active controller's node id")
    epoch: float | None = Field(
        description="the KRaft quorum's epoch; null in ZooKeeper mode (its controller epoch is not exposed)"
    )
    failovers_total: int = Field(description="changes of active controller ctlplane has seen since it started")
    last_failover_at: float | None = Field(description="unix seconds of the last change; null where none was seen")
    reachable_controllers: int = Field(
        description="controllers (KRaft) or brokers (ZooKeeper mode) whose read answered this round"
    )
    known: bool = Field(default=True, description="false: this round did not say who the controller is")


class BrokerDocument(_Document):
    node: str = Field(description="the `node` label")
    node_id: int | None = Field(description="its broker id")
    role: Role = Field(description="broker or combined")
    up: bool = Field(description="whether its read answered this round")
    state: Lifecycle = Field(description="its lifecycle (KIP-631), or UNREACHABLE where nothing says")
    evidence: str = Field(description="why this state, in words an operator can check")
    metadata_lag_records: float | None = Field(
        description="metadata records behind (KRaft) or the controller's queue for it (ZooKeeper mode)"
    )
    metadata_lag_seconds: float | None = Field(description="seconds behind the metadata it should have applied")
    stale: bool = Field(
        description="its metadata lag is past the thresholds (health.metadata_stale_seconds and its kin)"
    )
    frozen: bool = Field(
        description="its applied metadata offset unmoved for health.metadata_frozen_scrapes reads while the log moved"
    )
    control_plane_listener: bool | None = Field(
        description="ZooKeeper mode: whether it has a KIP-291 control-plane listener; null elsewhere or unread"
    )
    control_plane_queue_ratio: float | None = Field(description="how full the control-plane request queue is (0-1)")
    control_plane_saturated: bool = Field(
        description="the control-plane queue or its threads past the saturation thresholds"
    )
    decided_by: str = Field(description="jmx (the nodes' own word) or quorum (the cluster's answers)")
    views_disagree: bool = Field(description="the quorum's view and the broker's own JMX say different states")
    metadata_lag_source: str | None = Field(
        description="jmx (the broker's own figures), quorum (what the leader saw it fetch) or null"
    )
    fenced_unplanned: bool = Field(description="FENCED, and no planned stop or restart reads the same")
    cause: Cause | None = Field(description="why the state is not ACTIVE, where it is not")
    canary_unserved_seconds: float | None = Field(
        description="how long it has answered the metadata canary without its latest change (0: it serves it); "
        "null without a canary"
    )


class RestartDocument(_Document):
    node: str = Field(description="the `node` label")
    role: Role = Field(description="broker, controller or combined")
    safe: bool = Field(description="whether it may be restarted now without losing availability")
    blocker: str | None = Field(description="why not, as the reason label of kafka_node_restart_blocked")
    reason: str = Field(description="why, in words an operator can check")


class RestartAnswer(RestartDocument):
    """/api/v1/restart: one node's answer, with its cluster."""

    cluster: str = Field(description="the `cluster` label")


class UnknownReadingDocument(_Document):
    reading: str = Field(description="a judgement no source served the evidence for this round")
    lacks: str = Field(description="the evidence it lacks")


class ClusterHealthDocument(_Document):
    name: str = Field(description="the `cluster` label")
    mode: Mode | None = Field(description="zookeeper, kraft or migration; null until a node is read")
    error: str | None = Field(description="why this cluster could not be evaluated this round")
    migration_phase: str | None = Field(
        description="ZooKeeper to KRaft migration (KIP-866) as the KRaft controllers say; null where none"
    )
    quorum_leader_id: int | None = Field(description="the quorum's leader where the quorum's view answered this round")
    controller_views_disagree: bool = Field(
        description="the controllers' JMX claims a different active controller than the quorum names"
    )
    fenced_unnamed: int | None = Field(
        description="brokers the active controller counts fenced that ctlplane names none for; null where none says"
    )
    redundancy: RedundancyDocument | None = Field(
        description="KRaft: the voters and how many may fail; null in ZooKeeper mode or where nothing answered"
    )
    voter_set: VoterSetDocument | None = Field(
        description="KRaft: the voter set and the observer controllers beside it"
    )
    elections: list[ElectionDocument] = Field(default=[], description="controllers out of step with the quorum")
    active_controllers: int = Field(description="nodes claiming to be the active controller (1 is healthy)")
    controller: ControllerDocument = Field(description="the active controller and failovers")
    brokers: list[BrokerDocument] = Field(description="every broker's state, evidence and cause")
    restart: list[RestartDocument] = Field(default=[], description="every node's answer to: may it restart now?")
    unknown: list[UnknownReadingDocument] = Field(
        default=[], description="judgements unknown for want of evidence: never read as healthy"
    )


class HealthDocument(_Document):
    """/api/v1/health: per cluster, the controller and every broker's state with its evidence and cause."""

    schema_: int = Field(alias="schema", description="the document's version")
    sequence: int = Field(description="the round's number")
    taken_at: float = Field(description="unix seconds the round started")
    clusters: list[ClusterHealthDocument] = Field(description="every cluster served")


# Fields of the values no document carries, and why: (value class name, field) -> reason
OMITTED = {
    ("NodeSnapshot", "cluster"): "the cluster it is listed under",
    ("NodeSnapshot", "_index"): "a lookup table, rebuilt",
    ("NodeSnapshot", "_by_series"): "a lookup table, rebuilt",
    ("BrokerHealth", "cluster"): "the cluster it is listed under",
    ("ClusterHealth", "evaluated_at"): "the document's taken_at",
}
