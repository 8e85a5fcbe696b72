"""The JSON documents of /api/v1/snapshot, /api/v1/health and /api/v1/restart, written from the values and read
back into them (the dashboard reads a remote exporter so), both derived from http/schema.py's models.

A document's field is the value's attribute of the same name, carried by the field's type: an enum by its
value, a tuple as a list, a nested value as its own document (VALUES pairs each document with its value). The
few fields a value carries in another shape, or not at all, are written and read by the functions named in
WRITTEN and READ. Samples, the bulk of a snapshot (~100 per node), are written and read by hand.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import types
import typing
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from pydantic import BaseModel

from ctlplane.exporter.families import control_plane_listener_enabled
from ctlplane.exporter.health.model import (
    BrokerHealth,
    ClusterHealth,
    ControllerView,
    ElectionState,
    FleetHealth,
    QuorumMember,
    Redundancy,
    RestartSafety,
    UnknownReading,
    VoterSet,
)
from ctlplane.exporter.http.schema import (
    BrokerDocument,
    CanaryBrokerDocument,
    CanaryDocument,
    ClusterDocument,
    ClusterHealthDocument,
    ControllerDocument,
    ElectionDocument,
    MemberDocument,
    NodeDocument,
    QuorumDocument,
    RedundancyDocument,
    ReplicaDocument,
    RestartDocument,
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

SCHEMA_VERSION = 1

# Each document and the value it carries.
VALUES: dict[type[BaseModel], type] = {
    NodeDocument: NodeSnapshot,
    ReplicaDocument: QuorumReplica,
    MemberDocument: Member,
    QuorumDocument: QuorumView,
    ClusterDocument: ClusterSnapshot,
    CanaryDocument: CanaryView,
    CanaryBrokerDocument: CanaryBroker,
    BrokerDocument: BrokerHealth,
    ControllerDocument: ControllerView,
    ElectionDocument: ElectionState,
    RedundancyDocument: Redundancy,
    VoterDocument: QuorumMember,
    VoterSetDocument: VoterSet,
    RestartDocument: RestartSafety,
    UnknownReadingDocument: UnknownReading,
    ClusterHealthDocument: ClusterHealth,
}


def _finite(value: float) -> float | None:
    # JSON has no NaN; Kafka reports NaN for idle ratios of listeners it does not have.
    return value if math.isfinite(value) else None


def _number(value: float | None) -> float:
    return math.nan if value is None else float(value)


def _sample_to_dict(sample: Sample) -> dict[str, Any]:
    document: dict[str, Any] = {"series": sample.series, "labels": dict(sample.labels), "value": _finite(sample.value)}
    if sample.parts:
        document["parts"] = {k: _finite(v) for k, v in sample.parts}
    if sample.read_at is not None:
        document["read_at"] = sample.read_at
    return document


def _sample_from_dict(document: Mapping[str, Any]) -> Sample:
    return Sample(
        document["series"],
        tuple(sorted(document["labels"].items())),
        _number(document["value"]),
        tuple((k, _number(v)) for k, v in document.get("parts", {}).items()),
        document.get("read_at"),
    )


# Fields written from the whole value, not from its attribute of the field's name: (document, field) -> writer
WRITTEN: dict[tuple[type[BaseModel], str], Callable[[Any], Any]] = {
    (NodeDocument, "control_plane_listener"): control_plane_listener_enabled,
    (NodeDocument, "samples"): lambda node: [_sample_to_dict(sample) for sample in node.samples],
    # JSON keys are strings: broker id -> fenced
    (QuorumDocument, "fenced"): lambda view: (
        None if view.fenced is None else {str(k): v for k, v in sorted(view.fenced.items())}
    ),
}
# Fields read back by hand: (document, field) -> reader of the field's JSON. Fields the value computes (its
# properties, a node's control-plane listener from its samples) are not read back.
READ: dict[tuple[type[BaseModel], str], Callable[[Any], Any]] = {
    (NodeDocument, "samples"): lambda samples: tuple(_sample_from_dict(s) for s in samples),
    (QuorumDocument, "fenced"): lambda fenced: None if fenced is None else {int(k): bool(v) for k, v in fenced.items()},
}
# Fields left out, not written as null, where the value has none: (document, field)
ABSENT_WHEN_NONE = frozenset({(ClusterDocument, "quorum"), (ClusterDocument, "canary")})


def _field_kind(annotation: Any) -> tuple[str, Any]:
    """How a field's type carries a value: ("document", model), ("documents", model), ("enum", class),
    ("list", None) or ("plain", None); an optional type as its other part."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        (annotation,) = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
    origin = typing.get_origin(annotation)
    if origin is list:
        (item,) = typing.get_args(annotation)
        if isinstance(item, type) and issubclass(item, BaseModel):
            return "documents", item
        return "list", None
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "document", annotation
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return "enum", annotation
    return "plain", None


def _writer(kind: str, inner: Any) -> Callable[[Any], Any]:
    """What writes an attribute of a field's kind as JSON."""
    if kind == "document":
        return lambda v: None if v is None else to_document(v, inner)
    if kind == "documents":
        return lambda v: [to_document(x, inner) for x in v]
    if kind == "enum":
        return lambda v: None if v is None else v.value
    if kind == "list":
        return list
    # a mapping as a JSON object: the canary's errors_total is a read-only MappingProxyType (MetadataCanary.view),
    # which json.dumps refuses, so /api/v1/snapshot answered 500 for every cluster with a canary
    return lambda v: dict(v) if isinstance(v, Mapping) else v


def _reader(kind: str, inner: Any) -> Callable[[Any], Any]:
    """What reads a field of a kind back from JSON: the inverse of _writer."""
    if kind == "document":
        return lambda v: None if v is None else from_document(v, inner)
    if kind == "documents":
        return lambda v: tuple(from_document(x, inner) for x in v)
    if kind == "enum":
        return lambda v: None if v is None else inner(v)
    if kind == "list":
        return tuple
    return lambda v: v


def _attribute(name: str, write: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda value: write(getattr(value, name))


@cache
def _writers(model: type[BaseModel]) -> tuple[tuple[str, Callable[[Any], Any], bool], ...]:
    """For each field of a document: its JSON key, what writes it from the value, and whether it is left out
    where None."""
    return tuple(
        (
            field.alias or name,
            WRITTEN.get((model, name)) or _attribute(name, _writer(*_field_kind(field.annotation))),
            (model, name) in ABSENT_WHEN_NONE,
        )
        for name, field in model.model_fields.items()
    )


def to_document(value: Any, model: type[BaseModel]) -> dict[str, Any]:
    """The JSON document `model` of a value."""
    document = {}
    for key, write, absent_when_none in _writers(model):
        written = write(value)
        if written is not None or not absent_when_none:
            document[key] = written
    return document


@cache
def _readers(model: type[BaseModel]) -> tuple[tuple[str, str, Callable[[Any], Any]], ...]:
    """For each field of a document the value stores: its JSON key, the value's field name, what reads it."""
    stored = {f.name for f in dataclasses.fields(VALUES[model])}
    return tuple(
        (field.alias or name, name, READ.get((model, name)) or _reader(*_field_kind(field.annotation)))
        for name, field in model.model_fields.items()
        if name in stored
    )


def from_document(document: Mapping[str, Any], model: type[BaseModel], **given: Any) -> Any:
    """The value a JSON document `model` carries; a field the document lacks (an older exporter's) takes the
    value's default; `given` are fields the document does not carry (the cluster a node is listed under)."""
    kwargs = dict(given)
    for key, name, read in _readers(model):
        if key in document and name not in given:
            kwargs[name] = read(document[key])
    return VALUES[model](**kwargs)


def _check_schema(document: Mapping[str, Any], what: str) -> None:
    if document.get("schema") != SCHEMA_VERSION:
        raise ValueError(f"unsupported {what} schema {document.get('schema')!r}, expected {SCHEMA_VERSION}")


def snapshot_to_dict(snapshot: FleetSnapshot) -> dict[str, Any]:
    """/api/v1/snapshot: every node's readings of the last round."""
    return {
        "schema": SCHEMA_VERSION,
        "sequence": snapshot.sequence,
        "taken_at": snapshot.taken_at,
        "round_duration_seconds": snapshot.round_duration_seconds,
        "woken_rounds_total": snapshot.woken_rounds_total,
        "clusters": [to_document(cluster, ClusterDocument) for cluster in snapshot.clusters],
    }


def snapshot_from_dict(document: Mapping[str, Any]) -> FleetSnapshot:
    """Rebuild a snapshot from /api/v1/snapshot JSON (NaN comes back for values JSON could not carry)."""
    _check_schema(document, "snapshot")
    clusters = []
    for cluster in document["clusters"]:
        nodes = tuple(from_document(node, NodeDocument, cluster=cluster["name"]) for node in cluster["nodes"])
        clusters.append(from_document(cluster, ClusterDocument, nodes=nodes))
    return FleetSnapshot(
        document["sequence"],
        document["taken_at"],
        document["round_duration_seconds"],
        tuple(clusters),
        woken_rounds_total=document.get("woken_rounds_total", 0),
    )


def health_to_dict(health: FleetHealth, snapshot: FleetSnapshot) -> dict[str, Any]:
    """/api/v1/health: per cluster, the controller view and every broker's lifecycle with its evidence."""
    return {
        "schema": SCHEMA_VERSION,
        "sequence": snapshot.sequence,
        "taken_at": snapshot.taken_at,
        "clusters": [to_document(cluster, ClusterHealthDocument) for cluster in health.clusters],
    }


def health_from_dict(document: Mapping[str, Any]) -> FleetHealth:
    """Rebuild FleetHealth from `/api/v1/health` JSON (the inverse of `health_to_dict`)."""
    clusters = []
    for cluster in document["clusters"]:
        brokers = tuple(from_document(b, BrokerDocument, cluster=cluster["name"]) for b in cluster["brokers"])
        clusters.append(
            from_document(cluster, ClusterHealthDocument, brokers=brokers, evaluated_at=document["taken_at"])
        )
    return FleetHealth(tuple(clusters))


def restart_answers(health: FleetHealth, cluster: str | None = None, node: str | None = None) -> list[dict[str, Any]]:
    """/api/v1/restart: every node's answer, or those of one cluster or one node."""
    return [
        {"cluster": c.name, **to_document(r, RestartDocument)}
        for c in health.clusters
        if cluster is None or c.name == cluster
        for r in c.restart
        if node is None or r.node == node
    ]
