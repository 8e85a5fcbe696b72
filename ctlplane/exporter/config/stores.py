"""What `check-config` can tell of a JMX trust or key store without a JVM: its kind, and a JKS store's
password. The JVM reads the same files when a node is first read (sources/jmx/tls_routes.py) and says the
rest (a PKCS12 store's password) then, in one line too."""

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
