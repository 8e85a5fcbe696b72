"""The docs site's generated pages are what tools/docs.py writes from their sources (a page edited by hand,
or a source changed without `python -m tools.docs`, fails here), and they say what a reader needs."""

from __future__ import annotations

import dataclasses

import yaml

from ctlplane.exporter.thresholds import Thresholds
from tools import docs


def test_every_generated_page_is_what_its_sources_give() -> None:
    assert docs.main(["--check"]) == 0, "run python -m tools.docs"


def test_the_configuration_reference_names_every_key_with_its_default_and_meaning() -> None:
    page = docs.config_reference()
    rows = {line.split(" | ")[0].strip("| `"): line for line in page.splitlines() if line.startswith("| `")}
    for key in ("clusters[].name", "clusters[].discovery.jmx_port", "clusters[].discovery.dns[].type",
                "scrape.interval_seconds", "http.tls.client_auth_type", "history.retention_days"):  # fmt: skip
        assert key in rows, key
    assert (
        "| `15` |" in rows["scrape.interval_seconds"] and "one round of every node" in rows["scrape.interval_seconds"]
    )
    # the health thresholds' defaults and meanings are the one home's (ctlplane/exporter/thresholds.py)
    for spec in dataclasses.fields(Thresholds):
        row = rows[f"health.{spec.name}"]
        assert f"`{spec.default:g}`" in row and spec.metadata["means"].split(" (")[0] in row, row
    assert all(not row.endswith("|  |") for row in rows.values()), "a key without a meaning"


def test_every_alert_is_in_the_reference_with_its_runbook() -> None:
    page = docs.alerts_reference()
    for runbook in sorted((docs.ROOT / "alerts" / "runbooks").glob("*.md")):
        assert f"\n## {runbook.stem}\n" in page, runbook.stem
    assert "### What to do" in page and "```promql" in page


def test_the_alerts_reference_prints_each_runbook_once() -> None:
    page = docs.alerts_reference()
    for name in docs.alerts_by_name():
        assert page.count(f"\n## {name}\n") == 1, name
    fenced = page[page.index("\n## KafkaBrokerFenced\n") :]
    fenced = fenced[: fenced.index("\n## ", 1)]
    assert fenced.count("### What it means") == 1 and fenced.count("```promql") == 2, "two rules, one runbook"


def test_the_alerts_page_lists_every_alert_in_its_file_and_every_inhibition() -> None:
    rules = docs.rules()
    by_name = docs.alerts_by_name()
    table = docs.alerts_table()
    assert f"{len(by_name)} alerts in {len(rules)} rules" in table
    rows = [line for line in table.splitlines() if line.startswith("| [")]
    assert [row.split("]")[0][3:] for row in rows] == list(by_name)
    files = {line.split(" | ")[0].strip("| `"): line for line in docs.rule_files_table().splitlines()}
    for rule in rules:
        assert f"`{rule.alert}`" in files[f"alerts/{rule.file}"], (rule.alert, rule.file)
    assert "`KafkaControllerHeartbeatsTimedOut`" in files["alerts/controller.rules.yml"]
    inhibit_rules = yaml.safe_load(docs.ALERTMANAGER.read_text())["inhibit_rules"]
    bullets = docs.inhibitions().splitlines()
    assert len(bullets) == len(inhibit_rules) == 8
    assert bullets[4].startswith("- `KafkaZooKeeperSessionLost` suppresses `KafkaBrokerFenced` of the same `cluster`")
    # a regular expression of alertmanager.yml spelled out as the alerts it selects
    assert "`KafkaQuorumNoSpareVoter`" in bullets[3] and "`KafkaBrokerMetadataFrozen`" in bullets[3]
    assert "every alert but `CtlplaneExporterDown`, `CtlplaneSnapshotStale`" in bullets[0]
