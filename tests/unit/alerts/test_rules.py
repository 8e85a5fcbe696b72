"""Structure of the shipped alerting config (alerts/): labels, annotations, runbooks, series names,
Alertmanager routing, and the promtool/amtool checks of alerts/check.sh. No network."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from ctlplane.exporter.catalog import Mode, Role, all_series_names
from ctlplane.exporter.health import Lifecycle
from tests.e2e.paging_stack import duration_seconds
from tools.alert_rules import RUNBOOK_BASE

ALERTS = Path(__file__).resolve().parents[3] / "alerts"
SEVERITIES = {"critical", "warning", "info"}
# Series Prometheus itself writes for every target; ctlplane cannot put them in its catalogue.
PROMETHEUS_SERIES = frozenset({"up"})
PROMQL_WORDS = frozenset(
    {"and", "or", "unless", "on", "ignoring", "by", "without", "group_left", "group_right", "bool", "offset"}
)
ZOOKEEPER_SESSION_STATES = frozenset(
    {"CONNECTING", "ASSOCIATING", "CONNECTED", "CONNECTEDREADONLY", "CLOSED", "AUTH_FAILED", "NOT_CONNECTED"}
)
RUNBOOK_SECTIONS = ("## What it means", "## Confirm", "## What to do", "## Escalate")


def _rule_files() -> list[Path]:
    return sorted(ALERTS.glob("*.rules.yml"))


def _alerts() -> list[dict[str, Any]]:
    alerts: list[dict[str, Any]] = []
    for path in _rule_files():
        for group in yaml.safe_load(path.read_text())["groups"]:
            alerts.extend(rule for rule in group["rules"] if "alert" in rule)
    return alerts


ALL_ALERTS = _alerts()
ALERT_IDS = [str(rule["alert"]) for rule in ALL_ALERTS]


def metric_names(expr: str) -> set[str]:
    """Series names in a PromQL expression: identifiers that are not functions, keywords, label names
    (in `{...}`, `on(...)`, `by (...)`), strings or durations."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = re.sub(r"\b(?:on|ignoring|by|without|group_left|group_right)\s*\([^)]*\)", " ", text)
    names = set()
    for match in re.finditer(r"(?<![\w.])([A-Za-z_:][\w:]*)(\s*\()?", text):
        name, call = match.group(1), match.group(2)
        if call or name in PROMQL_WORDS:
            continue
        names.add(name)
    return names


def label_matchers(expr: str) -> list[tuple[str, str, str]]:
    """(label, operator, value) of every matcher inside `{...}`."""
    found = []
    for block in re.findall(r"\{([^}]*)\}", expr):
        found.extend(re.findall(r'(\w+)\s*(=~|!~|!=|=)\s*"([^"]*)"', block))
    return found


def test_metric_name_parser() -> None:
    expr = (
        'rate(a_sum{request="x"}[5m]) / rate(a_count[5m]) > 0.5 or b{state="FENCED"} == 1 '
        "unless on(cluster, job) c and on(job) max_over_time(d[1d]) or max by (cluster) (e) == 0"
    )
    assert metric_names(expr) == {"a_sum", "a_count", "b", "c", "d", "e"}
    assert label_matchers(expr) == [("request", "=", "x"), ("state", "=", "FENCED")]


def test_rules_exist_and_names_are_unique() -> None:
    assert {p.name for p in _rule_files()} == {
        "controller.rules.yml",
        "brokers.rules.yml",
        "metadata.rules.yml",
        "control-plane.rules.yml",
        "exporter.rules.yml",
    }
    assert all(re.fullmatch(r"[A-Z][A-Za-z]+", name) for name in ALERT_IDS)
    # One name, one alert. KafkaBrokerFenced alone is split by evidence: its rules are exclusive (the same
    # expression `and` / `unless` one condition), differ only in `for:`, the description and `evidence`.
    names = [name for name in ALERT_IDS if ALERT_IDS.count(name) > 1]
    assert set(names) <= {"KafkaBrokerFenced"}, names
    # (which `for:` each has: tests/unit/alerts/test_page_sweep.py)
    tiers = {rule["labels"]["evidence"]: rule for rule in ALL_ALERTS if rule["alert"] == "KafkaBrokerFenced"}
    assert set(tiers) == {"unplanned", "sustained"}
    fast, slow = tiers["unplanned"], tiers["sustained"]
    base, _, condition = str(fast["expr"]).partition(" and ")
    assert str(slow["expr"]) == f"{base} unless {condition}"
    assert {k: v for k, v in fast["labels"].items() if k != "evidence"} == {
        k: v for k, v in slow["labels"].items() if k != "evidence"
    }
    assert {k: v for k, v in fast["annotations"].items() if k != "description"} == {
        k: v for k, v in slow["annotations"].items() if k != "description"
    }


@pytest.mark.parametrize("rule", ALL_ALERTS, ids=ALERT_IDS)
def test_alert_has_labels_annotations_and_for(rule: dict[str, Any]) -> None:
    labels, annotations = rule["labels"], rule["annotations"]
    assert labels["severity"] in SEVERITIES
    assert labels["scope"] in {"node", "cluster", "exporter"}
    assert set(annotations) >= {"summary", "description", "runbook_url"}
    # Who and how much: cluster-level alerts name the cluster, node-level ones the node too, exporter
    # ones the exporter instance; every description shows the value that fired it.
    if labels["scope"] == "exporter":
        assert "$labels.instance" in annotations["summary"]
    else:
        assert "$labels.cluster" in annotations["summary"]
        assert "$labels.cluster" in annotations["description"]
    if labels["scope"] == "node":
        assert "$labels.node" in annotations["summary"]
        assert "$labels.node" in annotations["description"]
    assert "$value" in annotations["description"]
    # `$value` in a label would make a new alert at every change (and reset `for:`).
    assert not any("$value" in str(value) for value in labels.values())
    # Never page on one evaluation: every alert waits out blips.
    assert re.fullmatch(r"\d+[smh]", str(rule["for"]))


@pytest.mark.parametrize("rule", ALL_ALERTS, ids=ALERT_IDS)
def test_runbook_exists_and_is_complete(rule: dict[str, Any]) -> None:
    name = rule["alert"]
    assert rule["annotations"]["runbook_url"] == f"{RUNBOOK_BASE}{name}.md"
    runbook = ALERTS / "runbooks" / f"{name}.md"
    assert runbook.is_file()
    text = runbook.read_text()
    assert text.startswith(f"# {name}\n")
    for section in RUNBOOK_SECTIONS:
        assert section in text, f"{runbook.name} lacks {section!r}"
    assert f"**Severity:** {rule['labels']['severity']}" in text
    assert f"**for:** {rule['for']}" in text


def test_no_runbook_without_an_alert() -> None:
    assert {p.stem for p in (ALERTS / "runbooks").glob("*.md")} == set(ALERT_IDS)


@pytest.mark.parametrize("rule", ALL_ALERTS, ids=ALERT_IDS)
def test_expr_uses_only_catalogue_series_and_known_label_values(rule: dict[str, Any]) -> None:
    names = metric_names(rule["expr"])
    assert names, "an alert must read at least one series"
    unknown = names - all_series_names() - PROMETHEUS_SERIES
    assert not unknown, f"not in ctlplane.exporter.catalog: {sorted(unknown)}"
    allowed = {
        # lifecycle states, and a ZooKeeper-mode broker's session state (org.apache.zookeeper.ZooKeeper.States)
        "state": {state.value for state in Lifecycle} | ZOOKEEPER_SESSION_STATES,
        "role": {role.value for role in Role},
        "mode": {mode.value for mode in Mode},
    }
    for label, op, value in label_matchers(rule["expr"]):
        if label in allowed:
            values = set(value.split("|")) if op in ("=~", "!~") else {value}
            assert values <= allowed[label], f"{label}{op}{value!r}"


def _alertmanager() -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load((ALERTS / "alertmanager.yml").read_text())
    return config


def test_alertmanager_routes_by_severity_to_pagerduty_with_key_files() -> None:
    config = _alertmanager()
    route = config["route"]
    assert route["group_by"] == ["cluster", "alertname"]
    by_severity = {r["matchers"][0]: r["receiver"] for r in route["routes"]}
    assert by_severity == {
        'severity="critical"': "pagerduty-critical",
        'severity="warning"': "pagerduty-low-urgency",
        'severity="info"': "null",
    }
    receivers = {r["name"]: r for r in config["receivers"]}
    assert "pagerduty_configs" not in receivers["null"]
    key_files = set()
    for name in ("pagerduty-critical", "pagerduty-low-urgency"):
        (pagerduty,) = receivers[name]["pagerduty_configs"]
        # Events API v2 integration keys come from files, never from git; no url = the real PagerDuty.
        assert not {"routing_key", "service_key", "service_key_file", "url"} & set(pagerduty)
        key_files.add(pagerduty["routing_key_file"])
        assert pagerduty["send_resolved"] is True
        assert "runbook_url" in pagerduty["links"][0]["href"]
    assert len(key_files) == 2, "critical and low-urgency go to different PagerDuty services"


def test_the_critical_group_wait_only_batches_the_alerts_of_one_evaluation() -> None:
    """Why the critical route's `group_wait` can be short (it adds to every page: docs/alerts.md "How fast
    a page comes"). Alertmanager groups by cluster and alertname, every alertname is defined in one rule
    group, and Prometheus evaluates a group's rules together, sending each rule's alerts as it goes, so a
    notification group's alerts arrive from one evaluation at a time, a group interval apart. A
    `group_wait` shorter than that interval batches exactly the alerts of the first evaluation, as any
    longer one under it would; the rest follow after `group_interval` either way."""
    config = _alertmanager()
    assert set(config["route"]["group_by"]) >= {"cluster", "alertname"}
    critical = next(r for r in config["route"]["routes"] if r["matchers"] == ['severity="critical"'])
    groups: dict[str, set[str]] = {}
    intervals = set()
    for path in _rule_files():
        for group in yaml.safe_load(path.read_text())["groups"]:
            intervals.add(duration_seconds(group["interval"]))
            for rule in group["rules"]:
                if "alert" in rule:
                    groups.setdefault(rule["alert"], set()).add(f"{path.name}:{group['name']}")
    assert {name: where for name, where in groups.items() if len(where) > 1} == {}
    # a few seconds for a group's evaluation and Prometheus' notifier batches, well under one interval
    assert 2 <= duration_seconds(critical["group_wait"]) <= min(intervals) / 2


def test_inhibitions_reference_real_alerts() -> None:
    names = set(ALERT_IDS)
    rules = _alertmanager()["inhibit_rules"]
    sources: set[str] = set()
    for rule in rules:
        for matcher in rule["source_matchers"]:
            match = re.fullmatch(r'alertname=~?"([^"]+)"', matcher)
            assert match, matcher
            sources.update(match.group(1).split("|"))
    assert sources <= names
    assert {"CtlplaneExporterDown", "KafkaClusterUnreachable", "KafkaNoActiveController"} <= sources
    stale_inhibitor = next(r for r in rules if r["source_matchers"] == ['alertname="KafkaNoActiveController"'])
    target = re.fullmatch(r'alertname=~"([^"]+)"', stale_inhibitor["target_matchers"][0])
    assert target
    assert re.fullmatch(target.group(1), "KafkaBrokerMetadataStale")
    assert stale_inhibitor["equal"] == ["cluster"]


def test_every_alert_has_a_promtool_test() -> None:
    tested = set()
    for path in (ALERTS / "tests").glob("*.test.yml"):
        for test in yaml.safe_load(path.read_text())["tests"]:
            for case in test.get("alert_rule_test", []):
                if case.get("exp_alerts"):
                    tested.add(case["alertname"])
    assert tested == set(ALERT_IDS)


def test_check_script_passes() -> None:
    # promtool and amtool are dev dependencies (Debian prometheus, prometheus-alertmanager): a missing tool fails.
    # a guard against a hang, not a speed bound: ~15 s idle, past 120 s once beside a fresh-clone run and the unit tests
    result = subprocess.run([str(ALERTS / "check.sh")], capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "all checks passed" in result.stdout
