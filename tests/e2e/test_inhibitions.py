"""The shipped inhibitions in a real Alertmanager (Debian's 0.25): one fault, one page.

Alerts are posted straight to Alertmanager's API, as Prometheus would send them, with the shipped
alertmanager.yml (grouping shortened to 1 s / 2 s). For every inhibition, the cause and its consequence
fire together in one cluster and only the cause pages; the consequence alone, in a cluster of its own,
still pages, so a test that passed because nothing paged cannot pass.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.paging_stack import PagingStack

# (case, cause, consequence): each alert as its labels; the cause and the consequence share the labels the
# inhibition's `equal` names.
NODE = {"node": "broker-1", "role": "broker"}
CASES = [
    # a fenced broker stops fetching metadata, so its lag grows: one page, for the fencing
    # (docs/configuration.md "The quorum's view")
    ("fenced-mutes-stale", ("KafkaBrokerFenced", "critical", NODE), ("KafkaBrokerMetadataStale", "critical", NODE)),
    (
        "fenced-mutes-lag",
        ("KafkaBrokerFenced", "critical", NODE),
        ("KafkaBrokerMetadataLagRecords", "warning", NODE),
    ),
    (
        "frozen-mutes-stale",
        ("KafkaBrokerMetadataFrozen", "critical", NODE),
        ("KafkaBrokerMetadataStale", "critical", NODE),
    ),
    # the canary's page is held where the broker's own figures, its fencing or its frozen log page already
    (
        "stale-mutes-canary",
        ("KafkaBrokerMetadataStale", "critical", NODE),
        ("KafkaBrokerMetadataCanaryUnserved", "critical", NODE),
    ),
    (
        "fenced-mutes-canary",
        ("KafkaBrokerFenced", "critical", NODE),
        ("KafkaBrokerMetadataCanaryUnserved", "critical", NODE),
    ),
    (
        "session-lost-mutes-fenced",
        ("KafkaZooKeeperSessionLost", "critical", NODE),
        ("KafkaBrokerFenced", "critical", NODE),
    ),
    (
        "no-controller-mutes-stale",
        ("KafkaNoActiveController", "critical", {}),
        ("KafkaBrokerMetadataStale", "critical", NODE),
    ),
    (
        "no-controller-mutes-no-spare-voter",
        ("KafkaNoActiveController", "critical", {}),
        ("KafkaQuorumNoSpareVoter", "warning", {}),
    ),
    (
        "cluster-unreachable-mutes-node",
        ("KafkaClusterUnreachable", "critical", {}),
        ("KafkaBrokerUnreachable", "critical", NODE),
    ),
    (
        "cluster-unreachable-mutes-controller-count",
        ("KafkaClusterUnreachable", "critical", {}),
        ("KafkaNoActiveController", "critical", {}),
    ),
    ("exporter-down-mutes-all", ("CtlplaneExporterDown", "critical", {}), ("KafkaBrokerFenced", "critical", NODE)),
    ("snapshot-stale-mutes-all", ("CtlplaneSnapshotStale", "critical", {}), ("KafkaBrokerFenced", "critical", NODE)),
]
SETTLE_SECONDS = 8  # four group_intervals after the last expected page: a muted alert would have paged by then


@pytest.fixture
def alertmanager(tmp_path: Path) -> Iterator[PagingStack]:
    stack = PagingStack(tmp_path / "am", fast_grouping=True)
    try:
        stack.wait_alertmanager_ready(stack.start_alertmanager())
        yield stack
    finally:
        stack.close()


def _alert(name: str, severity: str, labels: dict[str, str], cluster: str) -> dict[str, object]:
    # every alert from one exporter (job, instance), except where the case is the exporter itself
    instance = f"ctlplane-{cluster}:9308"
    return {
        "labels": {
            "alertname": name,
            "severity": severity,
            "cluster": cluster,
            "job": "ctlplane",
            "instance": instance,
            **({"scope": "node"} if "node" in labels else {}),
            **labels,
        },
        "annotations": {"summary": f"{name} in {cluster}", "runbook_url": f"https://example.invalid/{name}.md"},
    }


def _post(stack: PagingStack, alerts: list[dict[str, object]]) -> None:
    request = urllib.request.Request(
        f"{stack.alertmanager_url}/api/v2/alerts",
        data=json.dumps(alerts).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


def test_every_shipped_inhibition_leaves_one_page_for_the_cause(alertmanager: PagingStack) -> None:
    alerts, expected = [], set()
    for case, (cause, cause_severity, cause_labels), (effect, effect_severity, effect_labels) in CASES:
        alerts += [
            _alert(cause, cause_severity, cause_labels, case),
            _alert(effect, effect_severity, effect_labels, case),
            _alert(effect, effect_severity, effect_labels, f"{case}-alone"),
        ]
        expected |= {(cause, case), (effect, f"{case}-alone")}
    _post(alertmanager, alerts)

    def paged() -> set[tuple[str, str]]:
        return {
            (str(e.payload.get("class")), str(e.payload.get("group")))
            for e in alertmanager.receiver.snapshot()
            if e.action == "trigger"
        }

    deadline = time.monotonic() + 60
    while not expected <= paged():
        assert time.monotonic() < deadline, (
            f"never paged: {sorted(expected - paged())}\n{alertmanager.log('alertmanager')}"
        )
        time.sleep(0.5)
    time.sleep(SETTLE_SECONDS)
    assert paged() == expected, f"paged but inhibited: {sorted(paged() - expected)}"
