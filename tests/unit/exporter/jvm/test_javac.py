"""Java classes compiled from shipped source: which compiler runs, and that it runs once per source."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from ctlplane.exporter.jvm import javac


def _executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_a_jre_without_javac_compiles_with_its_compiler_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    java = _executable(tmp_path / "jre" / "bin" / "java")
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setattr(javac, "_java_home", lambda: tmp_path / "jre")
    monkeypatch.setattr(javac.shutil, "which", lambda name: None)
    assert javac.javac_command() == [str(java), "-m", "jdk.compiler/com.sun.tools.javac.Main"]


def test_the_jdks_own_javac_comes_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _executable(tmp_path / "jdk" / "bin" / "java")
    javac_path = _executable(tmp_path / "jdk" / "bin" / "javac")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    assert javac.javac_command() == [str(javac_path)]


def test_sources_compile_once_into_a_directory_keyed_by_their_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(javac, "_cache_root", lambda kind: tmp_path / f"{kind}-java")
    source = {"Hello.java": "package ctlplane.test;\npublic final class Hello {}\n"}
    first = javac.compiled_classes("test", source)
    assert (first / "ctlplane" / "test" / "Hello.class").is_file()

    def no_compiler(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("compiled again")

    monkeypatch.setattr(subprocess, "run", no_compiler)
    assert javac.compiled_classes("test", source) == first
    monkeypatch.undo()
    monkeypatch.setattr(javac, "_cache_root", lambda kind: tmp_path / f"{kind}-java")
    changed = javac.compiled_classes("test", {"Hello.java": source["Hello.java"] + "// changed\n"})
    assert changed != first


def test_a_compile_error_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(javac, "_cache_root", lambda kind: tmp_path / f"{kind}-java")
    with pytest.raises(javac.JavacError, match="javac failed"):
        javac.compiled_classes("test", {"Broken.java": "class Broken {"})
    assert not any((tmp_path / "test-java").glob("[0-9a-f]*"))  # nothing half-built left as a cache hit


def test_a_checkout_keeps_what_it_builds_in_its_own_cache() -> None:
    # the checkout's .cache/ (where make puts the jars and tools too), not a directory inside the package
    checkout = Path(__file__).resolve().parents[4]
    assert (checkout / "pyproject.toml").is_file()
    assert javac.cache_root() == checkout / ".cache"
