"""Every `type: ignore` in the shipped code and its tools names its error code and says why on the same line
(`# type: ignore[misc]  # Dash's decorator is untyped`), so the next reader can tell whether it may go."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TREES = ("ctlplane", "harness", "tools", "bench")
IGNORE = re.compile(r"#\s*type:\s*ignore(?P<codes>\[[^\]]*\])?(?P<rest>.*)$")


def unexplained(text: str) -> list[tuple[int, str]]:
    """(line number, line) of each `type: ignore` without an error code or without a reason after it."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        match = IGNORE.search(line)
        if match is None:
            continue
        reason = match["rest"].strip().removeprefix("#").strip()
        if not match["codes"] or not match["rest"].strip().startswith("#") or not reason:
            found.append((number, line.strip()))
    return found


def test_the_check_tells_a_bare_ignore_from_an_explained_one() -> None:
    assert unexplained("x = f()  # type: ignore\n") == [(1, "x = f()  # type: ignore")]
    assert unexplained("x = f()  # type: ignore[arg-type]\n") != []
    assert unexplained("x = f()  # type: ignore[arg-type]  #\n") != []
    assert unexplained("x = f()  # type: ignore[arg-type]  # Dash's props are untyped\n") == []


def test_every_type_ignore_says_why() -> None:
    bare = [
        f"{path.relative_to(ROOT)}:{number}: {line}"
        for tree in TREES
        for path in sorted((ROOT / tree).rglob("*.py"))
        for number, line in unexplained(path.read_text())
    ]
    assert not bare, "a `type: ignore` without its code and a reason on the same line:\n" + "\n".join(bare)
