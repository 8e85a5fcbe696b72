"""The docs site's generated pages, from the sources they describe (never edited by hand; a unit test fails
if one differs from what this writes):

    docs/reference/configuration.md   every config field: key, type, default, meaning (the pydantic model)
    docs/reference/alerts.md          every alert rule with its runbook (alerts/*.rules.yml, alerts/runbooks/)
    docs/series.md                    the series table between its markers (the catalogue)

    python -m tools.docs           # write them
    python -m tools.docs --check   # exit 1 and name the pages that differ
"""

from __future__ import annotations

import argparse
import inspect
import sys
import types
import typing
from collections.abc import Iterator, Sequence
from enum import Enum
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from ctlplane.exporter.catalog import CATALOG, DERIVED_SERIES, HEALTH_SERIES, QUORUM_SERIES
from ctlplane.exporter.config import Settings
from tools.alert_rules import rendered
from tools.markers import between

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
CONFIG_PAGE = DOCS / "reference" / "configuration.md"
ALERTS_PAGE = DOCS / "reference" / "alerts.md"
SERIES_PAGE = DOCS / "series.md"
SERIES_BEGIN = "<!-- series: begin (python -m tools.docs) -->"
SERIES_END = "<!-- series: end -->"
GENERATED = "<!-- Written by `python -m tools.docs` from {source}: edit that, not this page. -->\n\n"


def _models(annotation: Any) -> Iterator[type[BaseModel]]:
    """The config models inside a field's type (`list[ClusterConfig]`, `TlsConfig | None`)."""
    if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        yield annotation
    for argument in typing.get_args(annotation):
        yield from _models(argument)


def _type_name(annotation: Any) -> str:
    if annotation is type(None):
        return "null"
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(argument) for argument in typing.get_args(annotation))
    if origin is typing.Literal:
        return " / ".join(f"`{value}`" for value in typing.get_args(annotation))
    if origin is list:
        (item,) = typing.get_args(annotation)
        return f"list of {_type_name(item)}"
    if origin is dict:
        key, value = typing.get_args(annotation)
        return f"map {_type_name(key)} → {_type_name(value)}"
    if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        return "section"
    if inspect.isclass(annotation) and issubclass(annotation, Enum):
        return " / ".join(f"`{member.value}`" for member in annotation)
    names = {str: "string", int: "integer", float: "number", bool: "boolean", Path: "path"}
    return names.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _default(info: FieldInfo) -> str:
    if info.default is PydanticUndefined and info.default_factory is None:
        return "required"
    if info.default_factory is not None:
        value = info.default_factory()  # type: ignore[call-arg]
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
        GENERATED.format(source="ctlplane/exporter/config.py"),
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


def alerts_reference() -> str:
    out = [
        GENERATED.format(source="alerts/*.rules.yml and alerts/runbooks/"),
        "# Alerts and runbooks\n",
        "Every alert rule ctlplane ships, as Prometheus loads it, with its runbook. How they page and how to "
        "tune them: [Alerts](../alerts.md).\n",
    ]
    for path, text in sorted(rendered(readable=True).items()):
        for group in yaml.safe_load(text)["groups"]:
            for rule in group["rules"]:
                if "alert" not in rule:
                    continue
                name = rule["alert"]
                expr = str(rule["expr"]).strip()
                out.append(f"\n## {name}\n")
                out.append(
                    f"`{rule['labels']['severity']}`, after `{rule.get('for', '0s')}` "
                    f"(`alerts/{path.name}`, group `{group['name']}`): {rule['annotations']['summary']}\n"
                )
                out.append(f"```promql\n{expr}\n```\n")
                out.append(_runbook_body(ROOT / "alerts" / "runbooks" / f"{name}.md"))
    return "\n".join(out)


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
    for name, text in {**HEALTH_SERIES, **QUORUM_SERIES, **DERIVED_SERIES}.items():
        out.append(f"| `{name}` | {text} |")
    return "\n".join(out) + "\n"


def pages() -> dict[Path, str]:
    return {
        CONFIG_PAGE: config_reference(),
        ALERTS_PAGE: alerts_reference(),
        SERIES_PAGE: between(SERIES_PAGE.read_text(), SERIES_BEGIN, SERIES_END, series_table(), "docs/series.md"),
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
