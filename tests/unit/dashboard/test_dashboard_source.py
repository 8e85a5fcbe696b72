from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]  # pyarrow ships no type information
import pytest
from fastapi.testclient import TestClient

from ctlplane.dashboard.source import (
    Alert,
    AlertSource,
    ExportersSource,
    HistoryData,
    HistorySource,
    RemoteSource,
    Table,
    parse_alertmanager,
    parse_prometheus,
    read_history,
    split_credentials,
)
from ctlplane.dashboard.views import alerts_view
from ctlplane.exporter.catalog import Role
from ctlplane.exporter.http.app import create_app
from ctlplane.exporter.http.jsonapi import health_from_dict, health_to_dict
from ctlplane.exporter.model import ClusterSnapshot, FleetSnapshot
from ctlplane.exporter.state import ExporterState
from ctlplane.exporter.thresholds import Thresholds
from tests.unit.dashboard.builders import T0, node

RUNBOOK = "https://example.org/runbooks/KafkaBrokerFenced.md"


def _fleet(sequence: int, at: float, active: str = "ctl-1") -> FleetSnapshot:
    nodes = (
        node(
            "ctl-1",
            Role.CONTROLLER,
            node_id=100,
            at=at,
            kafka_controller_active=float(active == "ctl-1"),
            kafka_raft_current_epoch=5.0 if active == "ctl-1" else 6.0,
            kafka_controller_last_committed_record_offset=50.0,
        ),
        node(
            "ctl-2",
            Role.CONTROLLER,
            node_id=101,
            at=at,
            kafka_controller_active=float(active == "ctl-2"),
            kafka_raft_current_epoch=5.0 if active == "ctl-1" else 6.0,
            kafka_controller_last_committed_record_offset=50.0,
        ),
        node("b1", Role.BROKER, node_id=1, at=at, kafka_broker_state=3.0, kafka_broker_last_applied_record_offset=40.0),
    )
    return FleetSnapshot(sequence, at, 0.1, (ClusterSnapshot("c1", nodes),))


def test_health_from_dict_inverts_health_to_dict() -> None:
    state = ExporterState(_fleet(0, T0), Thresholds())
    state.observe(_fleet(1, T0 + 5))
    observation = state.observe(_fleet(2, T0 + 10, active="ctl-2"))
    document = health_to_dict(observation.health, observation.snapshot)
    rebuilt = health_from_dict(document)
    assert health_to_dict(rebuilt, observation.snapshot) == document
    assert rebuilt.clusters[0].controller.node == "ctl-2"
    assert rebuilt.clusters[0].controller.failovers_total == 1


def test_remote_source_reads_a_real_exporter_app_into_its_trail() -> None:
    state = ExporterState(_fleet(0, T0), Thresholds())
    app = create_app(state.current, interval_seconds=5)
    source = RemoteSource("http://exporter", client=TestClient(app, base_url="http://exporter"), window_seconds=12)
    assert source.poll_once().snapshot.sequence == 0
    assert source.trail("c1").lines == {}  # the empty pre-scrape snapshot is not history
    for sequence in (1, 2, 3, 4):
        state.observe(_fleet(sequence, T0 + 5 * sequence))
        source.poll_once()
        source.poll_once()  # same round twice: kept once
    lag = source.trail("c1").lines_of("metadata_lag_records")["b1"]
    assert lag.times == (T0 + 10, T0 + 15, T0 + 20)  # 12 s window
    assert lag.values == (10.0, 10.0, 10.0)
    current = source.current()
    assert current.health.clusters[0].controller.node == "ctl-1"
    assert [b.node for b in current.health.clusters[0].brokers] == ["b1"]
    assert current.health.clusters[0].brokers[0].metadata_lag_records == 10.0
    assert source.last_error is None


def test_remote_source_keeps_the_last_observation_when_the_exporter_fails() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    source = RemoteSource("http://nowhere:1", client=httpx.Client(transport=httpx.MockTransport(refuse)))
    assert source.poll_once().snapshot.sequence == 0
    assert source.last_error == "ConnectError: connection refused"


ALERTMANAGER_DOC: list[dict[str, Any]] = [
    {
        "labels": {"alertname": "KafkaBrokerFenced", "severity": "critical", "cluster": "c1", "broker": "2"},
        "annotations": {"summary": "broker 2 fenced", "runbook_url": RUNBOOK},
        "startsAt": "2023-11-14T22:13:20.000Z",
        "endsAt": "2023-11-14T22:20:00.000Z",
        "status": {"state": "active", "silencedBy": [], "inhibitedBy": []},
    },
    {
        "labels": {"alertname": "KafkaMetadataStale", "severity": "warning", "cluster": "c1"},
        "annotations": {"description": "stale"},
        "startsAt": "2023-11-14T22:13:20Z",
        "status": {"state": "suppressed"},
    },
]


def test_parse_alertmanager() -> None:
    assert parse_alertmanager(ALERTMANAGER_DOC) == (
        Alert("KafkaBrokerFenced", "firing", "critical", ALERTMANAGER_DOC[0]["labels"], "broker 2 fenced", RUNBOOK, T0),
        Alert("KafkaMetadataStale", "suppressed", "warning", ALERTMANAGER_DOC[1]["labels"], "stale", None, T0),
    )


def test_parse_prometheus() -> None:
    document = {
        "status": "success",
        "data": {
            "alerts": [
                {
                    "labels": {"alertname": "KafkaNoActiveController", "severity": "critical", "cluster": "c1"},
                    "annotations": {"summary": "no controller", "runbook_url": RUNBOOK},
                    "state": "pending",
                    "activeAt": "2023-11-14T22:13:20+00:00",
                    "value": "0e+00",
                }
            ]
        },
    }
    [alert] = parse_prometheus(document)
    assert (alert.name, alert.state, alert.cluster, alert.runbook_url, alert.starts_at) == (
        "KafkaNoActiveController",
        "pending",
        "c1",
        RUNBOOK,
        T0,
    )


def test_alert_source_detects_alertmanager_and_remembers_resolved_alerts() -> None:
    served: list[list[dict[str, Any]]] = [ALERTMANAGER_DOC, ALERTMANAGER_DOC[1:]]
    seen: list[str] = []

    def alertmanager(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        if request.url.path != "/api/v2/alerts":
            return httpx.Response(404)
        return httpx.Response(200, json=served[0] if len(seen) == 1 else served[1])

    now = [T0]
    source = AlertSource(
        "http://am:9093/", client=httpx.Client(transport=httpx.MockTransport(alertmanager)), clock=lambda: now[0]
    )
    first = source.refresh()
    assert (first.api, [a.name for a in first.firing()], first.recent) == ("alertmanager", ["KafkaBrokerFenced"], ())
    assert source.result() is first  # within min_interval_seconds: no new request
    now[0] += 10
    second = source.refresh()
    assert [a.name for a in second.active] == ["KafkaMetadataStale"]
    assert [(a.name, a.state, a.ends_at) for a in second.recent] == [("KafkaBrokerFenced", "resolved", T0 + 10)]
    assert seen == ["/api/v2/alerts", "/api/v2/alerts"]


def test_alert_source_falls_back_to_prometheus_and_reports_errors() -> None:
    def prometheus(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/v1/alerts":
            return httpx.Response(200, json={"status": "success", "data": {"alerts": []}})
        return httpx.Response(404)

    result = AlertSource("http://prom:9090", client=httpx.Client(transport=httpx.MockTransport(prometheus))).refresh()
    assert (result.api, result.active, result.error) == ("prometheus", (), None)

    down = AlertSource(
        "http://am:9093", client=httpx.Client(transport=httpx.MockTransport(lambda r: httpx.Response(503)))
    )
    error = down.refresh().error
    assert error is not None and "503" in error


def _wait_for(predicate: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 30
    while not predicate():
        assert time.monotonic() < deadline, "the background read did not finish"
        time.sleep(0.01)


def test_alert_source_result_never_waits_for_the_network() -> None:
    """A page asking while Alertmanager hangs gets the last answer and how long it has waited, at once."""
    answer = threading.Event()
    requests: list[str] = []

    def hanging(request: httpx.Request) -> httpx.Response:
        requests.append(request.url.path)
        assert answer.wait(30), "never released"
        return httpx.Response(200, json=ALERTMANAGER_DOC)

    now = [T0]
    source = AlertSource(
        "http://am:9093/api/v2/alerts",
        client=httpx.Client(transport=httpx.MockTransport(hanging)),
        clock=lambda: now[0],
    )
    first = source.result()
    assert (first.fetched_at, first.waiting_since, first.active) == (None, T0, ())
    _wait_for(lambda: len(requests) == 1)
    now[0] += 5
    assert source.result().waiting_since == T0  # still the one read in flight, no second request
    answer.set()
    _wait_for(lambda: source.result().fetched_at is not None)
    done = source.result()
    assert ([a.name for a in done.firing()], done.waiting_since, requests) == (
        ["KafkaBrokerFenced"],
        None,
        ["/api/v2/alerts"],
    )


def test_history_source_reads_in_the_background_and_again_only_when_files_change(tmp_path: Path) -> None:
    (tmp_path / "episodes").mkdir()
    part = tmp_path / "episodes" / "part-00000.csv"
    part.write_text("cluster,node\nc1,b1\n")
    reads: list[Path] = []

    def counting_read(directory: Path) -> HistoryData:
        reads.append(directory)
        return read_history(directory)

    now = [T0]
    source = HistorySource(tmp_path, check_seconds=10, read=counting_read, clock=lambda: now[0])
    assert source.result().read_at is None  # not read yet: the read runs in the background
    _wait_for(lambda: source.result().read_at is not None)
    assert source.result().episodes == Table(("cluster", "node"), (("c1", "b1"),))
    for _ in range(5):  # later ticks: unchanged files are not read again
        now[0] += 10
        source.refresh()
    assert len(reads) == 1
    part.write_text("cluster,node\nc1,b1\nc2,b2\n")
    os.utime(part, ns=(part.stat().st_mtime_ns + 10**9,) * 2)  # a rewrite within the file system's clock tick
    now[0] += 10
    assert source.refresh().episodes == Table(("cluster", "node"), (("c1", "b1"), ("c2", "b2")))
    assert len(reads) == 2


def test_read_history_reads_spark_part_files(tmp_path: Path) -> None:
    """The layout of docs/pipeline.md: Parquet part files per output, Spark's marker files beside them."""
    (tmp_path / "episodes").mkdir()
    (tmp_path / "sweep").mkdir()
    (tmp_path / "report" / "daily").mkdir(parents=True)
    columns = ("cluster", "node", "kind", "start", "end", "duration_seconds", "peak", "samples")
    start, end = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 1, 0, 1, tzinfo=UTC)
    rows = [("c1", "b1", "fenced", start, end, 60.0, None, 5), ("c2", "b2", "stale_metadata", start, end, 60.0, 5e3, 5)]
    for i, row in enumerate(rows):
        pq.write_table(
            pa.table({c: [v] for c, v in zip(columns, row, strict=True)}),
            tmp_path / "episodes" / f"part-0000{i}-x.snappy.parquet",
        )
    (tmp_path / "episodes" / "_SUCCESS").write_text("")
    (tmp_path / "episodes" / ".part-00000-x.snappy.parquet.crc").write_bytes(b"crc")
    (tmp_path / "sweep" / "part-00000-y.csv").write_text(
        "cluster,threshold,for_seconds,pages,minutes_firing,episodes_caught,episodes_total\nc1,1000,60,3,4.5,2,2\n"
    )
    pq.write_table(
        pa.table({"date": ["2026-01-01"], "cluster": ["c1"], "episodes": [2]}),
        tmp_path / "report" / "daily" / "part-0.parquet",
    )
    history = read_history(tmp_path)
    assert history.episodes == Table(columns, tuple(rows))
    assert history.sweep == Table(
        ("cluster", "threshold", "for_seconds", "pages", "minutes_firing", "episodes_caught", "episodes_total"),
        (("c1", "1000", "60", "3", "4.5", "2", "2"),),
    )
    assert history.daily == Table(("date", "cluster", "episodes"), (("2026-01-01", "c1", 2),))
    assert (history.errors, len(history.files)) == ((), 4)


@pytest.mark.parametrize("configured", [False, True])
def test_read_history_without_outputs(tmp_path: Path, configured: bool) -> None:
    history = read_history(tmp_path if configured else None)
    assert (history.episodes, history.sweep) == (None, None)
    assert history.directory == (str(tmp_path) if configured else None)


def test_read_history_reports_unreadable_files(tmp_path: Path) -> None:
    (tmp_path / "episodes").mkdir()
    (tmp_path / "episodes" / "broken.parquet").write_bytes(b"not parquet")
    history = read_history(tmp_path)
    assert history.episodes is None
    [error] = history.errors
    assert error.startswith(f"{tmp_path / 'episodes' / 'broken.parquet'}: ")


@pytest.fixture
def guarded_alertmanager() -> Iterator[str]:
    """A real HTTP server on loopback answering /api/v2/alerts (empty) only to basic auth am-user:am s3cret."""
    import base64
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    expected = "Basic " + base64.b64encode(b"am-user:am s3cret").decode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status, body = (200, b"[]") if self.headers.get("Authorization") == expected else (401, b"")
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def test_credentials_in_an_alerts_url_are_used_and_never_shown(guarded_alertmanager: str) -> None:
    source = AlertSource(f"http://am-user:am%20s3cret@{guarded_alertmanager}")
    result = source.refresh()
    source.close()
    assert result.api == "alertmanager" and result.error is None, result
    assert result.url == f"http://{guarded_alertmanager}"
    shown = str(alerts_view(result, now=time.time()))
    assert "s3cret" not in shown and "am-user" not in shown and guarded_alertmanager in shown


def test_credentials_in_the_exporter_url_are_used_and_never_kept_in_it() -> None:
    assert split_credentials("https://sre:p%40ss@[::1]:18309/x?y=1") == ("https://[::1]:18309/x?y=1", ("sre", "p@ss"))
    assert split_credentials("http://exporter:18309") == ("http://exporter:18309", None)
    assert RemoteSource("http://sre:pw@exporter:18309/").base_url == "http://exporter:18309"


def _cluster_fleet(sequence: int, at: float, *names: str) -> FleetSnapshot:
    """`_fleet`'s cluster under each of `names` (one exporter replica's share)."""
    (cluster,) = _fleet(sequence, at).clusters
    return FleetSnapshot(sequence, at, 0.1, tuple(ClusterSnapshot(name, cluster.nodes) for name in names))


def _replica(state: ExporterState, number: int) -> RemoteSource:
    """A RemoteSource reading `state` through the real exporter app, as replica `number` of a sharded fleet."""
    url = f"http://replica-{number}"
    return RemoteSource(url, client=TestClient(create_app(state.current, interval_seconds=5), base_url=url))


def test_exporters_source_shows_the_replicas_of_a_sharded_fleet_as_one() -> None:
    replicas = [ExporterState(_cluster_fleet(0, T0), Thresholds()) for _ in range(2)]
    source = ExportersSource([_replica(state, i) for i, state in enumerate(replicas)])
    assert source.poll_once().snapshot.sequence == 0  # nothing scraped anywhere yet

    replicas[0].observe(_cluster_fleet(1, T0 + 5, "east", "north"))
    replicas[1].observe(_cluster_fleet(7, T0 + 3, "west"))
    merged = source.poll_once()
    assert [c.name for c in merged.snapshot.clusters] == ["east", "north", "west"]
    assert [c.name for c in merged.health.clusters] == ["east", "north", "west"]
    assert merged.health.cluster("west").controller.node == "ctl-1"  # type: ignore[union-attr]
    assert merged.snapshot.taken_at == T0 + 3  # the older round: the status line's age is the stalest
    assert source.trail("west").lines_of("metadata_lag_records")["b1"].times == (T0 + 3,)  # replica 1's trail
    assert source.trail("east").lines_of("metadata_lag_records")["b1"].times == (T0 + 5,)
    assert source.last_error is None


def test_exporters_source_keeps_an_unreachable_replicas_clusters_and_names_it() -> None:
    state = ExporterState(_cluster_fleet(0, T0), Thresholds())
    app = create_app(state.current, interval_seconds=5)
    answering = [True]

    def flaky(request: httpx.Request) -> httpx.Response:
        if not answering[0]:
            raise httpx.ConnectError("connection refused", request=request)
        with TestClient(app, base_url="http://replica-1") as client:
            return client.get(request.url.path)

    live_state = ExporterState(_cluster_fleet(0, T0), Thresholds())
    live = _replica(live_state, 0)
    flaky_remote = RemoteSource("http://replica-1", client=httpx.Client(transport=httpx.MockTransport(flaky)))
    source = ExportersSource([live, flaky_remote])
    live_state.observe(_cluster_fleet(1, T0 + 5, "east"))
    state.observe(_cluster_fleet(1, T0 + 5, "west"))
    assert [c.name for c in source.poll_once().snapshot.clusters] == ["east", "west"]

    answering[0] = False
    live_state.observe(_cluster_fleet(2, T0 + 10, "east"))
    merged = source.poll_once()
    assert [c.name for c in merged.snapshot.clusters] == ["east", "west"]  # west as last seen, not dropped
    assert merged.snapshot.taken_at == T0 + 5  # and the page says how old that is
    assert source.last_error == (
        "http://replica-1 unreachable: ConnectError: connection refused (its clusters as last seen: west)"
    )
    answering[0] = True
    source.poll_once()
    assert source.last_error is None


def test_exporters_source_shows_a_cluster_served_twice_once_and_says_so() -> None:
    states = [ExporterState(_cluster_fleet(0, T0), Thresholds()) for _ in range(2)]
    states[0].observe(_cluster_fleet(1, T0, "east", "west"))
    states[1].observe(_cluster_fleet(1, T0, "west"))
    source = ExportersSource([_replica(state, i) for i, state in enumerate(states)])
    assert [c.name for c in source.poll_once().snapshot.clusters] == ["east", "west"]
    assert source.last_error == (
        "cluster west is served by http://replica-0 and http://replica-1 (replicas with different --shard counts?)"
    )
