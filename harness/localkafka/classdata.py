"""Class-data sharing archives for the local Kafka JVMs: a start-up that maps the classes it loads.

A Kafka node loads ~8,000 classes from ~100 jars at start-up; with C1 only (TieredStopAtLevel=1) that
parsing and verifying is most of its start-up CPU. JDK 13+ writes the classes a JVM loaded into an archive
when it exits (`-XX:ArchiveClassesAtExit`, JEP 350) and later JVMs with the same class path map it
(`-XX:SharedArchiveFile`). Measured on this project's 2-core machine, a KRaft 4.3.1 cluster of 3
controllers and 2 brokers (storage format included): 27-31 CPU-s and 14-16 s to ready without, 17-18 CPU-s
and 8-9 s with.

`build_archives(version)` (clusters.py, as it starts a cluster; run by `python -m harness.localkafka jars`,
i.e. `make jars`) starts one small cluster of that release with archiving on (`write_archives` here), stops
it cleanly and keeps one archive per main class (kafka.Kafka, ZooKeeper, the storage tool). An archive's
name carries a stamp of the java binary and the jars, so a JVM never meets an archive made for other
classes; where it does anyway (or the JDK is older than 13, or no archive was built) the JVM starts without
sharing (-Xshare:auto), exactly as before.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import tempfile
import threading
import uuid
from collections.abc import Callable
from pathlib import Path

from harness.localkafka.jars import cache_dir, ensure_jars

# JEP 350's dynamic archives: JDK 13 and later
MIN_JAVA_FEATURE = 13

_dumping = threading.Event()  # set while build_archives runs its cluster: every JVM writes an archive
_java_feature: dict[str, int | None] = {}


def java_feature(java: str) -> int | None:
    """The feature release of `java` (17 for 17.0.9), read once per binary; None if it cannot say."""
    if java not in _java_feature:
        try:
            said = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60).stderr
        except (OSError, subprocess.TimeoutExpired):
            said = ""
        match = re.search(r'version "(\d+)(?:\.(\d+))?', said)
        # "1.8.0_392" is Java 8
        feature = None if match is None else int(match.group(2) if match.group(1) == "1" else match.group(1))
        _java_feature[java] = feature
    return _java_feature[java]


def _stamp(java: str, jars: Path) -> str:
    """What an archive depends on: the java binary and every jar of the class path (name, size, mtime)."""
    digest = hashlib.sha256()
    real = Path(java).resolve()
    digest.update(f"{real}:{real.stat().st_mtime_ns}\n".encode())
    for jar in sorted(jars.glob("*.jar")):
        stat = jar.stat()
        digest.update(f"{jar.name}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def archive_path(java: str, version: str, main_class: str, *, directory: Path | None = None) -> Path:
    """Where the archive of `main_class` of `version`, run by `java`, is kept."""
    jars = ensure_jars(version)
    root = directory if directory is not None else cache_dir() / "kafka-cds"
    return root / version / f"{main_class}-{_stamp(java, jars)}.jsa"


def sharing_flags(java: str, version: str, main_class: str, *, directory: Path | None = None) -> list[str]:
    """The JVM flags of a local node: map the archive where one was built, write one while building."""
    feature = java_feature(java)
    if feature is None or feature < MIN_JAVA_FEATURE:
        return []
    archive = archive_path(java, version, main_class, directory=directory)
    if archive.is_file():
        return [f"-XX:SharedArchiveFile={archive}", "-Xshare:auto"]
    if _dumping.is_set():
        # one file per JVM: nodes of one main class stop side by side; build_archives keeps one of them
        return [f"-XX:ArchiveClassesAtExit={archive.with_name(f'{archive.name}.{uuid.uuid4().hex}.part')}"]
    return []


def write_archives(
    java: str, version: str, run_cluster: Callable[[Path], None], *, directory: Path | None = None
) -> list[Path]:
    """Build the archives of `version`'s JVMs run by `java` (no-op where they exist): `run_cluster(workdir)`
    starts the smallest cluster that runs each of its main classes and stops it cleanly (clusters.py
    `build_archives`, the one caller), every JVM writing an archive as it exits; one archive per main class
    is kept. Returns the archives."""
    feature = java_feature(java)
    if feature is None or feature < MIN_JAVA_FEATURE:
        return []
    root = directory if directory is not None else cache_dir() / "kafka-cds"
    folder = root / version
    folder.mkdir(parents=True, exist_ok=True)
    stamp = _stamp(java, ensure_jars(version))
    built = sorted(folder.glob(f"*-{stamp}.jsa"))
    if built:
        return built
    _dumping.set()
    try:
        with tempfile.TemporaryDirectory(prefix="cds-") as work:
            run_cluster(Path(work))
    finally:
        _dumping.clear()
    for part in sorted(folder.glob("*.part")):
        final = folder / (part.name.split(".jsa.", 1)[0] + ".jsa")
        if not final.exists():
            os.replace(part, final)
        else:
            part.unlink()
    return sorted(folder.glob(f"*-{stamp}.jsa"))
