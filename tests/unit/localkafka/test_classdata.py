"""Class-data sharing for the local Kafka JVMs (harness/localkafka/classdata.py): which Java can write
archives, and that an archive is never offered to a JVM whose java binary or jars changed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.localkafka import classdata


def _fake_java(where: Path, says: str) -> str:
    java = where / "java"
    java.write_text(f"#!/bin/sh\necho '{says}' >&2\n")
    java.chmod(0o755)
    return str(java)


@pytest.mark.parametrize(
    ("says", "feature"),
    [
        ('openjdk version "17.0.9" 2023-10-17', 17),
        ('openjdk version "21" 2023-09-19', 21),
        ('java version "1.8.0_392"', 8),
        ("no version here", None),
    ],
)
def test_the_java_feature_release_is_read_from_java_version(tmp_path: Path, says: str, feature: int | None) -> None:
    assert classdata.java_feature(_fake_java(tmp_path, says)) == feature


def test_a_java_too_old_for_dynamic_archives_gets_no_flags(tmp_path: Path) -> None:
    java = _fake_java(tmp_path, 'java version "1.8.0_392"')
    assert classdata.sharing_flags(java, "4.3.1", "kafka.Kafka", directory=tmp_path) == []


def test_the_stamp_changes_with_any_jar_and_with_the_java_binary(tmp_path: Path) -> None:
    jars = tmp_path / "jars"
    jars.mkdir()
    (jars / "a.jar").write_bytes(b"a")
    java = _fake_java(tmp_path, 'openjdk version "17.0.9"')
    first = classdata._stamp(java, jars)
    assert classdata._stamp(java, jars) == first
    (jars / "b.jar").write_bytes(b"b")
    second = classdata._stamp(java, jars)
    assert second != first
    os.utime(jars / "a.jar", ns=(1, 1))
    third = classdata._stamp(java, jars)
    assert third != second
    os.utime(java, ns=(1, 1))
    assert classdata._stamp(java, jars) != third


def test_archives_are_written_while_a_cluster_runs_and_one_per_main_class_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """classdata.write_archives with the cluster it is given (clusters.py build_archives starts the real one)."""
    java = _fake_java(tmp_path, 'openjdk version "17.0.9" 2023-10-17')
    jars = tmp_path / "jars"
    jars.mkdir()
    (jars / "kafka.jar").write_bytes(b"k")
    monkeypatch.setattr(classdata, "ensure_jars", lambda version: jars)
    runs: list[Path] = []

    def run_cluster(work: Path) -> None:
        runs.append(work)
        for main_class in ("kafka.Kafka", "kafka.Kafka", "kafka.tools.StorageTool"):  # two nodes of one class
            flags = classdata.sharing_flags(java, "4.3.1", main_class, directory=tmp_path / "cds")
            assert len(flags) == 1 and flags[0].startswith("-XX:ArchiveClassesAtExit=")  # archiving, per JVM
            Path(flags[0].split("=", 1)[1]).write_bytes(b"archive")

    archives = classdata.write_archives(java, "4.3.1", run_cluster, directory=tmp_path / "cds")
    assert [a.name.split("-")[0] for a in archives] == ["kafka.Kafka", "kafka.tools.StorageTool"]
    assert not list((tmp_path / "cds" / "4.3.1").glob("*.part"))
    assert classdata.sharing_flags(java, "4.3.1", "kafka.Kafka", directory=tmp_path / "cds")[1] == "-Xshare:auto"
    assert classdata.write_archives(java, "4.3.1", run_cluster, directory=tmp_path / "cds") == archives
    assert len(runs) == 1  # built once: later calls find them


def test_build_archives_runs_the_smallest_cluster_of_the_release(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.localkafka import clusters

    started: list[tuple[str, dict[str, object]]] = []

    class Stopped:
        def stop(self) -> None:
            started.append(("stopped", {}))

    def starter(kind: str) -> object:
        def start(name: str, work: Path, **options: object) -> Stopped:
            started.append((kind, options))
            return Stopped()

        return start

    def write_archives(java: str, version: str, run_cluster: object, *, directory: Path | None) -> list[Path]:
        assert callable(run_cluster)
        run_cluster(tmp_path)
        return []

    monkeypatch.setattr(clusters, "start_kraft_cluster", starter("kraft"))
    monkeypatch.setattr(clusters, "start_zk_cluster", starter("zk"))
    monkeypatch.setattr(clusters, "java_executable", lambda: "java")
    monkeypatch.setattr(classdata, "write_archives", write_archives)
    clusters.build_archives("4.3.1")
    clusters.build_archives("3.9.2")
    assert started == [
        ("kraft", {"version": "4.3.1", "controllers": 1, "brokers": 0, "combined": True}),
        ("stopped", {}),
        ("zk", {"version": "3.9.2", "brokers": 1}),
        ("stopped", {}),
    ]
