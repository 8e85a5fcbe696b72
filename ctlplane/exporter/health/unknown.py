"""Readings the health model cannot make for a cluster because no source serves their evidence, and what each
lacks: served as `kafka_cluster_reading_unknown`, never as healthy.

A source may serve a node without a series some judgement rests on: jmx_exporter drops String attributes it
has no rule for (raft `current-state`, ZooKeeper `SessionState`: "Ignoring unsupported bean" in its
JmxCollector), and a user's own rules may leave out any MBean. Where that leaves a judgement without
evidence, its alerts cannot fire; the series says so, so that silence is never read as health
(docs/sources.md "What each naming serves").
"""

from __future__ import annotations

from ctlplane.exporter.catalog import Mode, Role
from ctlplane.exporter.health.model import Redundancy, UnknownReading
from ctlplane.exporter.health.quorum import kraft_controllers
from ctlplane.exporter.model import ClusterSnapshot

# the quorum's spare voters: the controllers' own raft state (health/quorum.py quorum_redundancy), or the
# leader's word through describeMetadataQuorum
SPARE_VOTERS = UnknownReading(
    "quorum_spare_voters",
    "raft current-state (kafka_raft_state) on the controllers' metrics, or the quorum's view (a bootstrap address)",
)
# a ZooKeeper-mode broker's registration: its own SessionState (KafkaZooKeeperSessionLost, the
# zookeeper_session_lost cause)
ZOOKEEPER_SESSIONS = UnknownReading(
    "zookeeper_sessions", "ZooKeeper SessionState (kafka_zookeeper_session_state) on the brokers' metrics"
)


def unknown_readings(cluster: ClusterSnapshot, redundancy: Redundancy | None) -> tuple[UnknownReading, ...]:
    """This round's readings that some node was read for and no source could make."""
    unknown: list[UnknownReading] = []
    # the controllers quorum_redundancy counts from: one read, and still no count
    if any(n.up for n in kraft_controllers(cluster)) and redundancy is None:
        unknown.append(SPARE_VOTERS)
    brokers = [n for n in cluster.nodes if n.up and n.role is Role.BROKER and n.mode is Mode.ZOOKEEPER]
    if brokers and not any(n.has("kafka_zookeeper_session_state") for n in brokers):
        unknown.append(ZOOKEEPER_SESSIONS)
    return tuple(unknown)
