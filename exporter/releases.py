"""The Kafka releases ctlplane claims, as data: one row per release line.

A row says which modes the line runs, which patch release the version matrix (`make test-matrix`,
tools/matrix.py) starts from Maven Central, and what differs in what the line exposes beyond the
catalogue's per-MBean `since`/`until` (exporter/catalog.py): BrokerState and raft-state names, and
whether the controller names each broker's registration. A newly released Kafka is a row here.
README's support table is printed from this table and the catalogue (tools/support_table.py).

The health model never branches on a version: it decides from which series a node serves (a controller
without `BrokerRegistrationState` falls back to `FencedBrokerCount`, health.py). These rows say where
each fallback is the only evidence.
"""

from __future__ import annotations

from dataclasses import dataclass

from exporter.catalog import CATALOG, Mode, release_tuple

# BrokerState's names (org.apache.kafka.metadata.BrokerState, 2.8+, seen in the 2.8.2 jar; KafkaServer.scala's
# BrokerStates before 2.8,
# same numbers: RunningAsBroker=3, RecoveringFromUncleanShutdown=2, PendingControlledShutdown=6,
# BrokerShuttingDown=7). ctlplane names the values with the 2.8+ names on every release.
BROKER_STATES_2_8 = ("NOT_RUNNING", "STARTING", "RECOVERY", "RUNNING", "PENDING_CONTROLLED_SHUTDOWN", "SHUTTING_DOWN")
BROKER_STATES_PRE_2_8 = (
    "NotRunning",
    "Starting",
    "RecoveringFromUncleanShutdown",
    "RunningAsBroker",
    "PendingControlledShutdown",
    "BrokerShuttingDown",
)
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
    broker_states: tuple[str, ...]
    raft_states: tuple[str, ...] = ()
    note: str = ""


@dataclass(frozen=True)
class MatrixEntry:
    """One run of the matrix: a release in one mode (and, in ZooKeeper mode, with or without KIP-291)."""

    mode: str  # "zookeeper" or "kraft"
    version: str
    control_plane_listener: bool = True


RELEASES: tuple[Release, ...] = (
    Release("2.2", None, zookeeper=True, kraft=False, broker_states=BROKER_STATES_PRE_2_8,
            note="KIP-291's control-plane listener appears"),
    Release("2.8", "2.8.2", zookeeper=True, kraft=False, broker_states=BROKER_STATES_2_8,
            note="KRaft preview only (not claimed); the oldest line the matrix runs"),
    Release("3.6", "3.6.2", zookeeper=True, kraft=True, broker_states=BROKER_STATES_2_8, raft_states=RAFT_STATES_3,
            note="KRaft without per-broker registration gauges: fenced by FencedBrokerCount"),
    Release("3.9", "3.9.2", zookeeper=True, kraft=True, broker_states=BROKER_STATES_2_8, raft_states=RAFT_STATES_3,
            note="the last ZooKeeper-mode line; pinned in make test"),
    Release("4.0", "4.0.1", zookeeper=False, kraft=True, broker_states=BROKER_STATES_2_8, raft_states=RAFT_STATES_4,
            note="ZooKeeper mode and KIP-291 removed; KIP-996 raft states"),
    Release("4.1", "4.1.1", zookeeper=False, kraft=True, broker_states=BROKER_STATES_2_8, raft_states=RAFT_STATES_4,
            note="per-broker BrokerRegistrationState on controllers (KAFKA-18666)"),
    Release("4.3", "4.3.1", zookeeper=False, kraft=True, broker_states=BROKER_STATES_2_8, raft_states=RAFT_STATES_4,
            note="pinned in make test"),
    Release("4.4", "4.4.0", zookeeper=False, kraft=True, broker_states=BROKER_STATES_2_8, raft_states=RAFT_STATES_4,
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
