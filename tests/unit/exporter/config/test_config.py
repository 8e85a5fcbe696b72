from __future__ import annotations

from pathlib import Path

import pytest

from ctlplane import cli
from ctlplane.cli import main
from ctlplane.exporter.config.file import ConfigError, load_settings

GOOD = """
clusters:
  - name: prod-a
    nodes:
      - {address: "kafka-1.example:9999", name: broker-1}
      - {address: "kafka-2.example:9999", role: controller}
    jmx: {username: monitor, password_env: CTLPLANE_TEST_PASSWORD}
scrape: {interval_seconds: 15, timeout_seconds: 10, workers: 8}
http: {host: 0.0.0.0, port: 18309}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ctlplane.yaml"
    path.write_text(text)
    return path


def test_valid_config_loads_with_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTLPLANE_TEST_PASSWORD", "s3cret")
    settings = load_settings(write(tmp_path, GOOD))
    cluster = settings.clusters[0]
    assert [n.label for n in cluster.nodes] == ["broker-1", "kafka-2.example:9999"]
    assert settings.jmx_for(cluster).password().get_secret_value() == "s3cret"  # type: ignore[union-attr]
    assert settings.health.metadata_stale_seconds == 15.0
    assert settings.scrape.slow_interval_seconds == 60.0  # the slow tier, four default rounds
    assert "s3cret" not in repr(settings)
    every_round = load_settings(write(tmp_path, GOOD.replace("workers: 8", "workers: 8, slow_interval_seconds: null")))
    assert every_round.scrape.slow_interval_seconds is None


@pytest.mark.parametrize(
    ("text", "field"),
    [
        (GOOD.replace("interval_seconds: 15", "interval_secs: 15"), "scrape.interval_secs"),
        (GOOD.replace('"kafka-1.example:9999"', '"kafka-1.example"'), "clusters.0.nodes.0.address"),
        (GOOD.replace("timeout_seconds: 10", "timeout_seconds: 30"), "scrape"),
        (GOOD.replace("port: 18309", "port: 99999"), "http.port"),
        (GOOD.replace("workers: 8", "workers: 8, slow_interval_seconds: 0"), "scrape.slow_interval_seconds"),
        (GOOD.replace("name: prod-a", "name: prod a"), "clusters.0.name"),
        (GOOD.replace("password_env: CTLPLANE_TEST_PASSWORD", "password: inline"), "clusters.0.jmx.password"),
        ("clusters: []\n", "clusters"),
        ("- just a list\n", "top level"),
        ("clusters: [\n", "not valid YAML"),
    ],
)
def test_mistakes_name_the_field_path(tmp_path: Path, text: str, field: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTLPLANE_TEST_PASSWORD", "x")
    with pytest.raises(ConfigError) as error:
        load_settings(write(tmp_path, text))
    assert field in str(error.value)


def test_missing_password_variable_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CTLPLANE_TEST_PASSWORD", raising=False)
    with pytest.raises(ConfigError, match="CTLPLANE_TEST_PASSWORD"):
        load_settings(write(tmp_path, GOOD))


def test_jmx_user_from_an_environment_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a Kubernetes Secret's generated user (Strimzi's jmx-username) reaches the container as a variable
    monkeypatch.setenv("CTLPLANE_TEST_PASSWORD", "s3cret")
    monkeypatch.setenv("CTLPLANE_TEST_USER", "gen-user-1")
    from_env = GOOD.replace("username: monitor,", "username_env: CTLPLANE_TEST_USER,")
    settings = load_settings(write(tmp_path, from_env))
    assert settings.jmx_for(settings.clusters[0]).username == "gen-user-1"
    with pytest.raises(ConfigError, match="give username or username_env, not both"):
        load_settings(write(tmp_path, GOOD.replace("username: monitor,", "username: a, username_env: B,")))
    monkeypatch.delenv("CTLPLANE_TEST_USER")
    with pytest.raises(ConfigError, match=r"clusters\.0\.jmx.*CTLPLANE_TEST_USER \(username_env\) is not set"):
        load_settings(write(tmp_path, from_env))


def test_plain_text_basic_auth_password_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTLPLANE_TEST_PASSWORD", "x")
    with pytest.raises(ConfigError, match=r"http\.basic_auth_users"):
        text = GOOD.replace("port: 18309}", "port: 18309, basic_auth_users: {prometheus: hunter2}}")
        load_settings(write(tmp_path, text))


def test_check_config_command_exit_codes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CTLPLANE_TEST_PASSWORD", "x")
    assert main(["check-config", str(write(tmp_path, GOOD))]) == 0
    assert "OK (1 cluster(s), 2 listed node(s))" in capsys.readouterr().out
    assert main(["check-config", str(write(tmp_path, GOOD.replace("workers: 8", "workers: 0")))]) == 2
    assert "scrape.workers" in capsys.readouterr().err
    assert main(["check-config", str(tmp_path / "missing.yaml")]) == 2


def _hostile_cases(tmp_path: Path) -> list[tuple[str, bytes, str]]:
    """(case, config file bytes, what the one-line error must name)."""
    not_a_dir = tmp_path / "a-file"
    not_a_dir.write_text("x")
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate")
    good = GOOD.encode()
    twice = GOOD + "clusters:\n  - name: other\n    nodes: [{address: 'h:1'}]\n"

    def with_(old: str, new: str) -> bytes:
        assert old in GOOD, old
        return GOOD.replace(old, new).encode()

    http_extra = "port: 18309}"
    web = tmp_path / "web-config.yml"
    web.write_text("http_server_config: {http2: false}\n")
    return [
        ("not UTF-8", good.replace(b"prod-a", b"prod-\xff"), "not UTF-8"),
        ("nested 10,000 deep", b"clusters: " + b"[" * 10_000 + b"]" * 10_000, "nested too deeply"),
        ("duplicate key", twice.encode(), "duplicate key 'clusters'"),
        ("inf interval", with_("interval_seconds: 15", "interval_seconds: .inf"), "scrape.interval_seconds"),
        ("huge interval", with_("interval_seconds: 15", "interval_seconds: 1e300"), "scrape.interval_seconds"),
        ("nan threshold", good + b"health: {metadata_stale_seconds: .nan}\n", "health.metadata_stale_seconds"),
        ("inf flush", good + b"history: {path: /tmp/h, flush_seconds: .inf}\n", "history.flush_seconds"),
        (
            "missing TLS cert",
            with_(http_extra, "port: 18309, tls: {cert_file: /nonexistent/c.pem, key_file: /nonexistent/k.pem}}"),
            "http.tls.cert_file",
        ),
        (
            "TLS cert that is not one",
            with_(http_extra, f"port: 18309, tls: {{cert_file: {garbage}, key_file: {garbage}}}}}"),
            "http.tls",
        ),
        ("missing truststore", good + b"jmx: {ssl: true, truststore: /nonexistent/trust.jks}\n", "jmx.truststore"),
        (
            "missing per-cluster truststore",
            with_(
                "password_env: CTLPLANE_TEST_PASSWORD}",
                "password_env: CTLPLANE_TEST_PASSWORD, ssl: true, truststore: /nonexistent/trust.p12}",
            ),
            "clusters.0.jmx.truststore",
        ),
        (
            "missing client key store password",
            with_(
                "password_env: CTLPLANE_TEST_PASSWORD}",
                f"password_env: CTLPLANE_TEST_PASSWORD, ssl: true, keystore: {garbage}, "
                "keystore_password_file: /nonexistent/password}",
            ),
            "clusters.0.jmx.keystore_password_file",
        ),
        ("missing JMX CA file", good + b"jmx: {ssl: true, ca_file: /nonexistent/ca.pem}\n", "jmx.ca_file"),
        (
            "JMX trust store that is none",
            good + f"jmx: {{ssl: true, truststore: {not_a_dir}}}\n".encode(),
            "jmx.truststore",
        ),
        ("JMX trust without TLS", good + f"jmx: {{truststore: {garbage}}}\n".encode(), "set ssl: true"),
        (
            "JMX truststore and ca_file",
            good + f"jmx: {{ssl: true, truststore: {garbage}, ca_file: {garbage}}}\n".encode(),
            "not both",
        ),
        (
            "JMX keystore without its password",
            good + f"jmx: {{ssl: true, keystore: {garbage}}}\n".encode(),
            "go together",
        ),
        (
            "malformed bcrypt hash",
            with_(http_extra, "port: 18309, basic_auth_users: {prometheus: '$2b$10$tooshort'}}"),
            "http.basic_auth_users",
        ),
        ("history under a file", good + f"history: {{path: {not_a_dir}/history}}\n".encode(), "history.path"),
        ("history on procfs", good + b"history: {path: /proc/self/ctlplane-history}\n", "history.path"),
        ("host with a space", with_('"kafka-1.example:9999"', '"kafka 1:9999"'), "clusters.0.nodes.0.address"),
        ("host with a bang", with_('"kafka-1.example:9999"', '"kafka!1:9999"'), "clusters.0.nodes.0.address"),
        ("empty label", with_('"kafka-1.example:9999"', '"kafka..example:9999"'), "clusters.0.nodes.0.address"),
        ("bare IPv6", with_('"kafka-1.example:9999"', '"::1:9999"'), "clusters.0.nodes.0.address"),
        ("http host", with_("host: 0.0.0.0", "host: 'not a host'"), "http.host"),
        (
            "unverified client certificates",
            with_(
                http_extra,
                f"port: 18309, tls: {{cert_file: {garbage}, key_file: {garbage}, "
                "client_auth_type: RequireAnyClientCert}}",
            ),
            "http.tls.client_auth_type",
        ),
        (
            "web config with a key ctlplane cannot honour",
            with_(http_extra, f"port: 18309, web_config_file: {web}}}"),
            "http_server_config not supported",
        ),
        ("password with jmxquery", with_("workers: 8}", "workers: 8, client: jmxquery}"), "scrape.client"),
    ]


def test_hostile_configs_exit_2_naming_the_field_never_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CTLPLANE_TEST_PASSWORD", "x")
    failures = []
    for case, content, field in _hostile_cases(tmp_path):
        path = tmp_path / "ctlplane.yaml"
        path.write_bytes(content)
        try:
            code = main(["check-config", str(path)])
        except BaseException as exc:  # a traceback is the failure this test is about
            failures.append(f"{case}: raised {type(exc).__name__}: {str(exc)[:200]}")
            continue
        err = capsys.readouterr().err
        if code != 2 or field not in err:
            failures.append(f"{case}: exit {code}, wanted 2 naming {field!r}; stderr: {err[:300]!r}")
    assert not failures, "\n".join(failures)


def test_hosts_operators_write_are_accepted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTLPLANE_TEST_PASSWORD", "x")
    for address in (
        "kafka-1.example:9999",
        "10.0.0.7:9999",
        "[::1]:9999",
        "[fe80::1]:9999",
        "localhost:1",
        "k8s-0.kafka.svc.cluster.local:5555",
    ):
        settings = load_settings(write(tmp_path, GOOD.replace('"kafka-1.example:9999"', f'"{address}"')))
        assert settings.clusters[0].nodes[0].address == address
    for host in ("::", "0.0.0.0", "localhost", "::1"):
        assert load_settings(write(tmp_path, GOOD.replace("host: 0.0.0.0", f"host: '{host}'"))).http.host == host


def test_run_refuses_what_check_config_refuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`run` validates with the same function: a config check-config refuses never starts serving."""
    monkeypatch.setenv("CTLPLANE_TEST_PASSWORD", "x")

    def served(settings: object) -> int:
        raise AssertionError(f"run served a config check-config refuses: {settings}")

    monkeypatch.setattr(cli, "serve", served)
    path = write(tmp_path, GOOD.replace("interval_seconds: 15", "interval_seconds: .inf"))
    assert main(["run", "--config", str(path)]) == 2
    assert "scrape.interval_seconds" in capsys.readouterr().err


def test_the_canary_is_off_unless_given_and_needs_the_brokers_and_a_topic_prefix(tmp_path: Path) -> None:
    base = "clusters:\n  - name: eu1\n    bootstrap_servers: ['k1:9092']\n"
    assert load_settings(write(tmp_path, base)).clusters[0].canary is None
    on = load_settings(write(tmp_path, base + "    canary: {topic_prefix: ctlplane-canary-}\n")).clusters[0].canary
    assert on is not None and (on.topic_prefix, on.interval_seconds) == ("ctlplane-canary-", 30.0)
    controllers = base.replace("bootstrap_servers", "bootstrap_controllers")
    with pytest.raises(ConfigError, match=r"the canary creates its topics through the brokers.*set bootstrap_servers"):
        load_settings(write(tmp_path, controllers + "    canary: {topic_prefix: c-}\n"))
    for wrong, field in (
        ("{topic_prefix: 'a b'}", "topic_prefix"),
        ("{topic_prefix: c-, interval_seconds: 1}", "interval"),
    ):
        with pytest.raises(ConfigError, match=rf"clusters\.0\.canary\.{field}"):
            load_settings(write(tmp_path, base + f"    canary: {wrong}\n"))
