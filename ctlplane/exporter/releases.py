"""The Kafka releases ctlplane claims, as data: one row per release line.

A row says which modes the line runs, which patch release the version matrix (`make test-matrix`,
tools/matrix.py) starts from Maven Central, and what differs in what the line exposes beyond the
catalogue's per-MBean `since`/`until` (ctlplane/exporter/catalog.py): the raft-state names. A newly released Kafka
is a row here. BrokerState has the same numbers on every release (health.BROKER_STATE_NAMES).
docs/kafka-versions.md's support table is written from this table and the catalogue (tools/support_table.py).

The health model never branches on a version: it decides from which series a node serves (a controller
without `BrokerRegistrationState` falls back to `FencedBrokerCount`, health.py). These rows say where
each fallback is the only evidence.
"""

from __future__ import annotations

from dataclasses import dataclass

from ctlplane.exporter.catalog import CATALOG, Mode, release_tuple

# The Kafka client ctlplane carries for the Admin API (sources/admin/): 4.x clients speak to brokers from 2.1 on
# (KIP-896) and have bootstrap.controllers (KIP-919, 3.7) and DescribeClusterOptions.includeFencedBrokers
# (KIP-1073, 4.0). Its pom (sources/admin/kafka-clients.pom.xml) names the same release.
CLIENT_VERSION = "4.3.1"

# raft-metrics current-state: the strings KafkaRaftMetrics sets (read from the shipped kafka-raft jars with
# javap: 3.6.2 and 3.9.2 have the first tuple; 4.0.1 and 4.4.0 the second, where KIP-996's pre-vote split
# "voted" into "prospective-voted" and "unattached-voted" and added "prospective").
RAFT_STATES_3 = ("leader", "candidate", "voted", "follower", "unattached", "observer")
RAFT_STATES_4 = (
    "leader",
    "candidate",
    "prospective",
    "prospective-voted",
    "follower",
    "unattached",
    "unattached-voted",
    "observer",
)


@dataclass(frozen=True)
class Release:
    """One release line (major.minor)."""

    line: str  # "3.6"
    matrix_version: str | None  # the patch release the matrix runs; None: claimed, not run
    zookeeper: bool  # runs ZooKeeper mode
    kraft: bool  # runs KRaft (production from 3.3, KIP-833)
    raft_states: tuple[str, ...] = ()
    note: str = ""

    @property
    def migrates(self) -> bool:
        """ZooKeeper -> KRaft migration (KIP-866) runs here: production-ready from 3.6 (metadata
        transactions, KIP-868), and there is no ZooKeeper mode to migrate from in 4.x."""
        return self.zookeeper and release_key(self.line) >= (3, 6)


@dataclass(frozen=True)
class MatrixEntry:
    """One run of the matrix: a release in one mode (and, in ZooKeeper mode, with or without KIP-291)."""

    mode: str  # "zookeeper" or "kraft"
    version: str
    control_plane_listener: bool = True


RELEASES: tuple[Release, ...] = (
    Release("2.2", None, zookeeper=True, kraft=False,
            note="KIP-291's control-plane listener appears; not run here: Maven Central has no Scala 2.13 "
                 "build (kafka_2.13) before 2.4.0"),
    Release("2.4", "2.4.1", zookeeper=True, kraft=False,
            note="the oldest line the matrix runs (the first kafka_2.13 build; starts on Java 17)"),
    Release("2.8", "2.8.2", zookeeper=True, kraft=False,
            note="KRaft preview only (not claimed)"),
    Release("3.6", "3.6.2", zookeeper=True, kraft=True, raft_states=RAFT_STATES_3,
            note="KRaft without per-broker registration gauges: fenced by FencedBrokerCount"),
    Release("3.9", "3.9.2", zookeeper=True, kraft=True, raft_states=RAFT_STATES_3,
            note="the last ZooKeeper-mode line; pinned in make test"),
    Release("4.0", "4.0.1", zookeeper=False, kraft=True, raft_states=RAFT_STATES_4,
            note="ZooKeeper mode and KIP-291 removed; KIP-996 raft states"),
    Release("4.1", "4.1.1", zookeeper=False, kraft=True, raft_states=RAFT_STATES_4,
            note="per-broker BrokerRegistrationState on controllers (KAFKA-18666)"),
    Release("4.3", "4.3.1", zookeeper=False, kraft=True, raft_states=RAFT_STATES_4,
            note="pinned in make test"),
    Release("4.4", "4.4.0", zookeeper=False, kraft=True, raft_states=RAFT_STATES_4,
            note="the newest release on Maven Central"),
)  # fmt: skip


def _matrix() -> tuple[MatrixEntry, ...]:
    entries = []
    for release in RELEASES:
        if release.matrix_version is None:
            continue
        if release.zookeeper:
            entries.append(MatrixEntry("zookeeper", release.matrix_version, control_plane_listener=True))
            entries.append(MatrixEntry("zookeeper", release.matrix_version, control_plane_listener=False))
        if release.kraft:
            entries.append(MatrixEntry("kraft", release.matrix_version))
    return tuple(entries)


MATRIX: tuple[MatrixEntry, ...] = _matrix()


def release_key(version: str) -> tuple[int, int]:
    """(major, minor) of "3.6.2", "4.1", "0.10"."""
    major, minor = release_tuple(version)[:2]
    return major, minor


def catalogue_series(mode: Mode, version: str, *, listener: bool) -> frozenset[str]:
    """The series the catalogue reads from a cluster of `mode` on `version` (ZooKeeper mode: with or without
    KIP-291's control-plane listener), by each row's release range."""
    return frozenset(
        spec.series
        for spec in CATALOG
        if mode in spec.modes
        and spec.series != "ctlplane_simulated_info"
        and spec.registered_in(mode, version)
        and (listener or not spec.needs_control_plane_listener)
    )
