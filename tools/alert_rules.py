"""alerts/*.rules.yml from alerts/source/*.rules.yml and the thresholds' one home, and docs/alerts.md's
table of every threshold.

Each `[[name]]` in a source is the number `ctlplane.exporter.thresholds.rule_values()` gives that name, as a
rule writes it (30, 0.1), or one of the annotation templates below (`[[cause]]`, `[[cause_phrase]]`,
`[[cause_evidence]]`, `[[dashboard_url]]`), whose words come from ctlplane/exporter/health/cause.py. Nothing
else changes: comments, order and layout are the source's, so a rule file reads as it always did, with first
lines that say where it comes from.

    python -m tools.alert_rules           # write alerts/*.rules.yml and the table in docs/alerts.md
    python -m tools.alert_rules --check   # exit 1 and name the files that differ (tests/unit/alerts does too)
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from pathlib import Path

import yaml

from ctlplane.exporter.health.cause import CAUSE_TEXT, CAUSES_OF_STATE, CauseText
from ctlplane.exporter.health.model import Lifecycle
from ctlplane.exporter.thresholds import ALERTS as ALERT_THRESHOLDS
from ctlplane.exporter.thresholds import HEALTH, rule_values
from tools.markers import between

ROOT = Path(__file__).resolve().parent.parent
ALERTS = ROOT / "alerts"
SOURCES = ALERTS / "source"
DOCS = ROOT / "docs" / "alerts.md"
RUNBOOKS = ALERTS / "runbooks"
TABLE_BEGIN = "<!-- thresholds: begin (python -m tools.alert_rules) -->"
TABLE_END = "<!-- thresholds: end -->"
CAUSES_BEGIN = "<!-- causes: begin (python -m tools.alert_rules, from ctlplane/exporter/health/cause.py) -->"
CAUSES_END = "<!-- causes: end -->"
_STATE = re.compile(r'state="(\w+)"')
PLACEHOLDER = re.compile(r"\[\[\s*(\w+)\s*\]\]")  # `[[` never occurs in PromQL or Go templates
HEADER = (
    "# Written by `python -m tools.alert_rules` from alerts/source/{name} and the thresholds in\n"
    "# ctlplane/exporter/thresholds.py: edit those, not this file (a test fails if they differ).\n"
)


NOT_REPORTED = "not_reported"  # no kafka_broker_fault_cause for the node: an older exporter, or not scraped
_CAUSE_QUERY = 'printf "kafka_broker_fault_cause{cluster=%q,node=%q}" $labels.cluster $labels.node | query'
_DASHBOARD_QUERY = 'printf "ctlplane_dashboard_info{job=%q,instance=%q}" $labels.job $labels.instance | query'


def _tag(action: str) -> str:
    """One Go template action: `{{ action }}`."""
    return "{{ " + action + " }}"


def _by_cause(words: Callable[[CauseText], str], not_reported: str) -> str:
    """A Go template (Prometheus' alert templating) that says the node's cause in `words`: the annotation is
    expanded at every evaluation, so a cause that changes changes the page's words, never its `for:`."""
    branches = "".join(
        _tag(f'{"if" if i == 0 else "else if"} eq . "{cause.value}"') + words(text)
        for i, (cause, text) in enumerate(CAUSE_TEXT.items())
    )
    return (
        _tag(f"with {_CAUSE_QUERY}")
        + _tag("with (index . 0).Labels.cause")
        + branches
        + _tag("else")
        + _tag(".")
        + _tag("end") * 2
        + _tag("else")
        + not_reported
        + _tag("end")
    )


def annotation_templates() -> dict[str, str]:
    """The `[[name]]`s that are annotation templates, not thresholds."""
    for cause, text in CAUSE_TEXT.items():
        for words in (text.phrase, text.evidence):
            if any(mark in words for mark in ('"', "{{", "}}", "\n")):
                raise ValueError(f"the words of cause {cause} cannot go into a Go template string: {words!r}")
    return {
        "cause": _tag(f"with {_CAUSE_QUERY}")
        + _tag("(index . 0).Labels.cause")
        + _tag("else")
        + NOT_REPORTED
        + _tag("end"),
        "cause_phrase": _by_cause(lambda text: text.phrase, "cause not reported"),
        "cause_evidence": _by_cause(lambda text: text.evidence, "ctlplane served no cause for it"),
        # the broker's page: its row and its evidence round by round (ctlplane/dashboard/views/broker.py)
        "dashboard_url": _tag(f"with {_DASHBOARD_QUERY}")
        + _tag("(index . 0).Labels.url")
        + _tag("else")
        + "http://"
        + _tag("$labels.instance")
        + "/dashboard/"
        + _tag("end")
        + "cluster/"
        + _tag("$labels.cluster | urlquery")
        + "/broker/"
        + _tag("$labels.node | urlquery"),
    }


# How the manual shows each annotation template (docs/reference/alerts.md): what it says, not its Go code.
READABLE = {
    "cause": "[the cause]",
    "cause_phrase": "[the cause, in words]",
    "cause_evidence": "[what ctlplane saw]",
    "dashboard_url": "[the broker's page on the dashboard]",
}


class UnknownThreshold(ValueError):
    pass


def render(source: str, values: Mapping[str, str], name: str = "a rule source") -> str:
    """The source with every `[[name]]` replaced by its value; an unknown name is an error that names it."""

    def value(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            raise UnknownThreshold(
                f"{name}: [[{key}]] is neither a threshold of ctlplane/exporter/thresholds.py nor an annotation "
                "template of tools/alert_rules.py"
            )
        return values[key]

    return PLACEHOLDER.sub(value, source)


# Every alert's runbook, linked in one place (as kubernetes-mixin does): alerts/runbooks/<alert>.md
RUNBOOK_BASE = "https://github.com/ctlplane/ctlplane/blob/main/alerts/runbooks/"
_ALERT = re.compile(r"^\s*- alert: (\S+)\s*$")
_ANNOTATIONS = re.compile(r"^(\s*)annotations:\s*$")


def with_runbook_links(text: str, name: str = "a rule source") -> str:
    """Each alert's annotations with its `runbook_url` first: RUNBOOK_BASE + the alert's name + ".md". A source
    that writes one itself is an error: the link has one home."""
    lines, alert = [], None
    for line in text.splitlines(keepends=True):
        if "runbook_url:" in line:
            raise ValueError(f"{name}: runbook_url is written by tools/alert_rules.py (RUNBOOK_BASE), not by hand")
        lines.append(line)
        if (match := _ALERT.match(line)) is not None:
            alert = match.group(1)
        elif (match := _ANNOTATIONS.match(line)) is not None and alert is not None:
            lines.append(f'{match.group(1)}  runbook_url: "{RUNBOOK_BASE}{alert}.md"\n')
    return "".join(lines)


def rendered(thresholds: Mapping[str, str] | None = None, readable: bool = False) -> dict[Path, str]:
    """Every rule file as it should be on disk, path -> text: with `thresholds` (rule_values() if None) and
    the annotation templates (`readable`: as the manual shows them, READABLE)."""
    values = {
        **(rule_values() if thresholds is None else thresholds),
        **(READABLE if readable else annotation_templates()),
    }
    return {
        ALERTS / source.name: HEADER.format(name=source.name)
        + with_runbook_links(render(source.read_text(), values, source.name), source.name)
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


def states_paged_with_a_cause() -> dict[str, list[Lifecycle]]:
    """alertname -> the lifecycle states its rules select, for every alert whose page carries `[[cause]]`."""
    found: dict[str, list[Lifecycle]] = {}
    for text in rendered(readable=True).values():
        for group in yaml.safe_load(text)["groups"]:
            for rule in group["rules"]:
                if "alert" in rule and rule.get("annotations", {}).get("cause") == READABLE["cause"]:
                    states = found.setdefault(rule["alert"], [])
                    for state in _STATE.findall(str(rule["expr"])):
                        if Lifecycle(state) not in states:
                            states.append(Lifecycle(state))
    return found


def cause_sections(states: Sequence[Lifecycle]) -> str:
    """A runbook's section per cause a page of a broker in `states` can carry, each with the first command."""
    causes = list(dict.fromkeys(cause for state in states for cause in CAUSES_OF_STATE[state]))
    out = [
        "## By cause\n",
        "The page names the cause ctlplane decided from what the broker's JMX, the controller and the quorum said "
        "(the summary's last words; PagerDuty's `cause`, `evidence` and `runbook_section`, which links here; "
        "docs/health-model.md \"Why: the cause of a broker's state\"). Its `dashboard` link opens the broker's "
        "page on the dashboard: its evidence round by round over the dashboard's window.\n",
    ]
    for cause in causes:
        text = CAUSE_TEXT[cause]
        out.append(f"### Cause: {cause.value}\n")
        out.append(f"The page says *{text.phrase}*: {text.evidence}.\n")
        out.append(f"**First:** {text.first_move}\n")
    out.append(f"### Cause: {NOT_REPORTED}\n")
    out.append(
        "The exporter serves no `kafka_broker_fault_cause` for the broker (older than these rules, or the series "
        "was not scraped). Read the evidence from `/api/v1/health` (`.brokers[].evidence`) and go on below.\n"
    )
    return "\n".join(out)


def runbooks() -> dict[Path, str]:
    """The runbooks with their per-cause sections written between the markers."""
    out: dict[Path, str] = {}
    for alert, states in sorted(states_paged_with_a_cause().items()):
        path = RUNBOOKS / f"{alert}.md"
        page = str(path.relative_to(ROOT))
        out[path] = between(path.read_text(), CAUSES_BEGIN, CAUSES_END, cause_sections(states), page)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.alert_rules", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a rule file differs")
    args = parser.parse_args(argv)
    try:
        files = rendered()
    except UnknownThreshold as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    files.update(runbooks())
    files[DOCS] = between(DOCS.read_text(), TABLE_BEGIN, TABLE_END, threshold_table(), "docs/alerts.md")
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
