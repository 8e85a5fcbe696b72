"""SASL OAUTHBEARER with OIDC client credentials (KIP-768) for the Admin client: the `admin.oauth` config, what
`check-config` says of it, the client properties built from it, and a refused login's one-line reason. Against a
real broker and token endpoint: tests/integration/test_oauth.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from ctlplane.cli import main
from ctlplane.exporter.config.file import ConfigError, parse_settings
from ctlplane.exporter.sources.admin import client as kafka_admin
from ctlplane.wiring import admin_security

SECRET = "oidc-s3cret-value"
CLUSTER = {"name": "c1", "nodes": [{"address": "127.0.0.1:9999"}], "bootstrap_servers": ["a:9092"]}
OAUTH = {"token_endpoint_url": "https://idp.example.com/oauth2/token", "client_id": "ctlplane", "scope": "kafka"}


def _admin(oauth: dict[str, Any], **admin: Any) -> dict[str, Any]:
    return {"security_protocol": "SASL_SSL", "sasl_mechanism": "OAUTHBEARER", "oauth": oauth, **admin}


def _parse(admin: dict[str, Any]) -> Any:
    return parse_settings({"clusters": [{**CLUSTER, "admin": admin}]}, "t")


def _props(cluster: Any) -> dict[str, str]:
    props = admin_security(cluster)
    assert props is not None
    return props


def test_oauth_client_credentials_build_kafkas_oidc_login_and_never_show_the_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OIDC_SECRET", SECRET)
    settings = _parse(_admin({**OAUTH, "client_secret_env": "OIDC_SECRET"}))
    cluster = settings.clusters[0]
    assert SECRET not in repr(settings) and SECRET not in str(settings)
    props = admin_security(cluster)
    assert kafka_admin.OAUTH_LOGIN_HANDLER == (
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"  # kafka-clients 4.3.1's
    )
    assert props == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.login.callback.handler.class": kafka_admin.OAUTH_LOGIN_HANDLER,
        "sasl.oauthbearer.token.endpoint.url": "https://idp.example.com/oauth2/token",
        "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
        f'clientId="ctlplane" clientSecret="{SECRET}" scope="kafka";',
    }
    login = kafka_admin.OAuthLogin("https://idp/t", "id", SECRET, None)
    assert SECRET not in repr(login) and SECRET not in str(login)
    no_scope = kafka_admin.security_properties("SASL_PLAINTEXT", "OAUTHBEARER", oauth=login)["sasl.jaas.config"]
    assert no_scope.endswith(f'clientId="id" clientSecret="{SECRET}";') and "scope" not in no_scope
    # from a file, without its trailing newline
    (tmp_path / "secret").write_text(SECRET + "\n")
    from_file = _parse(_admin({**OAUTH, "client_secret_file": str(tmp_path / "secret")})).clusters[0]
    assert f'clientSecret="{SECRET}"' in _props(from_file)["sasl.jaas.config"]
    with pytest.raises(ValueError, match="line break"):
        kafka_admin.security_properties("SASL_SSL", "OAUTHBEARER", oauth=kafka_admin.OAuthLogin("https://i/t", "a\nb"))


@pytest.mark.parametrize(
    ("admin", "message"),
    [
        (_admin({**OAUTH, "token_endpoint_url": "idp.example.com/token", "client_secret_env": "X"}), "http(s) URL"),
        (_admin({**OAUTH, "token_endpoint_url": "ftp://idp/token", "client_secret_env": "X"}), "http(s) URL"),
        (_admin({**OAUTH, "token_endpoint_url": "https:///token", "client_secret_env": "X"}), "with a host"),
        (_admin({**OAUTH, "token_endpoint_url": "https://u:pw@idp/t", "client_secret_env": "X"}), "password"),
        (_admin(OAUTH), "client_secret_file or client_secret_env"),
        (_admin({**OAUTH, "client_secret_env": "X", "client_secret_file": "/s"}), "not both"),
        (_admin({**OAUTH, "client_id": "a\nb", "client_secret_env": "X"}), "one line"),
        (_admin({**OAUTH, "client_secret_env": "X"}, sasl_mechanism="PLAIN"), "OAUTHBEARER and oauth go together"),
        (_admin(None), "OAUTHBEARER and oauth go together"),  # type: ignore[arg-type]
        (
            _admin({**OAUTH, "client_secret_env": "X"}, username="u", password_env="P"),
            "not a username and password",
        ),
    ],
)
def test_a_wrong_oauth_block_is_one_line_naming_the_field(admin: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match="admin") as raised:
        _parse(admin)
    assert message in str(raised.value), raised.value
    assert "pw@" not in str(raised.value)


def test_a_file_token_endpoint_needs_no_client_secret() -> None:
    settings = _parse(_admin({"token_endpoint_url": "file:///var/run/secrets/kafka/token"}))
    props = _props(settings.clusters[0])
    assert props["sasl.oauthbearer.token.endpoint.url"] == "file:///var/run/secrets/kafka/token"
    assert props["sasl.jaas.config"] == "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"


def test_check_config_says_in_one_line_why_a_client_secret_cannot_be_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("ctlplane.cli.check_java", lambda settings: None)  # no JVM needed to read a config

    def check(oauth: dict[str, Any]) -> tuple[int, str]:
        config = tmp_path / "c.yaml"
        config.write_text(yaml.safe_dump({"clusters": [{**CLUSTER, "admin": _admin(oauth)}]}))
        code = main(["check-config", str(config)])
        captured = capsys.readouterr()
        return code, captured.out + captured.err

    secret = tmp_path / "secret"
    secret.write_text(SECRET)
    assert check({**OAUTH, "client_secret_file": str(secret)})[0] == 0
    secret.chmod(0)
    unreadable = secret.read_text() if __import__("os").geteuid() == 0 else None  # root reads it all the same
    cases = [
        ({**OAUTH, "client_secret_file": str(tmp_path / "absent")}, "cannot read client_secret_file"),
        ({**OAUTH, "client_secret_env": "CTLPLANE_TEST_UNSET_SECRET"}, "CTLPLANE_TEST_UNSET_SECRET"),
        ({**OAUTH, "client_secret_env": "CTLPLANE_TEST_TWO_LINES"}, "line break"),
        ({**OAUTH, "token_endpoint_url": "not a url", "client_secret_file": str(secret)}, "http(s) URL"),
    ]
    if unreadable is None:
        cases.append(({**OAUTH, "client_secret_file": str(secret)}, "Permission denied"))
    monkeypatch.setenv("CTLPLANE_TEST_TWO_LINES", SECRET + "\nmore")
    for oauth, message in cases:
        code, output = check(oauth)
        assert code == 2 and message in output, output
        problem = [line for line in output.splitlines() if message in line]
        assert len(problem) == 1 and "clusters.0.admin" in problem[0], output
        assert SECRET not in output


class _Throwable(Exception):
    """A Java throwable as kafka_reason reads one (getCause, getMessage); its class name is Kafka's."""

    def __init__(self, message: str, cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.message, self.cause = message, cause

    def getCause(self) -> BaseException | None:
        return self.cause

    def getMessage(self) -> str:
        return self.message


def _named(name: str, message: str, cause: BaseException | None = None) -> BaseException:
    throwable: BaseException = type(name, (_Throwable,), {})(message, cause)
    return throwable


def test_a_refused_login_is_one_line_saying_authentication_failed_and_why() -> None:
    stack = (
        "org.apache.kafka.common.KafkaException: java.io.IOException: The response code 401 and error response "
        '{"invalid_client" - } was encountered reading the token endpoint response; will not attempt further retries'
        "\n\tat org.apache.kafka.common.security.oauthbearer.internals.secured.HttpJwtRetriever.retrieve(X.java:1)"
    )
    login = _named("KafkaException", "Failed to create new KafkaAdminClient", _named("LoginException", stack))
    assert kafka_admin.admin_reason(login) == (
        "authentication failed: the login got no token (IOException: The response code 401 and error response "
        '{"invalid_client" - } was encountered reading the token endpoint response; will not attempt further retries)'
    )
    refused = _named("ExecutionException", "x", _named("SaslAuthenticationException", '{"status":"invalid_token"}'))
    assert (
        kafka_admin.admin_reason(refused)
        == 'authentication failed: SaslAuthenticationException: {"status":"invalid_token"}'
    )
    timeout = _named("TimeoutException", "Timed out waiting for a node\nassignment")
    assert kafka_admin.admin_reason(timeout) == "TimeoutException: Timed out waiting for a node assignment"


def test_a_missing_acl_is_one_line_saying_not_authorised_and_both_refusals_are_told_from_faults() -> None:
    denied = _named(
        "ExecutionException",
        "x",
        _named("ClusterAuthorizationException", "Request Request(processor=0) is not authorized."),
    )
    reason = kafka_admin.admin_reason(denied)
    assert reason == "not authorised: ClusterAuthorizationException: Request Request(processor=0) is not authorized."
    assert kafka_admin.is_refusal(reason)
    refused = _named("ExecutionException", "x", _named("SaslAuthenticationException", "Authentication failed"))
    assert kafka_admin.is_refusal(kafka_admin.admin_reason(refused))
    timeout = _named("TimeoutException", "Timed out waiting for a node assignment")
    assert not kafka_admin.is_refusal(kafka_admin.admin_reason(timeout))
    assert not kafka_admin.is_refusal(None)
