from __future__ import annotations

import argparse
from typing import Any

import bcrypt
import pytest
from fastapi.testclient import TestClient

from ctlplane.dashboard import cli as dashboard_cli
from ctlplane.dashboard.app import DEFAULT_PREFIX, Route, create_dashboard, route
from ctlplane.dashboard.cli import add_dashboard_arguments, mount_dashboard
from ctlplane.dashboard.source import InProcessSource
from ctlplane.exporter.catalog import Role
from ctlplane.exporter.http.app import create_app
from ctlplane.exporter.model import ClusterSnapshot, FleetSnapshot
from ctlplane.exporter.state import ExporterState
from ctlplane.exporter.thresholds import Thresholds
from tests.unit.dashboard.builders import T0, find, node, texts


def _state() -> ExporterState:
    nodes = (
        node("ctl-1", Role.CONTROLLER, node_id=100, kafka_controller_active=1.0, kafka_raft_current_epoch=3.0),
        node("b1", Role.BROKER, node_id=1, kafka_broker_state=3.0),
    )
    state = ExporterState(FleetSnapshot(0, T0, 0.0, ()), Thresholds())
    state.observe(FleetSnapshot(1, T0, 0.1, (ClusterSnapshot("kraft-4.3", nodes),)))
    return state


def _callback(client: TestClient, body: dict[str, Any]) -> dict[str, Any]:
    """Call a callback the way the browser does."""
    response = client.post("/dashboard/_dash-update-component", json=body)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()["response"]
    return result


def _show(client: TestClient, pathname: str) -> Any:
    body = {
        "output": "page.children",
        "outputs": {"id": "page", "property": "children"},
        "inputs": [{"id": "url", "property": "pathname", "value": pathname}],
        "changedPropIds": ["url.pathname"],
        "state": [],
    }
    return _callback(client, body)["page"]["children"]


def _refresh(client: TestClient, pathname: str, live_paths: list[str], graphs: list[str]) -> dict[str, Any]:
    live = [{"id": {"type": "live", "path": p}, "property": "children"} for p in live_paths]
    figures = [{"id": {"type": "live-graph", "key": k}, "property": "figure"} for k in graphs]
    body = {
        "output": '..{"path":["ALL"],"type":"live"}.children...{"key":["ALL"],"type":"live-graph"}.figure..',
        "outputs": [live, figures],
        "inputs": [{"id": "tick", "property": "n_intervals", "value": 3}],
        "changedPropIds": ["tick.n_intervals"],
        "state": [{"id": "url", "property": "pathname", "value": pathname}],
    }
    return _callback(client, body)


@pytest.fixture
def client() -> TestClient:
    state = _state()
    app = create_app(state.current, interval_seconds=5)
    create_dashboard(InProcessSource(state), server=app, refresh_ms=2000, clock=lambda: T0 + 4)
    return TestClient(app)


def test_mounted_on_the_exporter_app_next_to_its_routes(client: TestClient) -> None:
    page = client.get("/dashboard/")
    assert page.status_code == 200
    assert "<title>ctlplane</title>" in page.text
    assert r'"requests_pathname_prefix":"\u002fdashboard\u002f"' in page.text
    assert client.get("/api/v1/health").json()["clusters"][0]["name"] == "kraft-4.3"
    assert client.get("/metrics").status_code == 200


def test_navigation_renders_each_page(client: TestClient) -> None:
    fleet = _show(client, "/dashboard/")
    [live] = find(fleet, id={"type": "live", "path": ""})
    assert find(live, **{"data-cluster": "kraft-4.3"})

    cluster = _show(client, "/dashboard/cluster/kraft-4.3")
    assert [r["props"]["data-node"] for r in find(cluster, className="node-row level-ok")] == ["ctl-1", "b1"]
    assert find(cluster, **{"data-controller": "ctl-1"})
    assert len(find(cluster, config={"displaylogo": False})) == 4

    assert find(_show(client, "/dashboard/alerts"), className="connect")
    assert any("ctlplane pipeline episodes" in t for t in texts(_show(client, "/dashboard/history")))
    assert "Not found" in list(texts(_show(client, "/dashboard/nope")))
    assert not find(_show(client, "/dashboard/cluster/nope"), config={"displaylogo": False})


def test_refresh_replaces_live_part_and_figures_in_place(client: TestClient) -> None:
    response = _refresh(client, "/dashboard/cluster/kraft-4.3", ["cluster/kraft-4.3"], ["queues", "lag"])
    live = response['{"path":"cluster/kraft-4.3","type":"live"}']["children"]
    assert find(live, className="node-table")
    queues = response['{"key":"queues","type":"live-graph"}']["figure"]
    assert queues["layout"]["title"]["text"].startswith("Request/response queues")
    assert response['{"key":"lag","type":"live-graph"}']["figure"]["layout"]["title"]["text"].startswith("Metadata lag")


def test_a_late_refresh_does_not_overwrite_another_page(client: TestClient) -> None:
    # the browser moved to the fleet page; the cluster page's live part is still addressed
    response = _refresh(client, "/dashboard/", ["cluster/kraft-4.3"], [])
    assert '{"path":"cluster/kraft-4.3","type":"live"}' not in response


def test_frame_shows_status_and_nav(client: TestClient) -> None:
    body = {
        "output": "..nav.children...banner.children...status.children..",
        "outputs": [
            {"id": "nav", "property": "children"},
            {"id": "banner", "property": "children"},
            {"id": "status", "property": "children"},
        ],
        "inputs": [{"id": "tick", "property": "n_intervals", "value": 0}],
        "changedPropIds": [],
        "state": [],
    }
    response = _callback(client, body)
    assert response["status"]["children"] == "scrape round #1, 4 s old · refreshing every 2 s"
    assert response["banner"]["children"] is None  # a real cluster
    assert [link["props"]["href"] for link in response["nav"]["children"]] == [
        "/dashboard/",
        "/dashboard/cluster/kraft-4.3",
        "/dashboard/alerts",
        "/dashboard/history",
    ]


def test_deep_links_serve_the_app(client: TestClient) -> None:
    page = client.get("/dashboard/cluster/kraft-4.3")
    assert page.status_code == 200
    assert "_dash-renderer" in page.text


@pytest.mark.parametrize(
    ("relative", "expected"),
    [
        ("", ("fleet", None)),
        ("/", ("fleet", None)),
        ("cluster/kraft-4.3", ("cluster", "kraft-4.3")),
        ("cluster/kraft-4.3/broker/broker-1", ("broker", "kraft-4.3", "broker-1")),
        ("cluster/kraft-4.3/broker/", ("cluster", "kraft-4.3/broker")),
        ("cluster/", ("missing", "cluster")),
        ("alerts", ("alerts", None)),
        ("history/", ("history", None)),
        ("other", ("missing", "other")),
    ],
)
def test_route(relative: str, expected: tuple[str, ...]) -> None:
    assert route(relative) == Route(*expected)


def test_prefix_must_be_a_directory() -> None:
    with pytest.raises(ValueError, match="url_prefix"):
        create_dashboard(InProcessSource(_state()), url_prefix="/dashboard")


def test_the_exporters_basic_auth_covers_the_dashboard() -> None:
    state = _state()
    hashed = bcrypt.hashpw(b"secret", bcrypt.gensalt(rounds=4)).decode()
    app = create_app(state.current, interval_seconds=5, basic_auth_users={"sre": hashed})
    mount_dashboard(app, state)
    client = TestClient(app)
    for path in ("/dashboard/", "/dashboard/cluster/kraft-4.3", "/dashboard/_dash-layout"):
        assert client.get(path).status_code == 401, path
        assert client.get(path, auth=("sre", "secret")).status_code == 200, path
    assert client.post("/dashboard/_dash-update-component", json={}).status_code == 401


def test_dashboard_arguments() -> None:
    parser = argparse.ArgumentParser()
    add_dashboard_arguments(parser)
    args = parser.parse_args(["--exporter", "http://exporter:9308", "--alerts-url", "http://am:9093"])
    assert (args.exporter, args.host, args.port, args.refresh_seconds, args.alerts_url, args.history_dir) == (
        ["http://exporter:9308"],
        "127.0.0.1",
        8050,
        5.0,
        "http://am:9093",
        None,
    )
    with pytest.raises(SystemExit):
        parser.parse_args([])  # --exporter is required
    # repeated for the replicas of a sharded fleet
    assert parser.parse_args(["--exporter", "http://a:1", "--exporter", "http://b:2"]).exporter == [
        "http://a:1",
        "http://b:2",
    ]


def test_cli_prefix_matches_the_app() -> None:
    assert dashboard_cli.PREFIX == DEFAULT_PREFIX
