"""The docs site's generated pages, from the sources they describe (never edited by hand; a unit test fails
if one differs from what this writes):

    docs/reference/configuration.md   every config field: key, type, default, meaning (the pydantic model)
    docs/reference/alerts.md          every alert with its rules and its runbook, once (alerts/*.rules.yml,
                                      alerts/runbooks/)
    docs/reference/cli.md             every command and flag of `ctlplane` (ctlplane/cli.py's parser)
    docs/series.md                    the series table between its markers (the catalogue)
    docs/sources.md                   between its markers: which readings each naming profile serves (the
                                      catalogue through each profile's rules, ctlplane/exporter/sources/endpoint/)
    docs/alerts.md                    between their markers: the table of files (the rule files' own first
                                      words and the alerts each holds), of alerts (the rule files), and the
                                      inhibitions (alerts/alertmanager.yml)

    python -m tools.docs           # write them
    python -m tools.docs --check   # exit 1 and name the pages that differ
"""

from __future__ import annotations

import argparse
import inspect
import re
import sys
import types
import typing
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from ctlplane.exporter.catalog import (
    CANARY_SERIES,
    CATALOG,
    DERIVED_SERIES,
    HEALTH_SERIES,
    QUORUM_SERIES,
    MetricSpec,
    SeriesType,
)
from ctlplane.exporter.config import Settings
from ctlplane.exporter.http import schema as api_schema
from ctlplane.exporter.readings import parse_object_name, plan_queries
from ctlplane.exporter.sources.endpoint.client import CARRIERS, STRING_ATTRIBUTES, inversion_for
from ctlplane.exporter.sources.endpoint.profiles import AGENT_ALIASES, PROFILES, EndpointNaming, profile
from ctlplane.exporter.sources.endpoint.reporter import ReporterNaming, unserved
from tools.alert_rules import rendered
from tools.markers import between

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
CONFIG_PAGE = DOCS / "reference" / "configuration.md"
ALERTS_PAGE = DOCS / "reference" / "alerts.md"
CLI_PAGE = DOCS / "reference" / "cli.md"
API_PAGE = DOCS / "reference" / "api.md"
SERIES_PAGE = DOCS / "series.md"
SERIES_BEGIN = "<!-- series: begin (python -m tools.docs) -->"
SERIES_END = "<!-- series: end -->"
SOURCES_PAGE = DOCS / "sources.md"
SOURCES_BEGIN = "<!-- evidence: begin (python -m tools.docs, from the catalogue and the naming profiles) -->"
SOURCES_END = "<!-- evidence: end -->"
INSTALL_PAGE = DOCS / "install.md"
SYSTEMD_UNIT = ROOT / "deploy" / "systemd" / "ctlplane.service"
SYSTEMD_BEGIN = "<!-- systemd: begin (python -m tools.docs, from deploy/systemd/ctlplane.service) -->"
SYSTEMD_END = "<!-- systemd: end -->"
GUIDE_PAGE = DOCS / "alerts.md"
ALERTMANAGER = ROOT / "alerts" / "alertmanager.yml"
RULE_SOURCES = ROOT / "alerts" / "source"
FILES_BEGIN = "<!-- files: begin (python -m tools.docs, from alerts/source/*.rules.yml) -->"
FILES_END = "<!-- files: end -->"
ALERTS_BEGIN = "<!-- alerts: begin (python -m tools.docs, from alerts/*.rules.yml) -->"
ALERTS_END = "<!-- alerts: end -->"
INHIBITIONS_BEGIN = "<!-- inhibitions: begin (python -m tools.docs, from alerts/alertmanager.yml) -->"
INHIBITIONS_END = "<!-- inhibitions: end -->"
# The rows of docs/alerts.md's file table that are not rule files
OTHER_FILES = (
    ("`alerts/runbooks/<Alert>.md`", "what it means in Kafka terms, how to confirm it, what to do, when to escalate"),
    (
        "`alerts/alertmanager.yml`, `alerts/templates/pagerduty.tmpl`",
        "routing, grouping, inhibitions, the PagerDuty payload",
    ),
    ("`alerts/source/*.rules.yml`", 'the rule files as written, each threshold a `[[name]]` (see "Tune thresholds")'),
    ("`alerts/tests/*.test.yml`", "`promtool test rules` unit tests for every alert"),
    ("`alerts/check.sh`", "every offline check (run by `make lint`)"),
)
GENERATED = "<!-- Written by `python -m tools.docs` from {source}: edit that, not this page. -->\n\n"


def _models(annotation: Any) -> Iterator[type[BaseModel]]:
    """The config models inside a field's type (`list[ClusterConfig]`, `TlsConfig | None`)."""
    if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        yield annotation
    for argument in typing.get_args(annotation):
        yield from _models(argument)


def _section(model: type[BaseModel]) -> str:
    return "section"


def _type_name(annotation: Any, model_name: Callable[[type[BaseModel]], str] = _section) -> str:
    """A field's type in words; a model inside it as `model_name` names it (the config reference: a section of
    its own; the API reference: a link to its document)."""
    if annotation is type(None):
        return "null"
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(argument, model_name) for argument in typing.get_args(annotation))
    if origin is typing.Literal:
        return " / ".join(f"`{value}`" for value in typing.get_args(annotation))
    if origin is list:
        (item,) = typing.get_args(annotation)
        return f"list of {_type_name(item, model_name)}"
    if origin is dict:
        key, value = typing.get_args(annotation)
        return f"map {_type_name(key, model_name)} → {_type_name(value, model_name)}"
    if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        return model_name(annotation)
    if inspect.isclass(annotation) and issubclass(annotation, Enum):
        return " / ".join(f"`{member.value}`" for member in annotation)
    names = {str: "string", int: "integer", float: "number", bool: "boolean", Path: "path"}
    return names.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _default(info: FieldInfo) -> str:
    if info.default is PydanticUndefined and info.default_factory is None:
        return "required"
    if info.default_factory is not None:
        value = info.default_factory()  # type: ignore[call-arg]  # pydantic types it as maybe taking the data: not ours
        return "none" if value in ([], {}) else "(a section of defaults)"
    if info.default is None:
        return "none"
    value = info.default.value if isinstance(info.default, Enum) else info.default
    return f"`{value:g}`" if isinstance(value, float) else f"`{value}`"


def _bounds(info: FieldInfo) -> str:
    said = []
    for constraint in info.metadata:
        for name, word in (("gt", ">"), ("ge", "≥"), ("lt", "<"), ("le", "≤")):
            value = getattr(constraint, name, None)
            if value is not None:
                said.append(f"{word} {value:g}" if isinstance(value, float) else f"{word} {value}")
    return f" ({', '.join(said)})" if said else ""


def config_reference() -> str:
    """Every field of `Settings`, section by section, in the order a config file nests them."""
    out = [
        GENERATED.format(source="ctlplane/exporter/config/__init__.py"),
        "# Configuration reference\n",
        "Every key of a ctlplane config file, with its type, default and meaning, from the model that checks it "
        "(`ctlplane check-config` and `ctlplane run` refuse anything else: an unknown key, a wrong type, a value "
        "out of its bounds, each with its path). How to write one: [Configuration](../configuration.md).\n",
    ]
    sections: list[tuple[str, type[BaseModel]]] = [("", Settings)]
    done: set[tuple[str, type[BaseModel]]] = set()
    while sections:
        prefix, model = sections.pop(0)
        if (prefix, model) in done:
            continue
        done.add((prefix, model))
        title = f"`{prefix.rstrip('.')}`" if prefix else "Top level"
        doc = inspect.cleandoc(model.__doc__ or "").split("\n\n")[0].replace("\n", " ")
        out.append(f"\n## {title}\n")
        if doc and model is not Settings:
            out.append(f"{doc}\n")
        out.append("| key | type | default | meaning |\n|---|---|---|---|")
        for name, info in model.model_fields.items():
            meaning = (info.description or "").replace("|", "\\|").replace("\n", " ")
            kind = _type_name(info.annotation).replace("|", "\\|")
            out.append(f"| `{prefix}{name}` | {kind}{_bounds(info)} | {_default(info)} | {meaning} |")
            for inner in _models(info.annotation):
                many = typing.get_origin(info.annotation) is list or any(
                    typing.get_origin(a) is list for a in typing.get_args(info.annotation)
                )
                sections.append((f"{prefix}{name}{'[]' if many else ''}.", inner))
    return "\n".join(out) + "\n"


def _runbook_body(path: Path) -> str:
    """A runbook under its alert's heading: its own title dropped, its sections one level down."""
    lines = path.read_text().splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    return "\n".join(f"#{line}" if line.startswith("#") else line for line in lines).strip() + "\n"


@dataclass(frozen=True)
class Rule:
    """One alerting rule as Prometheus loads it (the annotation templates as the manual shows them)."""

    alert: str
    file: str
    group: str
    expr: str
    duration: str
    labels: dict[str, str]
    annotations: dict[str, str]


def rules() -> list[Rule]:
    """Every alerting rule of alerts/*.rules.yml, file by file in the files' order."""
    found = []
    for path, text in sorted(rendered(readable=True).items()):
        for group in yaml.safe_load(text)["groups"]:
            for rule in group["rules"]:
                if "alert" in rule:
                    found.append(
                        Rule(
                            alert=rule["alert"],
                            file=path.name,
                            group=group["name"],
                            expr=str(rule["expr"]).strip(),
                            duration=str(rule.get("for", "0s")),
                            labels=dict(rule["labels"]),
                            annotations=dict(rule["annotations"]),
                        )
                    )
    return found


def alerts_by_name() -> dict[str, list[Rule]]:
    """alertname -> its rules (KafkaBrokerFenced is two), in the rule files' order."""
    found: dict[str, list[Rule]] = {}
    for rule in rules():
        found.setdefault(rule.alert, []).append(rule)
    return found


def alerts_reference() -> str:
    out = [
        GENERATED.format(source="alerts/*.rules.yml and alerts/runbooks/"),
        "# Alerts and runbooks\n",
        "Every alert rule ctlplane ships, as Prometheus loads it, with its runbook. How they page and how to "
        "tune them: [Alerts](../alerts.md).\n",
    ]
    for name, its_rules in alerts_by_name().items():
        out.append(f"\n## {name}\n")
        if len(its_rules) > 1:
            out.append(f"{len(its_rules)} rules, one alert: whichever rule matches fires it.\n")
        for rule in its_rules:
            distinct = ", ".join(
                f"`{key}={value}`"
                for key, value in rule.labels.items()
                if key not in ("severity", "scope") and len(its_rules) > 1
            )
            out.append(
                f"`{rule.labels['severity']}`, after `{rule.duration}`{f' ({distinct})' if distinct else ''} "
                f"(`alerts/{rule.file}`, group `{rule.group}`): {rule.annotations['summary']}\n"
            )
            out.append(f"```promql\n{rule.expr}\n```\n")
        out.append(_runbook_body(ROOT / "alerts" / "runbooks" / f"{name}.md"))
    return "\n".join(out)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _readable_summary(summary: str) -> str:
    """A summary's Go templates as the reader sees them: `{node}`, `{cluster}`, `{value}`."""

    def slot(match: re.Match[str]) -> str:
        action = match.group(1)
        label = re.search(r"\$labels\.(\w+)", action)
        if label:
            return "{" + label.group(1) + "}"
        return "{value}" if "$value" in action else "{…}"

    return _cell(re.sub(r"\{\{(.*?)\}\}", slot, summary))


def _first_sentence(path: Path) -> str:
    """What a rule source says it holds: the first sentence of its opening comment."""
    comment = []
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        comment.append(line.lstrip("#").strip())
    return re.split(r"(?<=[.?])\s", " ".join(comment), maxsplit=1)[0]


def rule_files_table() -> str:
    """docs/alerts.md's table of files: every rule file with what it holds and its alerts, then the rest."""
    out = ["| file | what it holds |", "|---|---|"]
    by_file: dict[str, list[str]] = {}
    for rule in rules():
        held = by_file.setdefault(rule.file, [])
        if rule.alert not in held:
            held.append(rule.alert)
    for source in sorted(RULE_SOURCES.glob("*.rules.yml")):
        names = ", ".join(f"`{name}`" for name in by_file.get(source.name, []))
        out.append(f"| `alerts/{source.name}` | {_cell(_first_sentence(source))} Alerts: {names} |")
    out += [f"| {file} | {what} |" for file, what in OTHER_FILES]
    return "\n".join(out) + "\n"


def alerts_table() -> str:
    """docs/alerts.md's table of every alert: severity, `for:`, scope and what its page says."""
    by_name = alerts_by_name()
    count = sum(len(its_rules) for its_rules in by_name.values())
    out = [
        f"{len(by_name)} alerts in {count} rules (an alert of several rules, each with its own `for:`, fires from "
        "whichever matches). Each links to its rules and runbook in the [reference](reference/alerts.md).\n",
        "| alert | severity | for | scope | the page says |",
        "|---|---|---|---|---|",
    ]
    for name, its_rules in by_name.items():
        severities = " / ".join(dict.fromkeys(rule.labels["severity"] for rule in its_rules))
        durations = " / ".join(dict.fromkeys(rule.duration for rule in its_rules))
        scopes = " / ".join(dict.fromkeys(rule.labels.get("scope", "") for rule in its_rules))
        summary = _readable_summary(its_rules[0].annotations["summary"])
        anchor = name.lower()  # the reference's heading, as mkdocs makes its anchor
        out.append(f"| [{name}](reference/alerts.md#{anchor}) | {severities} | {durations} | {scopes} | {summary} |")
    return "\n".join(out) + "\n"


_MATCHER = re.compile(r'^\s*(\w+)\s*(=~|!~|!=|=)\s*"(.*)"\s*$')


def _matched(matchers: Sequence[str], names: Sequence[str], joiner: str = ", ") -> str:
    """Which alerts an inhibition's matchers select, in words: alert names spelled out (a regular expression
    expanded against the shipped alerts), other labels as their matcher."""
    said = []
    for matcher in matchers:
        found = _MATCHER.match(matcher)
        if not found:
            raise ValueError(f"alerts/alertmanager.yml: a matcher tools/docs.py cannot read: {matcher!r}")
        label, operator, value = found.groups()
        if label == "alertname" and operator in ("=", "=~"):
            selected = [name for name in names if re.fullmatch(value, name)] if operator == "=~" else [value]
            said.append(joiner.join(f"`{name}`" for name in selected))
        elif label == "alertname":
            excluded = [name for name in names if re.fullmatch(value, name)] if operator == "!~" else [value]
            said.append("every alert but " + ", ".join(f"`{name}`" for name in excluded))
        else:
            said.append(f'every alert with `{label}{operator}"{value}"`')
    return " and ".join(said)


def inhibitions() -> str:
    """docs/alerts.md's list of inhibitions: each rule of alerts/alertmanager.yml with its comment."""
    text = ALERTMANAGER.read_text()
    rules_ = yaml.safe_load(text)["inhibit_rules"]
    comments: list[str] = []
    lines = text.splitlines()
    start = lines.index("inhibit_rules:")
    said: list[str] = []
    for line in lines[start + 1 :]:
        stripped = line.strip()
        if line and not line.startswith(" "):
            break
        if stripped.startswith("#"):
            said.append(stripped.lstrip("#").strip())
        elif stripped.startswith("- "):
            comments.append(" ".join(said))
            said = []
    if len(comments) != len(rules_):
        raise ValueError("alerts/alertmanager.yml: tools/docs.py read a different number of inhibit rules")
    names = list(alerts_by_name())
    out = []
    for rule, why in zip(rules_, comments, strict=True):
        source = _matched(rule["source_matchers"], names, joiner=" or ")
        target = _matched(rule["target_matchers"], names)
        equal = ", ".join(f"`{label}`" for label in rule["equal"])
        out.append(f"- {source} suppresses {target} of the same {equal}." + (f" {why}" if why else ""))
    return "\n".join(out) + "\n"


def alerts_guide(text: str) -> str:
    """docs/alerts.md with its generated parts (the threshold table is tools/alert_rules.py's)."""
    page = "docs/alerts.md"
    text = between(text, FILES_BEGIN, FILES_END, rule_files_table(), page)
    text = between(text, ALERTS_BEGIN, ALERTS_END, alerts_table(), page)
    return between(text, INHIBITIONS_BEGIN, INHIBITIONS_END, inhibitions(), page)


def series_table() -> str:
    out = ["| series | type | MBean | attribute | modes | since |", "|---|---|---|---|---|---|"]
    for spec in CATALOG:
        modes = ", ".join(sorted(mode.value for mode in spec.modes))
        until = f"-{spec.until}" if spec.until else "+"
        until += f" (KRaft {spec.kraft_since}+)" if spec.kraft_since else ""
        attribute = "histogram" if not spec.attribute else spec.attribute
        out.append(
            f"| `{spec.series}` | {spec.type.value} | `{spec.mbean}` | {attribute} | {modes} | {spec.since}{until} |"
        )
    out += ["", "| series | derived from |", "|---|---|"]
    for name, text in {**HEALTH_SERIES, **QUORUM_SERIES, **CANARY_SERIES, **DERIVED_SERIES}.items():
        out.append(f"| `{name}` | {text} |")
    return "\n".join(out) + "\n"


def _served(spec: MetricSpec, mapped: frozenset[tuple[str, str]], naming: EndpointNaming) -> str:
    """What a profile serves of one catalogue row, in words for the evidence table."""
    attributes = ("Count", "Mean") if spec.type is SeriesType.SUMMARY else (spec.attribute,)
    excluded = None
    if isinstance(naming, ReporterNaming):
        string = (spec.mbean, spec.attribute) in STRING_ATTRIBUTES
        why = next((w for a in attributes if (w := unserved(naming, spec.mbean, a, string)) is not None), None)
        if why is not None:
            return f"**no**: {why}"
    else:
        domain, keys = parse_object_name(spec.mbean)
        excluded = next((p for p in naming.exclude if p.matches(domain, keys)), None)
    if all((spec.mbean, attribute) in mapped for attribute in attributes):
        if (spec.mbean, spec.attribute) in CARRIERS:
            return "node id only (the release is a String)"
        if any(alias.pattern == spec.mbean and alias.attribute == spec.attribute for _, alias in AGENT_ALIASES):
            name = next(n for n, a in AGENT_ALIASES if a.pattern == spec.mbean and a.attribute == spec.attribute)
            return f"yes (as `{name}`)" if isinstance(naming, ReporterNaming) else f"yes (or the agent's `{name}`)"
        return "yes"
    if excluded is not None:
        return f"**no**: its MBean is excluded (`{excluded.text}`)"
    if (spec.mbean, spec.attribute) in STRING_ATTRIBUTES:
        return "**no**: a String, dropped"
    if spec.type is SeriesType.SUMMARY:
        return "**no**: no rule serves its Count and Mean"
    return "**no**: no rule serves it"


def unserved_series(name: str) -> frozenset[str]:
    """The catalogue series the evidence table says a profile does not serve (the endpoint tests hold the
    table to what the real endpoints serve)."""
    mapped = inversion_for(profile(name), plan_queries()).mapped()
    return frozenset(spec.series for spec in CATALOG if _served(spec, mapped, profile(name)).startswith("**no**"))


def sources_table() -> str:
    """Per catalogue series: what remote JMX and each naming profile serve of it."""
    queries = plan_queries()
    mapped = {name: inversion_for(profile(name), queries).mapped() for name in PROFILES}
    out = [
        "| series | remote JMX | " + " | ".join(f"`{name}` naming" for name in PROFILES) + " |",
        "|---|---|" + "---|" * len(PROFILES),
    ]
    for spec in CATALOG:
        if spec.mbean.startswith("ctlplane."):
            continue  # the simulator's own marker
        cells = [_served(spec, mapped[name], profile(name)) for name in PROFILES]
        out.append(f"| `{spec.series}` | yes | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def _commands(parser: argparse.ArgumentParser, path: str) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    """(command line, its help, its parser) for every command under `parser`, depth first in the parser's order."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield f"{path} {name}", helps.get(name, ""), sub
                yield from _commands(sub, f"{path} {name}")


def _flag(action: argparse.Action) -> str:
    names = ", ".join(f"`{o}`" for o in action.option_strings) or f"`{action.dest}`"
    if action.option_strings and action.nargs != 0:
        choices = "{" + ",".join(map(str, action.choices)) + "}" if action.choices else None
        metavar = action.metavar if isinstance(action.metavar, str) else action.dest
        names += f" {choices or metavar.upper()}"
    return names


def cli_reference() -> str:
    """Every command of `ctlplane` and its flags, as its parser (ctlplane/cli.py build_parser) has them."""
    from ctlplane.cli import build_parser

    out = [
        "# Command line",
        "",
        "<!-- Generated by `python -m tools.docs` from ctlplane/cli.py's parser: edit the parser, not this page. -->",
        "",
        "Every command of `ctlplane` and its flags, as `ctlplane <command> --help` prints them. Every command",
        "takes `--log-level` before the command (`--log-level DEBUG`, then the command); `ctlplane --version`",
        "prints the version and the Kafka client it carries.",
    ]
    for line, help_text, sub in _commands(build_parser(), "ctlplane"):
        out += ["", f"## `{line}`", ""]
        if help_text:
            out += [help_text[0].upper() + help_text[1:] + ".", ""]
        flags = [a for a in sub._actions if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))]
        if not flags:
            out.append("No flags of its own.")
            continue
        out += ["| flag | required | default | meaning |", "|---|---|---|---|"]
        for action in flags:
            default = action.default
            shown = "" if default in (None, False, "", argparse.SUPPRESS) or action.nargs == 0 else f"`{default}`"
            required = "yes" if action.required or not action.option_strings else ""
            out.append(f"| {_flag(action)} | {required} | {shown} | {_cell(action.help or '')} |")
    return "\n".join(out) + "\n"


# The JSON API's endpoints and the document each answers with (ctlplane/exporter/http/app.py)
API_ENDPOINTS: tuple[tuple[str, str, type[BaseModel], bool], ...] = (
    ("/api/v1/snapshot", "every node's readings of the last round", api_schema.SnapshotDocument, False),
    ("/api/v1/health", "per cluster, the controller and every broker's state, evidence and cause",
     api_schema.HealthDocument, False),
    ("/api/v1/restart", "may each node restart now, and why not (`?cluster=` and `?node=` narrow it; 404 where "
     "none is known)", api_schema.RestartAnswer, True),
)  # fmt: skip


def _api_type(annotation: Any) -> str:
    """A document field's type, a nested document as a link to its section."""
    return _type_name(annotation, lambda model: f"[{model.__name__}](#{model.__name__.lower()})")


def api_reference() -> str:
    """The JSON API: each endpoint's document, then every document's fields, from the models that describe
    them in /openapi.json (ctlplane/exporter/http/schema.py)."""
    out = [
        GENERATED.format(source="ctlplane/exporter/http/schema.py"),
        "# JSON API reference\n",
        "What the exporter answers under `/api/v1/`, field by field. The same schema is served as OpenAPI at "
        "`/openapi.json` and readable at `/api/docs`; every answer the exporter writes keeps to it (a field it "
        "does not name is never sent). Behind the exporter's basic auth where it has one "
        "([Configuration](../configuration.md)).\n",
        "| endpoint (GET) | answers | document |\n|---|---|---|",
    ]
    for path, what, model, many in API_ENDPOINTS:
        document = f"list of {_api_type(model)}" if many else _api_type(model)
        out.append(f"| `{path}` | {what} | {document} |")
    seen: list[type[BaseModel]] = []
    queue = [model for _, _, model, _ in API_ENDPOINTS]
    while queue:
        model = queue.pop(0)
        if model in seen:
            continue
        seen.append(model)
        for info in model.model_fields.values():
            queue.extend(inner for inner in _models(info.annotation) if inner not in seen)
    for model in seen:
        out.append(f"\n## {model.__name__}\n")
        doc = inspect.cleandoc(model.__doc__ or "").replace("\n", " ")
        if doc and not doc.startswith("!!!"):
            out.append(f"{doc}\n")
        out.append("| field | type | meaning |\n|---|---|---|")
        for name, info in model.model_fields.items():
            meaning = (info.description or "").replace("|", "\\|").replace("\n", " ")
            optional = "" if info.is_required() else " (may be absent)"
            kind = _api_type(info.annotation).replace("|", "\\|")
            out.append(f"| `{info.alias or name}` | {kind}{optional} | {meaning} |")
    return "\n".join(out) + "\n"


def pages() -> dict[Path, str]:
    return {
        CLI_PAGE: cli_reference(),
        CONFIG_PAGE: config_reference(),
        API_PAGE: api_reference(),
        ALERTS_PAGE: alerts_reference(),
        SERIES_PAGE: between(SERIES_PAGE.read_text(), SERIES_BEGIN, SERIES_END, series_table(), "docs/series.md"),
        GUIDE_PAGE: alerts_guide(GUIDE_PAGE.read_text()),
        SOURCES_PAGE: between(SOURCES_PAGE.read_text(), SOURCES_BEGIN, SOURCES_END, sources_table(), "docs/sources.md"),
        INSTALL_PAGE: between(
            INSTALL_PAGE.read_text(),
            SYSTEMD_BEGIN,
            SYSTEMD_END,
            f"```ini\n{SYSTEMD_UNIT.read_text()}```\n",
            "docs/install.md",
        ),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.docs", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a page differs")
    args = parser.parse_args(argv)
    stale = {path: text for path, text in pages().items() if not path.is_file() or path.read_text() != text}
    for path, text in stale.items():
        if args.check:
            sys.stderr.write(f"{path.relative_to(ROOT)} differs from its sources: python -m tools.docs\n")
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            sys.stdout.write(f"wrote {path.relative_to(ROOT)}\n")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
