"""Every function of the shipped code fits on a screen: under 60 lines, its docstring and comments included.
A longer one is several jobs in one (the exporter's round, a page's rows, an app's routes were): split it
where the comments already name the parts."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 60


def too_long(source: str, limit: int = LIMIT) -> list[tuple[int, str, int]]:
    """(first line, name, lines) of each function or method of `limit` lines or more."""
    return [
        (node.lineno, node.name, length)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (length := (node.end_lineno or node.lineno) - node.lineno + 1) >= limit
    ]


def test_the_check_finds_a_long_function_and_passes_a_short_one() -> None:
    long = "def f():\n" + "    x = 1\n" * LIMIT
    assert too_long(long) == [(1, "f", LIMIT + 1)]
    assert too_long("def g():\n    return 1\n") == []
    nested = "class C:\n    async def m(self):\n" + "        pass\n" * LIMIT
    assert too_long(nested) == [(2, "m", LIMIT + 1)]


def test_every_function_of_ctlplane_is_under_60_lines() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}: {name} is {length} lines"
        for path in sorted((ROOT / "ctlplane").rglob("*.py"))
        for line, name, length in too_long(path.read_text())
    ]
    assert not found, "functions of 60 lines or more (split them by job):\n" + "\n".join(found)
