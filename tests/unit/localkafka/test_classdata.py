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
