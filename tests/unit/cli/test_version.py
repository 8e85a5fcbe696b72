"""`ctlplane --version`: the version pyproject.toml gives, the one place it is written, and the Kafka client
release it carries (issue #50), which decides the broker versions it speaks to."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from ctlplane.cli import main
from ctlplane.exporter.releases import CLIENT_VERSION
from ctlplane.exporter.sources.admin import client as kafka_admin

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("packaged", [True, False])
def test_version_is_pyprojects_and_names_the_kafka_client(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, packaged: bool
) -> None:
    monkeypatch.setattr(kafka_admin, "packaged_client", lambda: packaged)
    expected = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    client = f"Kafka client {CLIENT_VERSION}" + ("" if packaged else ", not packaged")
    assert capsys.readouterr().out == f"ctlplane {expected} ({client})\n"
