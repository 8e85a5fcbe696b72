"""Browser-test helpers shared by tests/e2e and the real-Kafka browser test in tests/integration.

Debian's chromium driven by Playwright (`playwright install` cannot download browsers here); the app is
served by uvicorn in a thread on a free loopback port.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import uvicorn
from fastapi import FastAPI
from playwright.sync_api import Browser, ConsoleMessage, Page, Playwright, sync_playwright

from ctlplane.dashboard.app import create_dashboard
from ctlplane.dashboard.source import InProcessSource
from ctlplane.exporter.http.app import QuietServer, create_app, server_options
from ctlplane.exporter.scraper import Scraper, Target
from ctlplane.exporter.state import ExporterState
from ctlplane.exporter.thresholds import Thresholds
from tests.integration.watch import shared_client

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
DOCS_IMG = Path(__file__).parents[2] / "docs" / "img"


class _SharedChromium:
    """One chromium per process: Playwright's sync API cannot start twice in one thread, so the e2e session
    fixture and the real-Kafka test's fixture share it; the last user to leave closes it."""

    def __init__(self) -> None:
        self.users = 0
        self.playwright: Playwright | None = None
        self.browser: Browser | None = None

    @contextmanager
    def use(self) -> Iterator[Browser]:
        if self.browser is None:
            self.playwright = sync_playwright().start()
            self.browser = self.playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        self.users += 1
        try:
            yield self.browser
        finally:
            self.users -= 1
            if self.users == 0 and self.playwright is not None:
                self.browser.close()
                self.playwright.stop()
                self.browser = self.playwright = None


_CHROMIUM = _SharedChromium()


def launch_browser() -> AbstractContextManager[Browser]:
    return _CHROMIUM.use()


def artifacts_dir() -> Path:
    """Screenshots land here (CI uploads the directory); CTLPLANE_TEST_ARTIFACTS overrides the root."""
    root = Path(os.environ.get("CTLPLANE_TEST_ARTIFACTS", Path(__file__).parents[2] / ".test-artifacts"))
    directory = root / "dashboard"
    directory.mkdir(parents=True, exist_ok=True)
    return directory


@contextmanager
def running(server: uvicorn.Server, scheme: str = "http") -> Iterator[str]:
    """Run `server` on a free loopback port in a thread (its own host and port are not used); yields the
    base URL, and stops it after."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield f"{scheme}://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
        assert not thread.is_alive(), "uvicorn did not stop"


@contextmanager
def serve(app: FastAPI) -> Iterator[str]:
    """Serve `app` on a free loopback port in a thread; yields the base URL."""
    with running(QuietServer(uvicorn.Config(app, **server_options()))) as url:
        yield url


def watch_errors(page: Page) -> list[str]:
    errors: list[str] = []

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error":
            errors.append(f"console: {message.text}")

    page.on("console", on_console)
    page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
    return errors


# What a reader cannot read: in each Plotly chart, two of its texts (legend entries, tick labels, axis titles,
# the title) on top of each other, or one cut off by the chart's edge; and a page wider than its window.
_UNREADABLE_JS = """() => {
  const out = [];
  const seen = (el) => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0 ? r : null; };
  const boxes = (root, sel) => [...root.querySelectorAll(sel)].map(seen).filter(Boolean);
  const meet = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
  document.querySelectorAll('.js-plotly-plot').forEach((plot, i) => {
    const title = plot.querySelector('.g-gtitle text');
    const name = title ? title.textContent : `chart ${i}`;
    const edge = plot.querySelector('svg.main-svg').getBoundingClientRect();
    const parts = {
      'legend entry': boxes(plot, 'g.legend g.traces'),
      'x tick label': boxes(plot, 'g.xtick text'),
      'y tick label': boxes(plot, 'g.ytick text'),
      'right-hand tick label': boxes(plot, 'g.y2tick text'),
      'x axis title': boxes(plot, '.g-xtitle text'),
      'y axis title': boxes(plot, '.g-ytitle text'),
      'right-hand axis title': boxes(plot, '.g-y2title text'),
      'title': boxes(plot, '.g-gtitle text'),
    };
    const kinds = Object.keys(parts);
    kinds.forEach((a, ia) => kinds.slice(ia).forEach((b) => {
      parts[a].forEach((r, i) => parts[b].forEach((q, j) => {
        if ((a !== b || i < j) && meet(r, q)) out.push(`${name}: a ${a} over a ${b}`);
      }));
    }));
    kinds.forEach((k) => parts[k].forEach((r) => {
      if (r.left < edge.left - 1 || r.right > edge.right + 1 || r.top < edge.top - 1 || r.bottom > edge.bottom + 1)
        out.push(`${name}: a ${k} cut off at the chart's edge`);
    }));
  });
  if (document.documentElement.scrollWidth > window.innerWidth + 1)
    out.push(`the page is ${document.documentElement.scrollWidth} px wide in a ${window.innerWidth} px window`);
  return [...new Set(out)];
}"""


def unreadable(page: Page) -> list[str]:
    """What a reader of this page cannot read at its window's size (overlapping or cut-off chart texts, a page
    wider than the window); [] when everything reads."""
    found: list[str] = page.evaluate(_UNREADABLE_JS)
    return found


def shoot(page: Page, artifacts: Path, name: str, docs: bool = False) -> None:
    path = artifacts / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    if docs and os.environ.get("CTLPLANE_UPDATE_DOCS_SCREENSHOTS") == "1":
        DOCS_IMG.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, DOCS_IMG / f"dashboard-{name}.png")


@contextmanager
def scraped(
    targets: list[Target], refresh_ms: int, interval: float, timeout: float | None = None
) -> Iterator[tuple[ExporterState, str]]:
    """The exporter's real path (the test process's JPype client, Scraper thread, ExporterState) with the
    dashboard mounted; a node's read gets `timeout` (0.8 of the interval unless given) each round."""
    scraper = Scraper(
        targets,
        shared_client(),
        interval_seconds=interval,
        timeout_seconds=0.8 * interval if timeout is None else timeout,
        workers=5,
    )
    state = ExporterState(scraper.latest(), Thresholds())
    scraper.subscribe(state.observe)
    app = create_app(state.current, interval_seconds=interval)
    create_dashboard(InProcessSource(state), server=app, refresh_ms=refresh_ms)
    scraper.start()
    try:
        with serve(app) as base:
            yield state, base
    finally:
        scraper.stop()
