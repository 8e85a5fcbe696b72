from __future__ import annotations

import itertools
import json
import math
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import parse_qs

import httpx
import pyarrow.dataset as ds  # type: ignore[import-untyped]  # pyarrow ships no type information

from pipeline.backfill import chunk_ranges, import_range, matrix_rows, series_selector

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
    assert lines == ["chunk 1/2 (50%): 7 rows", "chunk 2/2 (100%): 7 rows"]
    files = sorted(p.relative_to(tmp_path).parent.as_posix() for p in tmp_path.rglob("import-*.parquet"))
    assert files == ["date=2024-05-01/cluster=c1", "date=2024-05-01/cluster=c1"]
    assert ds.dataset(tmp_path, format="parquet", partitioning="hive").to_table().num_rows == 14
