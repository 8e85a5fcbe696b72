"""An encrypted PEM client key decrypted in ctlplane's JVM (sources/admin/client_key.py), as the Admin client
is made: OpenSSL 3's default scheme (PBES2), which Kafka's own PemStore cannot decrypt on JDK 17, and a PBES1
one, each back to the very PKCS#8 key that was encrypted; a wrong password is one line, without the key or the
password. The listener side is tests/integration/test_quorum_view.py's TLS test."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path

import pytest

from ctlplane.exporter.sources.admin.client_key import KEY, KEY_PASSWORD, ClientKeyError, decrypt_client_key
from harness.localkafka import encrypted_key, make_local_pki
from tests.integration.watch import shared_client


def _der(pem: str) -> bytes:
    return base64.b64decode("".join(line for line in pem.splitlines() if line and not line.startswith("-----")))


def _properties(key: Path, password: str) -> object:
    shared_client()  # the JVM
    from java.util import Properties

    properties = Properties()
    properties.setProperty(KEY, key.read_text())
    properties.setProperty(KEY_PASSWORD, password)
    return properties


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    pki = make_local_pki(tmp_path_factory.mktemp("pki"), ("client",))
    pbes1 = pki.directory / "client-pbes1.key"
    subprocess.run(
        ["openssl", "pkcs8", "-topk8", "-v1", "PBE-SHA1-3DES", "-in", str(pki.key("client")), "-out", str(pbes1),
         "-passout", "pass:s3cret"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return {"plain": pki.key("client"), "pbes2": encrypted_key(pki, "client", "s3cret"), "pbes1": pbes1}


@pytest.mark.parametrize("scheme", ["pbes2", "pbes1"])
def test_an_encrypted_key_is_handed_to_the_client_as_the_plain_key_it_was(keys: dict[str, Path], scheme: str) -> None:
    properties = _properties(keys[scheme], "s3cret")
    decrypt_client_key(properties)
    assert properties.getProperty(KEY_PASSWORD) is None  # type: ignore[attr-defined]
    handed = str(properties.getProperty(KEY))  # type: ignore[attr-defined]
    assert handed.startswith("-----BEGIN PRIVATE KEY-----") and _der(handed) == _der(keys["plain"].read_text())


def test_a_wrong_password_is_one_line_without_the_key_or_the_password(keys: dict[str, Path]) -> None:
    properties = _properties(keys["pbes2"], "not-it")
    with pytest.raises(ClientKeyError) as error:
        decrypt_client_key(properties)
    said = str(error.value)
    assert "does not decrypt with key_password_file's password" in said and "\n" not in said, said
    assert "not-it" not in said and keys["pbes2"].read_text().splitlines()[1] not in said


def test_a_plain_key_is_left_as_it_is(keys: dict[str, Path]) -> None:
    properties = _properties(keys["plain"], "s3cret")
    decrypt_client_key(properties)
    assert str(properties.getProperty(KEY)) == keys["plain"].read_text()  # type: ignore[attr-defined]
