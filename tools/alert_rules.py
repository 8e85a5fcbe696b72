"""alerts/*.rules.yml from alerts/source/*.rules.yml and the thresholds' one home, and docs/alerts.md's
table of every threshold.

Each `[[name]]` in a source is the number `ctlplane.exporter.thresholds.rule_values()` gives that name, as a
rule writes it (30, 0.1). Nothing else changes: comments, order and layout are the source's, so a rule file
reads as it always did, with first lines that say where it comes from.

    python -m tools.alert_rules           # write alerts/*.rules.yml and the table in docs/alerts.md
    python -m tools.alert_rules --check   # exit 1 and name the files that differ (tests/unit/alerts does too)
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import fields
from pathlib import Path

from ctlplane.exporter.thresholds import ALERTS as ALERT_THRESHOLDS
from ctlplane.exporter.thresholds import HEALTH, rule_values

ROOT = Path(__file__).resolve().parent.parent
ALERTS = ROOT / "alerts"
SOURCES = ALERTS / "source"
DOCS = ROOT / "docs" / "alerts.md"
TABLE_BEGIN = "<!-- thresholds: begin (python -m tools.alert_rules) -->"
TABLE_END = "<!-- thresholds: end -->"
PLACEHOLDER = re.compile(r"\[\[\s*(\w+)\s*\]\]")  # `[[` never occurs in PromQL or Go templates
HEADER = (
    "# Written by `python -m tools.alert_rules` from alerts/source/{name} and the thresholds in\n"
    "# ctlplane/exporter/thresholds.py: edit those, not this file (a test fails if they differ).\n"
)


class UnknownThreshold(ValueError):
    pass


def render(source: str, values: Mapping[str, str], name: str = "a rule source") -> str:
    """The source with every `[[name]]` replaced by its value; an unknown name is an error that names it."""

    def value(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            raise UnknownThreshold(f"{name}: [[{key}]] is not a threshold of ctlplane/exporter/thresholds.py")
        return values[key]

    return PLACEHOLDER.sub(value, source)


def rendered(values: Mapping[str, str] | None = None) -> dict[Path, str]:
    """Every rule file as it should be on disk: path -> text."""
    values = rule_values() if values is None else values
    return {
        ALERTS / source.name: HEADER.format(name=source.name) + render(source.read_text(), values, source.name)
        for source in sorted(SOURCES.glob("*.rules.yml"))
    }


def threshold_table() -> str:
    """Every threshold with its default and what it decides, as docs/alerts.md shows them."""
    rows = ["| threshold | default | decides |", "|---|---|---|"]
    for section, values in (("health", HEALTH), ("alert", ALERT_THRESHOLDS)):
        for spec in fields(values):
            name = f"`health.{spec.name}`" if section == "health" else f"`{spec.name}`"
            rows.append(f"| {name} | {getattr(values, spec.name):g} | {spec.metadata['means']} |")
    return "\n".join(rows) + "\n"


def with_table(docs: str, table: str) -> str:
    """docs/alerts.md with the text between the markers replaced by `table`."""
    head, found, rest = docs.partition(TABLE_BEGIN + "\n")
    _, end, tail = rest.partition(TABLE_END)
    if not found or not end:
        raise ValueError(f"{DOCS.name}: the markers {TABLE_BEGIN!r} and {TABLE_END!r} are missing")
    return head + TABLE_BEGIN + "\n" + table + TABLE_END + tail


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.alert_rules", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a rule file differs")
    args = parser.parse_args(argv)
    try:
        files = rendered()
    except UnknownThreshold as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    files[DOCS] = with_table(DOCS.read_text(), threshold_table())
    stale = [path for path, text in files.items() if not path.is_file() or path.read_text() != text]
    if args.check:
        for path in stale:
            sys.stderr.write(f"{path.relative_to(ROOT)} differs from its source: python -m tools.alert_rules\n")
        return 1 if stale else 0
    for path in stale:
        path.write_text(files[path])
        sys.stdout.write(f"wrote {path.relative_to(ROOT)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
