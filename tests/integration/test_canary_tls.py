"""The metadata canary through the session KRaft cluster's SSL listener (a client certificate required), its
client key encrypted in OpenSSL 3's default scheme (PBES2): the canary's clients are prepared as the quorum
reader's are (client.prepare_client decrypts the key in ctlplane's JVM, where Kafka's own ssl.key.password
lacks PBES2 on JDK 17), so its changes reach every broker; a wrong key password is one line, counted."""

from __future__ import annotations

import time
from pathlib import Path

from ctlplane.exporter.model import CanaryView
from ctlplane.exporter.sources.admin.canary import MetadataCanary
from ctlplane.exporter.sources.admin.client import security_properties
from harness.localkafka import KafkaCluster, encrypted_key
from tests.integration.watch import shared_client


def _canary(cluster: KafkaCluster, key: Path, password: str) -> MetadataCanary:
    shared_client()  # the JVM the Admin client runs in
    pki = cluster.pki
    assert pki is not None, "the session cluster's brokers have TLS listeners"
    security = security_properties(
        "SSL", ca_file=str(pki.ca), certificate=(pki.cert("client").read_text(), key.read_text()), key_password=password
    )
    bootstrap = tuple(cluster.listener_bootstrap("SSL"))
    return MetadataCanary(
        "canary-tls", bootstrap, topic_prefix="ctlplane-canary-tls-", interval_seconds=3.0, timeout_seconds=10.0,
        security=security,
    ).start()  # fmt: skip


def _until(canary: MetadataCanary, done: object, timeout: float) -> CanaryView:
    deadline = time.monotonic() + timeout
    while not done(view := canary.view()):  # type: ignore[operator]
        assert time.monotonic() < deadline, view
        time.sleep(0.5)
    return view


def test_the_canary_reads_every_broker_with_an_encrypted_client_key_and_a_wrong_password_is_said(
    kraft_cluster: KafkaCluster,
) -> None:
    assert kraft_cluster.pki is not None
    key = encrypted_key(kraft_cluster.pki, "client", "s3cret-key")
    canary = _canary(kraft_cluster, key, "s3cret-key")
    try:
        view = _until(
            canary,
            lambda v: (
                len(v.brokers) == len(kraft_cluster.brokers()) and all(b.buckets and b.buckets[-1] for b in v.brokers)
            ),
            90,
        )
        # the key decrypted and the client certificate taken: no change failed for the client or its login (a
        # creation may time out on a loaded host: counted as `timeout`, not the TLS's doing)
        assert not {"client", "authentication"} & set(view.errors_total), view
    finally:
        canary.close()
    wrong = _canary(kraft_cluster, key, "not-it")
    try:
        view = _until(wrong, lambda v: v.errors_total.get("client"), 30)
        assert view.error is not None and "does not decrypt with key_password_file's password" in view.error, view
        assert "not-it" not in view.error and not view.brokers, view
    finally:
        wrong.close()
