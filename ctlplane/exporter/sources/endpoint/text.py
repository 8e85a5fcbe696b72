"""The Prometheus text format, read for the samples asked for only.

A broker serves ten thousand series and more (jmx_exporter's RequestMetrics alone: ~70 requests times a
dozen attributes); the few dozen that map back to MBean readings are found without parsing the rest: a
line is kept when its name is wanted and, where every reading of that name needs certain labels (the
`request="BrokerHeartbeat"` of a request metric), when those `label="value"` texts are in it. Only kept
lines are parsed. The page is read in chunks: memory stays the size of a chunk and of what is kept.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field


class TextError(ValueError):
    """A line of a wanted sample that is not the Prometheus text format (one line: where and what)."""


@dataclass(frozen=True, slots=True)
class TextSample:
    name: str
    labels: dict[str, str]
    value: float


@dataclass(frozen=True)
class Needs:
    """The labels every use of a name needs, and the values they may have together."""

    labels: tuple[str, ...]
    values: frozenset[tuple[str, ...]]


@dataclass(frozen=True)
class Wanted:
    """The lines to parse: by name, and where every use of a name needs certain label values (a request
    metric's `name` and `request`), by those values read straight off the line (None: every line of it)."""

    names: Mapping[str, Needs | None]
    _finders: Mapping[str, re.Pattern[str]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        labels = {label for needs in self.names.values() if needs is not None for label in needs.labels}
        finders = {label: re.compile(r"[{,]\s*" + re.escape(label) + r'\s*=\s*"([^"\\]*)"') for label in labels}
        object.__setattr__(self, "_finders", finders)

    def keeps(self, name: str, line: str) -> bool:
        if name not in self.names:
            return False
        needs = self.names[name]
        if needs is None:
            return True
        values = []
        for label in needs.labels:
            found = self._finders[label].search(line)
            if found is None:
                return False
            values.append(found.group(1))
        return tuple(values) in needs.values


_ESCAPES = {"\\": "\\", '"': '"', "n": "\n"}
# A label block as the format writes it: name="value" pairs, values with \\, \" and \n escaped
_LABEL = r'\s*[a-zA-Z_][a-zA-Z0-9_]*\s*=\s*"(?:[^"\\]|\\[\\"n])*"\s*'
_BLOCK = re.compile(r"\{((?:" + _LABEL + r",)*(?:" + _LABEL + r")?,?\s*)\}")
_PAIR = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\[\\"n])*)"')
_ESCAPE = re.compile(r"\\(.)")


def _unescape(value: str) -> str:
    return _ESCAPE.sub(lambda m: _ESCAPES.get(m.group(1), m.group(0)), value) if "\\" in value else value


def _labels_slowly(line: str, start: int, number: int) -> None:
    """Why the label block opening at line[start] does not parse: raises TextError saying so."""
    i = start + 1
    while True:
        while i < len(line) and line[i] in " ,":
            i += 1
        if i < len(line) and line[i] == "}":
            raise TextError(f"line {number}: malformed labels")
        equals = line.find("=", i)
        if equals < 0 or equals + 1 >= len(line) or line[equals + 1] != '"':
            raise TextError(f'line {number}: a label without ="value"')
        i = equals + 2
        while True:
            if i >= len(line):
                raise TextError(f"line {number}: a label value without its closing quote")
            if line[i] == "\\":
                if i + 1 >= len(line) or line[i + 1] not in _ESCAPES:
                    raise TextError(f"line {number}: an unknown escape in a label value")
                i += 2
                continue
            if line[i] == '"':
                i += 1
                break
            i += 1


def _value(text: str, number: int) -> float:
    try:
        value = float(text)  # Go's and Java's NaN, +Inf and -Inf parse too
    except ValueError:
        raise TextError(f"line {number}: value {text[:40]!r} is not a number") from None
    return value if not math.isnan(value) else math.nan


def _name_end(line: str) -> int:
    brace, space = line.find("{"), line.find(" ")
    if brace < 0:
        return space if space >= 0 else len(line)
    return brace if space < 0 or brace < space else space


def parse_line(line: str, number: int) -> TextSample:
    """One sample line; TextError naming the line if it is not the text format."""
    end = _name_end(line)
    name, rest = line[:end], end
    labels: dict[str, str] = {}
    if line.startswith("{", end):
        block = _BLOCK.match(line, end)
        if block is None:
            _labels_slowly(line, end, number)
            raise TextError(f"line {number}: malformed labels")  # pragma: no cover - _labels_slowly raised
        labels = {key: _unescape(value) for key, value in _PAIR.findall(block.group(1))}
        rest = block.end()
    fields = line[rest:].split()
    if not fields:
        raise TextError(f"line {number}: {name} has no value")
    return TextSample(name, labels, _value(fields[0], number))


def samples(lines: Iterable[str], wanted: Wanted, before: int = 0) -> Iterator[TextSample]:
    """The kept samples of `lines` of Prometheus text (numbered from `before` + 1); TextError on a malformed
    kept line."""
    for number, line in enumerate(lines, before + 1):
        if not line or line[0] == "#":
            continue
        if wanted.keeps(line[: _name_end(line)], line):
            yield parse_line(line, number)


def page_samples(chunks: Iterable[bytes], wanted: Wanted) -> Iterator[TextSample]:
    """The kept samples of a page read in chunks (UTF-8, a line split across chunks joined again)."""
    carry = b""
    number = 0
    for chunk in chunks:
        data = carry + chunk
        cut = data.rfind(b"\n")
        if cut < 0:
            carry = data
            continue
        carry = data[cut + 1 :]
        lines = data[:cut].decode("utf-8", errors="replace").split("\n")
        yield from samples(lines, wanted, number)
        number += len(lines)
    if carry:
        yield from samples([carry.decode("utf-8", errors="replace")], wanted, number)
