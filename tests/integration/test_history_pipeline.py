"""A scripted fault timeline through the real write path (ExporterState -> HistoryWriter -> Parquet),
then the `episodes` job on the written archive: exactly the injected episodes, durations within one
scrape interval.

The snapshots are hand-built (the JMX simulator in ctlplane/demo/ was not ready when this was written); every
step after the snapshot is the production code.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq  # type: ignore[import-untyped]  # pyarrow ships no type information
import pytest
from pyspark.sql import SparkSession

from ctlplane.exporter.config import DEFAULT_COMPACT_AFTER_SECONDS
from ctlplane.exporter.history.archive import compact
from ctlplane.exporter.history.writer import HistoryWriter
from ctlplane.exporter.state import ExporterState
from ctlplane.exporter.thresholds import Thresholds
from ctlplane.pipeline.jobs import episodes as episodes_job
from ctlplane.pipeline.rules import EpisodeRules
from tests.unit.exporter.builders import fleet, kraft_broker, kraft_controller

INTERVAL = 15.0
T0 = datetime(2024, 5, 1, 23, 55, tzinfo=UTC).timestamp()  # crosses midnight in the unreachable fault
ROUNDS = 40
# kind, node, first and last round of the fault (inclusive)
FAULTS = [
    ("fenced", "b2", 5, 12),
    ("unreachable", "b3", 15, 20),
    ("stale_metadata", "b1", 25, 30),
    ("no_active_controller", "", 33, 35),
]


def _during(kind: str, round_number: int) -> bool:
    return any(k == kind and first <= round_number <= last for k, _, first, last in FAULTS)


def _snapshot(i: int):  # type: ignore[no-untyped-def]  # builders return FleetSnapshot
    at = T0 + i * INTERVAL
    committed = 10_000 + 100 * i
    return fleet(
        # fencing as Kafka shows it: the controller's registration says FENCED, BrokerState stays RUNNING
        kraft_controller("k1", 1, active=not _during("no_active_controller", i), committed=committed, at=at,
                         cluster="prod", registrations={3: 10 if _during("fenced", i) else 30}),
        kraft_broker("b1", 2, applied=committed - 5000 if _during("stale_metadata", i) else committed, at=at,
                     cluster="prod"),
        kraft_broker("b2", 3, applied=committed, at=at, cluster="prod"),
        kraft_broker("b3", 4, applied=committed, up=not _during("unreachable", i), at=at, cluster="prod"),
        kraft_controller("k9", 9, active=True, committed=committed, at=at, cluster="dev"),
        kraft_broker("b9", 10, applied=committed, at=at, cluster="dev"),
        sequence=i + 1,
        at=at,
    )  # fmt: skip


def write_fault_archive(archive: Path) -> None:
    """The scripted timeline (FAULTS over ROUNDS rounds of two clusters) through the exporter's history writer."""
    state = ExporterState(_snapshot(-1), Thresholds())
    clock = [T0]
    writer = HistoryWriter(archive, flush_seconds=INTERVAL * 10, clock=lambda: clock[0])
    for i in range(ROUNDS):
        clock[0] = T0 + i * INTERVAL
        writer.observe(state.observe(_snapshot(i)))
        if i % 10 == 9:  # the flusher's cadence: every 10 rounds
            writer.flush()
    writer.close()


def test_episodes_finds_exactly_the_injected_faults(spark: SparkSession, tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    write_fault_archive(archive)
    files = sorted(p.relative_to(archive).parent.as_posix() for p in archive.rglob("part-*.parquet"))
    assert set(files) == {f"date={d}/cluster={c}" for d in ("2024-05-01", "2024-05-02") for c in ("prod", "dev")}

    out = tmp_path / "out"
    count = episodes_job.run(spark, str(archive), str(out), EpisodeRules(interval_seconds=INTERVAL))

    found = sorted(
        (r["cluster"], r["kind"], r["node"], r["start"], r["duration_seconds"])
        for r in pq.read_table(out / "episodes").to_pylist()
    )
    assert count == len(FAULTS)
    assert [(c, k, n) for c, k, n, _, _ in found] == sorted(("prod", k, n) for k, n, _, _ in FAULTS)
    for _cluster, kind, node, start, duration in found:
        _, _, first, last = next(f for f in FAULTS if f[0] == kind and f[1] == node)
        injected = (last - first + 1) * INTERVAL
        assert abs(duration - injected) <= INTERVAL, (kind, duration, injected)
        assert start.timestamp() == pytest.approx(T0 + first * INTERVAL), kind
    csv_files = list((out / "episodes_csv").glob("part-*.csv"))
    assert len(csv_files) == 1 and len(csv_files[0].read_text().splitlines()) == 1 + len(FAULTS)

    # the same archive with each closed day merged per cluster (what the exporter's flusher does): the
    # same episodes, one file per partition
    before = {p.parent for p in archive.rglob("part-*.parquet")}
    assert any(len(list(d.glob("part-*.parquet"))) > 1 for d in before)
    compact(archive, DEFAULT_COMPACT_AFTER_SECONDS, now=T0 + 3 * 86_400)
    assert all(len(list(d.glob("part-*.parquet"))) == 1 for d in before)
    again = tmp_path / "again"
    assert episodes_job.run(spark, str(archive), str(again), EpisodeRules(interval_seconds=INTERVAL)) == count
    merged_rows = sorted(tuple(r.values()) for r in pq.read_table(again / "episodes").to_pylist())
    assert merged_rows == sorted(tuple(r.values()) for r in pq.read_table(out / "episodes").to_pylist())
