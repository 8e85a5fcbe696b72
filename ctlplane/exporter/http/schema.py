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
    role: Role
    mode: Mode | None = Field(description="null until the node has been read once")
    node_id: int | None
    version: str | None = Field(description="its Kafka release")
    up: bool
    error: str | None = Field(description="why the last read failed, one line")
    failure: Failure | None = Field(description="the kind of failure, where `up` is false")
    scrape_duration_seconds: float
    errors_total: int
    scraped_at: float = Field(description="unix seconds of its last read")
    control_plane_listener: bool | None = Field(description="whether it has a KIP-291 control-plane listener")
    samples: list[SampleDocument]


class ReplicaDocument(_Document):
    replica_id: int
    voter: bool = Field(description="a controller; observers are brokers")
    log_end_offset: int
    last_fetch_at: float | None
    last_caught_up_at: float | None
    directory_id: str | None = None


class MemberDocument(_Document):
    node_id: int
    role: Role
    host: str | None
    current: bool = Field(
        default=True,
        description="false for an observer the quorum's leader only remembers (5 minutes after its last fetch)",
    )


class QuorumDocument(_Document):
    """The cluster's own answers through the Admin API (describeMetadataQuorum, describeCluster)."""

    read_at: float
    error: str | None
    leader_id: int | None
    leader_epoch: int | None
    high_watermark: int | None
    replicas: list[ReplicaDocument]
    fenced: dict[str, bool] | None = Field(description="broker id -> fenced (describeCluster, 4.0+)")
    registrations_error: str | None
    members: list[MemberDocument] = Field(description="every node the answers named")
    members_error: str | None
    no_quorum: bool = Field(
        default=False, description="the brokers have no metadata quorum to describe (ZooKeeper mode)"
    )
    controller_id: int | None = Field(
        default=None, description="describeCluster's controller (a random live broker where KRaft brokers answer)"
    )


class ClusterDocument(_Document):
    name: str
    mode: Mode | None
    admin_only: bool = Field(default=False, description="watched through the Admin API alone")
    nodes: list[NodeDocument]
    quorum: QuorumDocument | None = Field(default=None, description="absent without a bootstrap address")


class SnapshotDocument(_Document):
    """/api/v1/snapshot: every node's readings of the last round."""

    schema_: int = Field(alias="schema", description="the document's version")
    sequence: int = Field(description="the round's number, 1 for the first")
    taken_at: float = Field(description="unix seconds the round started")
    round_duration_seconds: float
    clusters: list[ClusterDocument]


class RedundancyDocument(_Document):
    voters: int
    caught_up: int
    spare: int = Field(description="how many more voters may fail with a caught-up majority left")
    source: str = Field(description="quorum (the leader's word) or jmx (the controllers' raft metrics)")


class VoterDocument(_Document):
    node: str
    node_id: int | None
    role: Role
    directory_id: str | None
    voter: bool
    observer_seconds: float
    caught_up: bool | None


class VoterSetDocument(_Document):
    source: str
    members: list[VoterDocument]


class ElectionDocument(_Document):
    node: str
    role: Role
    state: str = Field(description="raft current-state as the controller's own JMX says")
    out_of_step_seconds: float


class ControllerDocument(_Document):
    claimants: list[str] = Field(description="nodes whose ActiveControllerCount is 1")
    node: str | None = Field(description="the active controller")
    node_id: int | None
    epoch: float | None
    failovers_total: int
    last_failover_at: float | None
    reachable_controllers: int
    known: bool = Field(default=True, description="false: this round did not say who the controller is")


class BrokerDocument(_Document):
    node: str
    node_id: int | None
    role: Role
    up: bool
    state: Lifecycle
    evidence: str = Field(description="why this state, in words an operator can check")
    metadata_lag_records: float | None
    metadata_lag_seconds: float | None
    stale: bool
    frozen: bool
    control_plane_listener: bool | None
    control_plane_queue_ratio: float | None
    control_plane_saturated: bool
    decided_by: str = Field(description="jmx (the nodes' own word) or quorum (the cluster's answers)")
    views_disagree: bool
    metadata_lag_source: str | None
    fenced_unplanned: bool = Field(description="FENCED, and no planned stop or restart reads the same")
    cause: Cause | None = Field(description="why the state is not ACTIVE, where it is not")


class RestartDocument(_Document):
    node: str
    role: Role
    safe: bool = Field(description="whether it may be restarted now without losing availability")
    blocker: str | None = Field(description="why not, as the reason label of kafka_node_restart_blocked")
    reason: str = Field(description="why, in words an operator can check")


class RestartAnswer(RestartDocument):
    """/api/v1/restart: one node's answer, with its cluster."""

    cluster: str


class UnknownReadingDocument(_Document):
    reading: str = Field(description="a judgement no source served the evidence for this round")
    lacks: str = Field(description="the evidence it lacks")


class ClusterHealthDocument(_Document):
    name: str
    mode: Mode | None
    error: str | None = Field(description="why this cluster could not be evaluated this round")
    migration_phase: str | None
    quorum_leader_id: int | None
    controller_views_disagree: bool
    fenced_unnamed: int | None
    redundancy: RedundancyDocument | None
    voter_set: VoterSetDocument | None
    elections: list[ElectionDocument] = Field(default=[], description="controllers out of step with the quorum")
    active_controllers: int
    controller: ControllerDocument
    brokers: list[BrokerDocument]
    restart: list[RestartDocument] = Field(default=[], description="every node's answer to: may it restart now?")
    unknown: list[UnknownReadingDocument] = Field(
        default=[], description="judgements unknown for want of evidence: never read as healthy"
    )


class HealthDocument(_Document):
    """/api/v1/health: per cluster, the controller and every broker's state with its evidence and cause."""

    schema_: int = Field(alias="schema", description="the document's version")
    sequence: int
    taken_at: float
    clusters: list[ClusterHealthDocument]


# Fields of the values no document carries, and why: (value class name, field) -> reason
OMITTED = {
    ("NodeSnapshot", "cluster"): "the cluster it is listed under",
    ("NodeSnapshot", "_index"): "a lookup table, rebuilt",
    ("NodeSnapshot", "_by_series"): "a lookup table, rebuilt",
    ("BrokerHealth", "cluster"): "the cluster it is listed under",
    ("ClusterHealth", "evaluated_at"): "the document's taken_at",
}
