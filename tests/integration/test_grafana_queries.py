"""Every Grafana panel query returns data from a real Prometheus scraping a real ctlplane.

Prometheus (the Debian binary, 1 s scrape interval) scrapes `ctlplane run --config` (a subprocess)
that watches either the real ZooKeeper-mode (3.9, KIP-291 listener) and KRaft (4.3) clusters of the
session fixtures, or the simulator's two clusters (ctlplane/demo/, real JMX). Each panel query of
grafana/dashboards/*.json is evaluated with `$cluster` set to each cluster, `$node` to the "All"
value and `$__rate_interval` to 1m, over Prometheus' HTTP API.

A query passes when it returns at least one series with a finite value
- on both clusters, for a panel without a mode marker;
- on the cluster of its mode, for a panel marked `[ZooKeeper only]` or `[KRaft only]`.
Queries are polled together until all pass or a deadline expires, so start-up order never matters
and the failure message lists exactly the queries that stayed empty.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import yaml

from ctlplane.exporter.catalog import Mode
from grafana.build import DASHBOARDS_DIR, iter_panels, panel_mode
from harness.localkafka import KafkaCluster, clusters_config, free_port
from tests.integration.served import PROMETHEUS, stop, wait_ready

pytestmark = pytest.mark.kafka

RATE_INTERVAL = "1m"
ALL_NODES = ".+"  # the node variable's allValue
DATA_DEADLINE_SECONDS = 150.0


@dataclass(frozen=True)
class PanelQuery:
    dashboard: str
    panel: str
    ref_id: str
    expr: str
    mode: Mode | None

    @property
    def name(self) -> str:
        return f"{self.dashboard} / {self.panel} / {self.ref_id}"

    def filled(self, cluster: str) -> str:
        return (
            self.expr.replace("$__rate_interval", RATE_INTERVAL)
            .replace("$cluster", cluster)
            .replace("$node", ALL_NODES)
        )


def panel_queries() -> list[PanelQuery]:
    queries = []
    for path in sorted(DASHBOARDS_DIR.glob("*.json")):
        dashboard = json.loads(path.read_text())
        for panel in iter_panels(dashboard):
            for target in panel["targets"]:
                queries.append(
                    PanelQuery(dashboard["uid"], panel["title"], target["refId"], target["expr"], panel_mode(panel))
                )
    return queries


@dataclass(frozen=True)
class Fleet:
    """The clusters ctlplane watches: the cluster name of each mode and the `clusters:` config."""

    names: dict[Mode, str]
    clusters: list[dict[str, Any]]


def _real_fleet(zk: KafkaCluster, kraft: KafkaCluster) -> Fleet:
    return Fleet(
        {Mode.ZOOKEEPER: zk.name, Mode.KRAFT: kraft.name},
        clusters_config((zk, kraft)),
    )


@pytest.fixture(scope="module", params=["real", "simulated"])
def fleet(request: pytest.FixtureRequest) -> Iterator[Fleet]:
    """The real ZooKeeper-mode and KRaft clusters, or the simulator (ctlplane/demo/) serving both over real JMX."""
    if request.param == "real":
        # Requested here, not in the signature, so the simulated run does not start real Kafka.
        yield _real_fleet(request.getfixturevalue("zk_cluster"), request.getfixturevalue("kraft_cluster"))
        return
    launch = pytest.importorskip("ctlplane.demo.launch")
    simulator = launch.start_simulator(seed=11)
    try:
        document = simulator.settings_document(interval_seconds=2.0)
        names = {Mode(node.mode): node.cluster for node in simulator.nodes if node.mode in ("zookeeper", "kraft")}
        assert set(names) == {Mode.ZOOKEEPER, Mode.KRAFT}, names
        yield Fleet(names, document["clusters"])
    finally:
        simulator.stop()


@pytest.fixture(scope="module")
def ctlplane_url(fleet: Fleet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    workdir = tmp_path_factory.mktemp("ctlplane-grafana")
    port = free_port()
    config = workdir / "ctlplane.yml"
    config.write_text(
        yaml.safe_dump(
            {
                "clusters": fleet.clusters,
                # A round every 2 s keeps rates and frozen-offset history short enough for a test.
                "scrape": {"interval_seconds": 2, "timeout_seconds": 2},
                "http": {"host": "127.0.0.1", "port": port},
            }
        )
    )
    log = (workdir / "ctlplane.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "ctlplane.cli", "run", "--config", str(config)], stdout=log, stderr=subprocess.STDOUT
    )
    try:
        wait_ready(process, f"http://127.0.0.1:{port}/metrics", "ctlplane")
        yield f"127.0.0.1:{port}"
    finally:
        stop(process)
        log.close()


@pytest.fixture(scope="module")
def prometheus(ctlplane_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    workdir = tmp_path_factory.mktemp("prometheus")
    config = workdir / "prometheus.yml"
    config.write_text(
        yaml.safe_dump(
            {
                "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                "scrape_configs": [{"job_name": "ctlplane", "static_configs": [{"targets": [ctlplane_url]}]}],
            }
        )
    )
    port = free_port()
    log = (workdir / "prometheus.log").open("wb")
    process = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={config}",
            f"--storage.tsdb.path={workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(process, f"{url}/-/ready", "prometheus")
        yield url
    finally:
        stop(process)
        log.close()


def _instant(prometheus: str, expr: str) -> list[dict[str, Any]]:
    response = httpx.get(f"{prometheus}/api/v1/query", params={"query": expr}, timeout=10)
    body = response.json()
    assert body.get("status") == "success", f"{expr}: {body.get('error', response.text)}"
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


def _has_data(prometheus: str, expr: str) -> bool:
    return any(math.isfinite(float(series["value"][1])) for series in _instant(prometheus, expr))


def _evaluate(prometheus: str, queries: list[PanelQuery], fleet: Fleet) -> dict[str, set[Mode]]:
    """For each query, the modes in which it returned data."""
    return {
        query.name: {mode for mode, name in fleet.names.items() if _has_data(prometheus, query.filled(name))}
        for query in queries
    }


def _missing(query: PanelQuery, modes: set[Mode]) -> set[Mode]:
    required = {Mode.ZOOKEEPER, Mode.KRAFT} if query.mode is None else {query.mode}
    return required - modes


def test_variables_list_every_cluster_and_its_nodes(prometheus: str, fleet: Fleet) -> None:
    """`label_values(ctlplane_up, cluster)` and `label_values(ctlplane_up{cluster=~"$cluster"}, node)`."""
    deadline = time.monotonic() + DATA_DEADLINE_SECONDS
    expected = {c["name"]: {n["name"] for n in c["nodes"]} for c in fleet.clusters}
    seen: dict[str, set[str]] = {}
    while time.monotonic() < deadline:
        seen = {}
        for name in expected:
            response = httpx.get(
                f"{prometheus}/api/v1/label/node/values", params={"match[]": f'ctlplane_up{{cluster=~"{name}"}}'}
            )
            seen[name] = set(response.json()["data"])
        clusters_seen = set(
            httpx.get(f"{prometheus}/api/v1/label/cluster/values", params={"match[]": "ctlplane_up"}).json()["data"]
        )
        if clusters_seen == set(expected) and seen == expected:
            return
        time.sleep(1)
    raise AssertionError(f"variables: expected {expected}, saw {seen}")


def test_every_panel_query_returns_data(prometheus: str, fleet: Fleet) -> None:
    queries = panel_queries()
    assert len(queries) > 50, "the dashboards lost their panels"
    started = time.monotonic()
    deadline = started + DATA_DEADLINE_SECONDS
    pending = queries
    results: dict[str, set[Mode]] = {}
    while True:
        results.update(_evaluate(prometheus, pending, fleet))
        pending = [query for query in pending if _missing(query, results[query.name])]
        if not pending or time.monotonic() > deadline:
            break
        time.sleep(2)
    failures = [
        f"{query.name} [{query.mode or 'both modes'}]: no data on "
        f"{', '.join(sorted(m.value for m in _missing(query, results[query.name])))}\n    {query.expr}"
        for query in pending
    ]
    assert not failures, f"{len(failures)} panel queries returned nothing:\n" + "\n".join(failures)
    # A panel marked mode-specific whose every query has data on both modes is wrongly marked: its
    # description would tell users the panel is empty on the other mode.
    by_panel: dict[tuple[str, str], list[PanelQuery]] = {}
    for query in queries:
        by_panel.setdefault((query.dashboard, query.panel), []).append(query)
    over_marked = sorted(
        f"{dashboard} / {panel}"
        for (dashboard, panel), members in by_panel.items()
        if members[0].mode is not None and all(results[q.name] == {Mode.ZOOKEEPER, Mode.KRAFT} for q in members)
    )
    assert not over_marked, f"marked mode-specific but every query returns data on both modes: {over_marked}"


def _own_counter(prometheus: str, name: str) -> float:
    """A counter of Prometheus' own /metrics (no labels)."""
    lines = [line for line in httpx.get(f"{prometheus}/metrics", timeout=10).text.splitlines() if line.startswith(name)]
    assert lines, f"Prometheus has no {name}"
    return sum(float(line.rsplit(" ", 1)[1]) for line in lines)


def test_the_slow_tier_is_stored_with_the_time_ctlplane_read_it(prometheus: str, ctlplane_url: str) -> None:
    """The per-RPC histograms are read once a minute (scrape.slow_interval_seconds, default 60) and served
    between reads with the time they were read: Prometheus stores that time, not its scrape's, and takes
    the repeats (an exact duplicate, docs/configuration.md "Scrape tiers") without counting an error."""
    deadline = time.monotonic() + DATA_DEADLINE_SECONDS
    read_at: dict[tuple[str, str, str], float] = {}
    stored: dict[tuple[str, str, str], float] = {}
    while time.monotonic() < deadline:
        document = httpx.get(f"http://{ctlplane_url}/api/v1/snapshot", timeout=10).json()
        read_at = {
            (cluster["name"], node["node"], sample["labels"]["request"]): sample["read_at"]
            for cluster in document["clusters"]
            for node in cluster["nodes"]
            for sample in node["samples"]
            if sample["series"] == "kafka_request_total_time_seconds"
        }
        stored = {
            (s["metric"]["cluster"], s["metric"]["node"], s["metric"]["request"]): float(s["value"][1])
            for s in _instant(prometheus, "timestamp(kafka_request_total_time_seconds_count)")
        }
        if read_at and stored.keys() == read_at.keys() and all(abs(stored[k] - read_at[k]) < 0.002 for k in read_at):
            break
        time.sleep(1)
    else:
        raise AssertionError(f"read by ctlplane at {read_at}, stored by Prometheus at {stored}")
    for counter in (
        "prometheus_target_scrapes_sample_duplicate_timestamp_total",
        "prometheus_target_scrapes_sample_out_of_order_total",
        "prometheus_target_scrapes_sample_out_of_bounds_total",
    ):
        assert _own_counter(prometheus, counter) == 0, counter
