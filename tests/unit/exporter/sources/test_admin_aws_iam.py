"""SASL AWS_MSK_IAM for the Admin client: the `admin.aws_iam` config, its one-line refusals, and the client
properties built from it (aws-msk-iam-auth's login module and callback, its JAAS options). Against the
library and a real broker: tests/integration/test_aws_msk_iam.py."""

from __future__ import annotations

from typing import Any

import pytest

from ctlplane.exporter.config import Settings
from ctlplane.exporter.config.file import ConfigError, parse_settings
from ctlplane.exporter.sources.admin import client as kafka_admin
from ctlplane.wiring import admin_security
from tests.unit.exporter.sources.test_admin_oauth import _named

CLUSTER = {"name": "msk", "nodes": [{"address": "127.0.0.1:9999"}], "bootstrap_servers": ["b-1.example:9098"]}
ROLE = "arn:aws:iam::123456789012:role/ctlplane-monitor"


def _settings(admin: dict[str, Any]) -> Settings:
    return parse_settings({"clusters": [{**CLUSTER, "admin": admin}]}, "t")


def test_the_default_chain_is_the_login_module_with_no_options() -> None:
    (cluster,) = _settings({"security_protocol": "SASL_SSL", "sasl_mechanism": "AWS_MSK_IAM", "aws_iam": {}}).clusters
    assert admin_security(cluster) == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "AWS_MSK_IAM",
        "sasl.jaas.config": "software.amazon.msk.auth.iam.IAMLoginModule required;",
        "sasl.client.callback.handler.class": "software.amazon.msk.auth.iam.IAMClientCallbackHandler",
    }


def test_a_profile_and_a_role_are_the_libraries_own_options() -> None:
    iam = {"profile": "monitoring", "role_arn": ROLE, "role_session_name": "ctlplane", "sts_region": "eu-west-1"}
    admin = {"security_protocol": "SASL_SSL", "sasl_mechanism": "AWS_MSK_IAM", "aws_iam": iam, "ca_file": None}
    (cluster,) = _settings(admin).clusters
    props = admin_security(cluster)
    assert props is not None
    assert props["sasl.jaas.config"] == (
        'software.amazon.msk.auth.iam.IAMLoginModule required awsProfileName="monitoring" '
        f'awsRoleArn="{ROLE}" awsRoleSessionName="ctlplane" awsStsRegion="eu-west-1";'
    )
    assert kafka_admin.aws_iam_properties(kafka_admin.AwsIamLogin(role_arn=ROLE))["sasl.jaas.config"] == (
        f'software.amazon.msk.auth.iam.IAMLoginModule required awsRoleArn="{ROLE}";'
    )


@pytest.mark.parametrize(
    ("admin", "says"),
    [
        ({"security_protocol": "SASL_SSL", "sasl_mechanism": "AWS_MSK_IAM"}, "AWS_MSK_IAM and aws_iam go together"),
        (
            {"security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN", "aws_iam": {}},
            "AWS_MSK_IAM and aws_iam go together",
        ),
        (
            {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "AWS_MSK_IAM", "aws_iam": {}},
            "TLS listeners only (port 9098): security_protocol SASL_SSL",
        ),
        (
            {"security_protocol": "SASL_SSL", "sasl_mechanism": "AWS_MSK_IAM", "aws_iam": {"role_arn": "ctlplane"}},
            "expected an IAM role ARN",
        ),
        (
            {"security_protocol": "SASL_SSL", "sasl_mechanism": "AWS_MSK_IAM", "aws_iam": {"role_session_name": "x1"}},
            "role_session_name and sts_region are for assuming role_arn",
        ),
        (
            {"security_protocol": "SASL_SSL", "sasl_mechanism": "AWS_MSK_IAM", "aws_iam": {"sts_region": "Ireland"}},
            "expected an AWS region",
        ),
        (
            {"security_protocol": "SASL_SSL", "sasl_mechanism": "AWS_MSK_IAM", "aws_iam": {"profile": 'a" b'}},
            "a profile name is one word",
        ),
        (
            {"security_protocol": "SASL_SSL", "sasl_mechanism": "AWS_MSK_IAM", "aws_iam": {"role": ROLE}},
            "aws_iam.role",  # a misspelt key is named, never ignored
        ),
    ],
)
def test_what_aws_iam_cannot_be_is_one_line(admin: dict[str, Any], says: str) -> None:
    with pytest.raises(ConfigError) as refused:
        _settings(admin)
    assert says in str(refused.value), str(refused.value)


def test_a_listener_that_offers_no_aws_msk_iam_is_a_refusal_naming_it() -> None:
    # what Kafka 4.3.1's client raises from the broker's SaslHandshake answer (SaslClientAuthenticator)
    message = "Client SASL mechanism 'AWS_MSK_IAM' not enabled in the server, enabled mechanisms are [PLAIN]"
    reason = kafka_admin.admin_reason(_named("UnsupportedSaslMechanismException", message), "AWS_MSK_IAM")
    assert reason == f"authentication failed: UnsupportedSaslMechanismException: {message}"
    assert kafka_admin.is_refusal(reason)
