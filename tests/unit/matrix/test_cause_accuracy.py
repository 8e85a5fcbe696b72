"""`make test-matrix` prints the cause accuracy of each fault-table row per release (#35), from the checks the
rows themselves make (tests/integration/faults.py Timeline.expect_causes, one JSON line per check)."""

from __future__ import annotations

import json
from pathlib import Path

from ctlplane.exporter.releases import MATRIX
from tools.matrix import Outcome, cause_report, summary

ROW = "tests/integration/test_fault_table.py::test_a_hung_broker_is_fenced_and_pages_after_every_controller_restarted"


def test_the_summary_counts_the_rounds_each_row_named_rightly_and_its_failed_checks(tmp_path: Path) -> None:
    entry = MATRIX[0]
    checks = [
        {"test": ROW, "rounds": 6, "right": 6, "ok": True},
        {"test": ROW, "rounds": 2, "right": 1, "ok": False},  # one round read another cause
    ]
    cause_report(tmp_path, entry).write_text("".join(json.dumps(c) + "\n" for c in checks))
    text = summary([Outcome(entry, False, 60.0, "1 failed")], tmp_path)
    row = next(line for line in text.splitlines() if "test_a_hung_broker" in line)
    assert row.split(" | ")[2:] == ["7/8 rounds", "1 |"], row


def test_an_entry_whose_rows_made_no_check_has_no_rows(tmp_path: Path) -> None:
    text = summary([Outcome(MATRIX[0], True, 60.0, "passed")], tmp_path)
    assert text.rstrip().endswith("|---|---|---|---|")
