"""A throw-away certificate authority for local clusters and tests, made with the `openssl` command.

Kafka reads PEM directly (KIP-651, 2.7+: `ssl.keystore.type=PEM` / `ssl.truststore.type=PEM`), so no Java
keystore is needed: a key and its certificate chain in one file for a broker, the CA's certificate to
trust. Keys are EC P-256 in PKCS#8 without a password (Kafka's PemStore takes RSA, DSA and EC keys, and a
key password only when the key is encrypted: clients/.../security/ssl/DefaultSslEngineFactory.java).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from harness.localkafka.errors import LocalKafkaError
from harness.localkafka.process import java_executable

_EC_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


@dataclass(frozen=True)
class LocalPki:
    """Files of one CA. `<name>.pem` / `<name>.key` per issued name; `<name>-bundle.pem` is key + chain."""

    directory: Path

    @property
    def ca(self) -> Path:
        return self.directory / "ca.pem"

    def cert(self, name: str) -> Path:
        return self.directory / f"{name}.pem"

    def key(self, name: str) -> Path:
        return self.directory / f"{name}.key"

    def bundle(self, name: str) -> Path:
        return self.directory / f"{name}-bundle.pem"


def pkcs12_keystore(pki: LocalPki, name: str, password: str) -> Path:
    """`<name>.p12`: the name's key and certificate chain as a PKCS#12 key store under the alias `name`, for
    Java servers that take no PEM (jmx_exporter's `httpServer.ssl.keyStore`)."""
    store = pki.directory / f"{name}.p12"
    if not store.is_file():
        _openssl(
            "pkcs12", "-export", "-in", pki.cert(name).name, "-inkey", pki.key(name).name, "-certfile", "ca.pem",
            "-name", name, "-out", store.name, "-passout", f"pass:{password}", cwd=pki.directory,
        )  # fmt: skip
    return store


def encrypted_key(pki: LocalPki, name: str, password: str) -> Path:
    """`<name>-encrypted.key`: the name's key as an encrypted PKCS#8 PEM (`BEGIN ENCRYPTED PRIVATE KEY`), in
    OpenSSL 3's default scheme for `pkcs8 -topk8`: PBES2, PBKDF2 with HMAC-SHA256, AES-256-CBC."""
    key = pki.directory / f"{name}-encrypted.key"
    if not key.is_file():
        _openssl(
            "pkcs8", "-topk8", "-v2", "aes-256-cbc", "-in", pki.key(name).name, "-out", key.name,
            "-passout", f"pass:{password}", cwd=pki.directory,
        )  # fmt: skip
    return key


def traditional_key(pki: LocalPki, name: str) -> Path:
    """`<name>-sec1.key`: the name's EC key in OpenSSL's traditional form (`BEGIN EC PRIVATE KEY`, SEC1)."""
    key = pki.directory / f"{name}-sec1.key"
    if not key.is_file():
        _openssl("ec", "-in", pki.key(name).name, "-out", key.name, cwd=pki.directory)
    return key


def pkcs12_truststore(pki: LocalPki, password: str) -> Path:
    """`truststore.p12`: the CA's certificate as a trusted entry, made by the JDK's keytool (OpenSSL 3.0 cannot
    mark a certificate trusted for Java: a PKCS#12 it exports without a key holds nothing a JDK trusts)."""
    store = pki.directory / "truststore.p12"
    if not store.is_file():
        _keytool("-importcert", "-noprompt", "-storetype", "PKCS12", "-alias", "ca", "-file", str(pki.ca),
                 "-keystore", str(store), "-storepass", password)  # fmt: skip
    return store


def jks_truststore(pki: LocalPki, password: str) -> Path:
    """`truststore.jks`: the CA's certificate as a trusted entry of a JKS store (Java's format before 9)."""
    store = pki.directory / "truststore.jks"
    if not store.is_file():
        _keytool("-importcert", "-noprompt", "-storetype", "JKS", "-alias", "ca", "-file", str(pki.ca),
                 "-keystore", str(store), "-storepass", password)  # fmt: skip
    return store


def jks_keystore(pki: LocalPki, name: str, password: str, key_password: str | None = None) -> Path:
    """`<name>.jks`: the name's key and chain (pkcs12_keystore's, converted by keytool) as a JKS key store, its
    key entry under `key_password` where given (a JKS key entry may have a password of its own)."""
    store = pki.directory / f"{name}.jks"
    if not store.is_file():
        source = pkcs12_keystore(pki, name, password)
        _keytool("-importkeystore", "-noprompt", "-srckeystore", str(source), "-srcstoretype", "PKCS12",
                 "-srcstorepass", password, "-destkeystore", str(store), "-deststoretype", "JKS",
                 "-deststorepass", password, "-srcalias", name, "-destalias", name,
                 "-destkeypass", key_password or password)  # fmt: skip
    return store


def _keytool(*args: str) -> None:
    keytool = str(Path(java_executable()).parent / "keytool")
    try:
        subprocess.run([keytool, *args], check=True, capture_output=True, text=True, timeout=60)
    except subprocess.CalledProcessError as exc:
        raise LocalKafkaError(f"keytool {args[0]} failed: {exc.stdout.strip()} {exc.stderr.strip()}") from exc


def _openssl(*args: str, cwd: Path) -> None:
    try:
        subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, text=True, timeout=60)
    except FileNotFoundError as exc:
        raise LocalKafkaError("the `openssl` command is needed to make test certificates") from exc
    except subprocess.CalledProcessError as exc:
        raise LocalKafkaError(f"openssl {' '.join(args[:2])} failed: {exc.stderr.strip()}") from exc


def make_local_pki(directory: Path, names: tuple[str, ...] = ("server", "client"), *, rogue: bool = False) -> LocalPki:
    """A CA in `directory` and, per name, a certificate it signed for 127.0.0.1 (valid two days); with
    `rogue`, also a self-signed `rogue` certificate that no one trusts. Made once: an existing CA is kept."""
    directory.mkdir(parents=True, exist_ok=True)
    pki = LocalPki(directory)
    if not pki.ca.is_file():
        _openssl(
            "req", "-x509", *_EC_KEY, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=test-ca",
            cwd=directory,
        )  # fmt: skip
    (directory / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    for name in names:
        if pki.bundle(name).is_file():
            continue
        _openssl(
            "req", *_EC_KEY, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}", cwd=directory
        )
        _openssl(
            "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", f"{name}.pem", "-days", "2", "-extfile", "san.ext", cwd=directory,
        )  # fmt: skip
        pki.bundle(name).write_text(pki.key(name).read_text() + pki.cert(name).read_text() + pki.ca.read_text())
    if rogue and not pki.cert("rogue").is_file():
        _openssl(
            "req", "-x509", *_EC_KEY, "-keyout", "rogue.key", "-out", "rogue.pem", "-days", "2", "-subj", "/CN=rogue",
            cwd=directory,
        )  # fmt: skip
    return pki
