"""The dashboard in a real browser against the real KRaft 4.3 cluster (3 controllers + 2 brokers).

It lives here, beside the session fixture that starts the cluster, so one test session starts one
cluster. Browser helpers are shared with tests/e2e (tests/e2e/browser.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from jmxquery import JMXConnection, JMXQuery
from playwright.sync_api import Browser, Page, expect

from ctlplane.exporter.scraper import Target
from ctlplane.exporter.sources.jmx.base import Endpoint
from harness.localkafka import KafkaCluster
from tests.e2e.browser import artifacts_dir, launch_browser, scraped, shoot, unreadable, watch_errors
from tests.integration.watch import DEFAULT_SCRAPE_TIMEOUT

pytestmark = pytest.mark.kafka

FIRST_READ_MS = 120_000
PAGE_MS = 30_000  # a page's callback on a loaded machine (not a speed check: benchmarks measure that)
# a laptop's window and a wide screen's; the manual's pictures are taken at the first
SMALL = {"width": 1280, "height": 800}
LARGE = {"width": 1920, "height": 1080}  # generous: CI machines running Kafka, Spark and chromium at once are slow


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with launch_browser() as chromium:
        yield chromium


@pytest.fixture(scope="module")
def artifacts() -> Path:
    return artifacts_dir()


def _active_controllers_by_jmx(cluster: KafkaCluster) -> list[str]:
    """Kafka's own answer, read with another JMX client than the exporter's."""
    active = []
    for node in cluster.controllers():
        results = JMXConnection(node.jmx_url).query(
            [JMXQuery("kafka.controller:type=KafkaController,name=ActiveControllerCount", attribute="Value")],
            timeout=60,
        )
        if any(str(r.value) == "1" for r in results):
            active.append(node.name)
    return active


def _eventually(probe: Callable[[], list[str]], timeout: float) -> list[str]:
    deadline = time.monotonic() + timeout
    value = probe()
    while len(value) != 1 and time.monotonic() < deadline:
        time.sleep(1)
        value = probe()
    return value


def test_real_kraft_cluster_nodes_roles_and_active_controller(
    browser: Browser, kraft_cluster: KafkaCluster, artifacts: Path
) -> None:
    # no role hints: the roles shown must come from what each node's JMX says
    targets = [Target(kraft_cluster.name, n.name, Endpoint("127.0.0.1", n.jmx_port)) for n in kraft_cluster.nodes]
    # the product's default read budget, not the demo test's 2 s rounds: a live broker's read took longer than
    # 3.2 s on a loaded CI machine and its row said "NO" for a round (stop 42)
    with scraped(targets, refresh_ms=1000, interval=DEFAULT_SCRAPE_TIMEOUT, timeout=DEFAULT_SCRAPE_TIMEOUT) as (
        _,
        base,
    ):
        page = browser.new_page(viewport=SMALL)
        errors = watch_errors(page)
        page.goto(f"{base}/dashboard/cluster/{kraft_cluster.name}")
        expect(page.locator("tr.node-row")).to_have_count(len(kraft_cluster.nodes), timeout=FIRST_READ_MS)
        for node in kraft_cluster.nodes:
            role = "combined" if len(node.roles) > 1 else node.roles[0]
            row = page.locator(f'tr[data-node="{node.name}"]')
            # roles come from JMX, so they show once the node has been read
            expect(row).to_have_attribute("data-role", role, timeout=FIRST_READ_MS)
            expect(row.locator("td.node")).to_have_text(f"{node.name} (id {node.node_id})")
            expect(row.locator("td").last).to_have_text("yes")
            if node.is_broker:
                expect(row).to_have_attribute("data-state", "ACTIVE", timeout=FIRST_READ_MS)

        truth = _eventually(lambda: _active_controllers_by_jmx(kraft_cluster), timeout=60)
        assert len(truth) == 1, f"Kafka reports active controllers {truth}"
        active = kraft_cluster.node(truth[0])
        # within a few rounds: a round whose read of the active controller timed out (a loaded run) names none
        expect(page.locator(".controller-identity")).to_have_text(
            f"{active.name} (id {active.node_id})", timeout=FIRST_READ_MS
        )
        expect(page.locator("[data-active-controller]")).to_have_count(1)
        expect(page.locator(f'tr[data-node="{active.name}"] [data-active-controller]')).to_have_count(1)
        expect(page.locator(".graph-queues .js-plotly-plot .scatterlayer .trace").first).to_be_attached(timeout=20_000)
        _readable_at_both_sizes(page)

        # a broker's name leads to its page (where a page's dashboard link goes): its evidence round by round
        broker = kraft_cluster.brokers()[0]
        page.locator(f'tr[data-node="{broker.name}"] td.node a').click()
        # the page is the server's callback: at load 12 (a fresh-clone run) it came after Playwright's 5 s
        expect(page.locator(f'div.broker[data-node="{broker.name}"]')).to_be_visible(timeout=PAGE_MS)
        expect(page.locator("tr.evidence-run").first).to_have_attribute("data-state", "ACTIVE", timeout=PAGE_MS)
        expect(page.locator(f'tr.node-row[data-node="{broker.name}"]')).to_have_count(1)
        shoot(page, artifacts, "broker")

        _fenced_with_its_cause(page, kraft_cluster, artifacts)
        # the manual's cluster page: a few minutes of graphs, and the fencing and its end in the timeline
        page.goto(page.url.split("/dashboard/")[0] + f"/dashboard/cluster/{kraft_cluster.name}")
        expect(page.locator("li.event").first).to_be_attached(timeout=FIRST_READ_MS)
        expect(page.locator(".graph-lag .js-plotly-plot .scatterlayer .trace").first).to_be_attached(timeout=20_000)
        _readable_at_both_sizes(page)
        shoot(page, artifacts, "cluster", docs=True)

        page.locator('header a[href="/dashboard/"]').click()
        fleet_row = page.locator(f'tr[data-cluster="{kraft_cluster.name}"]')
        # the fenced broker's cluster is healthy again once its metadata is caught up (a round or two)
        expect(fleet_row).to_have_attribute("data-level", "ok", timeout=FIRST_READ_MS)
        expect(fleet_row).to_contain_text(f"{active.name} (id {active.node_id})")
        expect(fleet_row).to_contain_text(f"ACTIVE {len(kraft_cluster.brokers())}")
        _readable_at_both_sizes(page)
        shoot(page, artifacts, "fleet", docs=True)
        page.close()
        assert errors == []


def _readable_at_both_sizes(page: Page) -> None:
    """No chart text over another or cut off, no page wider than its window: on a laptop's window and a wide
    screen's (the charts follow the window's width)."""
    for size in (SMALL, LARGE):
        page.set_viewport_size(size)
        page.wait_for_timeout(1_000)  # Plotly lays the charts out again on the window's resize
        found = unreadable(page)
        assert found == [], f"at {size['width']}x{size['height']}: {found}"
    page.set_viewport_size(SMALL)
    page.wait_for_timeout(1_000)


def _fenced_with_its_cause(page: Page, cluster: KafkaCluster, artifacts: Path) -> None:
    """The manual's third picture: a broker fenced, with its cause. SIGSTOPped, its JMX times out while the
    controller fences it for missed heartbeats: FENCED, hung or isolated; resumed, ACTIVE again."""
    victim = cluster.brokers()[-1]
    page.goto(page.url.split("/dashboard/")[0] + f"/dashboard/cluster/{cluster.name}/broker/{victim.name}")
    row = page.locator(f'tr.node-row[data-node="{victim.name}"]')
    expect(row).to_have_attribute("data-state", "ACTIVE", timeout=FIRST_READ_MS)
    victim.pause()
    try:
        expect(row).to_have_attribute("data-state", "FENCED", timeout=FIRST_READ_MS)
        expect(row).to_have_attribute("data-cause", "hung_or_isolated", timeout=FIRST_READ_MS)
        _readable_at_both_sizes(page)
        shoot(page, artifacts, "broker-fenced", docs=True)
    finally:
        victim.resume()
    expect(row).to_have_attribute("data-state", "ACTIVE", timeout=FIRST_READ_MS)
