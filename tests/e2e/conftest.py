"""Browser fixtures for the e2e tests (helpers in tests/e2e/browser.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser

from tests.e2e.browser import artifacts_dir, launch_browser


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    with launch_browser() as chromium:
        yield chromium


@pytest.fixture(scope="session")
def artifacts() -> Path:
    return artifacts_dir()
