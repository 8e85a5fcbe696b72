from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import httpx
import pyarrow.dataset as ds  # type: ignore[import-untyped]  # pyarrow ships no type information
import pytest

from ctlplane.cli import main
from ctlplane.pipeline import backfill
from ctlplane.pipeline.backfill import BackfillError, chunk_ranges, import_range, matrix_rows, series_selector
from harness.localkafka import free_port

RECORDED = json.loads((Path(__file__).parent / "data" / "query_range.json").read_text())
T0 = 1714564800.0  # 2024-05-01T12:00:00Z


def test_chunks_cover_the_range_without_overlap_and_within_the_point_limit() -> None:
    assert chunk_ranges(0, 100, 10, max_points=4) == [(0, 30), (40, 70), (80, 100)]
    assert chunk_ranges(0, 0, 15) == [(0, 0)]
    ranges = chunk_ranges(T0, T0 + 7 * 86_400, 15)
    assert all((upper - lower) / 15 + 1 <= 11_000 for lower, upper in ranges)
    assert ranges[0][0] == T0 and ranges[-1][1] == T0 + 7 * 86_400
    assert all(b[0] - a[1] == 15 for a, b in itertools.pairwise(ranges))


def test_matrix_rows_convert_a_recorded_response() -> None:
    rows = matrix_rows(RECORDED["data"]["result"]).to_table().to_pylist()
    at = {T0: datetime.fromtimestamp(T0, UTC), T0 + 15: datetime.fromtimestamp(T0 + 15, UTC)}
    simplified = [
        (r["timestamp"], r["cluster"], r["node"], r["role"], r["series"], r["labels"], r["value"], r["state"])
        for r in rows
        if not math.isnan(r["value"])
    ]
    assert simplified == [
        (at[T0], "c1", "b1", "broker", "kafka_broker_lifecycle_state", "state=ACTIVE", 1.0, "ACTIVE"),
        (at[T0 + 15], "c1", "b1", "broker", "kafka_broker_lifecycle_state", "state=FENCED", 1.0, "FENCED"),
        (at[T0], "c1", "b1", "broker", "kafka_broker_metadata_lag_records", "", 12.0, "ACTIVE"),
        (at[T0 + 15], "c1", "b1", "broker", "kafka_broker_metadata_lag_records", "", 4000.0, "FENCED"),
        (at[T0], "c1", "", "", "kafka_cluster_active_controllers", "", 1.0, None),
        (at[T0 + 15], "c1", "", "", "kafka_cluster_active_controllers", "", 0.0, None),
    ]
    nan_rows = [r for r in rows if math.isnan(r["value"])]
    assert [(r["series"], r["labels"]) for r in nan_rows] == [("kafka_request_seconds", "quantile=0.99,request=Fetch")]


def test_import_queries_each_chunk_and_writes_the_archive_layout(tmp_path: Path) -> None:
    asked: list[dict[str, list[str]]] = []

    def prometheus(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/api/v1/query_range"
        asked.append(parse_qs(request.content.decode()))
        return httpx.Response(200, json=RECORDED)

    lines: list[str] = []
    with httpx.Client(base_url="http://prom:9090", transport=httpx.MockTransport(prometheus)) as client:
        total = import_range(client, T0, T0 + 15 * 5, 15, tmp_path, lines.append, max_points=3)
    assert [(q["start"], q["end"], q["step"]) for q in asked] == [
        ([str(T0)], [str(T0 + 30)], ["15"]),
        ([str(T0 + 45)], [str(T0 + 75)], ["15"]),
    ]
    assert asked[0]["query"] == [series_selector()]
    assert total == 2 * 7
    assert [line.split("] ")[1].split(", ")[:2] for line in lines] == [
        [" 50% chunk 1/2", "7 rows"],
        ["100% chunk 2/2", "14 rows"],
    ]
    files = sorted(p.relative_to(tmp_path).parent.as_posix() for p in tmp_path.rglob("import-*.parquet"))
    assert files == ["date=2024-05-01/cluster=c1", "date=2024-05-01/cluster=c1"]
    assert ds.dataset(tmp_path, format="parquet", partitioning="hive").to_table().num_rows == 14


def _series(cluster: str) -> dict[str, object]:
    return {"metric": {"__name__": "kafka_cluster_active_controllers", "cluster": cluster}, "values": [[T0, "1"]]}


def _answer(*series: dict[str, object]) -> dict[str, object]:
    return {"status": "success", "data": {"resultType": "matrix", "result": list(series)}}


def _import(tmp_path: Path, handler: Callable[[httpx.Request], httpx.Response], **kwargs: Any) -> int:
    with httpx.Client(base_url="http://prom:9090", transport=httpx.MockTransport(handler)) as client:
        return import_range(client, T0, T0 + 15, 15, tmp_path / "out", **kwargs)


def test_a_cluster_label_never_steers_a_path_out_of_the_archive(tmp_path: Path) -> None:
    hostile = ("x/../../../escaped", "x/../../inside", "a/b", "")  # the first resolves outside out/
    answer = _answer(_series("ok"), *(_series(c) for c in hostile))
    lines: list[str] = []
    assert _import(tmp_path, lambda r: httpx.Response(200, json=answer), progress=lines.append) == 1
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.parquet"))[0].startswith(
        "out/date=2024-05-01/cluster=ok/"
    )
    assert [p.name for p in tmp_path.iterdir()] == ["out"] and len(list(tmp_path.rglob("*.parquet"))) == 1
    assert "left out 4 series" in lines[-1]


def test_an_oversized_answer_is_refused_while_it_streams(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backfill, "MAX_RESPONSE_BYTES", 1000)
    sent: list[int] = []

    def chunks() -> Iterator[bytes]:
        for _ in range(1000):  # a 100 kB answer; reading must stop at the cap
            sent.append(100)
            yield b" " * 100

    with pytest.raises(BackfillError, match=r"over 0 MiB; use a smaller --max-points"):
        _import(tmp_path, lambda r: httpx.Response(200, content=chunks()))
    assert sum(sent) <= 1100


@pytest.mark.parametrize(
    ("response", "message"),
    [
        (
            httpx.Response(422, json={"status": "error", "errorType": "execution", "error": "too many samples"}),
            "HTTP 422: execution: too many samples",
        ),
        (httpx.Response(200, content=b"<html>proxy login</html>"), "not a Prometheus API answer"),
        (httpx.Response(200, json={"status": "success", "data": {"resultType": "vector", "result": []}}), "no matrix"),
    ],
)
def test_a_bad_answer_is_one_line_naming_the_chunk(tmp_path: Path, response: httpx.Response, message: str) -> None:
    with pytest.raises(BackfillError, match="chunk 1/1") as error:
        _import(tmp_path, lambda r: response)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_the_deadline_stops_between_chunks_and_keeps_what_was_written(tmp_path: Path) -> None:
    now = [0.0]

    def slow(request: httpx.Request) -> httpx.Response:
        now[0] += 10.0  # each chunk takes 10 s of the clock
        return httpx.Response(200, json=_answer(_series("ok")))

    with httpx.Client(base_url="http://prom:9090", transport=httpx.MockTransport(slow)) as client:
        with pytest.raises(
            BackfillError, match=r"--deadline of 15s passed after chunk 2/3 .*--start 2024-05-01T12:01:00Z"
        ):
            import_range(client, T0, T0 + 75, 15, tmp_path, max_points=2, deadline_seconds=15, clock=lambda: now[0])
    assert len(list(tmp_path.rglob("import-*.parquet"))) == 2


def test_a_step_that_would_be_billions_of_queries_is_refused_before_any(tmp_path: Path) -> None:
    with pytest.raises(BackfillError, match="use a larger --step"):
        chunk_ranges(T0, T0 + 365 * 86_400, 0.000001)


def test_the_command_fails_in_one_line_and_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    refused = f"http://127.0.0.1:{free_port()}"  # nothing listens: a real refused connection
    argv = [
        "history",
        "import",
        "--prometheus",
        refused,
        "--start",
        str(T0),
        "--end",
        str(T0 + 60),
        "--out",
        str(tmp_path),
    ]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: history import from {refused}: ConnectError") and err.count("\n") == 1
    assert main([*argv[:-2], "--step", "0.000001", "--end", str(T0 + 365 * 86_400), "--out", str(tmp_path)]) == 1
    assert "use a larger --step" in capsys.readouterr().err
