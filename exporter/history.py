"""The history archive: every scrape round as rows of one long table, flushed to Parquet.

This is the one definition of the archive's row schema (`HISTORY_SCHEMA`); `pipeline/schema.py` derives
the Spark schema from it, and the Prometheus backfill writes the same rows. Layout under the root:

    <root>/date=YYYY-MM-DD/cluster=<name>/part-<unix ms>-<seq>.parquet

A file is written as `.part-….parquet.tmp` (a dot name Spark, DuckDB and pyarrow skip), fsynced and then
renamed, so a crash never leaves a half-written file visible. Pyarrow only: the exporter must not need Spark.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

# pyarrow ships no type information (no py.typed, no stubs on PyPI)
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]

from exporter.health import BrokerHealth, ClusterHealth
from exporter.model import LabelPairs, NodeSnapshot
from exporter.state import Observation

log = logging.getLogger(__name__)

HISTORY_SCHEMA = pa.schema(
    [
        pa.field("timestamp", pa.timestamp("us", tz="UTC"), nullable=False),  # the scrape round's start
        pa.field("cluster", pa.string(), nullable=False),
        pa.field("node", pa.string(), nullable=False),  # "" for cluster-level rows
        pa.field("role", pa.string(), nullable=False),  # broker/controller/combined/unknown; "" for cluster rows
        pa.field("series", pa.string(), nullable=False),  # the Prometheus series name
        pa.field("labels", pa.string(), nullable=False),  # other labels, sorted: "k=v,k2=v2" ("" for none)
        pa.field("value", pa.float64(), nullable=False),
        pa.field("state", pa.string(), nullable=True),  # the broker's lifecycle state; null for non-brokers
    ]
)
COLUMNS: tuple[str, ...] = tuple(HISTORY_SCHEMA.names)
PARTITION_COLUMNS = ("date", "cluster")  # directories; `cluster` is also kept inside the files

# Health series rows (names as on /metrics, see exporter/catalog.py HEALTH_SERIES / DERIVED_SERIES).
LIFECYCLE_SERIES = "kafka_broker_lifecycle_state"  # one row per broker, labels "state=<S>", value 1
ACTIVE_CONTROLLERS_SERIES = "kafka_cluster_active_controllers"
UP_SERIES = "ctlplane_up"


def format_labels(labels: LabelPairs | Iterable[tuple[str, str]]) -> str:
    """Sorted `k=v,...`; commas and equals signs inside values are backslash-escaped."""

    def escape(text: str) -> str:
        return text.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")

    return ",".join(f"{escape(k)}={escape(v)}" for k, v in sorted(labels))


@dataclass
class RowBuffer:
    """Rows kept column-wise: appending to eight lists is the whole cost of `observe`."""

    timestamp: list[int]  # microseconds since the epoch, UTC
    cluster: list[str]
    node: list[str]
    role: list[str]
    series: list[str]
    labels: list[str]
    value: list[float]
    state: list[str | None]

    @classmethod
    def empty(cls) -> RowBuffer:
        return cls([], [], [], [], [], [], [], [])

    def __len__(self) -> int:
        return len(self.timestamp)

    def add(
        self, ts: int, cluster: str, node: str, role: str, series: str, labels: str, value: float, state: str | None
    ) -> None:
        self.timestamp.append(ts)
        self.cluster.append(cluster)
        self.node.append(node)
        self.role.append(role)
        self.series.append(series)
        self.labels.append(labels)
        self.value.append(value)
        self.state.append(state)

    def to_table(self) -> pa.Table:
        return pa.table(
            {
                "timestamp": pa.array(self.timestamp, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
                "cluster": pa.array(self.cluster, pa.string()),
                "node": pa.array(self.node, pa.string()),
                "role": pa.array(self.role, pa.string()),
                "series": pa.array(self.series, pa.string()),
                "labels": pa.array(self.labels, pa.string()),
                "value": pa.array(self.value, pa.float64()),
                "state": pa.array(self.state, pa.string()),
            },
            schema=HISTORY_SCHEMA,
        )


def _micros(unix_seconds: float) -> int:
    return round(unix_seconds * 1_000_000)


def _add_node_rows(out: RowBuffer, ts: int, node: NodeSnapshot, state: str | None) -> None:
    role = node.role.value
    out.add(ts, node.cluster, node.node, role, UP_SERIES, "", 1.0 if node.up else 0.0, state)
    duration = node.scrape_duration_seconds
    out.add(ts, node.cluster, node.node, role, "ctlplane_scrape_duration_seconds", "", duration, state)
    for sample in node.samples:
        labels = format_labels(sample.labels)
        if not sample.parts:
            out.add(ts, node.cluster, node.node, role, sample.series, labels, sample.value, state)
            continue
        # A summary: count and sum as their own series, quantiles with a `quantile` label (as on /metrics).
        for part, value in sample.parts:
            if part in ("count", "sum"):
                out.add(ts, node.cluster, node.node, role, f"{sample.series}_{part}", labels, value, state)
            else:
                quantile = format_labels((*sample.labels, ("quantile", part)))
                out.add(ts, node.cluster, node.node, role, sample.series, quantile, value, state)


def _add_broker_health_rows(out: RowBuffer, ts: int, broker: BrokerHealth) -> None:
    state = broker.state.value
    role = broker.role.value

    def add(series: str, value: float, labels: str = "") -> None:
        out.add(ts, broker.cluster, broker.node, role, series, labels, value, state)

    add(LIFECYCLE_SERIES, 1.0, f"state={state}")
    if broker.metadata_lag_records is not None:
        add("kafka_broker_metadata_lag_records", broker.metadata_lag_records)
    if broker.metadata_lag_seconds is not None:
        add("kafka_broker_metadata_lag_seconds", broker.metadata_lag_seconds)
    if broker.up:
        add("kafka_broker_metadata_stale", 1.0 if broker.stale else 0.0)
        add("kafka_broker_metadata_frozen", 1.0 if broker.frozen else 0.0)
    if broker.control_plane_listener:
        add("kafka_control_plane_saturated", 1.0 if broker.control_plane_saturated else 0.0)


def _add_cluster_health_rows(out: RowBuffer, ts: int, cluster: ClusterHealth) -> None:
    controller = cluster.controller

    def add(series: str, value: float, labels: str = "") -> None:
        out.add(ts, cluster.name, "", "", series, labels, value, None)

    add(ACTIVE_CONTROLLERS_SERIES, float(cluster.active_controllers))
    add("kafka_cluster_reachable_controllers", float(controller.reachable_controllers))
    add("kafka_controller_failovers_total", float(controller.failovers_total))
    if controller.node is not None:
        node_id = "" if controller.node_id is None else str(controller.node_id)
        add("kafka_controller_info", 1.0, format_labels((("node", controller.node), ("node_id", node_id))))


def observation_rows(observation: Observation, out: RowBuffer | None = None) -> RowBuffer:
    """Every sample of every node, plus the health series, stamped with the round's start time."""
    out = out if out is not None else RowBuffer.empty()
    snapshot = observation.snapshot
    ts = _micros(snapshot.taken_at)
    states = {
        (broker.cluster, broker.node): broker.state.value
        for cluster in observation.health.clusters
        for broker in cluster.brokers
    }
    for node in snapshot.nodes():
        _add_node_rows(out, ts, node, states.get((node.cluster, node.node)))
    for cluster in observation.health.clusters:
        _add_cluster_health_rows(out, ts, cluster)
        for broker in cluster.brokers:
            _add_broker_health_rows(out, ts, broker)
    return out


def rows_table(observations: Iterable[Observation]) -> pa.Table:
    """The archive rows of these observations as one Arrow table (used by tests and tools)."""
    out = RowBuffer.empty()
    for observation in observations:
        observation_rows(observation, out)
    return out.to_table()


def _partition_dir(root: Path, day: date, cluster: str) -> Path:
    return root / f"date={day.isoformat()}" / f"cluster={cluster}"


def write_partitioned(root: Path, table: pa.Table, sequence: Callable[[], int], now: float | None = None) -> list[Path]:
    """Write `table` (HISTORY_SCHEMA) as one file per (date, cluster), each under a temporary name then renamed.

    Rows are sorted by (series, node, timestamp) so Parquet's per-column statistics let readers skip
    row groups by series. Returns the files written.
    """
    if table.num_rows == 0:
        return []
    table = table.select(list(COLUMNS)).cast(HISTORY_SCHEMA)
    stamp = round((time.time() if now is None else now) * 1000)
    days = pc.cast(table["timestamp"], pa.date32())
    written = []
    keys = pa.table({"day": days, "cluster": table["cluster"]}).group_by(["day", "cluster"]).aggregate([])
    for day, cluster in zip(keys["day"].to_pylist(), keys["cluster"].to_pylist(), strict=True):
        mask = pc.and_(pc.equal(days, pa.scalar(day, pa.date32())), pc.equal(table["cluster"], cluster))
        part = table.filter(mask).sort_by([("series", "ascending"), ("node", "ascending"), ("timestamp", "ascending")])
        directory = _partition_dir(root, day, cluster)
        directory.mkdir(parents=True, exist_ok=True)
        name = f"part-{stamp}-{sequence():06d}.parquet"
        temporary = directory / f".{name}.tmp"
        final = directory / name
        with open(temporary, "wb") as handle:
            pq.write_table(part, handle, compression="zstd")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, final)
        written.append(final)
    return written


def archive_files(root: Path) -> Iterator[Path]:
    """The visible archive files (temporary files excluded)."""
    yield from (p for p in root.glob("date=*/cluster=*/part-*.parquet") if p.is_file())


def enforce_retention(root: Path, retention_days: float | None, max_bytes: int | None, now: float) -> list[Path]:
    """Delete whole days older than `retention_days`, then the oldest files until the total is within `max_bytes`.

    Returns the deleted files. Days are UTC dates from the directory names; a day is kept while any of
    it is within the retention window.
    """
    deleted: list[Path] = []
    if retention_days is not None:
        cutoff = (datetime.fromtimestamp(now, UTC) - timedelta(days=retention_days)).date()
        for day_dir in sorted(root.glob("date=*")):
            try:
                day = date.fromisoformat(day_dir.name.removeprefix("date="))
            except ValueError:
                continue  # not ours
            if day < cutoff:
                deleted.extend(archive_files_in(day_dir))
                shutil.rmtree(day_dir, ignore_errors=True)
    if max_bytes is not None:
        files = sorted(archive_files(root), key=lambda p: (p.parent.parent.name, p.name))
        sizes = {p: p.stat().st_size for p in files}
        total = sum(sizes.values())
        for path in files:
            if total <= max_bytes:
                break
            path.unlink(missing_ok=True)
            total -= sizes[path]
            deleted.append(path)
            for directory in (path.parent, path.parent.parent):
                if directory != root and not any(directory.iterdir()):
                    directory.rmdir()
    return deleted


def archive_files_in(directory: Path) -> list[Path]:
    return [p for p in directory.glob("cluster=*/part-*.parquet") if p.is_file()]


def remove_temporary_files(root: Path) -> list[Path]:
    """Leftovers of a crash between write and rename; never visible to readers, removed at start."""
    leftovers = list(root.glob("date=*/cluster=*/.part-*.parquet.tmp"))
    for path in leftovers:
        path.unlink(missing_ok=True)
    return leftovers


class HistoryWriter:
    """A snapshot listener that buffers rows and flushes them to the archive every `flush_seconds`.

    `observe` (the scrape thread) only appends to in-memory columns. `start()` runs a flusher thread;
    without it, call `flush()` yourself. `close()` stops the thread and flushes what is left.
    """

    def __init__(
        self,
        root: Path,
        flush_seconds: float = 60.0,
        retention_days: float | None = 30.0,
        max_bytes: int | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.root = root
        self.flush_seconds = flush_seconds
        self.retention_days = retention_days
        self.max_bytes = max_bytes
        self._clock = clock
        self._buffer = RowBuffer.empty()
        self._lock = threading.Lock()  # guards _buffer only; Parquet writing happens outside it
        self._flush_lock = threading.Lock()
        self._sequence = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        root.mkdir(parents=True, exist_ok=True)
        for path in remove_temporary_files(root):
            log.warning("removed %s, left by an interrupted flush", path)

    def observe(self, observation: Observation) -> None:
        rows = observation_rows(observation)
        with self._lock:
            buffer = self._buffer
            for name in COLUMNS:
                getattr(buffer, name).extend(getattr(rows, name))

    def pending_rows(self) -> int:
        with self._lock:
            return len(self._buffer)

    def _next_sequence(self) -> int:
        self._sequence += 1
        return self._sequence

    def flush(self) -> list[Path]:
        """Write the buffered rows, then apply retention. Returns the files written."""
        with self._flush_lock:
            with self._lock:
                rows, self._buffer = self._buffer, RowBuffer.empty()
            now = self._clock()
            written = write_partitioned(self.root, rows.to_table(), self._next_sequence, now)
            enforce_retention(self.root, self.retention_days, self.max_bytes, now)
            return written

    def _run(self) -> None:
        while not self._stop.wait(self.flush_seconds):
            try:
                self.flush()
            except Exception:
                log.exception("history flush failed; rows are dropped, the exporter keeps running")

    def start(self) -> HistoryWriter:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="history-writer", daemon=True)
            self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self.flush()
