from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type information
import pyarrow.dataset as ds  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest
from fastapi.testclient import TestClient

from ctlplane.cli import main
from ctlplane.exporter.config import DEFAULT_COMPACT_AFTER_SECONDS
from ctlplane.exporter.health import Lifecycle
from ctlplane.exporter.history.archive import (
    COMPACTED_MARK,
    FILE_ORDER,
    IMPORT_PREFIX,
    WRITER_PREFIX,
    archive_files,
    compact,
    enforce_retention,
    write_partitioned,
)
from ctlplane.exporter.history.rows import rows_table
from ctlplane.exporter.history.table import FENCED_STATE, HISTORY_SCHEMA, format_labels
from ctlplane.exporter.history.writer import HistoryWriter
from ctlplane.exporter.http.app import create_app
from ctlplane.exporter.model import Sample
from ctlplane.exporter.state import ExporterState, Observation
from ctlplane.exporter.thresholds import Thresholds
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


ROWS_PER_ROUND = 23  # rows of one observe() round: the expected set of the first test


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
        ("b1", "broker", "kafka_broker_fenced_unplanned", "", 0.0, "INITIAL"),
        ("b1", "broker", "kafka_broker_fault_cause", "cause=starting", 1.0, "INITIAL"),
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


def test_the_state_column_names_a_fenced_broker_as_the_jobs_look_for_it() -> None:
    """The Spark jobs find fenced brokers by the `state` column (history.table.FENCED_STATE), not by parsing
    labels, and without importing the health model: the two spellings are one."""
    assert FENCED_STATE == Lifecycle.FENCED.value


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


def test_a_slow_tier_value_is_archived_in_the_round_that_read_it_only() -> None:
    """Between its reads a slow-tier sample is served again (Sample.read_at); the archive holds each read once."""
    from dataclasses import replace

    broker = node("b1", {"kafka_broker_state": 3.0}, at=T)
    slow = Sample("kafka_request_total_time_seconds", (("request", "UpdateMetadata"),), 3.0,
                  (("count", 3.0), ("sum", 0.5), ("0.99", 0.3)))  # fmt: skip
    state = ExporterState(fleet(at=T - 15, sequence=0), Thresholds())
    read_now = replace(broker, samples=(*broker.samples, replace(slow, read_at=broker.scraped_at)))
    carried = replace(broker, samples=(*broker.samples, replace(slow, read_at=broker.scraped_at - 45)))
    for snapshot_node, expected in ((read_now, 3), (carried, 0)):
        rows = rows_table([state.observe(fleet(snapshot_node, at=T))]).to_pylist()
        assert sum(r["series"].startswith("kafka_request_total_time") for r in rows) == expected
        assert any(r["series"] == "kafka_broker_state" for r in rows)


def test_a_page_read_at_its_own_pace_is_archived_once_and_its_node_up_between_pages() -> None:
    """A large broker's page is served again between its reads (NodeSnapshot.held): its samples are archived in
    the round that read it only, and every round archives it as up, as /metrics serves ctlplane_up 1."""
    from dataclasses import replace

    from ctlplane.exporter.model import Failure

    page = node("b1", {"kafka_broker_state": 3.0}, at=T - 20)
    held = replace(page, up=False, failure=Failure.PACED, error="read at its own pace", last_read_at=T - 20)
    state = ExporterState(fleet(at=T - 15, sequence=0), Thresholds())
    for snapshot_node, archived in ((page, 1), (held, 0)):
        rows = rows_table([state.observe(fleet(snapshot_node, at=T))]).to_pylist()
        assert sum(r["series"] == "kafka_broker_state" for r in rows) == archived
        assert [r["value"] for r in rows if r["series"] == "ctlplane_up"] == [1.0]


def test_labels_are_sorted_and_escaped() -> None:
    assert format_labels((("z", "1"), ("a", "x,y=z"))) == "a=x\\,y\\=z,z=1"


def test_flush_writes_one_file_per_day_and_cluster_readable_as_a_dataset(tmp_path: Path) -> None:
    day2 = T + 86_400
    writer = HistoryWriter(tmp_path, clock=lambda: day2)
    observations = observe(T, T + 15, day2)
    for observation in observations:
        writer.observe(observation)
    assert writer.pending_rows() == 3 * ROWS_PER_ROUND
    written = writer.flush()
    assert sorted(p.relative_to(tmp_path).parent.as_posix() for p in written) == [
        "date=2024-05-01/cluster=c1",
        "date=2024-05-02/cluster=c1",
    ]
    assert all(p.name.startswith("part-") and p.suffix == ".parquet" for p in written)
    assert writer.pending_rows() == 0
    back = ds.dataset(tmp_path, format="parquet", partitioning="hive").to_table()
    assert back.num_rows == 3 * ROWS_PER_ROUND
    assert sorted(set(back.column("date").to_pylist())) == ["2024-05-01", "2024-05-02"]
    assert writer.flush() == []  # nothing buffered, nothing written


def test_a_failed_rename_leaves_no_file_and_keeps_the_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writer = HistoryWriter(tmp_path, clock=lambda: T)
    writer.observe(observe(T)[0])

    def fail(src: object, dst: object) -> None:
        raise OSError("rename failed")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError):
        writer.flush()
    monkeypatch.undo()
    assert list(tmp_path.rglob("*.tmp")) == [] and list(archive_files(tmp_path)) == []
    assert writer.pending_rows() == ROWS_PER_ROUND
    writer.flush()
    assert ds.dataset(tmp_path, format="parquet", partitioning="hive").to_table().num_rows == ROWS_PER_ROUND


@pytest.mark.parametrize("prefix", ["part", "import"])  # the writer's and a `history import`'s
def test_what_a_crash_between_write_and_rename_leaves_is_invisible_and_removed_at_restart(
    tmp_path: Path, prefix: str
) -> None:
    directory = tmp_path / "date=2024-05-01" / "cluster=c1"
    directory.mkdir(parents=True)
    leftover = directory / f".{prefix}-1714564800000-000001-0a1b2c3d.parquet.tmp"  # what kill -9 mid-write leaves
    leftover.write_bytes(b"PAR1 half a file")
    an_hour_ago = time.time() - 3600
    os.utime(leftover, (an_hour_ago, an_hour_ago))
    assert list(archive_files(tmp_path)) == []
    assert ds.dataset(tmp_path, format="parquet", partitioning="hive").to_table().num_rows == 0
    HistoryWriter(tmp_path)  # a restart removes the leftover
    assert not leftover.exists()


def test_a_temporary_file_still_being_written_is_left_alone(tmp_path: Path) -> None:
    # a `history import` (or the other writer of an HA pair on shared storage) writing right now
    directory = tmp_path / "date=2024-05-01" / "cluster=c1"
    directory.mkdir(parents=True)
    in_flight = directory / ".import-1714564800000-000001-0a1b2c3d.parquet.tmp"
    in_flight.write_bytes(b"PAR1 being written")
    HistoryWriter(tmp_path)
    assert in_flight.exists()


def test_a_writer_that_runs_for_days_removes_leftovers_at_its_flushes(tmp_path: Path) -> None:
    writer = HistoryWriter(tmp_path)
    directory = tmp_path / "date=2024-05-01" / "cluster=c1"
    directory.mkdir(parents=True)
    leftover = directory / ".import-1714564800000-000001-0a1b2c3d.parquet.tmp"  # an import killed later
    leftover.write_bytes(b"PAR1 half a file")
    an_hour_ago = time.time() - 3600
    os.utime(leftover, (an_hour_ago, an_hour_ago))
    writer.flush()
    assert not leftover.exists()


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
    assert ds.dataset(tmp_path, format="parquet", partitioning="hive").to_table().num_rows == ROWS_PER_ROUND


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 1 MiB file system (tmpfs) that fills up: writes past it fail with ENOSPC, as on a full disk.
    Mounting needs root, which `make test` has on this kind of machine (it installs apt packages)."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount_point)], capture_output=True, text=True
    )
    assert result.returncode == 0, f"cannot mount a small tmpfs for the full-disk test: {result.stderr}"
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def _fill(disk: Path, leave_bytes: int) -> Path:
    """Fill `disk` with one file until only about `leave_bytes` are free."""
    filler = disk / "filler"
    free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
    with open(filler, "wb") as handle:
        handle.write(b"\0" * max(0, free - leave_bytes))
    return filler


def _archived_rows(root: Path) -> int:
    return int(ds.dataset(root, format="parquet", partitioning="hive", exclude_invalid_files=True).count_rows())


def test_a_full_disk_keeps_the_rows_for_the_next_flush_and_leaves_no_temporary_file(small_disk: Path) -> None:
    root = small_disk / "history"
    writer = HistoryWriter(root, retention_days=None, clock=lambda: T)
    observations = observe(*[T + 15 * i for i in range(40)])
    for observation in observations:
        writer.observe(observation)
    filler = _fill(small_disk, leave_bytes=2048)
    with pytest.raises(OSError):
        writer.flush()
    assert list(root.rglob("*.tmp")) == [], "the temporary file of the failed write is removed"
    assert writer.pending_rows() == 40 * ROWS_PER_ROUND, "the rows of the failed flush are kept"
    assert writer.stats().write_errors_total == 1
    page = TestClient(create_app(lambda: observations[-1], interval_seconds=15, per_request=writer.families))
    served = page.get("/metrics").text
    assert (
        "ctlplane_history_write_errors_total 1.0" in served
        and f"ctlplane_history_buffered_rows {40 * ROWS_PER_ROUND}.0" in served
    )
    assert "ctlplane_history_last_flush_timestamp_seconds" not in served  # nothing written yet
    filler.unlink()
    writer.observe(observe(T + 15 * 40)[0])
    writer.flush()
    assert _archived_rows(root) == 41 * ROWS_PER_ROUND and writer.pending_rows() == 0
    assert writer.stats().rows_dropped_total == 0
    assert "ctlplane_history_last_flush_timestamp_seconds 1.7145648e+09" in page.get("/metrics").text


def test_retention_runs_before_the_write_so_a_full_disk_makes_room(small_disk: Path) -> None:
    """The archive alone fills the disk: max_bytes frees the oldest files first, and the flush fits."""
    root = small_disk / "history"
    clock = [T]
    writer = HistoryWriter(root, retention_days=None, max_bytes=64 * 1024, clock=lambda: clock[0])
    for i in range(40):  # each flush writes a file of a few KiB
        writer.observe(observe(T + 15 * i)[0])
        writer.flush()
    _fill(small_disk, leave_bytes=1024)  # the disk is full of the filler plus the archive
    clock[0] = T + 3600
    writer = HistoryWriter(
        root,
        retention_days=None,
        max_bytes=sum(p.stat().st_size for p in archive_files(root)) // 2,
        clock=lambda: clock[0],
    )
    writer.observe(observe(T + 3600)[0])
    writer.flush()  # raised ENOSPC when retention ran after the write
    assert writer.pending_rows() == 0


def test_the_buffer_kept_across_failures_is_bounded_and_what_it_drops_is_counted(tmp_path: Path) -> None:
    writer = HistoryWriter(tmp_path / "history", retention_days=None, clock=lambda: T, max_buffered_rows=50)
    (tmp_path / "history").rmdir()
    (tmp_path / "history").write_text("not a directory: every write fails")
    for observation in observe(T, T + 15, T + 30):
        writer.observe(observation)
        with pytest.raises(OSError):
            writer.flush()
    assert writer.pending_rows() == 50 and writer.stats().rows_dropped_total == 3 * ROWS_PER_ROUND - 50
    assert writer.stats().write_errors_total == 3


def test_retention_deletes_only_what_the_writer_wrote_and_evicts_the_biggest_cluster_first(tmp_path: Path) -> None:
    def put(day: str, cluster: str, name: str, size: int) -> Path:
        directory = tmp_path / f"date={day}" / f"cluster={cluster}"
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / name
        path.write_bytes(b"x" * size)
        return path

    imported = put("2024-01-01", "c1", "import-1-000001.parquet", 100)  # a backfill, older than retention
    for i in range(5):
        put(f"2024-04-2{i}", "noisy", f"part-{i}-000001.parquet", 1000)
    quiet = [put(f"2024-04-2{i}", "quiet", f"part-{i}-000002.parquet", 100) for i in range(5)]
    now = datetime(2024, 5, 1, 12, 0, tzinfo=UTC).timestamp()
    enforce_retention(tmp_path, retention_days=60, max_bytes=None, now=now)
    assert imported.exists(), "an imported backfill is the operator's, not retention's"
    deleted = enforce_retention(tmp_path, retention_days=None, max_bytes=2500, now=now)
    assert all("cluster=noisy" in str(p) for p in deleted) and all(p.exists() for p in quiet)
    assert imported.exists()


def test_a_write_that_fails_after_some_partitions_gives_back_only_the_rest(tmp_path: Path) -> None:
    writer = HistoryWriter(tmp_path, retention_days=None, clock=lambda: T + 86_400)
    for observation in observe(T, T + 86_400):  # two days: two partitions
        writer.observe(observation)
    blocker = tmp_path / "date=2024-05-02"
    blocker.write_text("a file where the second day's directory goes")
    with pytest.raises(OSError):
        writer.flush()
    assert writer.pending_rows() == ROWS_PER_ROUND, "the first day is on disk; only the second's rows are kept"
    blocker.unlink()
    writer.flush()
    back = ds.dataset(tmp_path, format="parquet", partitioning="hive").to_table()
    assert back.num_rows == 2 * ROWS_PER_ROUND and len(set(back.column("timestamp").to_pylist())) == 2


def test_two_writers_of_one_archive_never_replace_each_others_files(tmp_path: Path) -> None:
    """A restart within the same millisecond, a clock stepped back, or two exporters on shared storage:
    same stamp, same sequence number; the second file must not replace the first (os.replace would)."""
    first, second = observe(T, T + 15)
    for observation in (first, second):
        writer = HistoryWriter(tmp_path, retention_days=None, clock=lambda: T)  # a new writer: sequence 1
        writer.observe(observation)
        writer.flush()
    back = ds.dataset(tmp_path, format="parquet", partitioning="hive").to_table()
    assert back.num_rows == 2 * ROWS_PER_ROUND and len(set(back.column("timestamp").to_pylist())) == 2


# --- compaction ------------------------------------------------------------------------------------


def _flushes(root: Path, rounds_at: list[float], prefix: str = WRITER_PREFIX) -> None:
    """One file per round and (day, cluster), as a writer flushing after each round leaves them."""
    for i, at in enumerate(rounds_at):
        write_partitioned(root, rows_table(observe(at)), lambda i=i: i + 1, now=at, prefix=prefix)  # type: ignore[misc]


def _rows(files: list[Path]) -> list[tuple[object, ...]]:
    table = pa.concat_tables([pq.read_table(path) for path in files]) if files else HISTORY_SCHEMA.empty_table()
    return sorted(tuple(r.values()) for r in table.to_pylist())


def _visible(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if not p.name.startswith("."))


def test_compaction_merges_each_closed_day_per_cluster_and_prefix_and_leaves_the_open_day(tmp_path: Path) -> None:
    yesterday = [T + 15 * i for i in range(6)]
    today = [T + 86_400 + 15 * i for i in range(3)]
    _flushes(tmp_path, yesterday + today)
    _flushes(tmp_path, [T + 3600, T + 3615], prefix=IMPORT_PREFIX)  # a backfill: retention never deletes it
    closed, open_day = tmp_path / "date=2024-05-01/cluster=c1", tmp_path / "date=2024-05-02/cluster=c1"
    before_closed, before_open = _rows(_visible(closed)), _visible(open_day)
    now = T + 86_400 + 12 * 3600  # 2024-05-02 24:00 UTC: the 1st ended 12 h ago
    done = compact(tmp_path, DEFAULT_COMPACT_AFTER_SECONDS, now=now)
    files = _visible(closed)
    assert [p.name.split("-")[0] for p in files] == ["import", "part"] and all(COMPACTED_MARK in p.name for p in files)
    assert _rows(files) == before_closed, "the same rows, no more, no less"
    for path in files:
        table = pq.read_table(path)
        assert table.equals(table.sort_by(FILE_ORDER)), "sorted as the writer sorts, so row groups skip by series"
    assert _visible(open_day) == before_open, "the open day is the writer's still"
    assert [(c.directory, len(c.merged), len(c.removed)) for c in done] == [(closed, 1, 6), (closed, 1, 2)]
    assert compact(tmp_path, DEFAULT_COMPACT_AFTER_SECONDS, now=now) == [], "a compact day stays as it is"


def test_a_day_of_merged_files_only_is_not_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the flusher runs compact after every flush over every closed day: a compact day must cost a listing
    _flushes(tmp_path, [T + 15 * i for i in range(6)])
    compact(tmp_path, DEFAULT_COMPACT_AFTER_SECONDS, now=T + 2 * 86_400, max_rows=2 * ROWS_PER_ROUND)
    assert len(_visible(tmp_path / "date=2024-05-01/cluster=c1")) == 3

    def unread(*_: object, **__: object) -> None:
        raise AssertionError("a compact day's files were read")

    for name in ("read_metadata", "read_schema", "read_table"):
        monkeypatch.setattr(pq, name, unread)
    assert compact(tmp_path, DEFAULT_COMPACT_AFTER_SECONDS, now=T + 2 * 86_400, max_rows=2 * ROWS_PER_ROUND) == []


def test_a_day_is_merged_only_once_it_ended_close_after_seconds_ago(tmp_path: Path) -> None:
    _flushes(tmp_path, [T, T + 15])
    day_end = datetime(2024, 5, 2, tzinfo=UTC).timestamp()
    assert compact(tmp_path, now=day_end + 1800, close_after_seconds=3600) == []
    assert len(compact(tmp_path, now=day_end + 3600, close_after_seconds=3600)) == 1


def test_a_compaction_stopped_before_deleting_its_sources_is_finished_by_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _flushes(tmp_path, [T + 15 * i for i in range(4)])
    directory = tmp_path / "date=2024-05-01/cluster=c1"
    before = _rows(_visible(directory))
    real_unlink = Path.unlink

    def killed(path: Path, missing_ok: bool = False) -> None:
        if path.name.startswith("part-") and COMPACTED_MARK not in path.name:
            raise KeyboardInterrupt("killed between the rename and the deletions")
        real_unlink(path, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", killed)
    with pytest.raises(KeyboardInterrupt):
        compact(tmp_path, DEFAULT_COMPACT_AFTER_SECONDS, now=T + 2 * 86_400)
    monkeypatch.setattr(Path, "unlink", real_unlink)
    assert len(_visible(directory)) == 5, "the merged file is in place beside its four sources"
    compact(tmp_path, DEFAULT_COMPACT_AFTER_SECONDS, now=T + 2 * 86_400)
    files = _visible(directory)
    assert len(files) == 1 and _rows(files) == before, "finished: each row once"


def test_compaction_bounds_each_merged_file_by_rows(tmp_path: Path) -> None:
    _flushes(tmp_path, [T + 15 * i for i in range(5)])
    directory = tmp_path / "date=2024-05-01/cluster=c1"
    before = _rows(_visible(directory))
    compact(tmp_path, DEFAULT_COMPACT_AFTER_SECONDS, now=T + 2 * 86_400, max_rows=2 * ROWS_PER_ROUND)
    files = _visible(directory)
    # two merged files of two rounds; the fifth round's file alone is already one file
    assert sorted(pq.read_metadata(p).num_rows for p in files) == [
        ROWS_PER_ROUND,
        2 * ROWS_PER_ROUND,
        2 * ROWS_PER_ROUND,
    ]
    assert _rows(files) == before


def test_two_compactions_at_once_merge_each_row_once(tmp_path: Path) -> None:
    # an exporter's and a cron `ctlplane history compact`'s: without the lock both would merge the same
    # sources into two files and delete them, and every row would stay twice
    _flushes(tmp_path, [T + 15 * i for i in range(8)])
    directory = tmp_path / "date=2024-05-01/cluster=c1"
    before = _rows(_visible(directory))
    start = threading.Barrier(2)

    def run() -> None:
        start.wait()
        compact(tmp_path, DEFAULT_COMPACT_AFTER_SECONDS, now=T + 2 * 86_400)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    files = _visible(directory)
    assert len(files) == 1 and _rows(files) == before


def test_a_file_that_is_not_parquet_stops_its_directory_only(tmp_path: Path) -> None:
    _flushes(tmp_path, [T, T + 15])
    other = tmp_path / "date=2024-05-01/cluster=c2"
    other.mkdir()
    for name in ("part-1-000001.parquet", "part-2-000002.parquet"):
        (other / name).write_bytes(b"not parquet: a disk that lost its last block")
    done = {c.directory.name: c for c in compact(tmp_path, DEFAULT_COMPACT_AFTER_SECONDS, now=T + 2 * 86_400)}
    assert done["cluster=c2"].error is not None and "Parquet" in done["cluster=c2"].error
    assert sorted(p.name for p in _visible(other)) == ["part-1-000001.parquet", "part-2-000002.parquet"]
    assert done["cluster=c1"].error is None and len(_visible(tmp_path / "date=2024-05-01/cluster=c1")) == 1


def test_a_compaction_that_stops_is_counted_on_metrics_and_the_next_steps_go_on(tmp_path: Path) -> None:
    """Compaction runs in the exporter's flusher: its failures must be seen where the operator looks."""
    _flushes(tmp_path, [T, T + 15])
    broken = tmp_path / "date=2024-05-01/cluster=c2"
    broken.mkdir()
    for name in ("part-1-000001.parquet", "part-2-000002.parquet"):
        (broken / name).write_bytes(b"not parquet: a disk that lost its last block")
    writer = HistoryWriter(tmp_path, retention_days=None, clock=lambda: T + 2 * 86_400, compact_after_seconds=3600)
    page = TestClient(create_app(lambda: observe(T)[0], interval_seconds=15, per_request=writer.families))
    assert "ctlplane_history_compaction_errors_total 0.0" in page.get("/metrics").text
    writer.compact_step()
    writer.compact_step()
    assert writer.stats().compaction_errors_total >= 1
    assert f"ctlplane_history_compaction_errors_total {writer.stats().compaction_errors_total}.0" in (
        page.get("/metrics").text
    )
    assert len(_visible(tmp_path / "date=2024-05-01/cluster=c1")) == 1, "the healthy directory was merged"


def test_the_writer_merges_one_file_of_a_closed_day_after_each_flush(tmp_path: Path) -> None:
    clock = [T]
    writer = HistoryWriter(tmp_path, clock=lambda: clock[0], max_buffered_rows=1000)
    for at in (T, T + 15, T + 30):  # three flushes of the 1st
        clock[0] = at
        writer.observe(observe(at)[0])
        writer.flush()
    directory = tmp_path / "date=2024-05-01/cluster=c1"
    assert writer.compact_step() == [] and len(_visible(directory)) == 3, "the 1st is still open"
    clock[0] = datetime(2024, 5, 2, 1, 0, tzinfo=UTC).timestamp()  # an hour after it ended
    assert [len(c.merged) for c in writer.compact_step()] == [1]
    assert len(_visible(directory)) == 1
    off = HistoryWriter(tmp_path / "off", clock=lambda: clock[0], compact_after_seconds=None)
    _flushes(tmp_path / "off", [T, T + 15])
    assert off.compact_step() == [] and len(_visible(tmp_path / "off/date=2024-05-01/cluster=c1")) == 2


def test_ctlplane_history_compact_merges_closed_days_and_says_what_it_did(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _flushes(tmp_path, [T, T + 15, T + 30])  # 2024-05-01, long closed by the wall clock
    broken = tmp_path / "date=2024-05-01/cluster=c2"
    broken.mkdir()
    for name in ("part-1-1.parquet", "part-2-2.parquet"):
        (broken / name).write_bytes(b"torn")
    assert main(["history", "compact", "--archive", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert "date=2024-05-01/cluster=c1: 3 file(s) -> 1 merged" in out
    assert "error: compaction of date=2024-05-01/cluster=c2 stopped, its files are kept" in err
    assert len(_visible(tmp_path / "date=2024-05-01/cluster=c1")) == 1 and len(_visible(broken)) == 2


def test_a_late_file_is_merged_with_the_smallest_files_of_its_day(tmp_path: Path) -> None:
    # 3 rounds at 2 rounds per merged file: one merged file and the third round's file left alone. A late
    # flush then adds a round: the two one-round files fit together whatever their names' order, and a
    # day left with mergeable files would be read again after every flush
    _flushes(tmp_path, [T, T + 15, T + 30])
    compact(tmp_path, DEFAULT_COMPACT_AFTER_SECONDS, now=T + 2 * 86_400, max_rows=2 * ROWS_PER_ROUND)
    # written after the compaction, so its name sorts after the merged file's
    write_partitioned(tmp_path, rows_table(observe(T + 45)), lambda: 9, now=T + 2.5 * 86_400)
    directory = tmp_path / "date=2024-05-01/cluster=c1"
    before = _rows(_visible(directory))
    compact(tmp_path, DEFAULT_COMPACT_AFTER_SECONDS, now=T + 3 * 86_400, max_rows=2 * ROWS_PER_ROUND)
    files = _visible(directory)
    assert sorted(pq.read_metadata(p).num_rows for p in files) == [2 * ROWS_PER_ROUND] * 2
    assert _rows(files) == before
