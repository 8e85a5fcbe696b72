"""The Admin client's settings made again from their files when one changes (#61, rotation): a Kubernetes
Secret's `..data` swap, a file rewritten in place, and a file that cannot be read mid-renewal."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctlplane.exporter.config.file import parse_settings
from ctlplane.exporter.sources.admin.security import ClientSecurity
from ctlplane.wiring import admin_client_security
from tests.projected import project_secret


def test_settings_are_made_again_after_a_secrets_data_swap_and_not_before(tmp_path: Path) -> None:
    project_secret(tmp_path, "1", {"password": "first"})
    made = []

    def make() -> dict[str, str]:
        made.append(text := (tmp_path / "password").read_text())
        return {"sasl.jaas.config": text}

    security = ClientSecurity(make, [tmp_path / "password"])
    assert security.properties() == {"sasl.jaas.config": "first"} and not security.renewed()
    project_secret(tmp_path, "2", {"password": "second"})  # the same name, a new file behind it
    assert security.renewed() and security.properties() == {"sasl.jaas.config": "second"}
    assert not security.renewed() and made == ["first", "second"]


def test_a_file_rewritten_in_place_is_a_change_too(tmp_path: Path) -> None:
    password = tmp_path / "password"
    password.write_text("first")
    security = ClientSecurity(lambda: {"p": password.read_text()}, [password])
    password.write_text("second, longer")
    assert security.renewed() and security.properties() == {"p": "second, longer"}


def test_settings_that_cannot_be_made_keep_the_old_and_are_tried_again(tmp_path: Path) -> None:
    password = tmp_path / "password"
    password.write_text("first")

    def make() -> dict[str, str]:
        if not password.exists():
            raise ValueError(f"cannot read password_file {password}")
        return {"p": password.read_text()}

    security = ClientSecurity(make, [password])
    password.unlink()
    with pytest.raises(ValueError, match="cannot read password_file"):
        security.renewed()
    assert security.properties() == {"p": "first"}
    password.write_text("second")
    assert security.renewed() and security.properties() == {"p": "second"}


def test_every_file_a_clusters_credentials_come_from_is_watched(tmp_path: Path) -> None:
    for name in ("password", "ca.pem", "client.pem", "client.key"):
        (tmp_path / name).write_text(name)
    admin = {
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "username": "ctlplane",
        "password_file": str(tmp_path / "password"),
        "ca_file": str(tmp_path / "ca.pem"),
        "cert_file": str(tmp_path / "client.pem"),
        "key_file": str(tmp_path / "client.key"),
    }
    cluster = {"name": "c", "nodes": [{"address": "127.0.0.1:9999"}], "bootstrap_servers": ["a:9093"], "admin": admin}
    settings = parse_settings({"clusters": [cluster]}, "t")  # the files are no real PEM: not checked here
    watched = settings.clusters[0].admin.secret_files()  # type: ignore[union-attr]
    assert sorted(p.name for p in watched) == ["ca.pem", "client.key", "client.pem", "password"]
    security = admin_client_security(settings.clusters[0])
    assert security is not None and 'password="password"' in security.properties()["sasl.jaas.config"]
    (tmp_path / "password").write_text("rotated")
    assert security.renewed() and 'password="rotated"' in security.properties()["sasl.jaas.config"]
