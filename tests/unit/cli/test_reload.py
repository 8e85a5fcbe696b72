"""ConfigReload (ctlplane/reload.py): the config file read again while running. A file that fails its checks
changes nothing and is counted; one that passes replaces the clusters and nodes, and the nodes kept keep
their memory. No JMX here: the scraper reads an in-process double (tests/unit/exporter/test_scraper.py).

Every setting a reload applies reaches each part that uses it, one test per setting (issue 47):
`scrape.interval_seconds` (the rounds' pace, /healthz's staleness), `scrape.timeout_seconds` (a round's
wait, the quorum readers' Admin deadline, the DNS resolvers'), `health.*` (the health model), `jmx` and
`clusters[]` (the nodes read and how; the discovered ones too). The rest needs a restart and says so."""

from __future__ import annotations

import ast
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from ctlplane.exporter.catalog import Role
from ctlplane.exporter.config.file import load_settings
from ctlplane.exporter.health import BrokerHealth
from ctlplane.exporter.http.app import create_app
from ctlplane.exporter.model import MBeanQuery, RawReading
from ctlplane.exporter.scraper import Scraper
from ctlplane.exporter.sources.admin.client import QuorumReader
from ctlplane.exporter.sources.base import NodeSource
from ctlplane.exporter.sources.jmx.base import Endpoint, JmxTls
from ctlplane.exporter.sources.routed import Sources
from ctlplane.exporter.state import Observation
from ctlplane.reload import ConfigReload
from ctlplane.wiring import (
    DiscoveredTargets,
    build_app,
    build_client,
    build_discovery,
    build_dns_watch,
    build_fencing_watch,
    build_scraper,
    build_state,
    build_targets,
)
from tests.unit.exporter.builders import fleet, kraft_broker, kraft_controller
from tests.unit.exporter.test_scraper import ScriptedClient


def _config(
    path: Path, clusters: dict[str, list[int]], interval: float = 1.0, timeout: float = 0.3, **more: Any
) -> None:
    document = {
        "clusters": [
            {"name": name, "nodes": [{"address": f"127.0.0.1:{port}", "name": f"b{port}"} for port in ports]}
            for name, ports in clusters.items()
        ],
        "scrape": {"interval_seconds": interval, "timeout_seconds": timeout},
        **more,
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


def _wired(path: Path, client: NodeSource, clock: float = 1010.0) -> tuple[ConfigReload, Scraper, TestClient]:
    """What `ctlplane run` wires (ctlplane/cli.py serve, ctlplane/wiring.py), over the double: the scraper,
    the state, discovery and the DNS watch (not started) from the settings, the reload, and the HTTP app, whose
    clock reads `clock`; the scraper's rounds are taken at 1000."""
    settings = load_settings(path)
    scraper = build_scraper(settings, client)
    scraper.clock = lambda: 1000.0
    state = build_state(settings, scraper)
    discovery = build_discovery(settings, scraper, state)
    dns = build_dns_watch(settings, discovery)
    reload = ConfigReload(path, settings, scraper, discovery, state, None, dns=dns)
    return reload, scraper, TestClient(build_app(settings, scraper, state, discovery, reload, clock=lambda: clock))


def test_a_reloaded_interval_paces_the_rounds_and_judges_healthz(tmp_path: Path) -> None:
    path = tmp_path / "ctlplane.yaml"
    _config(path, {"c1": [1]}, interval=1.0)
    reload, scraper, http = _wired(path, ScriptedClient())
    scraper.scrape_once()
    assert http.get("/healthz").status_code == 503  # a round 10 s old: three 1 s rounds late
    _config(path, {"c1": [1]}, interval=5.0)
    assert http.post("/-/reload").status_code == 200
    assert scraper.interval_seconds == 5.0  # Scraper.run's pace and the slow tier's due time read it
    healthz = http.get("/healthz")
    assert healthz.status_code == 200, healthz.json()  # 10 s is within three rounds of 5 s
    _config(path, {"c1": [1]}, interval=2.0)
    assert reload() is None
    assert http.get("/healthz").status_code == 503  # and back: three rounds of 2 s


def test_a_reloaded_timeout_is_what_a_round_waits_for_a_node(tmp_path: Path) -> None:
    path = tmp_path / "ctlplane.yaml"
    _config(path, {"c1": [1]}, interval=1.0, timeout=0.3)
    client = ScriptedClient()
    reload, scraper, _ = _wired(path, client)
    scraper.scrape_once()
    client.stalled.add(2)
    _config(path, {"c1": [1, 2]}, interval=1.0, timeout=0.6)
    assert reload() is None
    try:
        started = time.monotonic()
        nodes = {n.node: n for n in scraper.scrape_once().nodes()}
        assert time.monotonic() - started >= 0.55
        assert nodes["b2"].error == "no answer within 0.6s" and nodes["b1"].up
    finally:
        client.release.set()


def test_a_reloaded_timeout_remakes_the_quorum_readers_and_the_dns_resolvers(tmp_path: Path) -> None:
    path = tmp_path / "ctlplane.yaml"
    cluster = {
        "name": "c1",
        "bootstrap_servers": ["127.0.0.1:9092"],
        "discovery": {"jmx_port": 9999, "dns": [{"name": "kafka.example", "type": "A", "port": 9999}]},
    }
    path.write_text(yaml.safe_dump({"clusters": [cluster], "scrape": {"interval_seconds": 1, "timeout_seconds": 0.9}}))
    reload, scraper, _ = _wired(path, ScriptedClient())
    running = scraper.quorum_sources["c1"]
    assert isinstance(running, QuorumReader) and running.timeout_ms == 720  # 0.8 of it: inside the round
    assert reload.dns is not None and reload.dns.sources["c1"][0]._resolver.lifetime == 0.9
    assert reload() is None
    assert scraper._pending_sources == {"c1": running}  # nothing changed: the reader and its Admin client kept
    path.write_text(yaml.safe_dump({"clusters": [cluster], "scrape": {"interval_seconds": 1, "timeout_seconds": 0.75}}))
    assert reload() is None
    remade = (scraper._pending_sources or {})["c1"]  # taken at the next round's start (no JVM in this test)
    assert isinstance(remade, QuorumReader) and remade is not running and remade.timeout_ms == 600
    assert reload.dns.sources["c1"][0]._resolver.lifetime == 0.75


def test_a_reloaded_timeout_reaches_the_metrics_endpoints_reads(tmp_path: Path) -> None:
    """The endpoint client's HTTP timeout and read deadline are the config's after a reload (docs/sources.md)."""
    path = tmp_path / "ctlplane.yaml"
    cluster = {"name": "msk", "nodes": [{"address": "127.0.0.1:11001"}], "metrics": {"naming": "jmx_exporter"}}
    path.write_text(yaml.safe_dump({"clusters": [cluster], "scrape": {"interval_seconds": 2, "timeout_seconds": 1}}))
    settings = load_settings(path)
    sources = build_client(settings)
    assert isinstance(sources, Sources)
    reload, _, _ = _wired(path, sources)  # the real sources, not the double
    assert (sources.endpoints.timeout_seconds, sources.endpoints.page_timeout_seconds) == (
        1.0,
        settings.scrape.page_timeout_seconds,
    )
    path.write_text(yaml.safe_dump({"clusters": [cluster], "scrape": {"interval_seconds": 2, "timeout_seconds": 1.5}}))
    assert reload() is None
    assert (sources.endpoints.timeout_seconds, sources.endpoints.page_timeout_seconds) == (
        1.5,
        load_settings(path).scrape.page_timeout_seconds,
    )
    sources.close()


def _broker(observation: Observation, cluster: str, node: str) -> BrokerHealth:
    health = observation.health.cluster(cluster)
    broker = health.broker(node) if health is not None else None
    assert broker is not None
    return broker


def test_reloaded_health_thresholds_judge_the_next_round(tmp_path: Path) -> None:
    path = tmp_path / "ctlplane.yaml"
    _config(path, {"c1": [1]}, health={"metadata_stale_records": 2000})
    reload, _, _ = _wired(path, ScriptedClient())
    state = reload.state
    lagging = fleet(kraft_controller("c1", 1, active=True, committed=5000), kraft_broker("b1", 101, applied=4000))
    broker = _broker(state.observe(lagging), "c1", "b1")
    assert broker.metadata_lag_records == 1000 and not broker.stale
    _config(path, {"c1": [1]}, health={"metadata_stale_records": 500})
    assert reload() is None
    assert _broker(state.observe(lagging), "c1", "b1").stale


class RecordingClient(ScriptedClient):
    """The double, keeping every endpoint it was asked to read (its JMX user among them)."""

    def __init__(self) -> None:
        super().__init__()
        self.endpoints: list[Endpoint] = []

    def read(self, endpoint: Endpoint, queries: Sequence[MBeanQuery]) -> list[RawReading]:
        self.endpoints.append(endpoint)
        return super().read(endpoint, queries)


def test_reloaded_jmx_credentials_reach_the_listed_and_the_discovered_nodes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CTLPLANE_TEST_JMX_PASSWORD", "secret")
    path = tmp_path / "ctlplane.yaml"
    _config(path, {"c1": [1]}, jmx={"username": "monitor", "password_env": "CTLPLANE_TEST_JMX_PASSWORD"})
    client = RecordingClient()
    reload, scraper, _ = _wired(path, client)
    scraper.scrape_once()
    assert [e.username for e in client.endpoints] == ["monitor"]
    _config(path, {"c1": [1]}, jmx={"username": "reader", "password_env": "CTLPLANE_TEST_JMX_PASSWORD"})
    assert reload() is None
    client.endpoints.clear()
    scraper.scrape_once()
    assert [e.username for e in client.endpoints] == ["reader"]
    # a node discovery finds from now on is read with the credentials in force
    make_target = reload.discovery.make_target
    assert isinstance(make_target, DiscoveredTargets)
    found = make_target("c1", "broker-7", "10.0.0.7:9999", Role.BROKER, 7).endpoint
    assert isinstance(found, Endpoint) and found.username == "reader"


def test_a_reloaded_jmx_trust_store_reaches_the_nodes_without_a_restart(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # the trust is each endpoint's own (tls_routes.py), no longer the JVM's javax.net.ssl.trustStore
    path = tmp_path / "ctlplane.yaml"
    store, password = tmp_path / "trust.p12", tmp_path / "truststore.password"
    store.write_bytes(b"\x30\x82 a PKCS12 store")  # DER, as check-config looks (the JVM loads it at a read)
    password.write_text("changeit\n")
    _config(path, {"c1": [1]}, jmx={"ssl": True})
    client = RecordingClient()
    reload, scraper, _ = _wired(path, client)
    scraper.scrape_once()
    assert [e.tls for e in client.endpoints] == [None]
    _config(path, {"c1": [1]}, jmx={"ssl": True, "truststore": str(store), "truststore_password_file": str(password)})
    with caplog.at_level(logging.INFO, logger="ctlplane"):
        assert reload() is None
    assert "restart" not in caplog.text
    client.endpoints.clear()
    scraper.scrape_once()
    assert [e.tls for e in client.endpoints] == [JmxTls(str(store), "changeit")]


def test_a_setting_that_needs_a_restart_says_so(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "ctlplane.yaml"
    _config(path, {"c1": [1]})
    reload, _, _ = _wired(path, ScriptedClient())
    _config(path, {"c1": [1]}, scrape={"interval_seconds": 1.0, "timeout_seconds": 0.3, "jvm_max_heap": "256m"})
    with caplog.at_level(logging.INFO, logger="ctlplane"):
        assert reload() is None
    assert "needs a restart to apply: scrape.jvm_max_heap" in caplog.text


def test_a_reloaded_fencing_poll_paces_the_fencing_watch(tmp_path: Path) -> None:
    path = tmp_path / "ctlplane.yaml"
    _config(path, {"c1": [1]})
    settings = load_settings(path)
    scraper = Scraper(build_targets(settings), ScriptedClient(), interval_seconds=1, timeout_seconds=0.3, workers=4)
    state = build_state(settings, scraper)
    fencing = build_fencing_watch(settings, scraper)
    assert fencing.poll_seconds == 2.0  # the default
    reload = ConfigReload(
        path, settings, scraper, build_discovery(settings, scraper, state), state, None, fencing=fencing
    )
    _config(path, {"c1": [1]}, scrape={"interval_seconds": 1.0, "timeout_seconds": 0.3, "fencing_poll_seconds": 0})
    assert reload() is None
    assert fencing.poll_seconds == 0  # off: FencingWatch._run asks no controller


ROOT = Path(__file__).resolve().parents[3]
RUNTIME = ("ctlplane/reload.py", "ctlplane/wiring.py", "ctlplane/cli.py")


def other_objects_attributes_assigned(source: str) -> list[str]:
    """`x.attr = …` where x is a part handed in (a parameter, a global or `self.part`), not `self` nor an
    object the function made itself (an ssl context it set up): a part changed from outside its configure."""
    found = []
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            continue
        body = ast.Module(body=function.body, type_ignores=[])
        made_here = {n.id for n in ast.walk(body) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        for node in ast.walk(body):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                owner = node.value
                if isinstance(owner, ast.Name) and (owner.id == "self" or owner.id in made_here):
                    continue
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return sorted(set(found), key=lambda line: int(line.split()[1].rstrip(":")))


@pytest.mark.parametrize("path", RUNTIME)
def test_the_runtime_changes_a_running_part_only_through_its_configure(path: str) -> None:
    """The reload once set the scraper's interval by a bare assignment and /healthz read it back through a
    lambda: every running part changes through its own configure or set_* (docs: the reload contract)."""
    assert other_objects_attributes_assigned((ROOT / path).read_text()) == []


def test_the_guard_sees_an_assignment_to_another_parts_attribute() -> None:
    poked = (
        "class R:\n    def __call__(self, dns):\n        self.scraper.interval_seconds = 5\n        dns.sources = {}\n"
        "        context = make()\n        context.check_hostname = False\n        self.ok = 1\n"
    )
    assert other_objects_attributes_assigned(poked) == ["line 3: self.scraper.interval_seconds", "line 4: dns.sources"]
