"""SASL GSSAPI (Kerberos) on real parts: an MIT Kerberos KDC (Debian's krb5-kdc) with a realm this test makes
in a temporary directory, and a KRaft cluster (one controller, one broker) whose SASL_PLAINTEXT listener takes
GSSAPI alone, the broker logged in as kafka/localhost with its keytab. `ctlplane run` watches that listener
as four clusters, each with a keytab of its own: the right one, one whose key the KDC has since changed
(`cpw -randkey`), one of a second realm whose KDC is not running (so its krb5.conf is merged with the first's
in ctlplane's one JVM), and one asking for the wrong service. The first reads the quorum's view; each other is
`ctlplane_quorum_up 0` with a one-line reason starting "authentication failed:", and no key of any keytab is on
a page or in the output."""

from __future__ import annotations

import base64
import json
import logging
import os
import re
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ctlplane.exporter.config import ClusterConfig
from ctlplane.exporter.sources.admin.client import QuorumReader, use_krb5_conf
from ctlplane.exporter.sources.admin.kerberos import load_krb5_conf, merge_krb5_confs
from ctlplane.wiring import admin_security
from harness.localkafka import KafkaCluster, clusters_config
from harness.localkafka.kdc import LocalKdc, kdc_tools_missing
from tests.integration.sasl_cluster import start_sasl_cluster
from tests.integration.served import check_and_run, run_config
from tests.integration.watch import shared_client

log = logging.getLogger(__name__)

pytestmark = [
    pytest.mark.kraft,
    pytest.mark.skipif(kdc_tools_missing() is not None, reason=str(kdc_tools_missing())),
]

REALM = "CTLPLANE.TEST"
OTHER_REALM = "ELSEWHERE.TEST"  # its KDC never runs
CANARY_PREFIX = "ctlplane-canary-krb-"
BROKER_PRINCIPAL = "kafka/localhost"  # the client asks for kafka/<the broker's host name>: SaslChannelBuilder
# builds the authenticator with socket.getInetAddress().getHostName(), "localhost" for 127.0.0.1 here


@dataclass
class KerberosCluster:
    cluster: KafkaCluster
    kdc: LocalKdc
    other: LocalKdc
    keytabs: dict[str, Path]  # cluster view -> its keytab


def _keys(keytab: Path) -> list[bytes]:
    """Every key in `keytab` (MIT format 0x502; the test's own reader, to look for them in the output)."""
    data, offset, keys = keytab.read_bytes(), 2, []
    while offset + 4 <= len(data):
        (size,) = struct.unpack_from(">i", data, offset)
        offset += 4
        if size <= 0:
            offset -= size
            if size == 0:
                break
            continue
        entry, offset = data[offset : offset + size], offset + size
        (count,) = struct.unpack_from(">H", entry, 0)
        at = 2
        for _ in range(count + 1):
            at += 2 + struct.unpack_from(">H", entry, at)[0]
        at += 4 + 4 + 1 + 2  # name type, timestamp, vno8, key type
        (length,) = struct.unpack_from(">H", entry, at)
        keys.append(entry[at + 2 : at + 2 + length])
    return keys


@pytest.fixture(scope="module")
def kerberos_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KerberosCluster]:
    workdir = tmp_path_factory.mktemp("kerberos")
    kdc = LocalKdc.create(workdir / "kdc", REALM)
    other = LocalKdc.create(workdir / "other-kdc", OTHER_REALM, hosts=(".elsewhere.test",))
    keytabs: dict[str, Path] = {}
    kdc.add_principal(BROKER_PRINCIPAL)
    broker_keytab = kdc.keytab(BROKER_PRINCIPAL, workdir / "broker.keytab")
    for view, principal in (("krb-good", "ctlplane"), ("krb-stale", "ctlplane-stale"), ("krb-service", "ctlplane")):
        if view != "krb-service":
            kdc.add_principal(principal)
        keytabs[view] = kdc.keytab(principal, workdir / f"{view}.keytab")
    kdc.add_principal("ctlplane-gone")
    keytabs["gone"] = kdc.keytab("ctlplane-gone", workdir / "gone.keytab")
    kdc.delete_principal("ctlplane-gone")  # a keytab of a principal the KDC no longer knows
    other.add_principal("ctlplane")
    keytabs["krb-no-kdc"] = other.keytab("ctlplane", workdir / "krb-no-kdc.keytab")
    kdc.change_key("ctlplane-stale")  # krb-stale's keytab now holds a key the KDC no longer takes
    kdc.start()
    prefix = "listener.name.sasl_plaintext"
    gssapi_listener = {
        # the harness's SASL_PLAINTEXT listener takes GSSAPI alone
        "sasl.enabled.mechanisms": "GSSAPI",
        "sasl.kerberos.service.name": "kafka",
        f"{prefix}.gssapi.sasl.jaas.config": (
            "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true "
            f'keyTab="{broker_keytab}" principal="{kdc.principal(BROKER_PRINCIPAL)}";'
        ),
    }
    try:
        # the nodes' JVMs read the realm's krb5.conf
        cluster = start_sasl_cluster("kerberos", workdir, gssapi_listener, f"-Djava.security.krb5.conf={kdc.krb5_conf}")
    except BaseException:
        kdc.stop()
        raise
    try:
        yield KerberosCluster(cluster, kdc, other, keytabs)
    finally:
        cluster.stop(timeout=10)
        kdc.stop()


def _run_config(kerberos: KerberosCluster, tmp_path: Path) -> tuple[Path, int]:
    """Four views of the cluster through its GSSAPI listener alone (no bootstrap_controllers: the controller's
    listener is plaintext), each logging in with a keytab of its own."""
    base = clusters_config((kerberos.cluster,))[0]
    base.pop("bootstrap_controllers", None)
    bootstrap = kerberos.cluster.listener_bootstrap("SASL_PLAINTEXT")

    def view(name: str, principal: str, krb5_conf: Path, service: str = "kafka", **more: Any) -> dict[str, Any]:
        login = {
            "principal": principal,
            "keytab_file": str(kerberos.keytabs[name]),
            "service_name": service,
            "krb5_conf": str(krb5_conf),
        }
        admin = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "GSSAPI", "kerberos": login}
        return {**base, "name": name, "bootstrap_servers": bootstrap, "admin": admin, **more}

    kdc, other = kerberos.kdc, kerberos.other
    clusters = [
        # the metadata canary logs in with the same keytab, on clients of its own
        view("krb-good", kdc.principal("ctlplane"), kdc.krb5_conf, canary={"topic_prefix": CANARY_PREFIX}),
        view("krb-stale", kdc.principal("ctlplane-stale"), kdc.krb5_conf),
        view("krb-no-kdc", other.principal("ctlplane"), other.krb5_conf),
        view("krb-service", kdc.principal("ctlplane"), kdc.krb5_conf, service="kafka-elsewhere"),
    ]
    return run_config(tmp_path, clusters)


def test_ctlplane_run_reads_the_quorum_through_gssapi_and_names_each_refused_login(
    kerberos_cluster: KerberosCluster, tmp_path: Path
) -> None:
    """`ctlplane check-config` and `ctlplane run` in a JVM of their own, which is given no krb5.conf (the
    system's names another realm): ctlplane writes the merged one and names it to its JVM itself."""
    kerberos = kerberos_cluster
    config, port = _run_config(kerberos, tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KRB5") and k != "JAVA_TOOL_OPTIONS"}
    started = time.monotonic()
    refused = ("krb-stale", "krb-no-kdc", "krb-service")
    wanted: list[str | re.Pattern[str]] = [
        'ctlplane_quorum_up{cluster="krb-good"} 1.0',
        *(f'ctlplane_quorum_up{{cluster="{name}"}} 0.0' for name in refused),
        # refused, not down (the reason starts "authentication failed:")
        *(f'ctlplane_quorum_refused{{cluster="{name}"}} 1.0' for name in refused),
        'ctlplane_quorum_refused{cluster="krb-good"} 0.0',
        # the canary's first change, made and served through the GSSAPI listener
        re.compile(
            r'^kafka_broker_metadata_canary_propagation_seconds_count\{[^}]*cluster="krb-good"[^}]*\} [1-9]', re.M
        ),
    ]
    served = check_and_run(config, port, wanted, env=env, timeout=90, what="the views")
    answered = time.monotonic() - started
    assert "OK (4 cluster(s)" in served.checked, served.checked
    controller = kerberos.cluster.controllers()[0].node_id
    quorum = {c["name"]: c.get("quorum") or {} for c in served.snapshot()["clusters"]}
    good = quorum["krb-good"]
    assert good.get("error") is None and good["leader_id"] == controller, good
    assert {r["replica_id"] for r in good["replicas"]} == {controller, kerberos.cluster.brokers()[0].node_id}
    assert re.search(rf'^kafka_quorum_leader_id\{{cluster="krb-good"\}} {controller}\.0$', served.page, re.M)
    # and was never refused (its first call of a cold JVM may time out at the 3 s deadline: seen in 2 of 3 runs,
    # "Timed out waiting for a node assignment. Call: listTopics"; GSSAPI itself added 0.4 s to a first read)
    refusals = re.compile(
        r'^ctlplane_canary_errors_total\{cluster="krb-good",reason="(authentication|not_authorized)"\} [1-9]'
    )
    assert not [line for line in served.page.splitlines() if refusals.search(line)], served.page
    errors = {name: str(quorum[name].get("error") or "") for name in refused}
    for name, error in errors.items():
        assert error.startswith("bootstrap.servers ") and ": authentication failed: " in error, (name, error)
        assert quorum[name]["refused"] is True, quorum[name]
        assert "\n" not in error, (name, error)
    log.info("answered %.1f s after check-config started; reasons: %s", answered, json.dumps(errors, indent=1))
    # the KDC's words: the stale key fails pre-authentication (KDC_ERR_PREAUTH_FAILED)
    assert errors["krb-stale"].endswith(
        "authentication failed: the Kerberos login failed "
        "(KrbException: Pre-authentication information was invalid (24) - PREAUTH_FAILED)"
    ), errors
    # the other realm's KDC port is closed: the JDK's UDP request is answered by ICMP at once
    assert "authentication failed: no KDC answered the Kerberos login (" in errors["krb-no-kdc"], errors
    # no ticket for kafka-elsewhere/localhost (KDC_ERR_S_PRINCIPAL_UNKNOWN): refused at once, not retried until the
    # call's deadline (jpype_client.start_jvm lets Kafka's KerberosError read the KrbException's code)
    assert errors["krb-service"].endswith(
        "authentication failed: no service ticket for the broker "
        "(KrbException: Server not found in Kerberos database (7) - LOOKING_UP_SERVER)"
    ), errors
    texts = served.texts()
    for view, keytab in kerberos.keytabs.items():
        for key in _keys(keytab):
            shown = (key.hex(), base64.b64encode(key).decode(), key.decode("latin-1"))
            assert not [t[:200] for t in texts for s in shown if s in t], f"a key of {view}'s keytab is shown"


def test_a_realm_merged_in_after_the_jvms_first_login_is_read_at_the_next_one(
    kerberos_cluster: KerberosCluster,
) -> None:
    """In one JVM (the test's): a login whose realm the JVM's krb5.conf does not know fails; once the file is
    written again with that realm merged in (as a reload that adds a cluster writes it), the next login reads it,
    with no restart (refreshKrb5Config). The merged file's default realm is then the other one, so the broker's
    service principal is found through [domain_realm] (localhost = CTLPLANE.TEST). Then a principal the KDC has
    deleted, and a keytab without the principal's key, each refused in one line."""
    shared_client()  # the JVM the Admin client runs in
    kerberos = kerberos_cluster
    kdc, other = kerberos.kdc, kerberos.other
    bootstrap = kerberos.cluster.listener_bootstrap("SASL_PLAINTEXT")

    def reader(principal: str, keytab: Path) -> QuorumReader:
        login = {"principal": principal, "keytab_file": str(keytab)}
        admin = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "GSSAPI", "kerberos": login}
        cluster = {"name": "krb-in-process", "nodes": [{"address": "127.0.0.1:1"}], "bootstrap_servers": bootstrap}
        security = admin_security(ClusterConfig.model_validate({**cluster, "admin": admin}))
        return QuorumReader("krb-in-process", bootstrap, controllers=False, timeout_seconds=10.0, security=security)

    good = reader(kdc.principal("ctlplane"), kerberos.keytabs["krb-good"])
    gone = reader(kdc.principal("ctlplane-gone"), kerberos.keytabs["gone"])
    # a keytab of another principal (check-config refuses it: here as if the file changed since)
    keyless = reader(kdc.principal("ctlplane"), kerberos.keytabs["krb-no-kdc"])
    try:
        use_krb5_conf(merge_krb5_confs([("cluster other", load_krb5_conf(other.krb5_conf))]).text)
        unknown = good.read()
        log.info("a realm the JVM's krb5.conf does not know: %s", unknown.error)
        assert unknown.refused and "authentication failed: the Kerberos login failed" in str(unknown.error), unknown
        both = [("cluster other", load_krb5_conf(other.krb5_conf)), ("cluster krb", load_krb5_conf(kdc.krb5_conf))]
        written = use_krb5_conf(merge_krb5_confs(both).text)
        assert f"default_realm = {OTHER_REALM}" in written.read_text()
        view = good.read()
        assert view.error is None and view.leader_id == kerberos.cluster.controllers()[0].node_id, view
        # the KDC's refusal of a principal it does not know, and a keytab without the principal's key: one line each
        errors = {"gone": gone.read().error or "", "keyless": keyless.read().error or ""}
        log.info("refused in process: %s", json.dumps(errors, indent=1))
        assert errors["gone"].endswith(
            "authentication failed: the Kerberos login failed "
            "(KrbException: Client not found in Kerberos database (6) - CLIENT_NOT_FOUND)"
        ), errors
        assert errors["keyless"].endswith(
            "authentication failed: the keytab holds no key for the principal (the login asked for a password)"
        ), errors
    finally:
        for each in (good, gone, keyless):
            each.close()
