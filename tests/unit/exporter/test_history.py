from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type information
import pyarrow.dataset as ds  # type: ignore[import-untyped]
import pytest

from exporter.health import Thresholds
from exporter.history import (
    HISTORY_SCHEMA,
    HistoryWriter,
    archive_files,
    enforce_retention,
    format_labels,
    rows_table,
)
from exporter.model import Sample
from exporter.state import ExporterState, Observation
from tests.unit.exporter.builders import fleet, kraft_broker, kraft_controller, node

T = datetime(2024, 5, 1, 12, 0, tzinfo=UTC).timestamp()


def observe(*snapshots_at: float, fenced_at: frozenset[float] = frozenset()) -> list[Observation]:
    """A KRaft cluster c1: controller k1 (committed 5000) and broker b1 (applied 1000: 4000 records behind)."""
    state = ExporterState(fleet(at=T - 15, sequence=0), Thresholds())
    return [
        state.observe(
            fleet(
                kraft_controller("k1", 1, active=True, committed=5000, at=at),
                kraft_broker("b1", 2, applied=1000, broker_state=2 if at in fenced_at else 3, at=at),
                sequence=i + 1,
                at=at,
            )
        )
        for i, at in enumerate(snapshots_at)
    ]


def as_tuples(table: pa.Table) -> set[tuple[object, ...]]:
    return {(r["node"], r["role"], r["series"], r["labels"], r["value"], r["state"]) for r in table.to_pylist()}


def test_rows_of_one_round_cover_every_sample_and_the_health_series() -> None:
    table = rows_table(observe(T, fenced_at=frozenset({T})))
    assert table.schema == HISTORY_SCHEMA
    assert set(table.column("timestamp").to_pylist()) == {datetime.fromtimestamp(T, UTC)}
    assert set(table.column("cluster").to_pylist()) == {"c1"}
    expected = {
        ("k1", "controller", "ctlplane_up", "", 1.0, None),
        ("k1", "controller", "ctlplane_scrape_duration_seconds", "", 0.002, None),
        ("k1", "controller", "kafka_controller_active", "", 1.0, None),
        ("k1", "controller", "kafka_raft_current_epoch", "", 5.0, None),
        ("k1", "controller", "kafka_controller_last_committed_record_offset", "", 5000.0, None),
        ("k1", "controller", "kafka_controller_last_applied_record_offset", "", 5000.0, None),
        ("k1", "controller", "kafka_controller_fenced_brokers", "", 0.0, None),
        ("b1", "broker", "ctlplane_up", "", 1.0, "INITIAL"),
        ("b1", "broker", "ctlplane_scrape_duration_seconds", "", 0.002, "INITIAL"),
        ("b1", "broker", "kafka_broker_state", "", 2.0, "INITIAL"),
        ("b1", "broker", "kafka_broker_last_applied_record_offset", "", 1000.0, "INITIAL"),
        ("b1", "broker", "kafka_broker_last_applied_record_lag_seconds", "", 0.2, "INITIAL"),
        ("b1", "broker", "kafka_raft_current_epoch", "", 5.0, "INITIAL"),
        ("b1", "broker", "kafka_broker_lifecycle_state", "state=INITIAL", 1.0, "INITIAL"),
        ("b1", "broker", "kafka_broker_metadata_lag_records", "", 4000.0, "INITIAL"),
        ("b1", "broker", "kafka_broker_metadata_lag_seconds", "", 0.2, "INITIAL"),
        ("b1", "broker", "kafka_broker_metadata_stale", "", 1.0, "INITIAL"),
        ("b1", "broker", "kafka_broker_metadata_frozen", "", 0.0, "INITIAL"),
        ("", "", "kafka_cluster_active_controllers", "", 1.0, None),
        ("", "", "kafka_cluster_reachable_controllers", "", 1.0, None),
        ("", "", "kafka_controller_failovers_total", "", 0.0, None),
        ("", "", "kafka_controller_info", "node=k1,node_id=1", 1.0, None),
    }
    assert as_tuples(table) == expected
    assert table.num_rows == len(expected)


def test_summary_parts_become_count_sum_and_quantile_rows() -> None:
    summary = Sample(
        "kafka_request_seconds", (("request", "Fetch"),), 3.0, (("count", 3.0), ("sum", 0.5), ("0.99", 0.3))
    )
    broker = node("b1", at=T)
    broker = type(broker)(**{**{f: getattr(broker, f) for f in ("cluster", "node", "address", "role", "mode",
        "node_id", "version", "up", "scrape_duration_seconds", "error", "errors_total", "scraped_at")},
        "samples": (summary,)})  # fmt: skip
    state = ExporterState(fleet(at=T - 15, sequence=0), Thresholds())
    rows = {
        (r["series"], r["labels"], r["value"]) for r in rows_table([state.observe(fleet(broker, at=T))]).to_pylist()
    }
    assert {r for r in rows if r[0].startswith("kafka_request_seconds")} == {
        ("kafka_request_seconds_count", "request=Fetch", 3.0),
        ("kafka_request_seconds_sum", "request=Fetch", 0.5),
        ("kafka_request_seconds", "quantile=0.99,request=Fetch", 0.3),
    }


def test_labels_are_sorted_and_escaped() -> None:
    assert format_labels((("z", "1"), ("a", "x,y=z"))) == "a=x\\,y\\=z,z=1"


def test_flush_writes_one_file_per_day_and_cluster_readable_as_a_dataset(tmp_path: Path) -> None:
    day2 = T + 86_400
    writer = HistoryWriter(tmp_path, clock=lambda: day2)
    observations = observe(T, T + 15, day2)
    for observation in observations:
        writer.observe(observation)
    assert writer.pending_rows() == 3 * 22
    written = writer.flush()
    assert sorted(p.relative_to(tmp_path).parent.as_posix() for p in written) == [
        "date=2024-05-01/cluster=c1",
        "date=2024-05-02/cluster=c1",
    ]
    assert all(p.name.startswith("part-") and p.suffix == ".parquet" for p in written)
    assert writer.pending_rows() == 0
    back = ds.dataset(tmp_path, format="parquet", partitioning="hive").to_table()
    assert back.num_rows == 3 * 22
    assert sorted(set(back.column("date").to_pylist())) == ["2024-05-01", "2024-05-02"]
    assert writer.flush() == []  # nothing buffered, nothing written


def test_a_crash_before_the_rename_leaves_no_visible_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writer = HistoryWriter(tmp_path, clock=lambda: T)
    writer.observe(observe(T)[0])

    def crash(src: object, dst: object) -> None:
        raise OSError("killed between write and rename")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        writer.flush()
    monkeypatch.undo()
    leftovers = list(tmp_path.rglob("*.tmp"))
    assert len(leftovers) == 1 and leftovers[0].name.startswith(".part-")
    assert list(archive_files(tmp_path)) == []
    assert ds.dataset(tmp_path, format="parquet", partitioning="hive").to_table().num_rows == 0
    HistoryWriter(tmp_path)  # a restart removes the leftover
    assert list(tmp_path.rglob("*.tmp")) == []


def test_retention_by_age_then_by_size(tmp_path: Path) -> None:
    for day in ("2024-04-01", "2024-04-29", "2024-04-30", "2024-05-01"):
        directory = tmp_path / f"date={day}" / "cluster=c1"
        directory.mkdir(parents=True)
        (directory / "part-1-000001.parquet").write_bytes(b"x" * 100)
    now = datetime(2024, 5, 1, 12, 0, tzinfo=UTC).timestamp()
    deleted = enforce_retention(tmp_path, retention_days=2, max_bytes=None, now=now)
    assert [p.parent.parent.name for p in deleted] == ["date=2024-04-01"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["date=2024-04-29", "date=2024-04-30", "date=2024-05-01"]
    deleted = enforce_retention(tmp_path, retention_days=None, max_bytes=150, now=now)
    assert [p.parent.parent.name for p in deleted] == ["date=2024-04-29", "date=2024-04-30"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["date=2024-05-01"]


def test_the_flusher_thread_writes_and_close_flushes_the_rest(tmp_path: Path) -> None:
    writer = HistoryWriter(tmp_path, flush_seconds=3600, clock=lambda: T).start()
    writer.observe(observe(T)[0])
    writer.close()
    assert ds.dataset(tmp_path, format="parquet", partitioning="hive").to_table().num_rows == 22
