"""An encrypted PEM client key, decrypted in ctlplane's JVM before Kafka's Admin client is made.

Kafka's PemStore (DefaultSslEngineFactory) decrypts `ssl.keystore.key` with `ssl.key.password` through
`SecretKeyFactory.getInstance(EncryptedPrivateKeyInfo.getAlgName())`. For a key in PBES2, the scheme OpenSSL 3
writes by default (`openssl pkcs8 -topk8`: PBKDF2 with HMAC-SHA256, AES-256-CBC), that name is "PBES2", which
no JDK 17 provider has: the client fails with "PBES2 SecretKeyFactory not available" (measured on JDK 17 and
kafka-clients 4.3.1). The scheme's parameters name the real algorithm (`PBEWithHmacSHA256AndAES_256`), as a
PBES1 key's own name does, so the key is decrypted here with the JDK's own classes and handed to the client as
plain PKCS#8: both settings are password-type configs, held in memory only and never logged by Kafka.
"""

from __future__ import annotations

import base64
import re
from typing import Any

KEY = "ssl.keystore.key"
KEY_PASSWORD = "ssl.key.password"
_ENCRYPTED = re.compile(r"-----BEGIN ENCRYPTED PRIVATE KEY-----(.*?)-----END ENCRYPTED PRIVATE KEY-----", re.S)


class ClientKeyError(Exception):
    """The client key does not decrypt with its password (one line, no key material)."""


def decrypt_client_key(properties: Any) -> None:
    """Replace an encrypted PEM `ssl.keystore.key` of `properties` (a java.util.Properties) by the plain PKCS#8
    key and drop `ssl.key.password`; nothing where the key is not encrypted. ClientKeyError if it does not
    decrypt."""
    password, key = properties.getProperty(KEY_PASSWORD), properties.getProperty(KEY)
    if password is None or key is None or (found := _ENCRYPTED.search(str(key))) is None:
        return
    plain = _decrypted(base64.b64decode("".join(found.group(1).split())), str(password))
    properties.setProperty(KEY, _pem("PRIVATE KEY", plain))
    properties.remove(KEY_PASSWORD)


def _decrypted(der: bytes, password: str) -> bytes:
    import jpype
    from java.lang import String
    from javax.crypto import Cipher, EncryptedPrivateKeyInfo, SecretKeyFactory
    from javax.crypto.spec import PBEKeySpec

    try:
        info = EncryptedPrivateKeyInfo(jpype.JArray(jpype.JByte)(der))
        parameters = info.getAlgParameters()
        algorithm = str(parameters.toString()) if str(info.getAlgName()) == "PBES2" else str(info.getAlgName())
        secret = SecretKeyFactory.getInstance(algorithm).generateSecret(PBEKeySpec(String(password).toCharArray()))
        cipher = Cipher.getInstance(algorithm)
        cipher.init(Cipher.DECRYPT_MODE, secret, parameters)
        return bytes(info.getKeySpec(cipher).getEncoded())
    except jpype.JException as exc:
        # a wrong password fails the padding or the key's own encoding: InvalidKeySpecException
        raise ClientKeyError(
            f"the client key (key_file) does not decrypt with key_password_file's password: "
            f"{exc.getClass().getSimpleName()}"
        ) from None


def _pem(label: str, der: bytes) -> str:
    text = base64.b64encode(der).decode()
    lines = "\n".join(text[i : i + 64] for i in range(0, len(text), 64))
    return f"-----BEGIN {label}-----\n{lines}\n-----END {label}-----\n"
