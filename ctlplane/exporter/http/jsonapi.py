"""The JSON form of a FleetSnapshot served at /api/v1/snapshot, and its inverse for remote readers."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ctlplane.exporter.catalog import Mode, Role
from ctlplane.exporter.families import control_plane_listener_enabled
from ctlplane.exporter.health import BrokerHealth, Cause, ClusterHealth, ControllerView, FleetHealth, Lifecycle
from ctlplane.exporter.health.model import (
    ElectionState,
    QuorumMember,
    Redundancy,
    RestartSafety,
    UnknownReading,
    VoterSet,
)
from ctlplane.exporter.model import (
    ClusterSnapshot,
    Failure,
    FleetSnapshot,
    Member,
    NodeSnapshot,
    QuorumReplica,
    QuorumView,
    Sample,
)

SCHEMA_VERSION = 1


def _finite(value: float) -> float | None:
    # JSON has no NaN; Kafka reports NaN for idle ratios of listeners it does not have.
    return value if math.isfinite(value) else None


def snapshot_to_dict(snapshot: FleetSnapshot) -> dict[str, Any]:
    return {
        "schema": SCHEMA_VERSION,
        "sequence": snapshot.sequence,
        "taken_at": snapshot.taken_at,
        "round_duration_seconds": snapshot.round_duration_seconds,
        "clusters": [
            {
                "name": cluster.name,
                "mode": cluster.mode.value if cluster.mode else None,
                "admin_only": cluster.admin_only,
                "nodes": [_node_to_dict(node) for node in cluster.nodes],
                **({"quorum": _quorum_to_dict(cluster.quorum)} if cluster.quorum is not None else {}),
            }
            for cluster in snapshot.clusters
        ],
    }


def _quorum_to_dict(view: QuorumView) -> dict[str, Any]:
    return {
        "read_at": view.read_at,
        "error": view.error,
        "leader_id": view.leader_id,
        "leader_epoch": view.leader_epoch,
        "high_watermark": view.high_watermark,
        "replicas": [
            {
                "replica_id": r.replica_id,
                "voter": r.voter,
                "log_end_offset": r.log_end_offset,
                "last_fetch_at": r.last_fetch_at,
                "last_caught_up_at": r.last_caught_up_at,
                "directory_id": r.directory_id,
            }
            for r in view.replicas
        ],
        # JSON keys are strings: broker id -> fenced
        "fenced": None if view.fenced is None else {str(k): v for k, v in sorted(view.fenced.items())},
        "registrations_error": view.registrations_error,
        # every node the cluster's answers named (discovery's input), and why describeCluster did not answer
        "members": [
            {"node_id": m.node_id, "role": m.role.value, "host": m.host, "current": m.current} for m in view.members
        ],
        "members_error": view.members_error,
        "no_quorum": view.no_quorum,
        "controller_id": view.controller_id,
    }


def _quorum_from_dict(document: Mapping[str, Any]) -> QuorumView:
    return QuorumView(
        read_at=document["read_at"],
        error=document["error"],
        leader_id=document["leader_id"],
        leader_epoch=document["leader_epoch"],
        high_watermark=document["high_watermark"],
        replicas=tuple(QuorumReplica(**replica) for replica in document["replicas"]),
        fenced=None if document.get("fenced") is None else {int(k): bool(v) for k, v in document["fenced"].items()},
        registrations_error=document.get("registrations_error"),
        members=tuple(
            Member(int(m["node_id"]), Role(m["role"]), m.get("host"), bool(m.get("current", True)))
            for m in document.get("members") or ()
        ),
        members_error=document.get("members_error"),
        no_quorum=bool(document.get("no_quorum", False)),
        controller_id=document.get("controller_id"),
    )


def _node_to_dict(node: NodeSnapshot) -> dict[str, Any]:
    return {
        "node": node.node,
        "address": node.address,
        "role": node.role.value,
        "mode": node.mode.value if node.mode else None,
        "node_id": node.node_id,
        "version": node.version,
        "up": node.up,
        "error": node.error,
        "failure": node.failure.value if node.failure else None,
        "scrape_duration_seconds": node.scrape_duration_seconds,
        "errors_total": node.errors_total,
        "scraped_at": node.scraped_at,
        "control_plane_listener": control_plane_listener_enabled(node),
        "samples": [
            {
                "series": sample.series,
                "labels": dict(sample.labels),
                "value": _finite(sample.value),
                **({"parts": {k: _finite(v) for k, v in sample.parts}} if sample.parts else {}),
                **({"read_at": sample.read_at} if sample.read_at is not None else {}),
            }
            for sample in node.samples
        ],
    }


def snapshot_from_dict(document: dict[str, Any]) -> FleetSnapshot:
    """Rebuild a snapshot from /api/v1/snapshot JSON (NaN comes back for values JSON could not carry)."""
    if document.get("schema") != SCHEMA_VERSION:
        raise ValueError(f"unsupported snapshot schema {document.get('schema')!r}, expected {SCHEMA_VERSION}")

    def number(value: float | None) -> float:
        return math.nan if value is None else float(value)

    clusters = []
    for cluster in document["clusters"]:
        nodes = []
        for node in cluster["nodes"]:
            samples = tuple(
                Sample(
                    s["series"],
                    tuple(sorted(s["labels"].items())),
                    number(s["value"]),
                    tuple((k, number(v)) for k, v in s.get("parts", {}).items()),
                    s.get("read_at"),
                )
                for s in node["samples"]
            )
            nodes.append(
                NodeSnapshot(
                    cluster=cluster["name"],
                    node=node["node"],
                    address=node["address"],
                    role=Role(node["role"]),
                    mode=Mode(node["mode"]) if node["mode"] else None,
                    node_id=node["node_id"],
                    version=node["version"],
                    up=node["up"],
                    scrape_duration_seconds=node["scrape_duration_seconds"],
                    error=node["error"],
                    errors_total=node["errors_total"],
                    scraped_at=node["scraped_at"],
                    samples=samples,
                    failure=Failure(node["failure"]) if node.get("failure") else None,
                )
            )
        quorum = _quorum_from_dict(cluster["quorum"]) if "quorum" in cluster else None
        clusters.append(ClusterSnapshot(cluster["name"], tuple(nodes), quorum, bool(cluster.get("admin_only", False))))
    return FleetSnapshot(
        document["sequence"], document["taken_at"], document["round_duration_seconds"], tuple(clusters)
    )


def health_to_dict(health: FleetHealth, snapshot: FleetSnapshot) -> dict[str, Any]:
    """/api/v1/health: per cluster, the controller view and every broker's lifecycle with its evidence."""
    return {
        "schema": SCHEMA_VERSION,
        "sequence": snapshot.sequence,
        "taken_at": snapshot.taken_at,
        "clusters": [
            {
                "name": cluster.name,
                "mode": cluster.mode.value if cluster.mode else None,
                "error": cluster.error,
                "migration_phase": cluster.migration_phase,
                "quorum_leader_id": cluster.quorum_leader_id,
                "controller_views_disagree": cluster.controller_views_disagree,
                "fenced_unnamed": cluster.fenced_unnamed,
                "redundancy": None
                if cluster.redundancy is None
                else {
                    "voters": cluster.redundancy.voters,
                    "caught_up": cluster.redundancy.caught_up,
                    "spare": cluster.redundancy.spare,
                    "source": cluster.redundancy.source,
                },
                "voter_set": None
                if cluster.voter_set is None
                else {
                    "source": cluster.voter_set.source,
                    "members": [
                        {
                            "node": m.node,
                            "node_id": m.node_id,
                            "role": m.role.value,
                            "directory_id": m.directory_id,
                            "voter": m.voter,
                            "observer_seconds": m.observer_seconds,
                            "caught_up": m.caught_up,
                        }
                        for m in cluster.voter_set.members
                    ],
                },
                "elections": [
                    {
                        "node": e.node,
                        "role": e.role.value,
                        "state": e.state,
                        "out_of_step_seconds": e.out_of_step_seconds,
                    }
                    for e in cluster.elections
                ],
                "active_controllers": cluster.active_controllers,
                "controller": {
                    "claimants": list(cluster.controller.claimants),
                    "node": cluster.controller.node,
                    "node_id": cluster.controller.node_id,
                    "epoch": cluster.controller.epoch,
                    "failovers_total": cluster.controller.failovers_total,
                    "last_failover_at": cluster.controller.last_failover_at,
                    "reachable_controllers": cluster.controller.reachable_controllers,
                    "known": cluster.controller.known,
                },
                "brokers": [
                    {
                        "node": b.node,
                        "node_id": b.node_id,
                        "role": b.role.value,
                        "up": b.up,
                        "state": b.state.value,
                        "evidence": b.evidence,
                        "metadata_lag_records": b.metadata_lag_records,
                        "metadata_lag_seconds": b.metadata_lag_seconds,
                        "stale": b.stale,
                        "frozen": b.frozen,
                        "control_plane_listener": b.control_plane_listener,
                        "control_plane_queue_ratio": b.control_plane_queue_ratio,
                        "control_plane_saturated": b.control_plane_saturated,
                        "decided_by": b.decided_by,
                        "views_disagree": b.views_disagree,
                        "metadata_lag_source": b.metadata_lag_source,
                        "fenced_unplanned": b.fenced_unplanned,
                        "cause": b.cause.value if b.cause is not None else None,
                    }
                    for b in cluster.brokers
                ],
                "restart": [_restart_to_dict(r) for r in cluster.restart],
                "unknown": [{"reading": u.reading, "lacks": u.lacks} for u in cluster.unknown],
            }
            for cluster in health.clusters
        ],
    }


def _restart_to_dict(answer: RestartSafety) -> dict[str, Any]:
    return {
        "node": answer.node,
        "role": answer.role.value,
        "safe": answer.safe,
        "blocker": answer.blocker,
        "reason": answer.reason,
    }


def restart_answers(health: FleetHealth, cluster: str | None = None, node: str | None = None) -> list[dict[str, Any]]:
    """/api/v1/restart: every node's answer, or those of one cluster or one node."""
    return [
        {"cluster": c.name, **_restart_to_dict(r)}
        for c in health.clusters
        if cluster is None or c.name == cluster
        for r in c.restart
        if node is None or r.node == node
    ]


def _redundancy(document: Any) -> Redundancy | None:
    if not isinstance(document, dict):
        return None
    return Redundancy(int(document["voters"]), int(document["caught_up"]), str(document["source"]))


def _voter_set(document: Any) -> VoterSet | None:
    if not isinstance(document, dict):
        return None
    members = tuple(
        QuorumMember(
            str(m["node"]),
            m.get("node_id"),
            Role(m["role"]),
            m.get("directory_id"),
            bool(m["voter"]),
            float(m.get("observer_seconds", 0.0)),
            m.get("caught_up"),
        )
        for m in document.get("members", ())
    )
    return VoterSet(members, str(document["source"]))


def health_from_dict(document: Mapping[str, Any]) -> FleetHealth:
    """Rebuild FleetHealth from `/api/v1/health` JSON (the inverse of `health_to_dict`)."""
    clusters = []
    for cluster in document["clusters"]:
        controller = cluster["controller"]
        clusters.append(
            ClusterHealth(
                name=cluster["name"],
                mode=Mode(cluster["mode"]) if cluster["mode"] else None,
                controller=ControllerView(
                    claimants=tuple(controller["claimants"]),
                    node=controller["node"],
                    node_id=controller["node_id"],
                    epoch=controller["epoch"],
                    failovers_total=controller["failovers_total"],
                    last_failover_at=controller["last_failover_at"],
                    reachable_controllers=controller["reachable_controllers"],
                    known=bool(controller.get("known", True)),
                ),
                brokers=tuple(
                    BrokerHealth(
                        cluster=cluster["name"],
                        node=b["node"],
                        role=Role(b["role"]),
                        node_id=b["node_id"],
                        up=b["up"],
                        state=Lifecycle(b["state"]),
                        evidence=b["evidence"],
                        metadata_lag_records=b["metadata_lag_records"],
                        metadata_lag_seconds=b["metadata_lag_seconds"],
                        stale=b["stale"],
                        frozen=b["frozen"],
                        control_plane_listener=b["control_plane_listener"],
                        control_plane_queue_ratio=b["control_plane_queue_ratio"],
                        control_plane_saturated=b["control_plane_saturated"],
                        decided_by=b.get("decided_by", "jmx"),
                        views_disagree=b.get("views_disagree", False),
                        metadata_lag_source=b.get("metadata_lag_source"),
                        fenced_unplanned=b.get("fenced_unplanned", False),
                        cause=Cause(b["cause"]) if b.get("cause") else None,
                    )
                    for b in cluster["brokers"]
                ),
                evaluated_at=document["taken_at"],
                error=cluster.get("error"),
                migration_phase=cluster.get("migration_phase"),
                quorum_leader_id=cluster.get("quorum_leader_id"),
                controller_views_disagree=cluster.get("controller_views_disagree", False),
                fenced_unnamed=cluster.get("fenced_unnamed"),
                redundancy=_redundancy(cluster.get("redundancy")),
                elections=tuple(
                    ElectionState(str(e["node"]), Role(e["role"]), str(e["state"]), float(e["out_of_step_seconds"]))
                    for e in cluster.get("elections") or ()
                ),
                voter_set=_voter_set(cluster.get("voter_set")),
                restart=tuple(
                    RestartSafety(str(r["node"]), Role(r["role"]), bool(r["safe"]), r.get("blocker"), str(r["reason"]))
                    for r in cluster.get("restart") or ()
                ),
                unknown=tuple(UnknownReading(str(u["reading"]), str(u["lacks"])) for u in cluster.get("unknown") or ()),
            )
        )
    return FleetHealth(tuple(clusters))
