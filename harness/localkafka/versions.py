"""The Kafka versions the harness knows: the pinned pair and how a version string reads."""

from __future__ import annotations

import re

ZK_VERSION = "3.9.2"  # last release with ZooKeeper mode
KRAFT_VERSION = "4.3.1"  # newest 4.x we fetch


def major_minor(version: str) -> tuple[int, int]:
    m = re.match(r"^(\d+)\.(\d+)", version)
    if not m:
        raise ValueError(f"not a Kafka version: {version!r}")
    return int(m.group(1)), int(m.group(2))


def logging_flavour(version: str) -> str:
    """SLF4J binding profile of ``tests/kafka/pom.xml``: reload4j (3.x) or log4j2 (4.x+)."""
    return "log4j2" if major_minor(version)[0] >= 4 else "reload4j"


def cluster_label(mode: str, version: str, control_plane_listener: bool = True) -> str:
    """A cluster's name from its mode and release: "kraft-4.3", "zk-3.9", "zk-3.9-nolistener" (a
    ZooKeeper-mode cluster without KIP-291's control.plane.listener.name), "migration-3.9" (a ZooKeeper
    cluster migrating to KRaft, KIP-866)."""
    major, minor = major_minor(version)
    if mode in ("kraft", "migration"):
        return f"{mode}-{major}.{minor}"
    return f"zk-{major}.{minor}" + ("" if control_plane_listener else "-nolistener")
