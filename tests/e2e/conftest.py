"""Browser fixtures for the e2e tests (helpers in tests/e2e/browser.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser

from tests.e2e.browser import artifacts_dir, launch_browser


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    # Module, not session: while Playwright's sync API runs, its event loop is the main thread's running
    # loop, and every later test in the process that calls asyncio.run() fails ("cannot be called from a
    # running event loop": test_auth's tests did, run after the browser tests on one xdist worker).
    with launch_browser() as chromium:
        yield chromium


@pytest.fixture(scope="session")
def artifacts() -> Path:
    return artifacts_dir()
