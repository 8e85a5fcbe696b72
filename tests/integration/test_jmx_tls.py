"""Remote JMX over TLS, each cluster with its own CA and client key, read by one ctlplane JVM: a real Kafka
node and a JVM, each with the JDK's own agent (com.sun.management.jmxremote, which every broker runs).

Node A, a KRaft 4.3 node (one combined node), is locked as the JDK allows: TLS on the connector and the RMI
registry (`com.sun.management.jmxremote.registry.ssl=true`, sharing one port) and a client certificate
required (`ssl.need.client.auth=true`), its certificate from CA A. Node B has TLS on the connector only (its
registry plain, on a port of its own: the JDK cannot share one then), its certificate from CA B. Each is read
with its own trust (A's as PEM, B's as a PKCS#12 store), both routes loaded in the one JVM, and neither
trusts the other's node; a trust store replaced on disk takes effect at the next read (tls_routes.py)."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from ctlplane.exporter.model import Failure, MBeanQuery
from ctlplane.exporter.sources.jmx.base import Endpoint, JmxError, JmxTls
from ctlplane.exporter.sources.jmx.tls_routes import RECHECK_SECONDS
from harness.localkafka import (
    LOOPBACK,
    LocalPki,
    free_port,
    java_executable,
    make_local_pki,
    pkcs12_keystore,
    pkcs12_truststore,
    start_kraft_cluster,
)
from tests.integration.test_jmx_auth import SLEEPER, await_jmx_port
from tests.integration.watch import shared_client

RUNTIME = (MBeanQuery("java.lang:type=Runtime", ("StartTime",)),)
BROKER_STATE = (MBeanQuery("kafka.server:type=KafkaServer,name=BrokerState", ("Value",)),)
PASSWORD = "changeit"


@dataclass(frozen=True)
class TlsNodes:
    a: Endpoint  # registry over TLS, client certificate required, CA A
    b: Endpoint  # connector over TLS, registry plain, CA B
    pki_a: LocalPki
    pki_b: LocalPki
    work: Path


def _tls_flags(name: str, pki: LocalPki, *, registry_ssl: bool, client_auth: bool) -> list[str]:
    """The JDK agent's TLS: its key store, and the trust store it checks client certificates against."""
    return [
        "-Dcom.sun.management.jmxremote.ssl=true",
        f"-Dcom.sun.management.jmxremote.registry.ssl={str(registry_ssl).lower()}",
        f"-Dcom.sun.management.jmxremote.ssl.need.client.auth={str(client_auth).lower()}",
        f"-Djavax.net.ssl.keyStore={pkcs12_keystore(pki, name, PASSWORD)}",
        f"-Djavax.net.ssl.keyStorePassword={PASSWORD}",
        f"-Djavax.net.ssl.trustStore={pkcs12_truststore(pki, PASSWORD)}",
        f"-Djavax.net.ssl.trustStorePassword={PASSWORD}",
    ]


def _plain_registry_agent(work: Path, name: str, pki: LocalPki) -> tuple[int, subprocess.Popen[bytes]]:
    """A JVM (a source-file program, JEP 330) whose agent has TLS on the connector and a plain registry, on
    ports of their own (the JDK cannot share one then)."""
    port, rmi_port = free_port(), free_port()
    process = subprocess.Popen(
        [
            java_executable(),
            "-Xmx48m",
            "-XX:TieredStopAtLevel=1",
            "-Dcom.sun.management.jmxremote",
            f"-Dcom.sun.management.jmxremote.port={port}",
            f"-Dcom.sun.management.jmxremote.rmi.port={rmi_port}",
            f"-Dcom.sun.management.jmxremote.host={LOOPBACK}",
            f"-Djava.rmi.server.hostname={LOOPBACK}",
            "-Dcom.sun.management.jmxremote.authenticate=false",
            *_tls_flags(name, pki, registry_ssl=False, client_auth=False),
            str(work / "Sleeper.java"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=open(work / f"{name}.log", "wb"),
    )
    return port, process


@pytest.fixture(scope="module")
def tls_nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsNodes]:
    work = tmp_path_factory.mktemp("jmx-tls")
    (work / "Sleeper.java").write_text(SLEEPER)
    pki_a = make_local_pki(work / "ca-a", ("node-a", "ctlplane-a"))
    pki_b = make_local_pki(work / "ca-b", ("node-b",))
    port_b, process_b = _plain_registry_agent(work, "node-b", pki_b)
    # node A: a real Kafka node (KRaft, one combined node), its JMX locked as KAFKA_JMX_OPTS would lock it
    flags = _tls_flags("node-a", pki_a, registry_ssl=True, client_auth=True)
    try:
        kafka = start_kraft_cluster("jmx-tls", work, controllers=1, brokers=0, combined=True, jmx_options=flags)
    except BaseException:
        process_b.kill()
        raise
    try:
        await_jmx_port(port_b, process_b, work / "node-b.log")
        yield TlsNodes(
            a=Endpoint(
                LOOPBACK, kafka.nodes[0].jmx_port, ssl=True, registry_ssl=True,
                tls=JmxTls(str(pki_a.ca), None, str(pkcs12_keystore(pki_a, "ctlplane-a", PASSWORD)), PASSWORD),
            ),
            b=Endpoint(
                LOOPBACK, port_b, ssl=True, registry_ssl=False,
                tls=JmxTls(str(pkcs12_truststore(pki_b, PASSWORD)), PASSWORD),
            ),
            pki_a=pki_a,
            pki_b=pki_b,
            work=work,
        )  # fmt: skip
    finally:
        kafka.stop()
        process_b.kill()
        process_b.wait()


def _refusal(endpoint: Endpoint) -> JmxError:
    with pytest.raises(JmxError) as error:
        shared_client().read(endpoint, RUNTIME)
    return error.value


def test_each_node_is_read_with_its_own_clusters_trust_and_key_in_one_jvm(tls_nodes: TlsNodes) -> None:
    client = shared_client()
    for endpoint in (tls_nodes.a, tls_nodes.b, tls_nodes.a):
        (reading,) = client.read(endpoint, RUNTIME)
        assert float(reading.values["StartTime"]) > 0, endpoint
    # the Kafka node's own MBeans, over its locked JMX: RUNNING (3, BrokerState)
    (state,) = client.read(tls_nodes.a, BROKER_STATE)
    assert state.values["Value"] == 3.0, state


def test_no_cluster_trusts_another_clusters_ca_though_both_are_loaded(tls_nodes: TlsNodes) -> None:
    shared_client().read(tls_nodes.b, RUNTIME)  # B's route is in the JVM
    a_with_b_trust = replace(tls_nodes.a, tls=replace(tls_nodes.a.tls or JmxTls(), trust_file=str(tls_nodes.pki_b.ca)))
    error = _refusal(a_with_b_trust)
    assert error.failure is Failure.AUTH, str(error)
    assert "certificate is not trusted" in str(error) and "this cluster's truststore or ca_file" in str(error)
    b_with_a_trust = replace(tls_nodes.b, tls=JmxTls(str(tls_nodes.pki_a.ca)))
    error = _refusal(b_with_a_trust)
    assert error.failure is Failure.AUTH and "certificate is not trusted" in str(error), str(error)


def test_no_trust_given_is_the_jdks_own_which_names_what_to_give(tls_nodes: TlsNodes) -> None:
    error = _refusal(replace(tls_nodes.b, tls=None))
    assert error.failure is Failure.AUTH, str(error)
    assert "certificate is not trusted" in str(error) and "give jmx.truststore or jmx.ca_file" in str(error)


def test_a_node_that_needs_a_client_certificate_says_so(tls_nodes: TlsNodes) -> None:
    error = _refusal(replace(tls_nodes.a, tls=JmxTls(str(tls_nodes.pki_a.ca))))
    assert error.failure is Failure.AUTH, str(error)
    assert "client certificate" in str(error) and "jmx.keystore" in str(error), str(error)


def test_a_registry_setting_unlike_the_nodes_names_the_setting(tls_nodes: TlsNodes) -> None:
    # prometheus/jmx_exporter#942: a client/server mismatch of registry.ssl fails in ways users cannot read
    error = _refusal(replace(tls_nodes.a, registry_ssl=False))
    assert "registry" in str(error) and "registry_ssl: true" in str(error), str(error)
    error = _refusal(replace(tls_nodes.b, registry_ssl=True))
    assert "registry" in str(error) and "registry_ssl: false" in str(error), str(error)


def test_a_wrong_key_store_password_is_one_line(tls_nodes: TlsNodes) -> None:
    tls = tls_nodes.a.tls
    assert tls is not None
    error = _refusal(replace(tls_nodes.a, tls=replace(tls, key_password="wrong")))
    assert error.failure is Failure.AUTH, str(error)
    assert str(error) == f"{tls_nodes.a.address}: JMX TLS: {tls.key_file}: a wrong key store password"


def test_a_trust_store_replaced_on_disk_takes_effect_at_the_next_read(tls_nodes: TlsNodes, tmp_path: Path) -> None:
    # as cert-manager renews a Secret: the same path, new content; no restart, no reload
    trust = tmp_path / "ca.pem"
    shutil.copy(tls_nodes.pki_b.ca, trust)
    endpoint = replace(tls_nodes.b, tls=JmxTls(str(trust)))
    client = shared_client()
    client.read(endpoint, RUNTIME)
    replacement = tmp_path / "ca.pem.new"
    shutil.copy(tls_nodes.pki_a.ca, replacement)
    replacement.replace(trust)  # the wrong CA now: the connection must be made again, and refused
    time.sleep(RECHECK_SECONDS + 0.1)
    error = _refusal(endpoint)
    assert "certificate is not trusted" in str(error), str(error)
    shutil.copy(tls_nodes.pki_b.ca, replacement)
    replacement.replace(trust)
    time.sleep(RECHECK_SECONDS + 0.1)
    (reading,) = client.read(endpoint, RUNTIME)
    assert float(reading.values["StartTime"]) > 0
