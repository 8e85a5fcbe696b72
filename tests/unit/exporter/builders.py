"""Hand-built snapshots for unit tests: a node is a dict of series -> value (labels via a tuple key)."""

from __future__ import annotations

from collections.abc import Mapping

from ctlplane.exporter.catalog import Mode, Role
from ctlplane.exporter.model import ClusterSnapshot, Failure, FleetSnapshot, NodeSnapshot, Sample

Values = Mapping[str | tuple[str, tuple[tuple[str, str], ...]], float]


def node(
    name: str,
    values: Values | None = None,
    *,
    cluster: str = "c1",
    role: Role = Role.BROKER,
    mode: Mode | None = Mode.KRAFT,
    node_id: int | None = None,
    up: bool = True,
    error: str | None = None,
    failure: Failure = Failure.GONE,
    at: float = 1000.0,
) -> NodeSnapshot:
    samples = []
    for key, value in (values or {}).items():
        series, labels = (key, ()) if isinstance(key, str) else key
        samples.append(Sample(series, tuple(sorted(labels)), value))
    return NodeSnapshot(
        cluster=cluster,
        node=name,
        address=f"127.0.0.1:{9000 + (node_id or 0)}",
        role=role,
        mode=mode,
        node_id=node_id,
        version="4.3.1" if mode is Mode.KRAFT else "3.9.2",
        up=up,
        scrape_duration_seconds=0.002 if up else 0.0,
        error=None if up else (error or "connection refused"),
        errors_total=0 if up else 1,
        scraped_at=at,
        samples=tuple(samples) if up else (),
        failure=None if up else failure,
    )


def fleet(*nodes: NodeSnapshot, sequence: int = 1, at: float = 1000.0) -> FleetSnapshot:
    clusters: dict[str, list[NodeSnapshot]] = {}
    for n in nodes:
        clusters.setdefault(n.cluster, []).append(n)
    return FleetSnapshot(sequence, at, 0.01, tuple(ClusterSnapshot(c, tuple(ns)) for c, ns in clusters.items()))


def kraft_controller(
    name: str,
    node_id: int,
    *,
    active: bool,
    epoch: float = 5,
    committed: float = 100,
    registrations: Mapping[int, float] | None = None,
    fenced: float = 0,
    at: float = 1000.0,
    up: bool = True,
    cluster: str = "c1",
    heartbeat_timeouts: float | None = None,
    leader: float | None = None,
) -> NodeSnapshot:
    """`leader`: the node's raft current-leader gauge, left out when None."""
    values: dict[str | tuple[str, tuple[tuple[str, str], ...]], float] = {
        "kafka_controller_active": 1.0 if active else 0.0,
        "kafka_raft_current_epoch": epoch,
        "kafka_controller_last_committed_record_offset": committed,
        "kafka_controller_last_applied_record_offset": committed,
        "kafka_controller_fenced_brokers": fenced,
    }
    if heartbeat_timeouts is not None:
        values["kafka_controller_timed_out_broker_heartbeats_total"] = heartbeat_timeouts
    if leader is not None:
        values["kafka_raft_current_leader"] = leader
    for broker, state in (registrations or {}).items():
        values[("kafka_controller_broker_registration_state", (("broker", str(broker)),))] = state
    return node(name, values, role=Role.CONTROLLER, node_id=node_id, at=at, up=up, cluster=cluster)


def kraft_broker(
    name: str,
    node_id: int,
    *,
    applied: float = 100,
    lag_seconds: float = 0.2,
    broker_state: float = 3,
    at: float = 1000.0,
    up: bool = True,
    cluster: str = "c1",
    failure: Failure = Failure.GONE,
    leaders: float | None = None,
    started: float | None = None,
) -> NodeSnapshot:
    """`leaders`: the broker's LeaderCount gauge, `started`: its JVM's start time; each left out when None."""
    values: dict[str | tuple[str, tuple[tuple[str, str], ...]], float] = {
        "kafka_broker_state": broker_state,
        "kafka_broker_last_applied_record_offset": applied,
        "kafka_broker_last_applied_record_lag_seconds": lag_seconds,
        "kafka_raft_current_epoch": 5,
    }
    if leaders is not None:
        values["kafka_broker_leader_partitions"] = leaders
    if started is not None:
        values["kafka_node_start_time_seconds"] = started
    return node(
        name,
        values,
        role=Role.BROKER,
        node_id=node_id,
        at=at,
        up=up,
        cluster=cluster,
        failure=failure,
    )
