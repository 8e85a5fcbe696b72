"""SASL OAUTHBEARER with OIDC client credentials (KIP-768) on real parts: a KRaft cluster (one controller, one
broker) whose SASL_PLAINTEXT listener also takes OAUTHBEARER, validated by Kafka's own
OAuthBearerValidatorCallbackHandler against a JWKS file the test writes (a `file:` JWKS URL: kafka-clients
4.3 ConfigurationUtils.validateFileUrl, allowed by the broker's `org.apache.kafka.sasl.oauthbearer.allowed.urls`),
with an expected audience and issuer; the token endpoint is a small HTTP server on loopback here that grants
client_credentials to one client id and secret and signs RS256 JWTs with a key the test makes. ctlplane's
QuorumReader logs in with Kafka's own OAuthBearerLoginCallbackHandler; ctlplane itself allows the token
endpoint in its JVM. A wrong secret, and a token signed by a key the broker does not know, are one-line
authentication errors that never show the secret."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest

from ctlplane.exporter.config import ClusterConfig
from ctlplane.exporter.sources.admin.client import ALLOWED_URLS_PROPERTY, QuorumReader
from ctlplane.wiring import admin_security
from harness.localkafka import LOOPBACK, KafkaCluster, clusters_config
from tests.integration.sasl_cluster import start_sasl_cluster
from tests.integration.served import check_and_run, run_config
from tests.integration.watch import shared_client

pytestmark = pytest.mark.kraft

AUDIENCE = "ctlplane-test-kafka"
CLIENT_ID = "ctlplane-monitor"
FORGER_ID = "forger"  # granted tokens, but signed by a key the broker's JWKS does not hold
SCOPE = "kafka.monitor"
TOKEN_SECONDS = 60
# what a SHA-256 DigestInfo starts with (RFC 8017 §9.2, note 1)
_SHA256_PREFIX = bytes.fromhex("3031300d060960864801650304020105000420")


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _java_int(big: Any) -> int:
    """A java.math.BigInteger as an int."""
    return int(str(big.toString()))


def _int_bytes(value: int) -> bytes:
    return value.to_bytes((value.bit_length() + 7) // 8, "big")


@dataclass(frozen=True)
class RsaKey:
    """An RSA key pair made by the JVM's own KeyPairGenerator (the venv has no `cryptography`); signing is
    RSASSA-PKCS1-v1_5 with SHA-256 (RS256, RFC 7518 §3.3) in Python."""

    kid: str
    n: int
    e: int
    d: int = field(repr=False)

    @classmethod
    def generate(cls, kid: str) -> RsaKey:
        import jpype

        generator = jpype.JClass("java.security.KeyPairGenerator").getInstance("RSA")
        generator.initialize(2048)
        pair = generator.generateKeyPair()
        public, private = pair.getPublic(), pair.getPrivate()
        return cls(
            kid,
            _java_int(public.getModulus()),
            _java_int(public.getPublicExponent()),
            _java_int(private.getPrivateExponent()),
        )

    def jwk(self) -> dict[str, str]:
        return {
            "kty": "RSA",
            "kid": self.kid,
            "use": "sig",
            "alg": "RS256",
            "n": _b64url(_int_bytes(self.n)),
            "e": _b64url(_int_bytes(self.e)),
        }

    def sign_jwt(self, claims: dict[str, Any]) -> str:
        header = {"alg": "RS256", "typ": "JWT", "kid": self.kid}
        signing_input = f"{_b64url(json.dumps(header).encode())}.{_b64url(json.dumps(claims).encode())}"
        size = (self.n.bit_length() + 7) // 8
        digest = _SHA256_PREFIX + hashlib.sha256(signing_input.encode()).digest()
        encoded = b"\x00\x01" + b"\xff" * (size - len(digest) - 3) + b"\x00" + digest
        signature = pow(int.from_bytes(encoded, "big"), self.d, self.n).to_bytes(size, "big")
        return f"{signing_input}.{_b64url(signature)}"


class TokenServer:
    """An OAuth 2.0 token endpoint (RFC 6749 §4.4, client credentials; the client authenticated by HTTP basic
    auth, §2.3.1, as Kafka's ClientCredentialsRequestFormatter sends it) on loopback."""

    def __init__(self, clients: dict[str, tuple[str, RsaKey]]) -> None:
        self.clients = clients
        self.granted: list[str] = []
        self.refused: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                status, answer = server.answer(self.headers.get("Authorization") or "", parse_qs(body))
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer((LOOPBACK, 0), Handler)
        self.url = f"http://{LOOPBACK}:{self.httpd.server_address[1]}/oauth2/token"
        self.issuer = f"http://{LOOPBACK}:{self.httpd.server_address[1]}/"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def answer(self, authorization: str, form: dict[str, list[str]]) -> tuple[int, dict[str, Any]]:
        scheme, _, encoded = authorization.partition(" ")
        try:
            client_id, _, secret = base64.b64decode(encoded).decode().partition(":")
        except ValueError:
            client_id = secret = ""
        known = self.clients.get(client_id)
        if scheme != "Basic" or known is None or not secrets.compare_digest(known[0], secret):
            self.refused.append(client_id)
            return 401, {"error": "invalid_client"}
        if form.get("grant_type") != ["client_credentials"]:
            return 400, {"error": "unsupported_grant_type"}
        now = int(time.time())
        claims = {"iss": self.issuer, "aud": AUDIENCE, "sub": client_id, "iat": now, "exp": now + TOKEN_SECONDS}
        claims |= {"scope": " ".join(form["scope"])} if "scope" in form else {}
        self.granted.append(client_id)
        token = known[1].sign_jwt(claims)
        return 200, {"access_token": token, "token_type": "Bearer", "expires_in": TOKEN_SECONDS}

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@dataclass
class OAuthCluster:
    cluster: KafkaCluster
    tokens: TokenServer
    secret: str


@pytest.fixture(scope="module")
def oauth_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OAuthCluster]:
    shared_client()  # the JVM the Admin client runs in (and the key generator)
    workdir = tmp_path_factory.mktemp("oauth")
    key, stranger = RsaKey.generate("ctlplane-test-key"), RsaKey.generate("not-in-the-jwks")
    secret = "s3cret-" + secrets.token_hex(12)
    tokens = TokenServer({CLIENT_ID: (secret, key), FORGER_ID: (secret, stranger)})
    jwks = workdir / "jwks.json"
    jwks.write_text(json.dumps({"keys": [key.jwk()]}))
    prefix = "listener.name.sasl_plaintext.oauthbearer"
    oauth_listener = {
        # the harness's SASL_PLAINTEXT listener takes OAUTHBEARER beside its PLAIN and SCRAM users
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
        f"{prefix}.sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ;",
        f"{prefix}.sasl.server.callback.handler.class": (
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
        ),
        "sasl.oauthbearer.jwks.endpoint.url": jwks.as_uri(),
        "sasl.oauthbearer.expected.audience": AUDIENCE,
        "sasl.oauthbearer.expected.issuer": tokens.issuer,
    }
    # the brokers' JVMs allow their JWKS URL
    cluster = start_sasl_cluster("oauth", workdir, oauth_listener, f"-D{ALLOWED_URLS_PROPERTY}={jwks.as_uri()}")
    try:
        yield OAuthCluster(cluster, tokens, secret)
    finally:
        cluster.stop(timeout=10)
        tokens.close()


def _reader(oauth: OAuthCluster, tmp_path: Path, name: str, client_id: str, secret: str) -> QuorumReader:
    """A QuorumReader built as `ctlplane run` builds it: from the `admin:` config, through wiring."""
    (tmp_path / f"{name}-secret").write_text(secret + "\n")
    bootstrap = oauth.cluster.listener_bootstrap("SASL_PLAINTEXT")
    config = ClusterConfig.model_validate(
        {
            "name": name,
            "nodes": [{"address": "127.0.0.1:1"}],
            "bootstrap_servers": bootstrap,
            "admin": {
                "security_protocol": "SASL_PLAINTEXT",
                "sasl_mechanism": "OAUTHBEARER",
                "oauth": {
                    "token_endpoint_url": oauth.tokens.url,
                    "client_id": client_id,
                    "client_secret_file": str(tmp_path / f"{name}-secret"),
                    "scope": SCOPE,
                },
            },
        }
    )
    return QuorumReader(name, bootstrap, controllers=False, timeout_seconds=10.0, security=admin_security(config))


def test_oauthbearer_reads_the_quorum_and_a_refused_token_is_one_line_saying_authentication_failed(
    oauth_cluster: OAuthCluster, tmp_path: Path
) -> None:
    import jpype

    oauth = oauth_cluster
    good = _reader(oauth, tmp_path, "oauth-good", CLIENT_ID, oauth.secret)
    wrong_secret = "wrong-" + oauth.secret[::-1]
    wrong = _reader(oauth, tmp_path, "oauth-wrong", CLIENT_ID, wrong_secret)
    forged = _reader(oauth, tmp_path, "oauth-forged", FORGER_ID, oauth.secret)
    try:
        view = good.read()
        assert view.error is None, view.error
        controller = oauth.cluster.controllers()[0].node_id
        assert view.leader_id == controller and view.replicas, view
        assert {r.replica_id for r in view.replicas} == {controller, oauth.cluster.brokers()[0].node_id}
        assert view.fenced == {oauth.cluster.brokers()[0].node_id: False}
        assert CLIENT_ID in oauth.tokens.granted
        # ctlplane allowed the token endpoint in its JVM itself (the test never set the property)
        allowed = str(jpype.JClass("java.lang.System").getProperty(ALLOWED_URLS_PROPERTY))
        assert oauth.tokens.url in allowed.split(","), allowed

        refused = wrong.read()
        assert CLIENT_ID in oauth.tokens.refused
        # the broker checks the signature: a token it cannot verify is refused in the SASL exchange
        forgery = forged.read()
        assert FORGER_ID in oauth.tokens.granted
        for what, answer in (("wrong secret", refused), ("unknown signing key", forgery)):
            error = answer.error or ""
            assert error.startswith("bootstrap.servers ") and "authentication failed: " in error, (what, error)
            assert "\n" not in error and oauth.secret not in error and wrong_secret not in error, (what, error)
            assert oauth.secret not in repr(answer) and wrong_secret not in repr(answer)
        # the cause named: the token endpoint's refusal (HttpJwtRetriever's words), the broker's verdict
        assert "the login got no token" in str(refused.error) and "401" in str(refused.error), refused.error
        assert "SaslAuthenticationException" in str(forgery.error) and "invalid_token" in str(forgery.error)
    finally:
        for reader in (good, wrong, forged):
            reader.close()


def _run_config(oauth: OAuthCluster, tmp_path: Path, wrong_secret: str) -> tuple[Path, int]:
    """A config of two views of the cluster through its OAUTHBEARER listener: the right secret from a variable,
    a wrong one from a file, each cluster with a token endpoint URL of its own (both the loopback server's)."""
    (tmp_path / "wrong-secret").write_text(wrong_secret + "\n")
    base = clusters_config((oauth.cluster,))[0]
    base.pop("bootstrap_controllers", None)
    bootstrap = oauth.cluster.listener_bootstrap("SASL_PLAINTEXT")

    def view(name: str, url: str, secret: dict[str, str]) -> dict[str, Any]:
        login = {"token_endpoint_url": url, "client_id": CLIENT_ID, "scope": SCOPE, **secret}
        admin = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "OAUTHBEARER", "oauth": login}
        return {**base, "name": name, "bootstrap_servers": bootstrap, "admin": admin}

    clusters = [
        view("oauth-good", oauth.tokens.url, {"client_secret_env": "CTLPLANE_TEST_OIDC_SECRET"}),
        view("oauth-wrong", oauth.tokens.url + "/v2", {"client_secret_file": str(tmp_path / "wrong-secret")}),
    ]
    return run_config(tmp_path, clusters)


def test_ctlplane_run_allows_every_clusters_token_endpoint_and_shows_no_secret(
    oauth_cluster: OAuthCluster, tmp_path: Path
) -> None:
    """`ctlplane check-config` and `ctlplane run` over the OAUTHBEARER listener, in a JVM of their own: the
    right secret answers, the wrong one is refused by the token endpoint (so its own URL was allowed too: Kafka
    would otherwise refuse it before asking), and neither secret is on a page or in the output."""
    oauth = oauth_cluster
    wrong_secret = "wrong-" + oauth.secret[::-1]
    config, port = _run_config(oauth, tmp_path, wrong_secret)
    env = {**os.environ, "CTLPLANE_TEST_OIDC_SECRET": oauth.secret}
    wanted = ['ctlplane_quorum_up{cluster="oauth-good"} 1.0', 'ctlplane_quorum_up{cluster="oauth-wrong"} 0.0']
    served = check_and_run(config, port, wanted, env=env, timeout=60, what="the views")
    assert "OK (2 cluster(s)" in served.checked, served.checked
    quorum = {c["name"]: c.get("quorum") or {} for c in served.snapshot()["clusters"]}
    error = str(quorum["oauth-wrong"].get("error") or "")
    assert "authentication failed: the login got no token" in error and "401" in error, error
    for secret in (oauth.secret, wrong_secret):
        assert not [text[:200] for text in served.texts() if secret in text], "a secret is shown"
