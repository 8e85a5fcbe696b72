"""The Admin client's JKS and PKCS12 trust and key stores (#61): from the config to the properties Kafka's client
reads (each store a file, its type told from the file, its password from its file), and what check-config says
of a store before any client is made."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest
import yaml

from ctlplane.exporter.config.file import ConfigError, load_settings, parse_settings
from ctlplane.exporter.sources.admin import client as kafka_admin
from ctlplane.wiring import admin_security
from harness.localkafka import jks_keystore, jks_truststore, make_local_pki, pkcs12_keystore, pkcs12_truststore

SERVERS: dict[str, object] = {"name": "c", "nodes": [{"address": "127.0.0.1:9999"}], "bootstrap_servers": ["a:9093"]}


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    work = tmp_path_factory.mktemp("admin-stores")
    pki = make_local_pki(work / "pki", ("client",))
    password = work / "store-password"
    password.write_text("changeit\n")
    return {
        "p12": pkcs12_keystore(pki, "client", "changeit"),
        "trust_p12": pkcs12_truststore(pki, "changeit"),
        "jks": jks_keystore(pki, "client", "changeit"),
        "trust_jks": jks_truststore(pki, "changeit"),
        "password": password,
        "ca": pki.ca,
        "cert": pki.cert("client"),
        "key": pki.key("client"),
    }


def _admin(tmp_path: Path, admin: Mapping[str, object]) -> Path:
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"clusters": [{**SERVERS, "admin": {"security_protocol": "SSL", **admin}}]}))
    return config


def test_stores_reach_kafka_as_files_with_their_types_and_passwords(stores: dict[str, Path], tmp_path: Path) -> None:
    p12 = {
        "truststore": str(stores["trust_p12"]),
        "truststore_password_file": str(stores["password"]),
        "keystore": str(stores["p12"]),
        "keystore_password_file": str(stores["password"]),
    }
    props = admin_security(load_settings(_admin(tmp_path, p12)).clusters[0])
    assert props == {
        "security.protocol": "SSL",
        "ssl.truststore.type": "PKCS12",
        "ssl.truststore.location": str(stores["trust_p12"]),
        "ssl.truststore.password": "changeit",
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(stores["p12"]),
        "ssl.keystore.password": "changeit",
    }
    # JKS, the key entry's own password given (Kafka's ssl.key.password), the trust store's not (read unchecked)
    jks = {
        "truststore": str(stores["trust_jks"]),
        "keystore": str(stores["jks"]),
        "keystore_password_file": str(stores["password"]),
        "key_password_file": str(stores["password"]),
    }
    props = admin_security(load_settings(_admin(tmp_path, jks)).clusters[0])
    assert props is not None
    assert (props["ssl.truststore.type"], props["ssl.keystore.type"]) == ("JKS", "JKS")
    assert "ssl.truststore.password" not in props and props["ssl.key.password"] == "changeit"
    assert "changeit" not in repr(kafka_admin.JavaStore("/s", "JKS", "changeit"))


@pytest.mark.parametrize(
    ("admin", "said"),
    [
        ({"keystore": "/k.p12"}, "keystore and keystore_password_file go together"),
        ({"truststore": "/t.p12", "ca_file": "/ca.pem"}, "give truststore or ca_file, not both"),
        ({"truststore_password_file": "/pw"}, "truststore_password_file is the password of a truststore"),
        (
            {"keystore": "/k.p12", "keystore_password_file": "/pw", "cert_file": "/c.pem", "key_file": "/c.key"},
            "give keystore or cert_file and key_file, not both",
        ),
    ],
)
def test_stores_that_do_not_fit_together_are_one_line_each(admin: dict[str, str], said: str) -> None:
    with pytest.raises(ConfigError, match=said):
        parse_settings({"clusters": [{**SERVERS, "admin": {"security_protocol": "SSL", **admin}}]}, "t")


def test_stores_are_for_tls_listeners() -> None:
    plaintext = {"truststore": "/t.jks", "keystore": "/k.jks", "keystore_password_file": "/pw"}
    with pytest.raises(ConfigError, match="truststore, keystore, keystore_password_file are for TLS listeners"):
        parse_settings({"clusters": [{**SERVERS, "admin": plaintext}]}, "t")


def test_check_config_says_what_a_store_is_not_before_any_client_is_made(
    stores: dict[str, Path], tmp_path: Path
) -> None:
    wrong = tmp_path / "wrong-password"
    wrong.write_text("not-it\n")
    # a JKS store's wrong password: its integrity check fails, without a JVM (config/stores.py)
    jks = {"keystore": str(stores["jks"]), "keystore_password_file": str(wrong)}
    with pytest.raises(ConfigError, match=r"clusters\.0\.admin\.keystore: .*a wrong password"):
        load_settings(_admin(tmp_path, jks))
    # PEM is no key store (cert_file and key_file take it)
    pem = {"keystore": str(stores["cert"]), "keystore_password_file": str(stores["password"])}
    with pytest.raises(ConfigError, match=r"clusters\.0\.admin\.keystore: .* is PEM, not a key store"):
        load_settings(_admin(tmp_path, pem))
    absent = {"truststore": str(tmp_path / "absent.p12")}
    with pytest.raises(ConfigError, match=r"clusters\.0\.admin\.truststore: "):
        load_settings(_admin(tmp_path, absent))
