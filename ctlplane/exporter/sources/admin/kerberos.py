"""Kerberos (SASL GSSAPI) for the Admin client: one krb5.conf for the whole JVM, and what a keytab holds.

The JDK reads its Kerberos configuration from ONE file per process, the system property
`java.security.krb5.conf` (sun.security.krb5.Config.getJavaFileName; JDK 17 and 25 alike), so every cluster's
realms must be in that one file. `merge_krb5_confs` makes it from each cluster's own krb5.conf: the
[libdefaults] (and any other section) of the first, the [realms] and [domain_realm] of all, and says where two
files disagree about a realm. Pure text in and out; the JVM side is client.use_krb5_conf.

The syntax is MIT's profile format as the JDK reads it (Config.loadConfigFile, parseStanzaTable): `[section]`
headers, `name = value`, `name = {` ... `}` sub-sections (the `{` may be on the next line), `#` and `;` comment
lines, `include FILE` and `includedir DIR` lines (in a directory, the files named `[A-Za-z0-9_-]+` or `*.conf`,
in name order: Config.readConfigFileLines). The JDK honours those two only before the first section (MIT's
library wherever a line starts with them); they are read wherever they stand here, and the merged file holds
what they named, so the JDK reads it all. No secret is in a krb5.conf; keytabs (read by `keytab_principals`
for their principals' names only) hold keys, which nothing here keeps or shows.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# sections every cluster's file adds to; the others come from the first file alone
MERGED_SECTIONS = ("realms", "domain_realm")
# the JDK's names in an includedir (Config.readConfigFileLines)
_INCLUDED_NAME = re.compile(r"^[A-Za-z0-9_-]+$")

Value = str | tuple["Entry", ...]
Entry = tuple[str, Value]


class Krb5ConfError(ValueError):
    """A krb5.conf that cannot be read or parsed; the message names the file (and line)."""


@dataclass(frozen=True)
class Krb5Conf:
    """A parsed krb5.conf: its sections (names lower-cased, as the JDK keys them) in file order, each a tuple of
    (name, value) entries, a value being a string or a sub-section's entries. A section given twice is one
    (the JDK merges top-level sections of the same name)."""

    source: str
    sections: dict[str, tuple[Entry, ...]] = field(default_factory=dict)

    def realms(self) -> dict[str, tuple[Entry, ...]]:
        """[realms]: each realm's entries (the first definition of a realm, as the JDK keeps it)."""
        found: dict[str, tuple[Entry, ...]] = {}
        for name, value in self.sections.get("realms", ()):
            if isinstance(value, tuple):
                found.setdefault(name, value)
        return found


def read_krb5_lines(path: Path, _seen: frozenset[Path] = frozenset()) -> list[tuple[str, str]]:
    """The lines of `path`, each with where it is ("file:line"), its `include`/`includedir` lines replaced by
    the files they name (recursively; a file included twice is an error, as in the JDK). Krb5ConfError naming
    the file if one cannot be read."""
    path = Path(path)
    if not path.is_absolute():
        path = path.absolute()
    if path in _seen:
        raise Krb5ConfError(f"{path}: included more than once")
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise Krb5ConfError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or type(exc).__name__}") from exc
    seen = _seen | {path}
    lines: list[tuple[str, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("includedir "):
            directory = Path(stripped[len("includedir ") :].strip())
            try:
                names = sorted(p for p in directory.iterdir() if not p.is_dir())
            except OSError as exc:
                raise Krb5ConfError(f"{path}:{number}: includedir {directory}: {exc.strerror}") from exc
            for included in names:
                if _INCLUDED_NAME.match(included.name) or (
                    not included.name.startswith(".") and included.name.endswith(".conf")
                ):
                    lines += read_krb5_lines(included, seen)
        elif stripped.startswith("include "):
            lines += read_krb5_lines(Path(stripped[len("include ") :].strip()), seen)
        else:
            lines.append((f"{path}:{number}", line))
    return lines


def parse_krb5_conf(lines: Sequence[str | tuple[str, str]], source: str) -> Krb5Conf:
    """`lines` (a file's text's, or read_krb5_lines': each with where it is) as a Krb5Conf; Krb5ConfError
    naming the line where it is not a krb5.conf."""
    sections: dict[str, list[tuple[str, Any]]] = {}
    # the open sub-sections: (name, entries) from the section's own list inward; frozen into Entry tuples at the end
    stack: list[tuple[str, list[tuple[str, Any]]]] = []
    pending: str | None = None  # a "name =" whose "{" is on the next line

    def fail(number: int, why: str) -> Krb5ConfError:
        given = lines[number - 1]
        return Krb5ConfError(f"{given[0] if isinstance(given, tuple) else f'{source}:{number}'}: {why}")

    for number, given in enumerate(lines, start=1):
        line = (given[1] if isinstance(given, tuple) else given).strip()
        if not line or line[0] in "#;":
            continue
        if pending is not None:
            if not line.startswith("{"):
                raise fail(number, f"expected {{ after {pending!r} =")
            opened: list[tuple[str, Any]] = []
            stack[-1][1].append((pending, opened))
            stack.append((pending, opened))
            pending = None
            line = line[1:].strip()
            if not line:
                continue
        if line.startswith("["):
            if len(stack) > 1:
                raise fail(number, f"a section header inside {stack[-1][0]!r}'s braces")
            header = line.rstrip("*").strip()  # MIT's "final" flag
            if not header.endswith("]") or not header[1:-1].strip():
                raise fail(number, f"not a section header: {line[:60]!r}")
            name = header[1:-1].strip().lower()
            stack = [(name, sections.setdefault(name, []))]
            continue
        if not stack:
            raise fail(number, "an entry before the first [section]")
        if line.startswith("}"):
            if len(stack) == 1:
                raise fail(number, "a } that closes nothing")
            stack.pop()
            continue
        key, sep, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key:
            raise fail(number, f"expected name = value, got {line[:60]!r}")
        if value == "{":
            sub: list[tuple[str, Any]] = []
            stack[-1][1].append((key, sub))
            stack.append((key, sub))
        elif not value:
            pending = key
        else:
            stack[-1][1].append((key, _unquoted(value)))
    if pending is not None or len(stack) > 1:
        raise Krb5ConfError(f"{source}: ends inside {(pending or stack[-1][0])!r}'s braces")
    return Krb5Conf(source, {name: _frozen(entries) for name, entries in sections.items()})


def _unquoted(value: str) -> str:
    # the JDK drops a value's surrounding double quotes (Config.unquote)
    return value[1:-1] if len(value) >= 2 and value[0] == value[-1] == '"' else value


def _frozen(entries: Sequence[tuple[str, Any]]) -> tuple[Entry, ...]:
    return tuple((k, v if isinstance(v, str) else _frozen(v)) for k, v in entries)


def load_krb5_conf(path: Path) -> Krb5Conf:
    """`path` read (its includes too) and parsed; Krb5ConfError naming the file if it cannot be."""
    return parse_krb5_conf(read_krb5_lines(path), str(path))


@dataclass(frozen=True)
class Krb5Merge:
    """The merged krb5.conf's text, and where the files disagreed (one line each; the first file's wins)."""

    text: str
    conflicts: tuple[str, ...]


def _normal(entries: tuple[Entry, ...]) -> tuple[Entry, ...]:
    """A sub-section compared without its spacing: "kdc = a:88" and "kdc=a:88" are the same realm."""
    return tuple((k, " ".join(v.split()) if isinstance(v, str) else _normal(v)) for k, v in entries)


def merge_krb5_confs(confs: Sequence[tuple[str, Krb5Conf]]) -> Krb5Merge:
    """One krb5.conf from `confs` ((who uses it, e.g. "cluster prod-eu", its parsed file), first first): every
    section of the first file, [realms] and [domain_realm] of all. A realm defined again identically, or a
    file given twice, adds nothing; a realm defined differently, or a host or domain mapped to another realm, is
    a conflict (the first file's definition is kept, as the JDK would keep it)."""
    if not confs:
        return Krb5Merge("", ())
    sources = list(dict.fromkeys(conf.source for _, conf in confs))
    users = {source: [who for who, conf in confs if conf.source == source] for source in sources}

    def named(source: str) -> str:
        return f"{source} ({', '.join(users[source])})"

    first = confs[0][1]
    realms: dict[str, tuple[str, tuple[Entry, ...]]] = {}
    mapped: dict[str, tuple[str, str]] = {}
    conflicts: list[str] = []
    seen_sources: set[str] = set()
    for _, conf in confs:
        if conf.source in seen_sources:
            continue
        seen_sources.add(conf.source)
        for realm, entries in conf.realms().items():
            if realm not in realms:
                realms[realm] = (conf.source, entries)
            elif _normal(realms[realm][1]) != _normal(entries):
                conflicts.append(
                    f"realm {realm} is defined differently in {named(realms[realm][0])} and {named(conf.source)}: "
                    f"the JVM has one krb5.conf, so one definition must serve both"
                )
        for host, value in conf.sections.get("domain_realm", ()):
            if not isinstance(value, str):
                continue
            if host not in mapped:
                mapped[host] = (conf.source, value)
            elif mapped[host][1] != value:
                conflicts.append(
                    f"[domain_realm] maps {host} to {mapped[host][1]} in {named(mapped[host][0])} "
                    f"and to {value} in {named(conf.source)}"
                )
    merged: dict[str, tuple[Entry, ...]] = dict(first.sections)
    merged["realms"] = tuple((realm, entries) for realm, (_, entries) in realms.items())
    merged["domain_realm"] = tuple((host, realm) for host, (_, realm) in mapped.items())
    header = [
        "# Written by ctlplane: the one krb5.conf of its JVM (java.security.krb5.conf is one per process), made",
        "# from every cluster's admin.kerberos.krb5_conf. [realms] and [domain_realm] are every file's; the other",
        f"# sections ([libdefaults] ...) are the first file's, {named(first.source)}.",
        *(f"#   from {named(source)}" for source in sources),
    ]
    body: list[str] = []
    for name, entries in merged.items():
        if not entries and name not in first.sections:
            continue
        body.append(f"[{name}]")
        body += _render(entries, 1)
        body.append("")
    return Krb5Merge("\n".join([*header, "", *body]), tuple(conflicts))


def _render(entries: tuple[Entry, ...], depth: int) -> list[str]:
    indent = "    " * depth
    lines: list[str] = []
    for key, value in entries:
        if isinstance(value, str):
            lines.append(f"{indent}{key} = {value}")
        else:
            lines += [f"{indent}{key} = {{", *_render(value, depth + 1), f"{indent}}}"]
    return lines


# --- keytabs ---------------------------------------------------------------------------------------------------
# MIT's keytab file format (krb5 src/lib/krb5/keytab/kt_file.c; "The Kerberos keytab binary file format",
# MIT krb5 docs, formats/keytab_file_format): 0x05 0x02, then entries, each a signed 32-bit size (negative: a
# hole of that many bytes) and: component count (16 bits), realm, components (16-bit length + bytes each),
# name type (32 bits), timestamp (32), vno (8), key type (16), key (16-bit length + bytes)[, vno (32)].


def keytab_principals(path: Path) -> set[str]:
    """The principals `path` (an MIT keytab, format 0x502) holds keys for, as "name/instance@REALM". Only the
    names are kept: the keys are skipped, never decoded. Krb5ConfError naming the file if it is not a keytab."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise Krb5ConfError(f"{path}: cannot read: {exc.strerror}") from exc
    if data[:2] != b"\x05\x02":
        raise Krb5ConfError(f"{path}: not a keytab (MIT format 0x502)")
    principals: set[str] = set()
    offset = 2
    try:
        while offset + 4 <= len(data):
            (size,) = struct.unpack_from(">i", data, offset)
            offset += 4
            if size <= 0:
                offset += -size  # a hole left by a removed entry
                if size == 0:
                    break
                continue
            entry, offset = data[offset : offset + size], offset + size
            if len(entry) < size:
                raise struct.error("entry past the end")
            (count,) = struct.unpack_from(">H", entry, 0)
            at = 2
            parts = []
            for _ in range(count + 1):  # the realm first
                (length,) = struct.unpack_from(">H", entry, at)
                parts.append(entry[at + 2 : at + 2 + length].decode("utf-8", "replace"))
                at += 2 + length
            realm, *names = parts
            principals.add(f"{'/'.join(names)}@{realm}")
    except struct.error as exc:
        raise Krb5ConfError(f"{path}: not a keytab (cut short)") from exc
    return principals
