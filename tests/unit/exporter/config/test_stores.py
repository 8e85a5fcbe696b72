"""check-config's look at JMX trust and key stores, on stores the JDK's keytool and openssl make."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ctlplane.exporter.config.stores import client_key_problem, store_problem
from harness.localkafka import encrypted_key, java_executable, make_local_pki, pkcs12_keystore, traditional_key


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    work = tmp_path_factory.mktemp("stores")
    pki = make_local_pki(work / "pki", ("client",))
    jks = work / "trust.jks"
    keytool = str(Path(java_executable()).parent / "keytool")
    subprocess.run(
        [keytool, "-importcert", "-noprompt", "-storetype", "JKS", "-alias", "ca", "-file", str(pki.ca),
         "-keystore", str(jks), "-storepass", "changeit"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    garbage = work / "garbage"
    garbage.write_bytes(b"\x00\x01 not a store")
    broken_pem = work / "broken.pem"
    broken_pem.write_text("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n")
    return {
        "jks": jks,
        "p12": pkcs12_keystore(pki, "client", "changeit"),
        "pem": pki.ca,
        "garbage": garbage,
        "broken_pem": broken_pem,
    }


def test_a_jks_store_with_its_password_or_none_given_is_fine(stores: dict[str, Path]) -> None:
    assert store_problem(stores["jks"], "changeit", certificates_allowed=True) is None
    assert store_problem(stores["jks"], None, certificates_allowed=True) is None  # the JVM skips the check then


def test_a_jks_stores_wrong_password_is_said(stores: dict[str, Path]) -> None:
    problem = store_problem(stores["jks"], "wrong", certificates_allowed=True)
    assert problem == f"{stores['jks']}: a wrong password (the JKS store's integrity check fails)"


def test_pkcs12_is_a_store_and_pem_certificates_a_trust_store_only(stores: dict[str, Path]) -> None:
    assert store_problem(stores["p12"], "changeit", certificates_allowed=False) is None
    assert store_problem(stores["pem"], None, certificates_allowed=True) is None
    problem = store_problem(stores["pem"], "changeit", certificates_allowed=False)
    assert problem is not None and "is PEM, not a key store" in problem


def test_what_is_no_store_is_said(stores: dict[str, Path]) -> None:
    problem = store_problem(stores["garbage"], None, certificates_allowed=True)
    assert problem == f"{stores['garbage']} is neither a PKCS12 nor a JKS store, nor PEM certificates"
    problem = store_problem(stores["broken_pem"], None, certificates_allowed=True)
    assert problem is not None and problem.startswith(f"no certificate loads from {stores['broken_pem']}")


@pytest.fixture(scope="module")
def client_keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The Admin client's certificate and its key in each form openssl writes, and another name's key."""
    pki = make_local_pki(tmp_path_factory.mktemp("keys") / "pki", ("client", "other"))
    return {
        "cert": pki.cert("client"),
        "pkcs8": pki.key("client"),
        "encrypted": encrypted_key(pki, "client", "s3cret"),
        "sec1": traditional_key(pki, "client"),
        "other": pki.key("other"),
    }


def test_a_pkcs8_key_plain_or_encrypted_with_its_password_loads(client_keys: dict[str, Path]) -> None:
    assert client_key_problem(client_keys["cert"], client_keys["pkcs8"], None) is None
    assert client_key_problem(client_keys["cert"], client_keys["encrypted"], "s3cret") is None


@pytest.mark.parametrize(
    ("key", "password", "said"),
    [
        ("encrypted", None, "is encrypted: give its password in key_password_file"),
        ("pkcs8", "s3cret", "is not encrypted: leave key_password_file out"),
        ("encrypted", "wrong", "do not load together with key_password_file's password"),
        ("sec1", None, "is not PKCS#8, which is all Kafka reads"),
        ("other", None, "do not load together"),
    ],
)
def test_a_client_key_kafka_would_not_load_is_one_line_saying_why(
    client_keys: dict[str, Path], key: str, password: str | None, said: str
) -> None:
    problem = client_key_problem(client_keys["cert"], client_keys[key], password)
    assert problem is not None and said in problem and "\n" not in problem, problem
    assert "s3cret" not in problem and "wrong" not in problem.replace("wrong password", "")
