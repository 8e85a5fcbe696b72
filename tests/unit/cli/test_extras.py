"""Commands whose extra is not installed say which and how to install it (`pip install ctlplane` is the
exporter alone); the real clean-virtualenv install is tests/integration/test_wheel.py."""

from __future__ import annotations

import importlib.util
from importlib.machinery import ModuleSpec

import pytest

from ctlplane import cli


@pytest.fixture
def without(monkeypatch: pytest.MonkeyPatch) -> set[str]:
    hidden: set[str] = set()
    find_spec = importlib.util.find_spec

    def find(name: str, package: str | None = None) -> ModuleSpec | None:
        return None if name in hidden else find_spec(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find)
    return hidden


@pytest.mark.parametrize(
    ("argv", "module", "extra"),
    [
        (["demo"], "dash", "dashboard"),
        (["dashboard", "--exporter", "http://127.0.0.1:1"], "dash", "dashboard"),
        (["pipeline", "sweep", "--archive", "a", "--out", "o"], "pyspark", "pipeline"),
    ],
)
def test_a_missing_extra_is_named_with_its_install_line(
    without: set[str], capsys: pytest.CaptureFixture[str], argv: list[str], module: str, extra: str
) -> None:
    without.add(module)
    assert cli.main(argv) == 2
    assert capsys.readouterr().err == (
        f"error: this command needs {module}, which is not installed: pip install 'ctlplane[{extra}]'\n"
    )


def test_commands_of_the_exporter_need_no_extra(without: set[str]) -> None:
    without.update({"dash", "pyspark"})
    for argv in (["check-config", "x.yaml"], ["run"], ["history", "compact", "--archive", "a"]):
        args = cli.build_parser().parse_args(argv)
        assert cli.missing_extras(getattr(args, "needs", ())) is None, argv
