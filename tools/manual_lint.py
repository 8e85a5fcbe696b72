"""The manual's lint: every name a page or runbook mentions is a real one.

Reads every Markdown page under docs/, every runbook (alerts/runbooks/) and README.md, and checks, line by
line (fenced code included, except for links):

    alert names      every `Kafka…`/`Ctlplane…` identifier is an alert of the rule files (alerts/*.rules.yml),
                     or one of Kafka's own classes and resource kinds the manual names (NOT_ALERTS)
    series names     every `ctlplane_…`/`kafka_…` name is a series the exporter serves
                     (ctlplane.exporter.catalog.all_series_names(): the catalogue and the exporter's own
                     series; a name ending in `*` must be the prefix of one)
    config keys      every key in backticks that starts at a top-level section of the config (`history.path`,
                     `clusters[].discovery.jmx_port`) is a field of the config model (ctlplane.exporter.config)
    file paths       every path under a directory of the repository (ctlplane/, alerts/, docs/, …) that names a
                     file (a known extension) or a directory (a trailing `/`) exists; `*` and `<placeholder>`
                     are globs that must match at least one
    CLI commands     every `ctlplane …` command names a subcommand that exists and only flags it has; one in a
                     fenced block, or inline with a flag, without placeholders (`<file>`, `...`, `[--flag]`),
                     parses as a whole (required arguments included) with ctlplane.cli's own parser
    test evidence    no user page cites the suite (`tests/…`, `harness/…`): how a claim is tested is said on the
                     developers' pages (DEVELOPER_PAGES), and a user page says what ctlplane does
    links            every relative link reaches a file, and its `#anchor` a heading of the page it reaches
    sections         `docs/page.md "Section"`, `[page](page.md) "Section"` and `see "Section"` (the page's own)
                     name a heading of that page (or its title after a colon, or a paragraph's bold lead)

A problem is `page:line: what`; `python -m tools.manual_lint` prints them and exits 1 if there is any.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shlex
import sys
import typing
import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import yaml
from pydantic import BaseModel

from ctlplane.cli import build_parser
from ctlplane.exporter.catalog import all_series_names
from ctlplane.exporter.config import Settings
from ctlplane.exporter.readings import plan_queries
from ctlplane.exporter.sources.endpoint.client import inversion_for
from ctlplane.exporter.sources.endpoint.profiles import PROFILES, profile
from tools.docs import _models  # the configuration reference's own walk of the model

ROOT = Path(__file__).resolve().parent.parent

# Identifiers of Kafka's shape that are not alerts: Kafka's classes (MBean types, source files the manual
# cites) and Strimzi's resource kinds. Anything else of the shape must be an alert.
NOT_ALERTS = frozenset(
    {
        "KafkaApis",
        "KafkaBroker",
        "KafkaCluster",
        "KafkaController",
        "KafkaNodePool",
        "KafkaRaftClient",
        "KafkaRaftServer",
        "KafkaRequestHandler",
        "KafkaRequestHandlerPool",
        "KafkaResources",
        "KafkaServer",
        "KafkaUser",
        "KafkaZkClient",
    }
)
# Names of the series' shape that are other tools', not series
NOT_SERIES = frozenset({"kafka_exporter"})
ALERT = re.compile(r"\b(?:Kafka|Ctlplane)[A-Z][A-Za-z0-9]*\b")
# `kafka_2.13` is an artefact (Scala build), not a series; `kafka_client="4.3.1"` a label, not a series
SERIES = re.compile(r"(?<![\w./$-])((?:ctlplane|kafka)_[a-z0-9_]*)(?![\w=-]|\.\d)(\*|\.\*)?")
TOP_DIRECTORIES = ("ctlplane", "alerts", "docs", "tools", "tests", "harness", "grafana", "deploy", "bench", ".ci")
PATH = re.compile(r"(?<![\w./~$-])((?:" + "|".join(map(re.escape, TOP_DIRECTORIES)) + r")/[\w.*<>/-]*)")
FILE_EXTENSIONS = frozenset(
    {"py", "md", "yml", "yaml", "json", "sh", "toml", "tmpl", "png", "txt", "lock", "cfg", "ini", "jar", "xml", "tgz"}
)
LINK = re.compile(r"\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
CONFIG_KEY = re.compile(r"`((?:" + "|".join(Settings.model_fields) + r")(?:\[\])?(?:\.[A-Za-z_]\w*(?:\[\])?)+)`")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
# a page named, then a section of it in quotes: docs/alerts.md "How fast a page comes", [alerts](alerts.md) "…"
PAGE_SECTION = re.compile(r"(?:\]\(([\w./-]+\.md)\)|(?<![\w/.-])(docs/[\w/-]+\.md))\s+\"([^\"]+)\"")
BOLD_LEAD = re.compile(r"^\s*(?:[-*]\s+)?\*\*([^*]+?)[.:]?\*\*")
COMMAND_IN_BLOCK = re.compile(r"^\s*(?:\$\s+)?(ctlplane\s.*)$")
COMMAND_INLINE = re.compile(r"`(ctlplane\s[^`]*)`")
PLACEHOLDER = re.compile(r"[<\[…]|\.\.\.")
SEE_SECTION = re.compile(r"(?<![\w)])\b[Ss]ee \"([^\"]+)\"")


def config_keys() -> frozenset[str]:
    """Every key of a config file, as the configuration reference writes it (`clusters[].discovery.jmx_port`)."""
    keys: set[str] = set()
    todo: list[tuple[str, type[BaseModel]]] = [("", Settings)]
    while todo:
        prefix, model = todo.pop()
        for name, info in model.model_fields.items():
            key = f"{prefix}{name}"
            many = typing.get_origin(info.annotation) is list or any(
                typing.get_origin(a) is list for a in typing.get_args(info.annotation)
            )
            keys.update({key, f"{key}[]"} if many else {key})
            for inner in _models(info.annotation):
                if f"{key}{'[]' if many else ''}." not in {p for p, _ in todo}:
                    todo.append((f"{key}{'[]' if many else ''}.", inner))
    return frozenset(keys)


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """A parser's subcommands by name (none for a leaf command)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


@dataclass(frozen=True)
class Problem:
    page: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: {self.what}"


@dataclass
class Report:
    problems: list[Problem] = field(default_factory=list)
    checked: Counter[str] = field(default_factory=Counter)  # mentions checked, by kind


def pages(root: Path = ROOT) -> list[Path]:
    """Every page of the manual and every runbook, and the README."""
    found = sorted((root / "docs").rglob("*.md")) + sorted((root / "alerts" / "runbooks").glob("*.md"))
    readme = root / "README.md"
    return [*found, readme] if readme.is_file() else found


def alert_names(root: Path = ROOT) -> frozenset[str]:
    """Every alert of the rule files as Prometheus loads them (alerts/*.rules.yml, written by tools.alert_rules)."""
    names: set[str] = set()
    for path in sorted((root / "alerts").glob("*.rules.yml")):
        for group in yaml.safe_load(path.read_text())["groups"]:
            names.update(str(rule["alert"]) for rule in group["rules"] if "alert" in rule)
    return frozenset(names)


def _heading_text(text: str) -> str:
    """A heading as its reader sees it: links' words, no code marks or emphasis."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[`*]", "", text).strip()


def _lines(text: str) -> Iterator[tuple[int, str, bool]]:
    """(line number, line, inside a fenced code block)."""
    fenced = False
    for number, line in enumerate(text.splitlines(), start=1):
        if FENCE.match(line):
            fenced = not fenced
            yield number, line, True
            continue
        yield number, line, fenced


def slugify(text: str) -> str:
    """A heading's anchor as mkdocs makes it (Python-Markdown's toc extension, `slugify`)."""
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _unique(anchor: str, taken: set[str]) -> str:
    """The second heading of the same words gets `_1`, the third `_2` (Python-Markdown's toc, `unique`)."""
    found, n = anchor, 0
    while found in taken or not found:
        n += 1
        found = f"{anchor}_{n}"
    return found


def headings(text: str) -> dict[str, str]:
    """A page's headings: their anchor (as mkdocs' table of contents makes it) -> their text."""
    found: dict[str, str] = {}
    for _, line, fenced in _lines(text):
        match = None if fenced else HEADING.match(line)
        if match:
            heading = _heading_text(match.group(2))
            found[_unique(slugify(heading), set(found))] = heading
    return found


def sections(text: str) -> frozenset[str]:
    """What a reader can find by name on a page: its headings, its title's words after a colon
    ("Configuration: watching your own clusters"), and the bold leads of its paragraphs and list items
    ("**Compaction.** A flush…"), normalised (_normal)."""
    names = set(headings(text).values())
    title = next((line[2:] for line in text.splitlines() if line.startswith("# ")), "")
    if ": " in title:
        names.add(_heading_text(title.split(": ", 1)[1]))
    for _, line, fenced in _lines(text):
        lead = None if fenced else BOLD_LEAD.match(line)
        if lead:
            names.add(_heading_text(lead.group(1)))
    return frozenset(_normal(name) for name in names)


@cache
def _read(path: Path) -> str:
    return path.read_text()


def _normal(text: str) -> str:
    return " ".join(text.replace("\u2019", "'").split()).casefold()


def endpoint_names() -> frozenset[str]:
    """The names a node's metrics endpoint serves for what ctlplane reads, in every naming profile, with and
    without their type's suffix (the reporter's allowlist matches a name before it): a page may cite them."""
    queries = plan_queries()
    names = {name for profile_name in PROFILES for name in inversion_for(profile(profile_name), queries).by_name}
    return frozenset(names | {re.sub(r"_(total|count|sum|info)$", "", name) for name in names})


# The pages written for developers: where the suite, its evidence and the build machines are described.
DEVELOPER_PAGES = frozenset({Path("docs/development.md"), Path("docs/benchmarks.md")})
# A path of the suite or the test harness (not `alerts/tests/`: the rules' own tests, shipped beside them)
EVIDENCE = re.compile(r"(?<![\w/.-])((?:tests|harness)/[\w./*<>-]*)")


class Lint:
    def __init__(
        self, root: Path = ROOT, alerts: Iterable[str] | None = None, series: Iterable[str] | None = None
    ) -> None:
        self.root = root
        self.alerts = frozenset(alert_names(root) if alerts is None else alerts)
        self.series = frozenset((*all_series_names(), *endpoint_names()) if series is None else series)
        self.config_keys = config_keys()
        self.current: tuple[Path, str] = (Path(), "")
        self.parser = build_parser()
        self.report = Report()

    def _name(self, path: Path) -> str:
        return str(path.relative_to(self.root)) if path.is_relative_to(self.root) else str(path)

    def _fail(self, page: Path, line: int, what: str) -> None:
        self.report.problems.append(Problem(self._name(page), line, what))

    def _text(self, path: Path) -> str:
        """A page's text: the one being checked as given, any other as on disk."""
        return self.current[1] if path == self.current[0] else _read(path)

    def _exists(self, path: Path) -> bool:
        return path == self.current[0] or path.exists()

    def check(self, page: Path, text: str | None = None) -> None:
        """Check `page` (its `text` if given, as if the page held it)."""
        page = page.resolve()
        text = page.read_text() if text is None else text
        self.current = (page, text)
        self._commands(page, text)
        body = _lines(text)
        for number, line, fenced in body:
            self._alerts(page, number, line)
            self._series(page, number, line)
            self._paths(page, number, line)
            self._evidence(page, number, line)
            self._config_keys(page, number, line)
            if not fenced:
                prose = INLINE_CODE.sub(lambda m: "`" + "x" * len(m.group(2)) + "`", line)
                self._links(page, number, prose)
                self._sections(page, number, line)

    def _alerts(self, page: Path, number: int, line: str) -> None:
        for match in ALERT.finditer(line):
            name = match.group(0)
            self.report.checked["alert"] += 1
            if name not in self.alerts and name not in NOT_ALERTS:
                self._fail(page, number, f"unknown alert {name}")

    def _series(self, page: Path, number: int, line: str) -> None:
        for match in SERIES.finditer(line):
            name, prefix = match.group(1), match.group(2)
            if name in NOT_SERIES:
                continue
            self.report.checked["series"] += 1
            known = any(s.startswith(name) for s in self.series) if prefix else name in self.series
            if not known:
                self._fail(page, number, f"unknown series {name}{prefix or ''}")

    def _commands(self, page: Path, text: str) -> None:
        lines = text.splitlines()
        fenced = False
        index = 0
        while index < len(lines):
            line = lines[index]
            number = index + 1
            if FENCE.match(line):
                fenced = not fenced
            elif fenced and (match := COMMAND_IN_BLOCK.match(line)):
                command = match.group(1)
                while command.rstrip().endswith("\\") and index + 1 < len(lines):
                    index += 1
                    command = command.rstrip()[:-1] + " " + lines[index].strip()
                self._command(page, number, command, whole=True)
            elif not fenced:
                for match in COMMAND_INLINE.finditer(line):  # with a flag, an invocation; without, a name
                    self._command(page, number, match.group(1), whole=" -" in match.group(1))
            index += 1

    def _command(self, page: Path, number: int, command: str, whole: bool) -> None:
        """`ctlplane …`: its subcommands and flags exist; `whole`, it parses (unless it holds a placeholder)."""
        try:
            words = shlex.split(command, comments=True)
        except ValueError:
            return
        for end, word in enumerate(words):
            if word in ("|", "&&", ";", ">", "2>&1"):
                words = words[:end]
                break
        self.report.checked["command"] += 1
        parser = self.parser
        said = "ctlplane"
        for word in words[1:]:
            commands = _subcommands(parser)
            if word.startswith("-"):
                flag = word.split("=", 1)[0]
                if flag.startswith("--") and flag not in parser._option_string_actions:
                    self._fail(page, number, f"unknown flag of {said}: {flag}")
                    return
            elif commands:
                if PLACEHOLDER.search(word):
                    return  # `ctlplane pipeline … --master`: which command is not said
                unknown = [name for name in word.split("|") if name not in commands]
                if unknown:
                    self._fail(page, number, f"unknown command: {said} {unknown[0]}")
                    return
                if "|" in word:
                    return  # `ctlplane pipeline episodes|sweep|report`: each exists, the flags are any one's
                parser = commands[word]
                said += f" {word}"
        if whole and not any(PLACEHOLDER.search(word) for word in words):
            error = io.StringIO()
            try:
                with contextlib.redirect_stderr(error), contextlib.redirect_stdout(io.StringIO()):
                    self.parser.parse_args(words[1:])
            except SystemExit as refused:
                if refused.code:
                    said = error.getvalue().strip().splitlines()[-1] if error.getvalue().strip() else "refused"
                    self._fail(page, number, f"{command.strip()}: {said}")

    def _config_keys(self, page: Path, number: int, line: str) -> None:
        for match in CONFIG_KEY.finditer(line):
            key = match.group(1)
            if key.rsplit(".", 1)[-1] in FILE_EXTENSIONS:
                continue  # a file (`history.py`), not a key
            self.report.checked["config key"] += 1
            if key not in self.config_keys:
                self._fail(page, number, f"unknown config key {key}")

    def _paths(self, page: Path, number: int, line: str) -> None:
        for match in PATH.finditer(line):
            path = match.group(1).rstrip(".,;:")
            last = path.rstrip("/").rsplit("/", 1)[-1]
            if not path.endswith("/") and last.rsplit(".", 1)[-1] not in FILE_EXTENSIONS:
                continue  # a Docker image, a Kubernetes object, a module attribute: not a file of ours
            self.report.checked["path"] += 1
            pattern = re.sub(r"<[^>]*>", "*", path)
            if not any(True for _ in self.root.glob(pattern.rstrip("/"))):
                self._fail(page, number, f"no such file in the repository: {path}")

    def _evidence(self, page: Path, number: int, line: str) -> None:
        if page.is_relative_to(self.root) and page.relative_to(self.root) in DEVELOPER_PAGES:
            return
        for match in EVIDENCE.finditer(line):
            self._fail(
                page,
                number,
                f"test evidence on a user page: {match.group(1)} (say how it is tested in docs/development.md)",
            )

    def _links(self, page: Path, number: int, line: str) -> None:
        for match in LINK.finditer(line):
            target = match.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                continue
            self.report.checked["link"] += 1
            where, _, anchor = target.partition("#")
            reached = (page.parent / where).resolve() if where else page
            if not self._exists(reached):
                self._fail(page, number, f"link to a missing file: {target}")
            elif anchor and reached.suffix == ".md" and anchor not in headings(self._text(reached)):
                self._fail(page, number, f"link to a missing anchor: {target}")

    def _sections(self, page: Path, number: int, line: str) -> None:
        for match in PAGE_SECTION.finditer(line):
            linked, named, section = match.groups()
            target = (page.parent / linked) if linked else (self.root / named)
            self._section(page, number, target.resolve(), section)
        for match in SEE_SECTION.finditer(line):
            self._section(page, number, page, match.group(1))

    def _section(self, page: Path, number: int, target: Path, section: str) -> None:
        self.report.checked["section"] += 1
        if not self._exists(target):
            self._fail(page, number, f'section "{section}" of a missing page {self._name(target)}')
        elif _normal(section) not in sections(self._text(target)):
            self._fail(page, number, f'{self._name(target)} has no section "{section}"')


def lint(paths: Sequence[Path] | None = None, root: Path = ROOT) -> Report:
    checker = Lint(root)
    for path in pages(root) if paths is None else paths:
        checker.check(path)
    return checker.report


def main(argv: Sequence[str] | None = None) -> int:
    report = lint([Path(p).resolve() for p in argv] if argv else None)
    for problem in report.problems:
        sys.stdout.write(f"{problem}\n")
    counts = ", ".join(f"{kind}: {n}" for kind, n in sorted(report.checked.items()))
    sys.stdout.write(f"{len(report.problems)} problems; mentions checked: {counts}\n")
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
