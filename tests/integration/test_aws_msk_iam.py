"""SASL AWS_MSK_IAM as ctlplane configures it, run through AWS's own library (aws-msk-iam-auth, carried with
the Kafka client) in ctlplane's JVM: the login's signed payload (SigV4 over `kafka-cluster:Connect`, what an
MSK broker checks) is signed with the credentials the config names, from AWS's default chain or a profile of
the shared credentials file, and the signature checks with that secret (recomputed here) and no other.

No MSK broker runs here (its IAM check is AWS's service), nor STS: `role_arn` is not tested. A real Kafka
broker's SASL_SSL listener, which offers no AWS_MSK_IAM, refuses it by name: test_quorum_view.py's TLS test."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from ctlplane.exporter.sources.admin import client as kafka_admin
from tests.integration.watch import shared_client

HOST = "b-1.monitoring.abc123.c2.kafka.eu-west-1.amazonaws.com"  # a broker's name, as MSK's bootstrap gives it
CHAIN_KEY, CHAIN_SECRET = "AKIDCTLPLANECHAIN", "chain/Secret+Key0000000000000000000000000"
PROFILE_KEY, PROFILE_SECRET = "AKIDCTLPLANEPROFILE", "profile/Secret+Key000000000000000000000"
# the default chain's first source: Java system properties (SystemPropertyCredentialsProvider), which a test
# can set in a running JVM (environment variables are read once, at its start)
PROPERTIES = {"aws.accessKeyId": CHAIN_KEY, "aws.secretAccessKey": CHAIN_SECRET, "aws.region": "eu-west-1"}


def _java(name: str) -> Any:
    return kafka_admin.java_class(name)


@pytest.fixture
def aws_properties(tmp_path: Path) -> Iterator[Path]:
    """The chain's credentials as system properties, and a shared credentials file with profile ctlplane-test
    (aws.sharedCredentialsFile), restored after."""
    shared_client()  # the JVM
    from java.lang import System

    credentials = tmp_path / "credentials"
    credentials.write_text(
        f"[ctlplane-test]\naws_access_key_id = {PROFILE_KEY}\naws_secret_access_key = {PROFILE_SECRET}\n"
    )
    given = {**PROPERTIES, "aws.sharedCredentialsFile": str(credentials)}
    before = {name: System.getProperty(name) for name in given}
    for name, value in given.items():
        System.setProperty(name, value)
    try:
        yield credentials
    finally:
        for name, value in before.items():
            if value is None:
                System.clearProperty(name)
            else:
                System.setProperty(name, value)


def _signed_login(login: kafka_admin.AwsIamLogin, host: str) -> dict[str, str]:
    """The first SASL message a client configured with ctlplane's properties sends `host`, as Kafka makes it:
    the JAAS config parsed by Kafka (JaasContext), the library's callback handler configured with its entries,
    its login module registering its SASL client, which is asked as SaslClientAuthenticator asks it."""
    import jpype
    from java.lang import Thread
    from java.util import HashMap

    props = kafka_admin.aws_iam_properties(login)
    configs = HashMap()
    configs.put("sasl.jaas.config", _java("org.apache.kafka.common.config.types.Password")(props["sasl.jaas.config"]))
    thread = Thread.currentThread()
    previous = thread.getContextClassLoader()
    thread.setContextClassLoader(kafka_admin.class_loader())  # as create_admin: the client's loader
    try:
        entries = (
            _java("org.apache.kafka.common.security.JaasContext").loadClientContext(configs).configurationEntries()
        )
        handler = _java(props["sasl.client.callback.handler.class"])()
        handler.configure(configs, props["sasl.mechanism"], entries)
        module = _java(kafka_admin.IAM_LOGIN_MODULE)()
        module.initialize(jpype.JClass("javax.security.auth.Subject")(), handler, HashMap(), HashMap())
        mechanisms = jpype.JArray(jpype.JString)([props["sasl.mechanism"]])
        client = jpype.JClass("javax.security.sasl.Sasl").createSaslClient(
            mechanisms, None, "kafka", host, HashMap(), handler
        )
        payload = bytes(client.evaluateChallenge(jpype.JArray(jpype.JByte)(0)))
    finally:
        thread.setContextClassLoader(previous)
    message: dict[str, str] = json.loads(payload)
    return message


def _signature(message: dict[str, str], secret: str) -> str:
    """SigV4 of the presigned GET the payload stands for (AWS's "Signature Version 4" for query strings; the
    payload's hash is the empty body's), recomputed with `secret`."""
    query = {
        "Action": message["action"],
        "X-Amz-Algorithm": message["x-amz-algorithm"],
        "X-Amz-Credential": message["x-amz-credential"],
        "X-Amz-Date": message["x-amz-date"],
        "X-Amz-Expires": message["x-amz-expires"],
        "X-Amz-SignedHeaders": message["x-amz-signedheaders"],
    }
    if "x-amz-security-token" in message:
        query["X-Amz-Security-Token"] = message["x-amz-security-token"]
    encoded = "&".join(f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}" for k, v in sorted(query.items()))
    canonical = "\n".join(["GET", "/", encoded, f"host:{message['host']}", "", "host", hashlib.sha256(b"").hexdigest()])
    _, day, region, service, _ = message["x-amz-credential"].split("/")
    scope = f"{day}/{region}/{service}/aws4_request"
    text = "\n".join(["AWS4-HMAC-SHA256", message["x-amz-date"], scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = ("AWS4" + secret).encode()
    for part in (day, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()


def test_the_default_chain_signs_the_login_for_the_broker_asked(aws_properties: Path) -> None:
    message = _signed_login(kafka_admin.AwsIamLogin(), HOST)
    assert (message["host"], message["action"], message["version"]) == (HOST, "kafka-cluster:Connect", "2020_10_22")
    key, _, region, service, _ = message["x-amz-credential"].split("/")
    # the region is the broker name's (MSK's names hold it), the service MSK's IAM actions'
    assert (key, region, service) == (CHAIN_KEY, "eu-west-1", "kafka-cluster"), message
    assert message["x-amz-signature"] == _signature(message, CHAIN_SECRET)
    assert message["x-amz-signature"] != _signature(message, PROFILE_SECRET)  # the check can fail


def test_a_profile_signs_with_its_own_credentials_not_the_chains(aws_properties: Path) -> None:
    message = _signed_login(kafka_admin.AwsIamLogin(profile="ctlplane-test"), HOST)
    assert message["x-amz-credential"].split("/")[0] == PROFILE_KEY, message
    assert message["x-amz-signature"] == _signature(message, PROFILE_SECRET)
    assert message["x-amz-signature"] != _signature(message, CHAIN_SECRET)
