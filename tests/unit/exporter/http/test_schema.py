"""/api/v1/snapshot and /api/v1/health have a schema (http/schema.py) that the documents jsonapi.py writes keep
to, that carries every field of the values, and that /openapi.json publishes."""

from __future__ import annotations

import json
from dataclasses import fields, replace
from types import MappingProxyType

import pytest
from fastapi.testclient import TestClient
from pydantic import BaseModel

from ctlplane.exporter.catalog import Role
from ctlplane.exporter.health import evaluate
from ctlplane.exporter.health.model import (
    BrokerHealth,
    ClusterHealth,
    ControllerView,
    ElectionState,
    HealthMemory,
    QuorumMember,
    Redundancy,
    RestartSafety,
    VoterSet,
)
from ctlplane.exporter.http.app import create_app
from ctlplane.exporter.http.jsonapi import health_from_dict, health_to_dict, snapshot_from_dict, snapshot_to_dict
from ctlplane.exporter.http.schema import (
    OMITTED,
    BrokerDocument,
    CanaryBrokerDocument,
    CanaryDocument,
    ClusterDocument,
    ClusterHealthDocument,
    ControllerDocument,
    ElectionDocument,
    HealthDocument,
    MemberDocument,
    NodeDocument,
    QuorumDocument,
    RedundancyDocument,
    ReplicaDocument,
    RestartAnswer,
    RestartDocument,
    SampleDocument,
    SnapshotDocument,
    UnknownReadingDocument,
    VoterDocument,
    VoterSetDocument,
)
from ctlplane.exporter.model import (
    CanaryBroker,
    CanaryView,
    ClusterSnapshot,
    FleetSnapshot,
    Member,
    NodeSnapshot,
    QuorumReplica,
    QuorumView,
    Sample,
)
from ctlplane.exporter.state import ExporterState
from ctlplane.exporter.thresholds import Thresholds
from tests.unit.exporter.test_families import sample_fleet

PAIRS: list[tuple[type, type[BaseModel]]] = [
    (Sample, SampleDocument),
    (NodeSnapshot, NodeDocument),
    (QuorumReplica, ReplicaDocument),
    (Member, MemberDocument),
    (QuorumView, QuorumDocument),
    (ClusterSnapshot, ClusterDocument),
    (CanaryView, CanaryDocument),
    (CanaryBroker, CanaryBrokerDocument),
    (FleetSnapshot, SnapshotDocument),
    (BrokerHealth, BrokerDocument),
    (ControllerView, ControllerDocument),
    (ElectionState, ElectionDocument),
    (Redundancy, RedundancyDocument),
    (QuorumMember, VoterDocument),
    (VoterSet, VoterSetDocument),
    (RestartSafety, RestartDocument),
    (ClusterHealth, ClusterHealthDocument),
]


@pytest.mark.parametrize(("value", "document"), PAIRS, ids=[value.__name__ for value, _ in PAIRS])
def test_every_field_of_a_value_is_in_its_document_or_left_out_with_a_reason(
    value: type, document: type[BaseModel]
) -> None:
    carried = {field.alias or name for name, field in document.model_fields.items()}
    missing = {f.name for f in fields(value)} - carried - {name for kind, name in OMITTED if kind == value.__name__}
    assert not missing, f"{value.__name__} fields no API document carries: {sorted(missing)}"


def _rich() -> tuple[FleetSnapshot, object]:
    """The unit fixture fleet, with a quorum's view naming every kind of member, read through the Admin API
    alone for one cluster, and its health."""
    snapshot = sample_fleet()
    quorum = QuorumView(
        read_at=999.0,
        leader_id=101,
        leader_epoch=3,
        high_watermark=40,
        replicas=(QuorumReplica(101, True, 40, 999.0, 999.0, "dir-101"), QuorumReplica(1, False, 39, 998.0, None)),
        fenced={1: False},
        members=(Member(101, Role.CONTROLLER, "c1", True), Member(7, Role.BROKER, None, False)),
        controller_id=1,
    )
    canary = CanaryView(
        read_at=999.5,
        topic="ctlplane-canary-998000",
        changed_at=998.0,
        brokers=(CanaryBroker(1, True, None, None, (0, 1, 1), 0.04), CanaryBroker(2, False, 990.0, "no answer")),
        changes_total=4,
        errors_total=MappingProxyType({"timeout": 1}),  # as MetadataCanary.view makes it
        error="timeout: creating ctlplane-canary-997000: TimeoutException",
    )
    first, second, *others = snapshot.clusters
    clusters = (replace(first, quorum=quorum, admin_only=True), replace(second, canary=canary), *others)
    snapshot = replace(snapshot, clusters=clusters)
    health, _ = evaluate(snapshot, HealthMemory(), Thresholds())
    return snapshot, health


def test_the_documents_written_keep_to_the_schema_and_read_back_whole() -> None:
    snapshot, health = _rich()
    document = snapshot_to_dict(snapshot)
    json.dumps(document)  # what /api/v1/snapshot answers (a MappingProxyType was a 500)
    SnapshotDocument.model_validate(document)  # extra="forbid": no field the schema does not name
    assert snapshot_from_dict(document) == snapshot
    written = health_to_dict(health, snapshot)  # type: ignore[arg-type]
    HealthDocument.model_validate(written)
    cluster = health.clusters[0]  # type: ignore[attr-defined]
    unknown = replace(cluster, controller=replace(cluster.controller, known=False),
                      elections=(ElectionState("c1", Role.CONTROLLER, "candidate", 12.0),))  # fmt: skip
    health = replace(health, clusters=(unknown, *health.clusters[1:]))  # type: ignore[type-var]
    again = health_from_dict(health_to_dict(health, snapshot))  # type: ignore[arg-type]
    assert again.clusters[0].controller.known is False
    assert again.clusters[0].elections == unknown.elections


def test_openapi_publishes_both_documents() -> None:
    state = ExporterState(sample_fleet(), Thresholds())
    app = create_app(state.current, interval_seconds=15, version="test", clock=lambda: 1005.0)
    spec = TestClient(app).get("/openapi.json").json()
    for path, name in (("/api/v1/snapshot", "SnapshotDocument"), ("/api/v1/health", "HealthDocument")):
        answer = spec["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
        assert answer == {"$ref": f"#/components/schemas/{name}"}
    assert "description" in spec["components"]["schemas"]["BrokerDocument"]["properties"]["evidence"]


def test_one_call_says_whether_a_node_may_restart_and_why_not() -> None:
    state = ExporterState(sample_fleet(), Thresholds())
    http = TestClient(create_app(state.current, interval_seconds=15, version="test", clock=lambda: 1005.0))
    everyone = http.get("/api/v1/restart").json()
    assert {(a["cluster"], a["node"]) for a in everyone} == {
        (c.name, r.node) for c in state.current().health.clusters for r in c.restart
    }
    (b3,) = http.get("/api/v1/restart", params={"cluster": "zk", "node": "b3"}).json()
    RestartAnswer.model_validate(b3)
    assert (b3["safe"], b3["blocker"]) == (False, "not_active") and b3["reason"]
    assert http.get("/api/v1/restart", params={"cluster": "zk", "node": "nope"}).status_code == 404
    spec = http.get("/openapi.json").json()
    assert "RestartAnswer" in spec["components"]["schemas"]


def test_every_field_of_every_document_says_what_it_is() -> None:
    # the manual's JSON API reference (docs/reference/api.md) and /api/docs are written from these words
    documents = {model for pair in PAIRS for model in pair[1:]} | {
        HealthDocument,
        RestartAnswer,
        UnknownReadingDocument,
    }
    bare = [
        f"{model.__name__}.{name}"
        for model in documents
        for name, info in model.model_fields.items()
        if not info.description
    ]
    assert not bare, f"document fields without a description: {sorted(bare)}"
