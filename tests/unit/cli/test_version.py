"""`ctlplane --version`: the version pyproject.toml gives, the one place it is written."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from ctlplane.cli import main

ROOT = Path(__file__).resolve().parents[3]


def test_version_is_pyprojects(capsys: pytest.CaptureFixture[str]) -> None:
    expected = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"ctlplane {expected}\n"
