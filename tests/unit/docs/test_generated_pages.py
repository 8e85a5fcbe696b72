"""The docs site's generated pages are what tools/docs.py writes from their sources (a page edited by hand,
or a source changed without `python -m tools.docs`, fails here), and they say what a reader needs."""

from __future__ import annotations

import dataclasses

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
