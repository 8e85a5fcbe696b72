"""A cluster read through its nodes' metrics endpoints, as a config says it (config.py `metrics:`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctlplane.exporter.config.file import ConfigError, load_settings
from ctlplane.exporter.sources.endpoint.client import MetricsEndpoint
from ctlplane.exporter.sources.endpoint.evidence import missing_lifecycle_evidence
from ctlplane.exporter.sources.endpoint.profiles import PROFILES, profile
from ctlplane.wiring import build_targets
from harness.localkafka import encrypted_key, make_local_pki

MSK = """
clusters:
  - name: orders
    nodes:
      - {address: "b-1.orders.example:11001", name: broker-1, node_id: 1}
    metrics: {naming: %s}
"""


def _load(tmp_path: Path, text: str) -> list[object]:
    path = tmp_path / "ctlplane.yaml"
    path.write_text(text)
    return [target.endpoint for target in build_targets(load_settings(path))]


def test_a_node_of_a_metrics_cluster_is_read_at_its_endpoint_in_its_naming(tmp_path: Path) -> None:
    (endpoint,) = _load(tmp_path, MSK % "strimzi")
    assert isinstance(endpoint, MetricsEndpoint)
    assert endpoint.url == "http://b-1.orders.example:11001/metrics"
    assert endpoint.naming == profile("strimzi")


def test_a_rules_file_is_the_naming_and_one_it_cannot_use_is_one_problem(tmp_path: Path) -> None:
    rules = tmp_path / "kafka-metrics.yaml"
    rules.write_text("lowercaseOutputName: true\nrules:\n- pattern: 'kafka.(\\w+'\n  name: x\n")
    text = MSK.replace("metrics: {naming: %s}", f"metrics: {{rules_file: {rules}}}")
    with pytest.raises(ConfigError) as error:
        _load(tmp_path, text)
    lines = str(error.value).splitlines()
    assert len(lines) == 2 and lines[1].strip().startswith(f"clusters.0.metrics.rules_file: {rules}: rules[0]: pattern")
    rules.write_text(
        "lowercaseOutputName: true\nrules:\n- pattern: 'kafka.(\\w+)<type=(.+), name=(.+)><>Value'\n  name: k_$1\n"
    )
    (endpoint,) = _load(tmp_path, text)
    assert isinstance(endpoint, MetricsEndpoint) and endpoint.naming.lowercase_names


def test_a_rules_file_is_read_once_for_every_node_until_it_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Discovery makes each node's endpoint every round: the file is not read and parsed again each time."""
    rules = tmp_path / "kafka-metrics.yaml"
    rules.write_text("lowercaseOutputName: true\n")
    two = MSK.replace("metrics: {naming: %s}", f"metrics: {{rules_file: {rules}}}").replace(
        '      - {address: "b-1.orders.example:11001", name: broker-1, node_id: 1}',
        '      - {address: "b-1.orders.example:11001", name: broker-1, node_id: 1}\n'
        '      - {address: "b-2.orders.example:11001", name: broker-2, node_id: 2}',
    )
    reads: list[Path] = []
    read_text = Path.read_text

    def counted(path: Path, *args: object, **kwargs: object) -> str:
        if path == rules:
            reads.append(path)
        return read_text(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "read_text", counted)
    first, second = _load(tmp_path, two)
    again, _ = _load(tmp_path, two)
    assert (
        isinstance(first, MetricsEndpoint)
        and isinstance(second, MetricsEndpoint)
        and isinstance(again, MetricsEndpoint)
    )
    assert first.naming is second.naming is again.naming
    assert len(reads) <= 2  # check-config's read of it at load, and the one the endpoints share
    rules.write_text("lowercaseOutputName: false\nlowercaseOutputLabelNames: true\n")
    (changed, _) = _load(tmp_path, two)
    assert isinstance(changed, MetricsEndpoint) and not changed.naming.lowercase_names


def test_a_rules_file_that_serves_no_lifecycle_evidence_is_refused_saying_what_to_add(tmp_path: Path) -> None:
    """Brokers read through it would all be of unknown state: refused, not watched as if healthy."""
    rules = tmp_path / "kafka-metrics.yaml"
    rules.write_text("rules:\n- pattern: 'kafka.log<type=LogManager, name=(.+)><>Value'\n  name: kafka_log_$1\n")
    text = MSK.replace("metrics: {naming: %s}", f"metrics: {{rules_file: {rules}}}")
    with pytest.raises(ConfigError) as error:
        _load(tmp_path, text)
    (_, line) = str(error.value).splitlines()
    assert line.strip().startswith(f"clusters.0.metrics.rules_file: {rules}: serves none of a broker's lifecycle")
    assert "kafka.server:type=KafkaServer,name=BrokerState Value" in line


@pytest.mark.parametrize("name", PROFILES)
def test_every_profile_serves_lifecycle_evidence(name: str) -> None:
    assert missing_lifecycle_evidence(profile(name)) is None


@pytest.mark.parametrize(
    ("metrics", "says"),
    [
        ("{naming: strimzi, rules_file: /x.yaml}", "give naming or rules_file, not both"),
        ("{ca_file: /x.pem}", "ca_file is for scheme: https"),
        ("{cert_file: /c.pem, key_file: /c.key}", "cert_file is for scheme: https"),
        ("{scheme: https, cert_file: /c.pem}", "cert_file and key_file go together"),
        (
            "{username: prom, password_env: HOME, bearer_token_file: /t}",
            "give a user and password or bearer_token_file, not both",
        ),
        ("{naming: msk}", "clusters.0.metrics.naming"),
        ("{path: metrics}", "clusters.0.metrics.path"),
    ],
)
def test_a_wrong_metrics_setting_names_itself(tmp_path: Path, metrics: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says.replace(".", r"\.")):
        _load(tmp_path, MSK.replace("{naming: %s}", metrics))


def test_a_client_certificate_and_a_token_reach_the_endpoint_and_their_files_are_checked(tmp_path: Path) -> None:
    pki = make_local_pki(tmp_path / "pki", ("client", "other"))
    token = tmp_path / "token"
    token.write_text("t0ken\n")
    files = f"ca_file: {pki.ca}, cert_file: {pki.cert('client')}, key_file: {pki.key('client')}"
    text = MSK.replace("{naming: %s}", f"{{scheme: https, {files}, bearer_token_file: {token}}}")
    (endpoint,) = _load(tmp_path, text)
    assert isinstance(endpoint, MetricsEndpoint)
    assert (endpoint.ca_file, endpoint.cert_file, endpoint.key_file, endpoint.bearer_token_file) == (
        str(pki.ca), str(pki.cert("client")), str(pki.key("client")), str(token),
    )  # fmt: skip
    with pytest.raises(ConfigError) as mismatched:  # another certificate's key
        _load(tmp_path, text.replace(str(pki.key("client")), str(pki.key("other"))))
    (_, line) = str(mismatched.value).splitlines()
    pair = f"{pki.cert('client')}, {pki.key('other')}"
    assert line.strip().startswith(f"clusters.0.metrics: {pki.ca}, {pair} do not load as a CA and a certificate")
    not_a_ca = tmp_path / "not-a-ca.pem"
    not_a_ca.write_text("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n")
    with pytest.raises(ConfigError) as untrusting:  # loaded as the endpoint client loads it: as its CA
        _load(tmp_path, text.replace(f"ca_file: {pki.ca}", f"ca_file: {not_a_ca}"))
    (_, line) = str(untrusting.value).splitlines()
    assert line.strip().startswith(
        f"clusters.0.metrics: {not_a_ca}, {pki.cert('client')}, {pki.key('client')} do not load"
    )
    with pytest.raises(ConfigError) as missing:
        _load(tmp_path, text.replace(str(token), str(tmp_path / "gone")))
    (_, line) = str(missing.value).splitlines()
    assert line.strip() == f"clusters.0.metrics.bearer_token_file: {tmp_path / 'gone'}: no such file"


def test_an_encrypted_client_key_loads_with_its_password_file_and_a_wrong_one_is_one_problem(tmp_path: Path) -> None:
    pki = make_local_pki(tmp_path / "pki", ("client",))
    sealed = encrypted_key(pki, "client", "s3cret")
    password = tmp_path / "key-password"
    password.write_text("s3cret\n")
    files = f"ca_file: {pki.ca}, cert_file: {pki.cert('client')}, key_file: {sealed}, key_password_file: {password}"
    (endpoint,) = _load(tmp_path, MSK.replace("{naming: %s}", f"{{scheme: https, {files}}}"))
    assert isinstance(endpoint, MetricsEndpoint) and endpoint.key_password_file == str(password)
    password.write_text("not-it\n")
    with pytest.raises(ConfigError) as wrong:
        _load(tmp_path, MSK.replace("{naming: %s}", f"{{scheme: https, {files}}}"))
    (_, line) = str(wrong.value).splitlines()
    assert "(with key_password_file's password)" in line and "not-it" not in line, line
    without = files.replace(f", key_password_file: {password}", "")
    with pytest.raises(ConfigError, match="do not load as a CA and a certificate"):  # never a prompt on the tty
        _load(tmp_path, MSK.replace("{naming: %s}", f"{{scheme: https, {without}}}"))
    with pytest.raises(ConfigError, match="key_password_file is the password of key_file"):
        _load(tmp_path, MSK.replace("{naming: %s}", f"{{scheme: https, key_password_file: {password}}}"))
