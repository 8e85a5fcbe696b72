"""End to end against the simulator (ctlplane/demo/): each critical scenario -> one PagerDuty `trigger` with the
right severity, a summary naming the node, a stable dedup_key; back to healthy -> `resolve`, same key.

Shipped expressions, labels and annotations, but a test copy of the rules with every `for:` divided by 6
(at least 5 s), 2 s scrape/evaluation and 1 s/2 s Alertmanager grouping, so five scenarios fit in a few
minutes. The shipped timings are measured by test_paging.py against real Kafka.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ctlplane.demo.launch import SimulatorProcess, start_simulator
from tests.e2e.paging_stack import ROUTING_KEYS, PagingStack, ScrapeTarget, shortened_rules

KRAFT, ZK = "kraft-4.3", "zk-3.9"
DEADLINE_SECONDS = 120
# (scenario, cluster, node or None, the one alert it must page, the node its summary names)
CRITICAL_SCENARIOS = [
    ("fenced-broker", KRAFT, "broker-102", "KafkaBrokerFenced", "broker-102"),
    ("unreachable-broker", ZK, "broker-2", "KafkaBrokerUnreachable", "broker-2"),
    ("unreachable-broker", KRAFT, "broker-101", "KafkaBrokerUnreachable", "broker-101"),
    ("no-active-controller", KRAFT, None, "KafkaNoActiveController", None),
    ("two-active-controllers", ZK, None, "KafkaMultipleActiveControllers", None),
]


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SimulatorProcess, PagingStack]]:
    workdir = tmp_path_factory.mktemp("paging-sim")
    simulator = start_simulator(seed=11)
    stack = PagingStack(
        workdir,
        interval_seconds=2.0,
        rule_files=shortened_rules(workdir / "rules", divisor=6, interval="2s"),
        fast_grouping=True,
    )
    try:
        clusters: dict[str, list[tuple[str, int, str]]] = {}
        for node in simulator.nodes:
            clusters.setdefault(node.cluster, []).append((node.name, node.port, node.role))
        stack.start([ScrapeTarget(name, nodes) for name, nodes in clusters.items()])
        yield simulator, stack
    finally:
        stack.close()
        simulator.stop()


def _wait_healthy(stack: PagingStack, cluster: str) -> None:
    deadline = time.monotonic() + DEADLINE_SECONDS
    while True:
        firing = stack.query(f'ALERTS{{cluster="{cluster}",alertstate="firing",severity="critical"}}')
        controllers = stack.query(f'kafka_cluster_active_controllers{{cluster="{cluster}"}} == 1')
        if controllers and not firing:
            return
        assert time.monotonic() < deadline, f"{cluster} never healthy; firing: {firing}"
        time.sleep(1)


@pytest.mark.parametrize(
    ("scenario", "cluster", "node", "alertname", "named"),
    CRITICAL_SCENARIOS,
    ids=[f"{s}-{c}" for s, c, *_ in CRITICAL_SCENARIOS],
)
def test_critical_scenario_pages_once_and_resolves(
    simulated: tuple[SimulatorProcess, PagingStack],
    scenario: str,
    cluster: str,
    node: str | None,
    alertname: str,
    named: str | None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    simulator, stack = simulated
    _wait_healthy(stack, cluster)
    time.sleep(4)  # let resolves of the previous scenario flush (group_interval 2 s)
    baseline = len(stack.receiver.snapshot())
    started = time.monotonic()
    simulator.set_scenario(scenario, cluster, node)
    try:
        trigger = stack.receiver.wait_for(
            lambda e: e.action == "trigger" and e.payload.get("class") == alertname, DEADLINE_SECONDS, after=baseline
        )
    finally:
        simulator.set_scenario("healthy", cluster)
    page_seconds = trigger.received_at - started
    assert trigger.body["routing_key"] == ROUTING_KEYS["pagerduty-critical"]
    assert trigger.payload["severity"] == "critical"
    assert cluster in trigger.payload["summary"]
    if named is not None:
        assert named in trigger.payload["summary"]
    resolve = stack.receiver.wait_for(
        lambda e: e.action == "resolve" and e.dedup_key == trigger.dedup_key, DEADLINE_SECONDS, after=baseline
    )
    assert resolve.payload["class"] == alertname
    # Exactly one page for the fault: no other critical trigger in this window.
    critical = [
        e.payload.get("class")
        for e in stack.receiver.snapshot()[baseline:]
        if e.action == "trigger" and e.body.get("routing_key") == ROUTING_KEYS["pagerduty-critical"]
    ]
    assert critical == [alertname], critical
    with capsys.disabled():
        sys.stdout.write(f"\n[paging sim] {scenario} on {cluster}: trigger after {page_seconds:.1f} s (for: /6)\n")


def test_rules_copy_keeps_expressions(tmp_path: Path) -> None:
    copies = shortened_rules(tmp_path, divisor=6, interval="2s")
    assert [c.name for c in copies] == sorted(
        p.name for p in (Path(__file__).resolve().parents[2] / "alerts").glob("*.rules.yml")
    )
