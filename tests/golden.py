"""Golden files: expected output committed beside a test. A missing or different file fails the test;
only `CTLPLANE_UPDATE_GOLDEN=1` writes one, on purpose (then review the diff before committing), as
`CTLPLANE_UPDATE_DOCS_SCREENSHOTS=1` refreshes the manual's screenshots."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

UPDATE = "CTLPLANE_UPDATE_GOLDEN"


def assert_matches_golden(text: str, path: Path) -> None:
    if os.environ.get(UPDATE) == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    if not path.is_file():
        pytest.fail(f"golden file {path} is missing: write it on purpose with {UPDATE}=1 and review it")
    assert text == path.read_text(), f"output differs from {path} ({UPDATE}=1 rewrites it, if the change is meant)"
