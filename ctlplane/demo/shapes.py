"""Cluster shapes the simulator can serve: which nodes exist, in which mode and role, at which release."""

from __future__ import annotations

from dataclasses import dataclass

from ctlplane.exporter.catalog import Mode, Role

ZK_VERSION = "3.9.2"  # the last ZooKeeper-mode release line, as harness.localkafka runs it
KRAFT_VERSION = "4.3.1"


@dataclass(frozen=True)
class NodeSpec:
    cluster: str
    name: str  # the `node` label ctlplane will use
    node_id: int
    mode: Mode
    role: Role  # BROKER or CONTROLLER (ZooKeeper-mode nodes are all brokers)
    version: str
    control_plane_listener: bool = False  # KIP-291, ZooKeeper mode only


@dataclass(frozen=True)
class ClusterSpec:
    name: str
    mode: Mode
    version: str
    nodes: tuple[NodeSpec, ...]

    @property
    def controllers(self) -> tuple[NodeSpec, ...]:
        """Nodes that can be the active controller: every broker in ZooKeeper mode, the quorum in KRaft."""
        if self.mode is Mode.ZOOKEEPER:
            return self.nodes
        return tuple(n for n in self.nodes if n.role in (Role.CONTROLLER, Role.COMBINED))

    @property
    def brokers(self) -> tuple[NodeSpec, ...]:
        return tuple(n for n in self.nodes if n.role in (Role.BROKER, Role.COMBINED))

    def node(self, name: str) -> NodeSpec | None:
        return next((n for n in self.nodes if n.name == name), None)


def zk_cluster(name: str = "zk-3.9", brokers: int = 3, *, control_plane_listener: bool = True) -> ClusterSpec:
    """A ZooKeeper-mode 3.9 cluster; broker ids start at 1 like the local real clusters."""
    nodes = tuple(
        NodeSpec(name, f"broker-{i}", i, Mode.ZOOKEEPER, Role.BROKER, ZK_VERSION, control_plane_listener)
        for i in range(1, brokers + 1)
    )
    return ClusterSpec(name, Mode.ZOOKEEPER, ZK_VERSION, nodes)


def kraft_cluster(name: str = "kraft-4.3", controllers: int = 3, brokers: int = 3) -> ClusterSpec:
    """A KRaft 4.x cluster of controller-only and broker-only nodes (ids: controllers 1.., brokers 101..)."""
    quorum = tuple(
        NodeSpec(name, f"controller-{i}", i, Mode.KRAFT, Role.CONTROLLER, KRAFT_VERSION)
        for i in range(1, controllers + 1)
    )
    workers = tuple(
        NodeSpec(name, f"broker-{100 + i}", 100 + i, Mode.KRAFT, Role.BROKER, KRAFT_VERSION)
        for i in range(1, brokers + 1)
    )
    return ClusterSpec(name, Mode.KRAFT, KRAFT_VERSION, quorum + workers)


def standard_shape() -> tuple[ClusterSpec, ...]:
    """The demo pair: ZooKeeper 3.9 with the control-plane listener, and KRaft 4.x (3 + 3)."""
    return (zk_cluster(), kraft_cluster())


def fleet_shape(clusters: int, nodes_per_cluster: int) -> tuple[ClusterSpec, ...]:
    """N clusters of M nodes for benchmarks: even-numbered KRaft (3 controllers), odd-numbered ZooKeeper."""
    if nodes_per_cluster < 4:
        raise ValueError("a fleet cluster needs at least 4 nodes (KRaft: 3 controllers + 1 broker)")
    shape = []
    for index in range(clusters):
        if index % 2 == 0:
            shape.append(kraft_cluster(f"kraft-{index:04d}", 3, nodes_per_cluster - 3))
        else:
            shape.append(zk_cluster(f"zk-{index:04d}", nodes_per_cluster))
    return tuple(shape)
