from __future__ import annotations

from pathlib import Path

import pytest

from ctlplane.cli import main
from exporter.config import ConfigError, load_settings

GOOD = """
clusters:
  - name: prod-a
    nodes:
      - {address: "kafka-1.example:9999", name: broker-1}
      - {address: "kafka-2.example:9999", role: controller}
    jmx: {username: monitor, password_env: CTLPLANE_TEST_PASSWORD}
scrape: {interval_seconds: 15, timeout_seconds: 10, workers: 8}
http: {host: 0.0.0.0, port: 18309}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ctlplane.yaml"
    path.write_text(text)
    return path


def test_valid_config_loads_with_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTLPLANE_TEST_PASSWORD", "s3cret")
    settings = load_settings(write(tmp_path, GOOD))
    cluster = settings.clusters[0]
    assert [n.label for n in cluster.nodes] == ["broker-1", "kafka-2.example:9999"]
    assert settings.jmx_for(cluster).password().get_secret_value() == "s3cret"  # type: ignore[union-attr]
    assert settings.health.metadata_stale_seconds == 15.0
    assert "s3cret" not in repr(settings)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        (GOOD.replace("interval_seconds: 15", "interval_secs: 15"), "scrape.interval_secs"),
        (GOOD.replace('"kafka-1.example:9999"', '"kafka-1.example"'), "clusters.0.nodes.0.address"),
        (GOOD.replace("timeout_seconds: 10", "timeout_seconds: 30"), "scrape"),
        (GOOD.replace("port: 18309", "port: 99999"), "http.port"),
        (GOOD.replace("name: prod-a", "name: prod a"), "clusters.0.name"),
        (GOOD.replace("password_env: CTLPLANE_TEST_PASSWORD", "password: inline"), "clusters.0.jmx.password"),
        ("clusters: []\n", "clusters"),
        ("- just a list\n", "top level"),
        ("clusters: [\n", "not valid YAML"),
    ],
)
def test_mistakes_name_the_field_path(tmp_path: Path, text: str, field: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTLPLANE_TEST_PASSWORD", "x")
    with pytest.raises(ConfigError) as error:
        load_settings(write(tmp_path, text))
    assert field in str(error.value)


def test_missing_password_variable_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CTLPLANE_TEST_PASSWORD", raising=False)
    with pytest.raises(ConfigError, match="CTLPLANE_TEST_PASSWORD"):
        load_settings(write(tmp_path, GOOD))


def test_plain_text_basic_auth_password_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTLPLANE_TEST_PASSWORD", "x")
    with pytest.raises(ConfigError, match=r"http\.basic_auth_users"):
        text = GOOD.replace("port: 18309}", "port: 18309, basic_auth_users: {prometheus: hunter2}}")
        load_settings(write(tmp_path, text))


def test_check_config_command_exit_codes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CTLPLANE_TEST_PASSWORD", "x")
    assert main(["check-config", str(write(tmp_path, GOOD))]) == 0
    assert "OK (1 cluster(s), 2 node(s))" in capsys.readouterr().out
    assert main(["check-config", str(write(tmp_path, GOOD.replace("workers: 8", "workers: 0")))]) == 2
    assert "scrape.workers" in capsys.readouterr().err
    assert main(["check-config", str(tmp_path / "missing.yaml")]) == 2
