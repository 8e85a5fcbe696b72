"""Which MBeans a simulated node serves, derived from the metric catalogue (never typed a second time).

A catalogue row applies to a node when its mode, role, release range and KIP-291 listener requirement
match. `*` key values are expanded the way Kafka registers them: `id=<node id>`, one MBean per broker
for `broker-id=` / `broker=`, one per control-plane RPC the node handles for `request=`, with the API
version that RPC is currently sent at for `version=`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ctlplane.demo.shapes import ClusterSpec, NodeSpec
from ctlplane.exporter.catalog import CATALOG, Kind, MetricSpec, Mode, Role
from ctlplane.exporter.readings import parse_object_name

# Yammer exposes these on every Meter / Histogram; the scraper reads a subset, the rest make the MBean
# look like Kafka's to any other JMX tool.
METER_ATTRIBUTES = ("Count", "MeanRate", "OneMinuteRate", "FiveMinuteRate", "FifteenMinuteRate")
HISTOGRAM_ATTRIBUTES = (
    "Count",
    "Min",
    "Max",
    "Mean",
    "StdDev",
    "50thPercentile",
    "75thPercentile",
    "95thPercentile",
    "98thPercentile",
    "99thPercentile",
    "999thPercentile",
)
KIND_ATTRIBUTES: dict[Kind, tuple[str, ...]] = {Kind.METER: METER_ATTRIBUTES, Kind.HISTOGRAM: HISTOGRAM_ATTRIBUTES}

# Control-plane RPCs a node receives, by mode and role, with the request version current senders use.
RPC_VERSIONS = {
    "LeaderAndIsr": 7,
    "UpdateMetadata": 8,
    "StopReplica": 4,
    "ControlledShutdown": 3,
    "AlterPartition": 3,
    "BrokerHeartbeat": 1,
    "BrokerRegistration": 4,
}
# The finalized feature levels a simulated KRaft node's image has (MetadataLoader FinalizedLevel,featureName=X, 4.2+),
# as a Kafka 4.3.1 cluster formatted at its latest release reads them (seen on 4.3.1: metadataVersion 30)
SIMULATED_FEATURE_LEVELS = {"metadataVersion": 30, "groupVersion": 1, "transactionVersion": 2}
# G1's collectors (Kafka's default, kafka-run-class.sh) and the share of wall time each spends collecting
SIMULATED_COLLECTORS = {"G1 Young Generation": 0.002, "G1 Old Generation": 0.0}
ZK_BROKER_RPCS = ("LeaderAndIsr", "UpdateMetadata", "StopReplica", "ControlledShutdown", "AlterPartition")
KRAFT_CONTROLLER_RPCS = ("AlterPartition", "BrokerHeartbeat", "BrokerRegistration")


@dataclass(frozen=True)
class ServedMBean:
    object_name: str
    kind: Kind
    attributes: tuple[str, ...]
    specs: tuple[MetricSpec, ...]  # the catalogue rows this MBean serves
    keys: tuple[tuple[str, str], ...]  # ObjectName key properties, in order


def node_rpcs(node: NodeSpec) -> tuple[str, ...]:
    if node.mode is Mode.ZOOKEEPER:
        return ZK_BROKER_RPCS
    if node.role in (Role.CONTROLLER, Role.COMBINED):
        return KRAFT_CONTROLLER_RPCS
    return ()  # KRaft brokers receive none of the catalogue's control RPCs


def applies(spec: MetricSpec, node: NodeSpec) -> bool:
    if node.mode not in spec.modes or node.role not in spec.roles:
        return False
    if not spec.registered_in(node.mode, node.version):
        return False
    if spec.needs_control_plane_listener and not node.control_plane_listener:
        return False
    domain, _ = parse_object_name(spec.mbean)
    # The catalogue's CONTROLLER|BROKER rows mean "every ZooKeeper-mode broker"; in KRaft only nodes
    # with the controller role register kafka.controller MBeans.
    return not (node.mode is not Mode.ZOOKEEPER and domain == "kafka.controller" and node.role is Role.BROKER)


def _expansions(key: str, node: NodeSpec, cluster: ClusterSpec, spec: MetricSpec) -> list[str]:
    if key == "id":
        return [str(node.node_id)]
    if key in ("broker-id", "broker"):
        return [str(b.node_id) for b in cluster.brokers]
    if key == "request":
        allowed = spec.only.get("request")
        return [rpc for rpc in node_rpcs(node) if allowed is None or rpc in allowed]
    if key == "featureName":
        return list(SIMULATED_FEATURE_LEVELS)
    if key == "name" and spec.mbean.startswith("java.lang:type=GarbageCollector"):
        return list(SIMULATED_COLLECTORS)
    raise ValueError(f"no rule to expand {key}=* in {spec.mbean}")


def _expand(spec: MetricSpec, node: NodeSpec, cluster: ClusterSpec) -> list[tuple[tuple[str, str], ...]]:
    _, keys = parse_object_name(spec.mbean)
    names: list[tuple[tuple[str, str], ...]] = [()]
    for key, value in keys.items():
        if value != "*":
            names = [(*name, (key, value)) for name in names]
        elif key == "version":
            # one MBean per API version actually received; senders use one version at a time
            names = [(*name, (key, str(RPC_VERSIONS[dict(name)["request"]]))) for name in names]
        else:
            names = [(*name, (key, choice)) for name in names for choice in _expansions(key, node, cluster, spec)]
    return names


def served_mbeans(node: NodeSpec, cluster: ClusterSpec) -> tuple[ServedMBean, ...]:
    """Every MBean this node serves and its attributes, in catalogue order."""
    found: dict[str, tuple[Kind, list[str], list[MetricSpec], tuple[tuple[str, str], ...]]] = {}
    for spec in CATALOG:
        if not applies(spec, node):
            continue
        domain, _ = parse_object_name(spec.mbean)
        for keys in _expand(spec, node, cluster):
            name = f"{domain}:" + ",".join(f"{k}={v}" for k, v in keys)
            _, attributes, specs, _ = found.setdefault(name, (spec.kind, [], [], keys))
            wanted = [*spec.attributes, *KIND_ATTRIBUTES.get(spec.kind, ())]
            attributes.extend(a for a in wanted if a not in attributes)
            specs.append(spec)
    return tuple(
        ServedMBean(name, kind, tuple(attributes), tuple(specs), keys)
        for name, (kind, attributes, specs, keys) in found.items()
    )
