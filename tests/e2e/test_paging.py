"""End to end: a real KRaft broker stops -> PagerDuty Events v2 `trigger`; it resumes -> `resolve`.

Real Kafka 4.3 (the session fixture), ctlplane, Prometheus 2.42 and Alertmanager 0.25 from Debian, the
shipped rules and routing, and a local HTTP receiver in PagerDuty's place. ctlplane's rounds, its fencing
watch, Prometheus' scrape of it and the rule groups' evaluation run at the shipped intervals, so the printed
fault-to-page time is the figure an operator would see (budget in docs/alerts.md "How fast a page comes";
asserted only against a generous bound, never timed). The paused broker leads partitions, as production
brokers do, so its fencing is unplanned (Kafka 4.1+ would have flagged a clean stop) and the 10 s rule pages.
`python -m bench.paging --fault kill` measures a kill -9 instead of the SIGSTOP; `--mode zookeeper` the same
on a ZooKeeper-mode cluster of its own at Kafka's default `zookeeper.session.timeout.ms` (18 s), the victim
a broker that is not the controller (the controller that counted no ControlledShutdown request is what makes
the fencing unplanned there).
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ctlplane.exporter.health.cause import CAUSE_TEXT
from ctlplane.exporter.health.model import Cause
from harness.localkafka import KafkaCluster, KafkaNode, create_topic, delete_topic, start_zk_cluster
from tests.e2e.paging_stack import ROUTING_KEYS, Event, PagingStack, ScrapeTarget, http_get

# kraft_cluster: the session fixture of tests/conftest.py (shared with tests/integration).

pytestmark = pytest.mark.kafka

# Generous bounds: the expected figures are ~25-40 s to page and ~30-90 s to resolve (5 s scrape and
# evaluation, `for: 10s` of the unplanned rule, group_wait 2 s, group_interval 1m), on 2 shared cores.
PAGE_DEADLINE_SECONDS = 300
RESOLVE_DEADLINE_SECONDS = 300
TOPIC = "ctlplane-paging"  # led by the paused broker
# The fault: SIGSTOP (a hung JVM; `make test`) or kill -9 (a crashed one, restarted for the resolve);
# `python -m bench.paging --fault kill` sets it
FAULT = os.environ.get("CTLPLANE_PAGING_FAULT", "stop")
# kraft (the session cluster; `make test`) or zookeeper (a cluster of its own; `bench.paging --mode zookeeper`)
MODE = os.environ.get("CTLPLANE_PAGING_MODE", "kraft")
ZK_DEFAULT_SESSION_MS = "18000"  # Kafka's zookeeper.session.timeout.ms default since 2.5 (KIP-537)
# per fault: what the printed figure measures from, and to, and the cause the page must name
FAULTS = {
    "stop": ("SIGSTOP", "SIGCONT", Cause.HUNG_OR_ISOLATED),
    "kill": ("kill -9", "restart", Cause.PROCESS_GONE),
}


# Chosen at import, so the test's fixture closure names the session cluster it uses (tests/suite.py reads it)
if MODE == "kraft":

    @pytest.fixture
    def paged_cluster(kraft_cluster: KafkaCluster) -> KafkaCluster:
        return kraft_cluster

else:
    assert MODE == "zookeeper", f"CTLPLANE_PAGING_MODE={MODE}: kraft or zookeeper"

    @pytest.fixture
    def paged_cluster(tmp_path: Path) -> Iterator[KafkaCluster]:
        session = {"zookeeper.session.timeout.ms": ZK_DEFAULT_SESSION_MS}
        cluster = start_zk_cluster(
            "paging-zk", tmp_path, brokers=3, node_overrides={f"broker-{i}": session for i in (1, 2, 3)}
        )
        try:
            yield cluster
        finally:
            cluster.stop()


@pytest.fixture
def paging(tmp_path: Path, paged_cluster: KafkaCluster) -> Iterator[PagingStack]:
    stack = PagingStack(tmp_path / "paging")
    try:
        role: dict[tuple[str, ...], str] = {("broker",): "broker", ("controller",): "controller"}
        stack.start(
            [
                ScrapeTarget(
                    paged_cluster.name,
                    [(n.name, n.jmx_port, role.get(n.roles, "combined")) for n in paged_cluster.nodes],
                )
            ]
        )
        yield stack
    finally:
        stack.close()


def _healthy(stack: PagingStack, cluster: str, broker: str) -> bool:
    selector = f'cluster="{cluster}",node="{broker}",state="ACTIVE"'
    active = stack.query(f"kafka_broker_lifecycle_state{{{selector}}} == 1")
    controllers = stack.query(f'kafka_cluster_active_controllers{{cluster="{cluster}"}} == 1')
    return bool(active) and bool(controllers)


def _is_page_for(event: Event, alertname: str, action: str) -> bool:
    return event.action == action and event.payload.get("class") == alertname


def test_paused_broker_pages_and_resolves(
    paging: PagingStack, paged_cluster: KafkaCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    broker, other = _victim(paging, paged_cluster), paged_cluster.node("broker-2")
    if other is broker:
        other = paged_cluster.node("broker-3")
    create_topic(paged_cluster, TOPIC, [[broker.node_id, other.node_id]] * 2)  # it leads both partitions
    try:
        _pause_and_page(paging, paged_cluster, broker, capsys)
    finally:
        delete_topic(paged_cluster, TOPIC)


def _victim(paging: PagingStack, cluster: KafkaCluster) -> KafkaNode:
    """broker-1 on KRaft; in ZooKeeper mode a broker that is not the controller."""
    if MODE == "kraft":
        return cluster.node("broker-1")
    deadline = time.monotonic() + 180
    while not (claims := paging.query(f'kafka_controller_active{{cluster="{cluster.name}"}} == 1')):
        assert time.monotonic() < deadline, "Prometheus never saw the controller:\n" + paging.log("ctlplane")
        time.sleep(1)
    controller = claims[0]["metric"]["node"]
    return next(n for n in cluster.nodes if n.name != controller)


def _pause_and_page(
    paging: PagingStack, paged_cluster: KafkaCluster, broker: KafkaNode, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = paged_cluster.name
    leads = f'kafka_broker_leader_partitions{{cluster="{cluster}",node="{broker.name}"}} > 0'
    deadline = time.monotonic() + 180
    while not (_healthy(paging, cluster, broker.name) and paging.query(leads)):
        assert time.monotonic() < deadline, "Prometheus never saw a healthy cluster:\n" + paging.log("ctlplane")
        time.sleep(1)
    baseline = len(paging.receiver.snapshot())
    assert not [e for e in paging.receiver.snapshot() if e.action == "trigger"], "pages on a healthy cluster"

    fault_at = time.monotonic()
    # SIGSTOP: no heartbeats, no JMX answers; kill -9: no process. The controller fences it after its session
    broker.pause() if FAULT == "stop" else broker.kill()
    try:
        trigger = paging.receiver.wait_for(
            lambda e: _is_page_for(e, "KafkaBrokerFenced", "trigger"), PAGE_DEADLINE_SECONDS, after=baseline
        )
    finally:
        if FAULT == "stop":
            broker.resume()
        else:
            broker.start()
    resumed_at = time.monotonic()
    page_seconds = trigger.received_at - fault_at
    cause = FAULTS[FAULT][2]

    body, payload = trigger.body, trigger.payload
    assert body["routing_key"] == ROUTING_KEYS["pagerduty-critical"]
    assert payload["severity"] == "critical"
    # why, and since when: a SIGSTOPped JVM's port takes connections and never answers; a killed one's refuses
    summary = f"Kafka broker {broker.name} in cluster {cluster} is fenced: {CAUSE_TEXT[cause].phrase}"
    assert re.fullmatch(re.escape(summary) + r" \(since \d\d:\d\d:\d\d UTC\)", payload["summary"]), payload
    assert payload["source"] == f"kafka cluster {cluster}"
    assert payload["component"] == broker.name
    assert payload["group"] == cluster
    assert re.fullmatch(r"[0-9a-f]{64}", trigger.dedup_key), trigger.dedup_key
    assert body["links"][0]["href"].endswith("alerts/runbooks/KafkaBrokerFenced.md")
    assert f"fenced broker {broker.name}" in payload["custom_details"]["firing"]
    details = payload["custom_details"]
    assert details["cause"] == cause.value, details
    assert details["evidence"] == CAUSE_TEXT[cause].evidence, details
    assert details["evidence"] in details["firing"]
    assert details["dashboard"] == f"{paging.dashboard_url}cluster/{cluster}/broker/{broker.name}", details
    assert http_get(details["dashboard"])[0] == 200  # the link opens the broker's page
    assert details["runbook_section"].endswith(f"alerts/runbooks/KafkaBrokerFenced.md#cause-{cause.value}")
    # One fault, one page: nothing else (unreachable, stale metadata, exporter) triggered with it.
    triggers = [e for e in paging.receiver.snapshot()[baseline:] if e.action == "trigger"]
    assert [e.payload.get("class") for e in triggers] == ["KafkaBrokerFenced"]
    # paged by the rule for an unplanned fencing (a leader gone without the controlled shutdown 4.1+ flags)
    fired = paging.query(f'ALERTS{{alertname="KafkaBrokerFenced",node="{broker.name}",alertstate="firing"}}')
    assert [a["metric"].get("evidence") for a in fired] == ["unplanned"], fired

    resolve = paging.receiver.wait_for(
        lambda e: e.action == "resolve" and e.dedup_key == trigger.dedup_key,
        RESOLVE_DEADLINE_SECONDS,
        after=baseline,
    )
    resolve_seconds = resolve.received_at - resumed_at
    assert resolve.body["routing_key"] == ROUTING_KEYS["pagerduty-critical"]
    assert resolve.payload["severity"] == "critical"
    assert broker.name in resolve.payload["summary"]

    with capsys.disabled():
        sys.stdout.write(
            f"\n[paging e2e] {cluster}/{broker.name} {FAULTS[FAULT][0]} -> KafkaBrokerFenced trigger: "
            f"{page_seconds:.1f} s; {FAULTS[FAULT][1]} -> resolve: {resolve_seconds:.1f} s "
            f"(rounds {paging.interval_seconds:g} s, shipped rules, {MODE})\n"
        )
    assert page_seconds < PAGE_DEADLINE_SECONDS
