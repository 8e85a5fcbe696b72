"""What `check-config` can tell of a trust or key store (remote JMX's, the Admin client's) without a JVM: its
kind, and a JKS store's password. The JVM reads the same files when a node is first read
(sources/jmx/tls_routes.py) or the Admin client is made, and says the rest (a PKCS12 store's password) then,
in one line too. And of the Admin client's PEM key: its form and password (client_key_problem)."""

from __future__ import annotations

import hashlib
import ssl
from pathlib import Path

# sun.security.provider.JavaKeyStore / com.sun.crypto.provider.JceKeyStore: the file's magic number, and its
# integrity check, the last 20 bytes: SHA-1 over the password's UTF-16BE bytes, "Mighty Aphrodite" and the
# rest of the file (JavaKeyStore.getPreKeyedHash; JceKeyStore's is the same)
_JKS_MAGICS = (b"\xfe\xed\xfe\xed", b"\xce\xce\xce\xce")
_JKS_SALT = b"Mighty Aphrodite"
_DER_SEQUENCE = 0x30  # a PKCS#12 file is one DER SEQUENCE (PFX, RFC 7292)


def store_type(path: Path) -> str:
    """The store's type by its first bytes, as Kafka's ssl.truststore.type / ssl.keystore.type name it: JKS,
    JCEKS, PEM, else PKCS12 (a store that is none is store_problem's to say, and Kafka's then)."""
    try:
        with path.open("rb") as file:
            head = file.read(4096)
    except OSError:
        return "PKCS12"
    if head[:4] == _JKS_MAGICS[0]:
        return "JKS"
    if head[:4] == _JKS_MAGICS[1]:
        return "JCEKS"
    return "PEM" if b"-----BEGIN" in head else "PKCS12"


def store_problem(path: Path, password: str | None, *, certificates_allowed: bool) -> str | None:
    """Why `path` cannot serve as a trust store (`certificates_allowed`: PEM certificates too) or key store,
    or None. Only what is certain is said: a PKCS12 store's password is the JVM's to check."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        return f"cannot read {path}: {exc.strerror}"
    if b"-----BEGIN" in data[:4096]:
        if not certificates_allowed:
            return f"{path} is PEM, not a key store: make a PKCS12 one (openssl pkcs12 -export)"
        try:
            ssl.create_default_context().load_verify_locations(cafile=str(path))
        except ssl.SSLError as exc:
            return f"no certificate loads from {path} ({exc.reason or exc})"
        return None
    if data[:4] in _JKS_MAGICS:
        if password is not None and len(data) > 20:
            digest = hashlib.sha1(password.encode("utf-16-be") + _JKS_SALT + data[:-20], usedforsecurity=False)
            if digest.digest() != data[-20:]:
                return f"{path}: a wrong password (the JKS store's integrity check fails)"
        return None
    if data[:1] == bytes([_DER_SEQUENCE]):
        return None
    return f"{path} is neither a PKCS12 nor a JKS store" + (", nor PEM certificates" if certificates_allowed else "")


# The PEM private keys Kafka's Admin client reads from ssl.keystore.key: PKCS#8 only, a key given a password
# read as an EncryptedPrivateKeyInfo and one without as PKCS8EncodedKeySpec (DefaultSslEngineFactory.PemStore);
# OpenSSL's traditional PKCS#1 (`RSA PRIVATE KEY`) and SEC1 (`EC PRIVATE KEY`) forms load as neither
_PKCS8 = b"-----BEGIN PRIVATE KEY-----"
_PKCS8_ENCRYPTED = b"-----BEGIN ENCRYPTED PRIVATE KEY-----"
_OTHER_KEYS = (
    b"-----BEGIN RSA PRIVATE KEY-----",
    b"-----BEGIN EC PRIVATE KEY-----",
    b"-----BEGIN DSA PRIVATE KEY-----",
)


def client_key_problem(cert_file: Path, key_file: str | Path, password: str | None) -> str | None:
    """Why the Admin client's PEM certificate and key (`password`: key_password_file's) would not load in Kafka,
    or None: a key of a form Kafka does not read, an encrypted key without its password or a plain one with a
    password, a wrong password, a key that is not the certificate's (OpenSSL loads the pair, as Kafka would)."""
    try:
        key = Path(key_file).read_bytes()
    except OSError as exc:
        return f"cannot read {key_file}: {exc.strerror}"
    if any(form in key for form in _OTHER_KEYS):
        return (
            f"{key_file} is not PKCS#8, which is all Kafka reads: convert it "
            "(openssl pkcs8 -topk8 -nocrypt, or -v2 aes-256-cbc with key_password_file)"
        )
    if _PKCS8_ENCRYPTED in key and password is None:
        return f"{key_file} is encrypted: give its password in key_password_file"
    if _PKCS8 in key and password is not None:
        return f"{key_file} is not encrypted: leave key_password_file out (Kafka would read it as encrypted)"
    if _PKCS8 not in key and _PKCS8_ENCRYPTED not in key:
        return f"{key_file} holds no PEM private key (BEGIN PRIVATE KEY or BEGIN ENCRYPTED PRIVATE KEY)"
    try:
        ssl.create_default_context().load_cert_chain(str(cert_file), str(key_file), password=password)
    except ssl.SSLError as exc:
        reason = exc.reason or str(exc)
        with_password = " with key_password_file's password" if password is not None else ""
        return f"{cert_file} and {key_file} do not load together{with_password} ({reason})"
    return None
