"""Where the Kafka client's jars come from (issue #50): the ones the package carries first (a wheel built by
`make wheel`), then `$CTLPLANE_KAFKA_CLIENT_JARS`, then, in a checkout only, Maven into the cache; an
installed package without jars never looks for Maven."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctlplane.exporter.releases import CLIENT_VERSION
from ctlplane.exporter.sources.admin import client as kafka_admin


def _jars(directory: Path, *names: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        (directory / name).write_bytes(b"")
    return directory


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """The three places, empty: the package's jars directory, the variable's and the cache."""
    packaged, baked, cache = tmp_path / "packaged", tmp_path / "baked", tmp_path / "cache"
    monkeypatch.setattr(kafka_admin, "PACKAGED_JARS", packaged)
    monkeypatch.delenv(kafka_admin.JARS_ENV, raising=False)
    monkeypatch.setattr(kafka_admin, "cache_root", lambda: cache)
    monkeypatch.setattr(kafka_admin, "_fetch_failure", None)
    return {"packaged": packaged, "baked": baked, "cache": cache}


def test_the_packaged_jars_come_first_then_the_variable_then_maven_in_a_checkout(
    places: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    fetched: list[Path] = []

    def fetch(target: Path, pom_text: str) -> None:
        fetched.append(target)
        _jars(target, kafka_admin.MAIN_JAR)

    monkeypatch.setattr(kafka_admin, "_fetch", fetch)
    monkeypatch.setattr(kafka_admin, "in_checkout", lambda: True)
    _jars(places["packaged"], kafka_admin.MAIN_JAR, "slf4j-api-1.7.36.jar")
    _jars(places["baked"], kafka_admin.MAIN_JAR)
    monkeypatch.setenv(kafka_admin.JARS_ENV, str(places["baked"]))
    assert {p.parent for p in kafka_admin.client_jars()} == {places["packaged"]}
    assert [p.name for p in kafka_admin.client_jars()] == [kafka_admin.MAIN_JAR, "slf4j-api-1.7.36.jar"]

    (places["packaged"] / kafka_admin.MAIN_JAR).unlink()  # a package without the client: the variable's
    assert kafka_admin.client_jars() == [places["baked"] / kafka_admin.MAIN_JAR]

    monkeypatch.delenv(kafka_admin.JARS_ENV)  # neither: a checkout fetches with Maven, once
    (jar,) = kafka_admin.client_jars()
    assert jar.name == kafka_admin.MAIN_JAR and jar.is_relative_to(places["cache"])
    assert kafka_admin.client_jars() == [jar]
    assert len(fetched) == 1


def test_the_packaged_jars_are_the_only_ones_besides_licences_and_the_version_says_they_are_carried(
    places: dict[str, Path],
) -> None:
    assert not kafka_admin.packaged_client()
    _jars(places["packaged"], kafka_admin.MAIN_JAR, "slf4j-nop-1.7.36.jar", "LICENSE-kafka-clients.txt")
    assert [p.name for p in kafka_admin.client_jars()] == [kafka_admin.MAIN_JAR, "slf4j-nop-1.7.36.jar"]
    assert kafka_admin.packaged_client()


def test_an_installed_package_without_jars_says_what_to_do_and_never_looks_for_maven(
    places: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kafka_admin, "in_checkout", lambda: False)
    looked_up: list[str] = []
    monkeypatch.setattr("shutil.which", lambda name: looked_up.append(name))
    with pytest.raises(kafka_admin.AdminClientError) as raised:
        kafka_admin.client_jars()
    said = str(raised.value)
    assert f"org.apache.kafka:kafka-clients:{CLIENT_VERSION}" in said
    assert kafka_admin.JARS_ENV in said and "\n" not in said
    assert looked_up == []
    assert not places["cache"].exists()


def test_a_checkout_is_recognised_and_an_installed_copy_is_not(tmp_path: Path) -> None:
    assert kafka_admin.in_checkout()  # these tests run from the checkout (an editable install)
    assert not kafka_admin.in_checkout(
        tmp_path / "site-packages" / "ctlplane" / "exporter" / "sources" / "admin" / "client.py"
    )
