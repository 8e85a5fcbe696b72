"""The host's Java, checked before any cluster is read (issue #50): no JVM, or one older than the Kafka
client needs, is one line naming what to install; `check-config`, `run` and `probe` stop on it with exit 2
where the config's clusters need a JVM (remote JMX, Kafka's Admin client), not where they are read only from
their nodes' metrics endpoints."""

from __future__ import annotations

from pathlib import Path

import jpype
import pytest

from ctlplane import cli
from ctlplane.exporter.jvm import runtime as java_runtime


def _jdk(root: Path, version: str | None, libjvm: str = "lib/server/libjvm.so") -> Path:
    """A fake Java home with its `release` file (None: none) and its libjvm.so; the library's path."""
    library = root / libjvm
    library.parent.mkdir(parents=True)
    library.write_bytes(b"")
    if version is not None:
        (root / "release").write_text(f'IMPLEMENTOR="Debian"\nJAVA_VERSION="{version}"\n')
    return library


@pytest.mark.parametrize(
    ("version", "major"),
    [("17.0.15", 17), ("21", 21), ("11.0.2", 11), ("1.8.0_392", 8), ("25-ea", 25), (None, None)],
)
def test_the_java_version_is_read_from_the_homes_release_file(
    tmp_path: Path, version: str | None, major: int | None
) -> None:
    assert java_runtime.java_major(_jdk(tmp_path, version)) == major


def test_a_java_8_home_is_found_from_its_jre_library(tmp_path: Path) -> None:
    library = _jdk(tmp_path, "1.8.0_392", "jre/lib/amd64/server/libjvm.so")
    assert java_runtime.java_major(library) == 8


def test_no_jvm_is_one_line_with_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> str:
        raise jpype.JVMNotFoundException(
            "No JVM shared library file (libjvm.so) found. Try setting up the JAVA_HOME\nenvironment variable properly."
        )

    monkeypatch.setattr(jpype, "getDefaultJVMPath", missing)
    problem = java_runtime.java_problem()
    assert problem is not None and "\n" not in problem
    assert "no Java found" in problem and "JAVA_HOME" in problem
    assert "openjdk-17-jre-headless" in problem


def test_an_old_java_is_one_line_with_its_version_and_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    library = _jdk(tmp_path, "1.8.0_392")
    monkeypatch.setattr(jpype, "getDefaultJVMPath", lambda: str(library))
    problem = java_runtime.java_problem()
    assert problem is not None and "\n" not in problem
    assert "Java 8" in problem and str(tmp_path) in problem and f"Java {java_runtime.MIN_JAVA}" in problem
    assert "openjdk-17-jre-headless" in problem


@pytest.mark.parametrize("version", ["17.0.15", "11.0.2", None])
def test_a_recent_java_or_one_that_does_not_say_is_no_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str | None
) -> None:
    library = _jdk(tmp_path, version)
    monkeypatch.setattr(jpype, "getDefaultJVMPath", lambda: str(library))
    assert java_runtime.java_problem() is None


def test_this_hosts_java_is_no_problem() -> None:
    assert java_runtime.java_problem() is None


@pytest.mark.parametrize(
    "argv", [["check-config", "{config}"], ["run", "--config", "{config}"], ["probe", "--config", "{config}"]]
)
def test_the_commands_that_read_clusters_stop_on_it_before_reading_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    config = tmp_path / "ctlplane.yaml"
    config.write_text('clusters: [{name: c1, nodes: [{address: "127.0.0.1:1"}]}]\n')
    said = "no Java found: install a JDK 17"
    monkeypatch.setattr(cli, "java_problem", lambda: said)

    def read(*args: object, **kwargs: object) -> None:
        raise AssertionError("a cluster was read")

    monkeypatch.setattr(cli, "build_scraper", read)
    monkeypatch.setattr(cli, "serve", read)
    assert cli.main([a.format(config=config) for a in argv]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"error: {said}\n" and captured.out == ""


def test_clusters_read_only_from_their_metrics_endpoints_need_no_java(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "java_problem", lambda: "no Java found")
    config = tmp_path / "ctlplane.yaml"
    config.write_text('clusters: [{name: c1, nodes: [{address: "127.0.0.1:11001"}], metrics: {}}]\n')
    assert cli.main(["check-config", str(config)]) == 0, capsys.readouterr().err
    # the Admin client runs in the JVM: a bootstrap address needs it again
    config.write_text(
        'clusters: [{name: c1, nodes: [{address: "127.0.0.1:11001"}], metrics: {}, bootstrap_servers: ["k:9092"]}]\n'
    )
    assert cli.main(["check-config", str(config)]) == 2
    assert capsys.readouterr().err == "error: no Java found\n"


def test_commands_that_read_no_cluster_do_not_ask_for_java(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "java_problem", lambda: "no Java found")
    assert cli.main(["healthcheck", "--config", "/nonexistent.yaml"]) == 2  # the config's error, not Java's
    assert "Java" not in capsys.readouterr().err
