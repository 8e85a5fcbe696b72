from __future__ import annotations

import base64
import gzip
import zlib
from dataclasses import replace

import bcrypt
from fastapi.testclient import TestClient

from ctlplane.exporter.http.app import PageResponse, create_app
from ctlplane.exporter.http.jsonapi import snapshot_from_dict, snapshot_to_dict
from ctlplane.exporter.http.page import MetricsPage
from ctlplane.exporter.model import Sample
from ctlplane.exporter.state import ExporterState
from ctlplane.exporter.thresholds import Thresholds
from tests.unit.exporter.builders import fleet, kraft_broker, kraft_controller
from tests.unit.exporter.test_families import sample_fleet


def client(snapshot=None, **kwargs):  # type: ignore[no-untyped-def]
    state = ExporterState(snapshot or sample_fleet(), Thresholds())
    app = create_app(state.current, interval_seconds=15, version="test", clock=lambda: 1005.0, **kwargs)
    return TestClient(app), state


def test_metrics_is_a_plain_route_with_content_negotiation() -> None:
    http, _ = client()
    plain = http.get("/metrics", follow_redirects=False)
    assert plain.status_code == 200 and plain.headers["content-type"].startswith("text/plain")
    assert 'ctlplane_up{cluster="zk",node="b3",role="broker"} 0.0' in plain.text
    assert "ctlplane_snapshot_age_seconds 5.0" in plain.text
    om = http.get("/metrics", headers={"Accept": "application/openmetrics-text;version=1.0.0,text/plain;q=0.5"})
    assert om.headers["content-type"].startswith("application/openmetrics-text") and om.text.endswith("# EOF\n")


def test_metrics_sent_in_slices_is_the_whole_page_with_its_length(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(PageResponse, "SLICE_BYTES", 7)  # many slices of a small page
    http, state = client()
    current = state.current()
    for accept in (None, "application/openmetrics-text;version=1.0.0"):
        headers = {"Accept": accept} if accept else {}
        response = http.get("/metrics", headers={**headers, "Accept-Encoding": "identity"})
        page, _ = MetricsPage("test").render(current.snapshot, current.health, accept, 1005.0)
        assert response.content == page and "content-encoding" not in response.headers
        assert response.headers["content-length"] == str(len(page))


def _raw(http: TestClient, headers: dict[str, str]) -> tuple[bytes, dict[str, str]]:
    """The body as sent, not decoded by the client."""
    with http.stream("GET", "/metrics", headers=headers) as response:
        return b"".join(response.iter_raw()), dict(response.headers)


def test_metrics_are_one_gzip_member_when_asked_the_page_deflated_once_per_round(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Prometheus asks for gzip on every scrape. The body is one gzip member (every gzip reader takes it,
    httpx's too, which stops after the first member), its page part compressed once per snapshot and the
    age made per request; a q=0 gzip, or none asked, is plain text."""
    monkeypatch.setattr(PageResponse, "SLICE_BYTES", 7)
    http, state = client()
    current = state.current()
    for accept in (None, "application/openmetrics-text;version=1.0.0"):
        page, _ = MetricsPage("test").render(current.snapshot, current.health, accept, 1005.0)
        headers = {"Accept": accept} if accept else {}
        raw, sent = _raw(http, {**headers, "Accept-Encoding": "gzip"})
        assert sent["content-encoding"] == "gzip" and sent["vary"] == "Accept-Encoding"
        assert sent["content-length"] == str(len(raw)) and len(raw) < len(page) / 3
        member = zlib.decompressobj(16 + zlib.MAX_WBITS)
        assert member.decompress(raw) == page and member.eof and member.unused_data == b""
        assert http.get("/metrics", headers={**headers, "Accept-Encoding": "br, gzip;q=0.5"}).content == page
    plain, sent = _raw(http, {"Accept-Encoding": "gzip;q=0, identity"})
    assert "content-encoding" not in sent and plain.startswith(b"# HELP")
    metrics_page = MetricsPage("test")
    first, _ = metrics_page.render_parts(current.snapshot, current.health, None, 1005.0, gzipped=True)
    later, _ = metrics_page.render_parts(current.snapshot, current.health, None, 1009.0, gzipped=True)
    assert later[1] is first[1] and later[2] != first[2]  # the page's deflate reused; a fresh age
    assert gzip.decompress(b"".join(later)).endswith(b"ctlplane_snapshot_age_seconds 9.0\n")


def test_each_rounds_page_is_made_when_the_round_ends_in_the_forms_scrapers_asked_for(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A scrape after a round is served from the cache: the page (and its gzip) was made in the scrape
    thread when the round's observation came, for each form asked for lately, not at the first scrape."""
    import ctlplane.exporter.http.page as page_module  # where the page makes its families

    made: list[int] = []
    collect = page_module.collect_families
    monkeypatch.setattr(
        page_module, "collect_families", lambda snapshot, *a: made.append(snapshot.sequence) or collect(snapshot, *a)
    )
    state = ExporterState(sample_fleet(), Thresholds())
    http = TestClient(
        create_app(state.current, interval_seconds=15, clock=lambda: 1005.0, observations=state.subscribe)
    )
    openmetrics = {"Accept": "application/openmetrics-text;version=1.0.0", "Accept-Encoding": "gzip"}
    http.get("/metrics", headers={"Accept-Encoding": "gzip"})
    http.get("/metrics", headers=openmetrics)
    first = state.current().snapshot.sequence
    assert made == [first, first]  # the first snapshot's two forms, made by those scrapes
    state.observe(replace(sample_fleet(), sequence=first + 1))
    assert made == [first, first, first + 1, first + 1]  # made ahead, in the observing thread
    text = http.get("/metrics", headers={"Accept-Encoding": "gzip"})
    om = http.get("/metrics", headers=openmetrics)
    assert made == [first, first, first + 1, first + 1]  # both served from what was made ahead
    current = state.current()
    for response, accept in ((text, None), (om, openmetrics["Accept"])):
        page, _ = MetricsPage().render(current.snapshot, current.health, accept, 1005.0)
        assert response.content == page


def test_a_form_no_scraper_asked_for_lately_is_not_made_ahead(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import ctlplane.exporter.http.page as page_module  # where the page makes its families

    made: list[int] = []
    collect = page_module.collect_families
    monkeypatch.setattr(
        page_module, "collect_families", lambda snapshot, *a: made.append(snapshot.sequence) or collect(snapshot, *a)
    )
    now = [0.0]
    page = MetricsPage(clock=lambda: now[0])
    snapshot = sample_fleet()
    page.render_parts(snapshot, None, None, 1005.0)
    now[0] = page_module.ASKED_SECONDS
    page.prepare(replace(snapshot, sequence=snapshot.sequence + 1), None)
    now[0] = 2 * page_module.ASKED_SECONDS + 1
    page.prepare(replace(snapshot, sequence=snapshot.sequence + 2), None)
    # asked for at 0 s: made ahead at ASKED_SECONDS, no longer after
    assert made == [snapshot.sequence, snapshot.sequence + 1]


def test_snapshot_json_round_trips() -> None:
    snapshot = sample_fleet()
    zk = snapshot.clusters[0]
    first = zk.nodes[0]
    slow = Sample("kafka_request_total_time_seconds", (("request", "LeaderAndIsr"),), 2.0,
                  (("count", 2.0), ("sum", 0.1)), read_at=first.scraped_at - 30)  # fmt: skip
    stamped = replace(first, samples=(*first.samples, slow))
    snapshot = replace(snapshot, clusters=(replace(zk, nodes=(stamped, *zk.nodes[1:])), *snapshot.clusters[1:]))
    http, _ = client(snapshot)
    document = http.get("/api/v1/snapshot").json()
    assert snapshot_to_dict(snapshot_from_dict(document)) == document
    assert snapshot_from_dict(document).clusters[0].nodes[0].samples[-1] == slow  # with its read time
    zk = next(c for c in document["clusters"] if c["name"] == "zk")
    assert [n["control_plane_listener"] for n in zk["nodes"]] == [True, False, None]


def test_health_json_names_the_controller_and_each_broker_state() -> None:
    snapshot = fleet(kraft_controller("c1", 1, active=True, registrations={101: 10}), kraft_broker("b1", 101))
    http, _ = client(snapshot)
    cluster = http.get("/api/v1/health").json()["clusters"][0]
    assert cluster["controller"]["node"] == "c1" and cluster["active_controllers"] == 1
    assert cluster["brokers"][0]["state"] == "FENCED"


def test_healthz_is_unhealthy_until_the_first_round_and_when_rounds_stop() -> None:
    http, state = client(fleet(kraft_broker("b1", 101), sequence=0, at=1000.0))
    assert http.get("/healthz").status_code == 503
    state.observe(fleet(kraft_broker("b1", 101), sequence=1, at=1000.0))
    assert http.get("/healthz").status_code == 200
    stale_http, _ = client(fleet(kraft_broker("b1", 101), sequence=7, at=900.0))
    assert stale_http.get("/healthz").json()["status"] == "unhealthy"


def test_basic_auth_guards_every_endpoint() -> None:
    hashed = bcrypt.hashpw(b"pw", bcrypt.gensalt(rounds=4)).decode()
    http, _ = client(basic_auth_users={"prometheus": hashed})
    good = "Basic " + base64.b64encode(b"prometheus:pw").decode()
    bad = "Basic " + base64.b64encode(b"prometheus:nope").decode()
    # /healthz is open by design (tests/unit/exporter/http/test_guard.py): status, sequence and age only
    for path in ("/metrics", "/api/v1/snapshot", "/api/v1/health", "/"):
        assert http.get(path).status_code == 401
        assert http.get(path, headers={"Authorization": bad}).status_code == 401
        assert http.get(path, headers={"Authorization": good}).status_code in (200, 503)


def test_unknown_path_is_a_clean_404() -> None:
    http, _ = client()
    assert http.get("/metrics/../../etc/passwd").status_code == 404
    assert http.post("/metrics").status_code == 405


def test_an_idle_server_wakes_about_once_a_second(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """uvicorn's own server wakes ten times a second to look at should_exit (~1.8 ms of CPU a second
    idle, a fifth of ctlplane's cost per scrape at one scrape a second, bench/vs_jmx_exporter.py); ctlplane's
    wakes once a second for the Date header, and at once when told to stop (`running` waits for that)."""
    import time

    import httpx

    from ctlplane.exporter.http.app import http_server
    from tests.e2e.browser import running

    ticks: list[int] = []
    app = create_app(ExporterState(sample_fleet(), Thresholds()).current, interval_seconds=15)
    server = http_server(app, "127.0.0.1", 0)
    tick = server.on_tick

    async def counted(counter: int) -> bool:
        ticks.append(counter)
        return await tick(counter)

    monkeypatch.setattr(server, "on_tick", counted)
    with running(server) as base:
        time.sleep(3)
        assert httpx.get(f"{base}/healthz").headers["date"]  # kept fresh by the ticks it still makes
        idle = len(ticks)
    assert idle <= 5, f"{idle} wake-ups in ~3 s idle (uvicorn's own loop: ~30)"
