"""Every threshold of the alert rules has one home (ctlplane/exporter/thresholds.py): alerts/*.rules.yml are
alerts/source/*.rules.yml with each `[[name]]` filled in (tools/alert_rules.py), never edited by hand."""

from __future__ import annotations

import dataclasses
import re

import pytest
import yaml

from ctlplane.exporter.health.cause import CAUSES_OF_STATE
from ctlplane.exporter.thresholds import ALERTS, HEALTH, rule_values
from tools import alert_rules
from tools.alert_rules import (
    NOT_REPORTED,
    RUNBOOK_BASE,
    SOURCES,
    UnknownThreshold,
    render,
    rendered,
    states_paged_with_a_cause,
    with_runbook_links,
)

# A comparison with a number in an expr: `> 30`, `>= bool 1`
COMPARISON = re.compile(r"(?:>=|<=|==|!=|>|<)\s*(?:bool\s+)?(-?\d[\d.e+]*)")
# Numbers a rule may compare with in its own text: flags (== 1, == 0) and "any at all" (> 0); `> 1` is
# KafkaMultipleActiveControllers' "more than one", a fact of the quorum, not a setting.
NOT_THRESHOLDS = frozenset({"0", "1"})


def _exprs(text: str) -> dict[str, str]:
    exprs = {}
    for group in yaml.safe_load(text)["groups"]:
        for rule in group["rules"]:
            exprs[rule.get("alert") or rule["record"]] = " ".join(str(rule["expr"]).split())
    return exprs


def test_the_rule_files_are_their_sources_with_the_thresholds_filled_in() -> None:
    files = rendered()
    assert {path.name for path in files} == {path.name for path in alert_rules.ALERTS.glob("*.rules.yml")}
    for path, text in files.items():
        assert path.read_text() == text, (
            f"{path.name} was edited by hand: edit alerts/source/ and run tools.alert_rules"
        )
    assert alert_rules.main(["--check"]) == 0


def test_a_threshold_changed_in_its_home_changes_the_rule_and_its_words() -> None:
    values = rule_values(
        dataclasses.replace(HEALTH, metadata_stale_records=2500.0),
        dataclasses.replace(ALERTS, metadata_lag_alert_seconds=45.0),
    )
    changed = {path.name: text for path, text in rendered(values).items()}["metadata.rules.yml"]
    exprs = _exprs(changed)
    assert "kafka_broker_metadata_lag_seconds > 45" in exprs["KafkaBrokerMetadataStale"]
    assert "kafka_broker_metadata_lag_records > 2500" in exprs["KafkaBrokerMetadataLagRecords"]
    assert "over 45 s behind" in changed and "more than 2500 records" in changed


def test_every_number_a_rule_compares_with_is_a_named_threshold_or_a_flag() -> None:
    for source in sorted(SOURCES.glob("*.rules.yml")):
        for name, expr in _exprs(source.read_text()).items():
            literals = {match.group(1) for match in COMPARISON.finditer(expr)} - NOT_THRESHOLDS
            assert not literals, f"{source.name} {name} compares with {sorted(literals)}: name it in thresholds.py"


def test_an_unknown_threshold_name_is_one_clear_error() -> None:
    with pytest.raises(UnknownThreshold, match=r"^x.rules.yml: \[\[metadata_lag\]\] is neither a threshold"):
        render("expr: lag > [[metadata_lag]]", rule_values(), "x.rules.yml")


def test_every_threshold_a_source_names_is_used_and_the_numbers_read_as_rules_write_them() -> None:
    used = {
        m.group(1)
        for source in SOURCES.glob("*.rules.yml")
        for m in alert_rules.PLACEHOLDER.finditer(source.read_text())
    }
    alert_fields = {field.name for field in dataclasses.fields(ALERTS)}
    assert alert_fields <= used, f"alert thresholds no rule uses: {sorted(alert_fields - used)}"
    values = rule_values()
    assert values["metadata_lag_alert_seconds"] == "30" and values["control_plane_idle_saturation_ratio"] == "0.1"
    assert values["control_plane_queue_saturation_size"] == "16"


def _github_anchor(heading: str) -> str:
    """The id GitHub (and MkDocs' default toc) gives a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_each_cause_a_page_can_carry_has_its_runbook_section_where_pagerduty_links() -> None:
    # alerts/templates/pagerduty.tmpl links runbook_url#cause-<cause>; a cause without its heading is a dead link
    states = states_paged_with_a_cause()
    assert set(states) == {"KafkaBrokerFenced", "KafkaBrokerUnreachable"}
    for alert, paged in states.items():
        runbook = (SOURCES.parent / "runbooks" / f"{alert}.md").read_text()
        anchors = {_github_anchor(line.lstrip("#")) for line in runbook.splitlines() if line.startswith("#")}
        for cause in {c for state in paged for c in CAUSES_OF_STATE[state]} | {NOT_REPORTED}:
            assert f"cause-{cause}" in anchors, f"{alert}.md has no section for {cause}"


def test_each_alert_links_its_runbook_from_one_place_and_no_source_writes_one() -> None:
    source = (
        "groups:\n  - name: g\n    rules:\n      - alert: KafkaX\n        expr: up == 0\n"
        "        annotations:\n          summary: x\n"
    )
    linked = yaml.safe_load(with_runbook_links(source))
    assert linked["groups"][0]["rules"][0]["annotations"] == {"runbook_url": f"{RUNBOOK_BASE}KafkaX.md", "summary": "x"}
    with pytest.raises(ValueError, match=r"runbook_url is written by tools/alert_rules\.py"):
        with_runbook_links(source + '          runbook_url: "https://example.com/x.md"\n', "x.rules.yml")
