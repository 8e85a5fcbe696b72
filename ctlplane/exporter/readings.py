"""Pure mapping between the catalogue and JMX: which MBeans to query, and raw readings -> samples.

The JMX clients know nothing of series; this module knows nothing of sockets.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from ctlplane.exporter.catalog import (
    CATALOG,
    HISTOGRAM_QUANTILES,
    SLOW_MBEANS,
    SPECS_BY_SERIES,
    MetricSpec,
    Mode,
    Role,
    SeriesType,
)
from ctlplane.exporter.catalog import KRAFT as KRAFT_MODES
from ctlplane.exporter.model import LabelPairs, MBeanQuery, RawReading, Sample


def plan_queries() -> tuple[MBeanQuery, ...]:
    """One query per distinct MBean pattern of the catalogue, with the union of its attributes."""
    attributes: dict[tuple[str, tuple[tuple[str, frozenset[str]], ...]], list[str]] = {}
    following = {spec.mbean for spec in CATALOG if spec.follows_controller}
    once = {spec.mbean for spec in CATALOG if spec.registered_once}
    for spec in CATALOG:
        key = (spec.mbean, tuple(sorted(spec.only.items())))
        wanted = attributes.setdefault(key, [])
        wanted.extend(attr for attr in spec.attributes if attr not in wanted)
    return tuple(
        MBeanQuery(
            pattern,
            tuple(attrs),
            only,
            follows_controller=pattern in following,
            slow=pattern in SLOW_MBEANS,
            registered_once=pattern in once,
        )
        for (pattern, only), attrs in attributes.items()
    )


def queries_for(
    queries: tuple[MBeanQuery, ...], mode: Mode | None, role: Role, active_controller: bool = True
) -> tuple[MBeanQuery, ...]:
    """`queries` for a node of `mode` and `role`, those whose MBeans no catalogue row expects there marked
    `unexpected` (a ZooKeeper-mode broker's KRaft controller gauges, say): of the 66, a ZooKeeper-mode broker
    can match 41, a KRaft broker 26, a KRaft controller 45. On a node that was not the active controller at
    its last read, those that follow the controller are marked `dormant`. A node not yet identified, or
    migrating, gets them all unmarked. The same tuple each time for the same arguments (a client caches its
    plan per tuple)."""
    if mode not in (Mode.ZOOKEEPER, Mode.KRAFT) or role not in (Role.BROKER, Role.CONTROLLER, Role.COMBINED):
        return queries
    return _queries_for(queries, mode, role, active_controller)


@functools.cache
def _queries_for(
    queries: tuple[MBeanQuery, ...], mode: Mode, role: Role, active_controller: bool
) -> tuple[MBeanQuery, ...]:
    expected = {spec.mbean for spec in CATALOG if _registered_on(spec, mode, role)}

    def marked(query: MBeanQuery) -> MBeanQuery:
        if query.pattern not in expected:
            return replace(query, unexpected=True)
        if query.follows_controller and not active_controller:
            return replace(query, dormant=True)
        return query

    return tuple(marked(query) for query in queries)


def _registered_on(spec: MetricSpec, mode: Mode, role: Role) -> bool:
    """Whether Kafka registers the row's MBeans on a node of `mode` and `role`, by the row's own modes and
    roles. Except: a row whose roles name BROKER for ZooKeeper mode's sake (every ZooKeeper-mode broker runs
    a KafkaController) registers nothing on a KRaft broker, where the `kafka.controller` domain is the
    controller role's alone (ControllerMetadataMetrics, made by SharedServer only when process.roles holds
    controller; QuorumControllerMetrics, by ControllerServer)."""
    if mode is Mode.KRAFT and role is Role.BROKER and spec.mbean.startswith("kafka.controller:"):
        return False
    return mode in spec.modes and role in spec.roles


_ACTIVE_CONTROLLER = SPECS_BY_SERIES["kafka_controller_active"]


def claims_active_controller(readings: Iterable[RawReading]) -> bool:
    """The node reads ActiveControllerCount 1: it is the active controller (or believes so)."""
    for reading in readings:
        if reading.pattern == _ACTIVE_CONTROLLER.mbean:
            value = reading.values.get(_ACTIVE_CONTROLLER.attribute)
            return isinstance(value, float | int) and value >= 1
    return False


def parse_object_name(name: str) -> tuple[str, dict[str, str]]:
    """Split `domain:k=v,k2=v2` into the domain and its key properties (Kafka never quotes values)."""
    domain, _, props = name.partition(":")
    keys = {}
    for prop in props.split(","):
        key, sep, value = prop.partition("=")
        if sep:
            keys[key] = value
    return domain, keys


def _number(value: float | str | None) -> float | None:
    """A finite-or-infinite number, or None: a NaN gauge (raft commit latency on a follower, the idle ratio
    of a listener that does not exist) means "no data" and is never served as a sample."""
    if value is None or isinstance(value, str):
        return None
    number = float(value)
    return None if math.isnan(number) else number


# broker.id / node.id are Java ints: a label such as "²" (a Unicode digit) or 5,000 digits is not one
_NODE_ID = re.compile(r"-?[0-9]{1,10}")


LISTENER_EVIDENCE = "kafka_control_plane_request_queue_size"
LISTENER_SERIES = frozenset(spec.series for spec in CATALOG if spec.needs_control_plane_listener)


@dataclass(frozen=True, slots=True)
class _SpecPlan:
    """What samples_from_readings needs of one catalogue row, worked out once at import."""

    spec: MetricSpec
    only: tuple[tuple[str, frozenset[str]], ...]
    labels: tuple[tuple[str, str], ...]  # (series label, ObjectName key), sorted by series label


def _plan(spec: MetricSpec) -> _SpecPlan:
    labels = tuple(sorted((label, key) for key, label in spec.labels.items()))
    return _SpecPlan(spec, tuple(spec.only.items()), labels)


# MBean pattern -> its catalogue rows in catalogue order: each reading is matched against its own rows only,
# not against all of CATALOG (the summing order per series, hence every float, stays as it was)
_BY_PATTERN: dict[str, tuple[_SpecPlan, ...]] = {}
for _spec in CATALOG:
    _BY_PATTERN[_spec.mbean] = (*_BY_PATTERN.get(_spec.mbean, ()), _plan(_spec))


def samples_from_readings(readings: Iterable[RawReading]) -> tuple[Sample, ...]:
    """Map what one node returned to catalogue samples.

    MBeans that collapse onto the same labels (RequestsPerSec has one MBean per API version) are summed.
    """
    by_pattern: dict[str, list[RawReading]] = {}
    for reading in readings:
        by_pattern.setdefault(reading.pattern, []).append(reading)

    totals: dict[tuple[str, LabelPairs], float] = {}
    summaries: dict[tuple[str, LabelPairs], dict[str, float]] = {}
    for pattern, matched in by_pattern.items():
        for plan in _BY_PATTERN.get(pattern, ()):
            spec = plan.spec
            for reading in matched:
                keys = reading.keys
                if plan.only and not all(keys.get(key) in values for key, values in plan.only):
                    continue
                # already in label order: spec labels are unique, so sorting (label, value) pairs is by label
                labels = tuple([(label, keys.get(key, "")) for label, key in plan.labels])
                if spec.type is SeriesType.SUMMARY:
                    count = _number(reading.values.get("Count"))
                    mean = _number(reading.values.get("Mean"))
                    if count is None or mean is None:
                        continue
                    parts = summaries.setdefault((spec.series, labels), {"count": 0.0, "sum": 0.0})
                    parts["count"] += count
                    parts["sum"] += count * mean * spec.scale
                    for quantile, attr in HISTOGRAM_QUANTILES:
                        value = _number(reading.values.get(attr))
                        if value is not None:
                            # several MBeans per label set do not happen for histograms; keep the worst
                            parts[quantile] = max(parts.get(quantile, -math.inf), value * spec.scale)
                    continue
                raw = reading.values.get(spec.attribute)
                if raw is None:
                    continue
                if spec.type in (SeriesType.STATE, SeriesType.INFO):
                    totals[(spec.series, tuple(sorted((*labels, (spec.value_label, str(raw))))))] = 1.0
                else:
                    number = _number(raw)
                    if number is not None:
                        key = (spec.series, labels)
                        totals[key] = totals.get(key, 0.0) + number * spec.scale
    if LISTENER_EVIDENCE not in {series for series, _ in totals}:
        # Without `control.plane.listener.name` Kafka still registers the SocketServer ControlPlane* gauges
        # (NaN idle, 0 expired) but no control-plane queue (KIP-291): those values describe nothing.
        totals = {key: value for key, value in totals.items() if key[0] not in LISTENER_SERIES}
    samples = [Sample(series, labels, _bounded(series, value)) for (series, labels), value in totals.items()]
    for (series, labels), parts in summaries.items():
        samples.append(Sample(series, labels, parts["count"], tuple(parts.items())))
    return tuple(sorted(samples, key=lambda s: (s.series, s.labels)))


_BOUNDS = {spec.series: spec.bounds for spec in CATALOG if spec.bounds is not None}


def _bounded(series: str, value: float) -> float:
    """`value` within its series' bounds (MetricSpec.bounds); NaN, Kafka's "no sample", stays NaN."""
    bounds = _BOUNDS.get(series)
    if bounds is None or math.isnan(value):
        return value
    return min(max(value, bounds[0]), bounds[1])


_KRAFT_ONLY = frozenset(spec.series for spec in CATALOG if spec.modes <= KRAFT_MODES)


@dataclass(frozen=True, slots=True)
class Identity:
    mode: Mode | None
    role: Role
    node_id: int | None
    version: str | None


def identify(samples: Sequence[Sample]) -> Identity:
    """Mode, role, node id and release from what the node exposes (never from configuration).

    KRaft nodes have raft-metrics; broker-role nodes have BrokerState; KRaft controllers register
    kafka.controller:KafkaController. In ZooKeeper mode every broker registers the controller MBeans,
    so a ZooKeeper-mode node is a broker whichever of them is the controller.
    """
    series = {sample.series for sample in samples}
    has_broker = "kafka_broker_state" in series
    has_controller = "kafka_controller_active" in series
    # raft-metrics on every KRaft node; where a naming drops them (a metrics endpoint's rules, docs/sources.md),
    # any series Kafka registers in KRaft mode only (the metadata loader's version, a controller's committed
    # offset)
    kraft = any(name.startswith("kafka_raft_") for name in series) or not series.isdisjoint(_KRAFT_ONLY)
    node_id: int | None = None
    version: str | None = None
    for sample in samples:
        if sample.series == "kafka_node_info":
            labels = dict(sample.labels)
            version = labels.get("version")
            if _NODE_ID.fullmatch(labels.get("node_id", "")):
                node_id = int(labels["node_id"])
    migration = next((s.value for s in samples if s.series == "kafka_controller_zk_migration_state"), None)
    zookeeper_client = any(name.startswith("kafka_zookeeper_") for name in series)
    if kraft and (migration == 4.0 or (has_broker and zookeeper_client)):
        # A ZooKeeper broker with zookeeper.metadata.migration.enable (KIP-866) also runs a raft observer
        # (KafkaServer starts a RaftManager): still a ZooKeeper-mode broker, never a KRaft node. Its
        # KafkaController says ZkMigrationState 4 (ZK) on every 3.6+ ZooKeeper broker; its ZooKeeper session
        # (SessionExpireListener) says so too, and only migrating KRaft controllers share that, without
        # BrokerState.
        return Identity(Mode.ZOOKEEPER, Role.BROKER, node_id, version)
    if kraft:
        mode = Mode.KRAFT
        if migration in (1.0, 2.0):  # MIGRATION, PRE_MIGRATION (ZkMigrationState.java)
            mode = Mode.MIGRATION
        if has_broker and has_controller:
            role = Role.COMBINED
        elif has_broker:
            role = Role.BROKER
        elif has_controller:
            role = Role.CONTROLLER
        else:
            role = Role.UNKNOWN
        return Identity(mode, role, node_id, version)
    if has_broker or has_controller:
        # jmxquery cannot read Byte-typed gauges such as BrokerState, so the controller MBeans that every
        # ZooKeeper-mode broker registers count as evidence too.
        return Identity(Mode.ZOOKEEPER, Role.BROKER, node_id, version)
    return Identity(None, Role.UNKNOWN, node_id, version)
