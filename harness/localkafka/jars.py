"""Kafka release jars from Maven Central into a cache directory, once per version."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shlex
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

from harness.localkafka.errors import JarFetchError
from harness.localkafka.versions import logging_flavour

JARS_MARKER = ".ctlplane-complete"
ENV_CACHE_DIR = "CTLPLANE_CACHE_DIR"


def repo_root() -> Path:
    """The repository root (the directory holding ``ctlplane/``)."""
    return Path(__file__).resolve().parents[2]


def cache_dir() -> Path:
    """``$CTLPLANE_CACHE_DIR`` or ``<repo>/.cache``."""
    env = os.environ.get(ENV_CACHE_DIR)
    return Path(env).expanduser().resolve() if env else repo_root() / ".cache"


def _pom_path() -> Path:
    return repo_root() / "tests" / "kafka" / "pom.xml"


def _jars_stamp(version: str) -> str:
    pom = _pom_path()
    digest = hashlib.sha256(pom.read_bytes()).hexdigest() if pom.is_file() else "missing"
    return f"kafka.version={version}\nkafka.logging={logging_flavour(version)}\npom.sha256={digest}\n"


def ensure_jars(version: str) -> Path:
    """Return ``<cache>/kafka/<version>``, fetching the jars with Maven if needed.

    The directory is complete when it holds a marker file whose content matches
    the version, the logging binding and the hash of ``tests/kafka/pom.xml``
    (editing the pom therefore triggers a re-fetch). Maven writes into a
    temporary directory that replaces the old one only after success.
    """
    target = cache_dir() / "kafka" / version
    stamp = _jars_stamp(version)
    marker = target / JARS_MARKER
    if read_text_or_none(marker) == stamp:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with _file_lock(target.parent / f".{version}.lock"):
        if read_text_or_none(marker) == stamp:
            return target
        mvn = shutil.which("mvn")
        if mvn is None:
            raise JarFetchError(f"Kafka {version} jars are missing in {target} and 'mvn' is not on PATH")
        pom = _pom_path()
        if not pom.is_file():
            raise JarFetchError(f"cannot fetch Kafka {version} jars: {pom} does not exist")
        tmp = target.parent / f".{version}.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        cmd = [
            mvn,
            "-q",
            "-B",
            "-f",
            str(pom),
            f"-Dkafka.version={version}",
            f"-Dkafka.logging={logging_flavour(version)}",
            "dependency:copy-dependencies",
            f"-DoutputDirectory={tmp}",
        ]
        res = subprocess.run(cmd, capture_output=True, text=True, check=False)
        main_jar = tmp / f"kafka_2.13-{version}.jar"
        if res.returncode != 0 or not main_jar.is_file():
            shutil.rmtree(tmp, ignore_errors=True)
            out = tail_text(res.stdout + res.stderr, 30)
            raise JarFetchError(
                f"fetching Kafka {version} jars failed (exit code {res.returncode}): {shlex.join(cmd)}\n{out}"
            )
        old = target.parent / f".{version}.old-{os.getpid()}"
        if target.exists():
            target.rename(old)
        tmp.rename(target)
        shutil.rmtree(old, ignore_errors=True)
        marker.write_text(stamp)
    return target


def ensure_tools_jar(version: str) -> Path:
    """``<cache>/kafka-tools/<version>/kafka-tools-<version>.jar`` (the command-line tools, such as
    kafka-metadata-quorum.sh's MetadataQuorumCommand, 3.5+): not a dependency of kafka_2.13, so fetched on
    its own; its dependencies are in ``ensure_jars(version)``."""
    return ensure_artifact("org.apache.kafka", "kafka-tools", version)


def ensure_artifact(group: str, artifact: str, version: str) -> Path:
    """``<cache>/<artifact>/<version>/<artifact>-<version>.jar``, one jar from Maven Central without its
    dependencies (kafka-tools; jmx_exporter's standalone server for bench/vs_jmx_exporter.py)."""

    def copy(mvn: str, work: Path) -> list[str]:
        return [
            mvn,
            "-q",
            "-B",
            "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy",
            f"-Dartifact={group}:{artifact}:{version}",
            f"-DoutputDirectory={work / 'jars'}",
        ]

    target = cache_dir() / artifact / version
    _fetch(target, f"{artifact}-{version}.jar", f"{artifact} {version}", copy)
    return target / f"{artifact}-{version}.jar"


_DEPENDENT_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.ctlplane</groupId>
  <artifactId>fetch</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId><version>{version}</version></dependency>
  </dependencies>
</project>
"""


def ensure_artifact_with_dependencies(group: str, artifact: str, version: str) -> Path:
    """``<cache>/<artifact>/<version>-with-dependencies/``: one artifact and its runtime dependencies (its
    `provided` ones left out: a Kafka plugin's Kafka jars are the node's own), for a node's classpath."""

    def copy_dependencies(mvn: str, work: Path) -> list[str]:
        pom = work / "pom.xml"
        pom.write_text(_DEPENDENT_POM.format(group=group, artifact=artifact, version=version))
        return [mvn, "-q", "-B", "-f", str(pom), "dependency:copy-dependencies", f"-DoutputDirectory={work / 'jars'}"]

    target = cache_dir() / artifact / f"{version}-with-dependencies"
    _fetch(target, f"{artifact}-{version}.jar", f"{artifact} {version}", copy_dependencies)
    return target


def _fetch(target: Path, jar: str, what: str, command: Callable[[str, Path], list[str]]) -> None:
    """Fill `target` once with the jars Maven copies into `<work>/jars` (`command`'s output directory), whole
    or not at all: a directory holding `jar` is complete (it is renamed into place after Maven succeeds)."""
    if (target / jar).is_file():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    with _file_lock(target.parent / f".{target.name}.lock"):
        if (target / jar).is_file():
            return
        mvn = shutil.which("mvn")
        if mvn is None:
            raise JarFetchError(f"{what} is missing in {target} and 'mvn' is not on PATH")
        work = target.parent / f".{target.name}.tmp-{os.getpid()}"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        try:
            cmd = command(mvn, work)
            res = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if res.returncode != 0 or not (work / "jars" / jar).is_file():
                out = tail_text(res.stdout + res.stderr, 30)
                raise JarFetchError(f"fetching {what} failed: {shlex.join(cmd)}\n{out}")
            shutil.rmtree(target, ignore_errors=True)
            (work / "jars").rename(target)
        finally:
            shutil.rmtree(work, ignore_errors=True)


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    with open(path, "a+b") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def read_text_or_none(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def tail_text(text: str, lines: int) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])
