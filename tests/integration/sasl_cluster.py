"""A small KRaft cluster for one SASL mechanism's real test (test_oauth.py, test_kerberos.py): one controller and
one broker whose SASL_PLAINTEXT listener takes the mechanism as the test configures it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from harness.localkafka import KafkaCluster, start_kraft_cluster
from harness.localkafka.process import ENV_EXTRA_JVM_OPTS
from tests.kafka_versions import KRAFT_UNDER_TEST


def start_sasl_cluster(name: str, workdir: Path, listener: Mapping[str, str], jvm_options: str) -> KafkaCluster:
    """One controller and one broker (the release under test): the broker's SASL_PLAINTEXT listener (the
    harness's, made for an unused PLAIN user) with `listener`'s settings added, e.g. its `sasl.enabled.mechanisms`
    and `listener.name.sasl_plaintext.<mechanism>.*`; both nodes' JVMs given `jvm_options` (the harness's extra
    JVM options, harness/localkafka/process.py)."""
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setenv(ENV_EXTRA_JVM_OPTS, jvm_options)
    try:
        return start_kraft_cluster(
            name,
            workdir,
            controllers=1,
            brokers=1,
            version=KRAFT_UNDER_TEST,
            sasl_users={"unused": "unused-password"},
            node_overrides={"broker-1": dict(listener)},
            timeout=90,
        )
    finally:
        monkeypatch.undo()
