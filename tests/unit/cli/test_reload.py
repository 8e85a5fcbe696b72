"""ConfigReload (ctlplane/cli.py): the config file read again while running. A file that fails its checks
changes nothing and is counted; one that passes replaces the clusters and nodes, and the nodes kept keep
their memory. No JMX here: the scraper reads an in-process double (tests/unit/exporter/test_scraper.py)."""

from __future__ import annotations

from pathlib import Path

import yaml

from ctlplane.cli import ConfigReload, build_discovery, build_state, build_targets
from ctlplane.exporter.app import create_app
from ctlplane.exporter.config_file import load_settings
from ctlplane.exporter.scraper import Scraper
from tests.unit.exporter.test_scraper import ScriptedClient


def _config(path: Path, clusters: dict[str, list[int]], interval: float = 1.0, timeout: float = 0.3) -> None:
    document = {
        "clusters": [
            {"name": name, "nodes": [{"address": f"127.0.0.1:{port}", "name": f"b{port}"} for port in ports]}
            for name, ports in clusters.items()
        ],
        "scrape": {"interval_seconds": interval, "timeout_seconds": timeout},
    }
    path.write_text(yaml.safe_dump(document))


def _running(path: Path) -> tuple[ConfigReload, Scraper, ScriptedClient]:
    settings = load_settings(path)
    client = ScriptedClient()
    scraper = Scraper(build_targets(settings), client, interval_seconds=1, timeout_seconds=0.3, workers=4)
    state = build_state(settings, scraper)
    discovery = build_discovery(settings, scraper, state)
    return ConfigReload(path, settings, scraper, discovery, state, None), scraper, client


def _nodes(scraper: Scraper) -> dict[str, tuple[str, int]]:
    return {n.node: (n.cluster, n.errors_total) for n in scraper.scrape_once().nodes()}


def test_a_reload_adds_and_removes_nodes_and_clusters_and_kept_nodes_keep_their_counters(tmp_path: Path) -> None:
    path = tmp_path / "ctlplane.yaml"
    _config(path, {"c1": [1, 2]})
    reload, scraper, client = _running(path)
    client.failing.add(2)
    _nodes(scraper)
    assert _nodes(scraper) == {"b1": ("c1", 0), "b2": ("c1", 2)}
    _config(path, {"c1": [2, 3], "c2": [4]})
    assert reload() is None
    assert _nodes(scraper) == {"b2": ("c1", 3), "b3": ("c1", 0), "b4": ("c2", 0)}  # b2 counts on
    assert {f.rows[0][0]: f.rows[0][3] for f in reload.families()}["ctlplane_config_last_reload_successful"] == 1.0


def test_a_file_that_fails_its_checks_changes_nothing_says_where_and_is_counted(tmp_path: Path) -> None:
    path = tmp_path / "ctlplane.yaml"
    _config(path, {"c1": [1]})
    reload, scraper, _ = _running(path)
    _nodes(scraper)
    _config(path, {"c1": [1, 2]}, interval=1.0, timeout=5.0)
    failed = reload()
    assert failed is not None and "scrape" in failed and "timeout_seconds must not exceed" in failed
    assert "\n" not in failed
    assert _nodes(scraper) == {"b1": ("c1", 0)}  # still the running config
    rows = {f.rows[0][0]: f.rows[0][3] for f in reload.families()}
    assert rows["ctlplane_config_last_reload_successful"] == 0.0
    assert rows["ctlplane_config_reload_failures_total"] == 1.0
    path.write_text("clusters: [")  # not even YAML
    assert reload() is not None and rows["ctlplane_config_reload_failures_total"] == 1.0
    assert {f.rows[0][0]: f.rows[0][3] for f in reload.families()}["ctlplane_config_reload_failures_total"] == 2.0


def test_post_reload_answers_as_prometheus_does(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    path = tmp_path / "ctlplane.yaml"
    _config(path, {"c1": [1]})
    reload, scraper, _ = _running(path)
    state = build_state(reload.settings, scraper)
    client = TestClient(create_app(state.current, interval_seconds=1, reload=reload))
    assert client.post("/-/reload").status_code == 200
    _config(path, {"c1": [1]}, timeout=5.0)
    refused = client.post("/-/reload")
    assert refused.status_code == 500 and refused.text.startswith("failed to reload config: ")
    without = TestClient(create_app(state.current, interval_seconds=1))
    assert without.post("/-/reload").status_code == 404
