"""The history archive: every scrape round as rows of one long table, flushed to Parquet.

This is the one definition of the archive's row schema (`HISTORY_SCHEMA`); `ctlplane/pipeline/schema.py` derives
the Spark schema from it, and the Prometheus backfill writes the same rows. Layout under the root:

    <root>/date=YYYY-MM-DD/cluster=<name>/part-<unix ms>-<seq>-<random token>.parquet

A file is written as `.part-….parquet.tmp` (a dot name Spark, DuckDB and pyarrow skip), fsynced and then
renamed, so a crash never leaves a half-written file visible; a crash's leftover is removed later.
Pyarrow only: the exporter must not need Spark.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import secrets
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

from ctlplane.exporter.config import DEFAULT_COMPACT_AFTER_SECONDS
from ctlplane.exporter.families import Family, history_families
from ctlplane.exporter.health import BrokerHealth, ClusterHealth
from ctlplane.exporter.model import LabelPairs, NodeSnapshot
from ctlplane.exporter.state import Observation

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

# Health series rows (names as on /metrics, see ctlplane/exporter/catalog.py HEALTH_SERIES / DERIVED_SERIES).
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

    def prepend(self, older: RowBuffer) -> None:
        """Put `older` (rows a failed flush gave back) in front of these rows."""
        for name in COLUMNS:
            getattr(self, name)[:0] = getattr(older, name)

    def without_partitions(self, partitions: set[tuple[date, str]]) -> RowBuffer:
        """The rows whose (UTC day, cluster) is not in `partitions`."""
        epoch = date(1970, 1, 1).toordinal()
        keep = [
            i
            for i, (ts, cluster) in enumerate(zip(self.timestamp, self.cluster, strict=True))
            if (date.fromordinal(epoch + ts // 86_400_000_000), cluster) not in partitions
        ]
        out = RowBuffer.empty()
        for name in COLUMNS:
            column = getattr(self, name)
            getattr(out, name).extend(column[i] for i in keep)
        return out

    def drop_oldest(self, count: int) -> None:
        for name in COLUMNS:
            del getattr(self, name)[:count]

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
        if sample.read_at is not None and sample.read_at != node.scraped_at:
            continue  # a slow-tier value served again between its reads: archived once, when it was read
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
    # what the 15 s KafkaBrokerFenced rule pages on: `pipeline sweep --series kafka_broker_fenced_unplanned`
    add("kafka_broker_fenced_unplanned", 1.0 if broker.fenced_unplanned else 0.0)
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


# The writer's files and an imported backfill's (ctlplane/pipeline/backfill.py) differ by prefix: retention deletes
# only the writer's own, never history an operator imported on purpose.
WRITER_PREFIX = "part"
IMPORT_PREFIX = "import"


def _fsync_directory(directory: Path) -> None:
    """Make a new entry of `directory` (a file renamed in, a subdirectory made) survive a power cut:
    the entry lives in the directory, and fsync of the file alone does not write it (ext4, XFS)."""
    descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _make_directories(root: Path, directory: Path) -> None:
    """mkdir -p `directory` under `root`, fsyncing the parent of each directory made."""
    missing = []
    current = directory
    while not current.exists() and current != root.parent:
        missing.append(current)
        current = current.parent
    for made in reversed(missing):
        made.mkdir(exist_ok=True)
        _fsync_directory(made.parent)


class PartialWriteError(OSError):
    """A write that failed after some partitions' files were written: `written` holds their
    (UTC day, cluster), so a retry rewrites only the others."""

    def __init__(self, cause: BaseException, written: set[tuple[date, str]]) -> None:
        super().__init__(getattr(cause, "errno", None), str(cause))
        self.written = written


# Within a file rows are sorted so Parquet's per-column statistics let readers skip row groups by series.
FILE_ORDER = [("series", "ascending"), ("node", "ascending"), ("timestamp", "ascending")]


def write_partitioned(
    root: Path,
    table: pa.Table,
    sequence: Callable[[], int],
    now: float | None = None,
    prefix: str = WRITER_PREFIX,
) -> list[Path]:
    """Write `table` (HISTORY_SCHEMA) as one file per (date, cluster), each under a temporary name then renamed.

    Rows are sorted by (series, node, timestamp) so Parquet's per-column statistics let readers skip
    row groups by series. A write that fails (a full disk) removes its temporary file and raises; files
    of other partitions written before it stay (PartialWriteError names them). Returns the files written.
    """
    if table.num_rows == 0:
        return []
    table = table.select(list(COLUMNS)).cast(HISTORY_SCHEMA)
    stamp = round((time.time() if now is None else now) * 1000)
    token = secrets.token_hex(4)
    days = pc.cast(table["timestamp"], pa.date32())
    written: list[Path] = []
    done: set[tuple[date, str]] = set()
    keys = pa.table({"day": days, "cluster": table["cluster"]}).group_by(["day", "cluster"]).aggregate([])
    for day, cluster in zip(keys["day"].to_pylist(), keys["cluster"].to_pylist(), strict=True):
        mask = pc.and_(pc.equal(days, pa.scalar(day, pa.date32())), pc.equal(table["cluster"], cluster))
        part = table.filter(mask).sort_by(FILE_ORDER)
        directory = _partition_dir(root, day, cluster)
        if directory.resolve().parent.parent != root.resolve():
            # a cluster label steering the path (an imported "x/../../y"): callers validate, this holds anyway
            raise ValueError(f"cluster {cluster!r} is not a directory name under {root}")
        # the token keeps two writers (an HA pair on shared storage, a restart within the same millisecond
        # or after the clock stepped back) from replacing each other's files: os.replace overwrites
        name = f"{prefix}-{stamp}-{sequence():06d}-{token}.parquet"
        temporary = directory / f".{name}.tmp"
        final = directory / name
        try:
            _make_directories(root, directory)
            with open(temporary, "wb") as handle:
                pq.write_table(part, handle, compression="zstd")
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, final)
            _fsync_directory(directory)
        except BaseException as exc:
            with contextlib.suppress(OSError):  # ENOTDIR, EROFS: there is no temporary file to remove
                temporary.unlink(missing_ok=True)
            if done and isinstance(exc, Exception):
                raise PartialWriteError(exc, done) from exc
            raise
        written.append(final)
        done.add((day, cluster))
    return written


def archive_files(root: Path) -> Iterator[Path]:
    """The visible archive files, the writer's and imported ones (temporary files excluded)."""
    for prefix in (WRITER_PREFIX, IMPORT_PREFIX):
        yield from _files_of(root, prefix)


def _files_of(root: Path, prefix: str) -> list[Path]:
    """The visible archive files named `<prefix>-*.parquet`."""
    return [p for p in root.glob(f"date=*/cluster=*/{prefix}-*.parquet") if p.is_file()]


def _remove_if_empty(root: Path, path: Path) -> None:
    for directory in (path.parent, path.parent.parent):
        if directory != root and directory.is_dir() and not any(directory.iterdir()):
            directory.rmdir()


def enforce_retention(
    root: Path, retention_days: float | None, max_bytes: int | None, now: float, prefix: str = WRITER_PREFIX
) -> list[Path]:
    """Delete the writer's files (`prefix`) of days older than `retention_days`, then, while its files
    total more than `max_bytes`, the oldest file of the cluster holding the most bytes, so one noisy
    cluster's history is evicted before the others'. Imported files are never deleted, nor counted.

    Returns the deleted files. Days are UTC dates from the directory names; a day is kept while any of
    it is within the retention window.
    """
    deleted: list[Path] = []
    files = _files_of(root, prefix)
    if retention_days is not None:
        cutoff = (datetime.fromtimestamp(now, UTC) - timedelta(days=retention_days)).date()
        for path in files:
            try:
                day = date.fromisoformat(path.parent.parent.name.removeprefix("date="))
            except ValueError:
                continue  # not ours
            if day < cutoff:
                path.unlink(missing_ok=True)
                deleted.append(path)
                _remove_if_empty(root, path)
    if max_bytes is not None:
        by_cluster: dict[str, list[tuple[str, str, Path, int]]] = {}
        for path in files:
            if path in deleted or not path.exists():
                continue
            entry = (path.parent.parent.name, path.name, path, path.stat().st_size)
            by_cluster.setdefault(path.parent.name, []).append(entry)
        totals = {cluster: sum(e[3] for e in entries) for cluster, entries in by_cluster.items()}
        total = sum(totals.values())
        for entries in by_cluster.values():
            entries.sort(reverse=True)  # oldest last: pop() takes it
        while total > max_bytes:
            biggest = max(totals, key=lambda cluster: totals[cluster])
            _, _, path, size = by_cluster[biggest].pop()
            path.unlink(missing_ok=True)
            deleted.append(path)
            _remove_if_empty(root, path)
            totals[biggest] -= size
            total -= size
            if not by_cluster[biggest]:
                del totals[biggest]
    return deleted


# One file is written in seconds; a temporary file untouched this long was left by a crash. Younger ones
# may be in flight: a `history import` running beside the exporter, the other writer of an HA pair.
STALE_TEMPORARY_SECONDS = 15 * 60


def remove_temporary_files(root: Path, now: float | None = None) -> list[Path]:
    """Leftovers of a crash between write and rename (the writer's and an import's); never visible to
    readers. Removed when untouched for STALE_TEMPORARY_SECONDS, at start and at every flush."""
    cutoff = (time.time() if now is None else now) - STALE_TEMPORARY_SECONDS
    removed = []
    for prefix in (WRITER_PREFIX, IMPORT_PREFIX):
        for path in root.glob(f"date=*/cluster=*/.{prefix}-*.parquet.tmp"):
            with contextlib.suppress(FileNotFoundError):  # its writer renamed it, or another cleaner was first
                if path.stat().st_mtime < cutoff:
                    path.unlink()
                    removed.append(path)
    return removed


# --- compaction --------------------------------------------------------------------------------------
# The writer leaves one file per (day, cluster) per flush: 1,440 a day per cluster at the default 60 s.
# Readers pay per file (Spark lists, opens and plans each; on 220 files of 10 M rows the scan takes
# 2.3x as long as on 60, bench/pipeline.py), so a closed day is merged into a few large files.

COMPACTED_MARK = "compacted"  # in the names of merged files: <prefix>-<stamp>-compacted-<token>.parquet
COMPACTED_FROM = b"ctlplane.compacted_from"  # Parquet key-value metadata: the source names, JSON
# Rows per merged file. It bounds what one merge adds to the exporter's memory, measured after a few
# flushes: +61 MB peak RSS at 250,000 rows, +133 MB at 500,000, +361 MB at 2,000,000 (the rows are read,
# concatenated and sorted in Arrow). A day of a 6-node cluster (~2.5 M rows) becomes ~10 files.
COMPACT_MAX_ROWS = 250_000
COMPACT_ROW_GROUP_ROWS = 65_536  # sorted by series, so a row group's series statistics stay narrow


@dataclass(frozen=True)
class Compaction:
    directory: Path
    merged: tuple[Path, ...]  # the files written
    removed: tuple[Path, ...]  # the source files deleted after the merged ones were in place
    error: str | None = None  # why this directory stopped (its files are as they were, or merged in part)


def _finish_interrupted(directory: Path, prefix: str) -> list[Path]:
    """Delete sources a merged file lists that are still there: a compaction stopped between the
    rename of its merged file and the deletion of its sources (a crash, a kill). Until then readers
    saw those rows twice; every transform of the pipeline reduces a key's samples per timestamp, and
    tests/unit/pipeline holds that a half-done compaction changes no result."""
    removed = []
    for merged in directory.glob(f"{prefix}-*-{COMPACTED_MARK}-*.parquet"):
        metadata = pq.read_schema(merged).metadata or {}
        for name in json.loads(metadata.get(COMPACTED_FROM, b"[]")):
            source = directory / name
            if source.name == name and source != merged and source.exists():
                source.unlink(missing_ok=True)
                removed.append(source)
    if removed:
        _fsync_directory(directory)
    return removed


def _merge(directory: Path, prefix: str, sources: list[Path], now: float) -> Path:
    table = pa.concat_tables([pq.read_table(path, schema=HISTORY_SCHEMA) for path in sources]).sort_by(FILE_ORDER)
    name = f"{prefix}-{round(now * 1000)}-{COMPACTED_MARK}-{secrets.token_hex(4)}.parquet"
    temporary, final = directory / f".{name}.tmp", directory / name
    sources_json = json.dumps([path.name for path in sources]).encode()
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), COMPACTED_FROM: sources_json})
    try:
        with open(temporary, "wb") as handle:
            pq.write_table(table, handle, compression="zstd", row_group_size=COMPACT_ROW_GROUP_ROWS)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, final)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    _fsync_directory(directory)
    return final


def _compact_directory(directory: Path, prefix: str, now: float, max_rows: int, merges_left: int | None) -> Compaction:
    merged: list[Path] = []
    removed: list[Path] = []
    try:
        removed.extend(_finish_interrupted(directory, prefix))
        sources = sorted(p for p in directory.glob(f"{prefix}-*.parquet") if p.is_file())
        for batch in _batches(sources, max_rows):
            if merges_left is not None and len(merged) >= merges_left:
                break
            merged.append(_merge(directory, prefix, batch, now))
            for source in batch:
                source.unlink(missing_ok=True)
                removed.append(source)
            _fsync_directory(directory)
    except (OSError, ValueError, pa.ArrowException) as exc:  # a file that is not Parquet, a full disk
        return Compaction(directory, tuple(merged), tuple(removed), f"{type(exc).__name__}: {exc}")
    return Compaction(directory, tuple(merged), tuple(removed))


def compact(
    root: Path,
    now: float | None = None,
    close_after_seconds: float = DEFAULT_COMPACT_AFTER_SECONDS,
    max_rows: int = COMPACT_MAX_ROWS,
    max_merges: int | None = None,
) -> list[Compaction]:
    """Merge each closed day's files of each cluster into files of at most `max_rows` rows, sorted as the
    writer sorts; the writer's and imported files separately (retention deletes only the writer's).

    A day is closed when it ended `close_after_seconds` ago; files a late flush adds to it afterwards are
    merged by the next run. Each merged file is written under a hidden name, fsynced, renamed in, and
    only then are its sources deleted; it names them in its metadata, so a run that stopped in between
    is finished by the next. One compaction runs at a time per archive (an flock on `root/.compact.lock`,
    for an exporter and a `ctlplane history compact` from cron, or an HA pair on one local disk).
    `max_merges` bounds one call's work (the exporter's flusher merges one file per flush). A directory
    that fails (a file that is not Parquet) is reported in its Compaction and the others go on.
    """
    now = time.time() if now is None else now
    last_closed = (datetime.fromtimestamp(now - close_after_seconds, UTC) - timedelta(days=1)).date()
    done: list[Compaction] = []
    if not root.is_dir():
        return done
    with open(root / ".compact.lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for directory in sorted(root.glob("date=*/cluster=*")):
            try:
                day = date.fromisoformat(directory.parent.name.removeprefix("date="))
            except ValueError:
                continue  # not ours
            if day > last_closed or not directory.is_dir():
                continue
            for prefix in (WRITER_PREFIX, IMPORT_PREFIX):
                files = list(directory.glob(f"{prefix}-*.parquet"))
                if len(files) < 2 or all(COMPACTED_MARK in path.name for path in files):
                    # compact already, and left unread: this runs after every flush over every closed day
                    continue
                left = None if max_merges is None else max_merges - sum(len(c.merged) for c in done)
                if left is not None and left <= 0:
                    return done
                result = _compact_directory(directory, prefix, now, max_rows, left)
                if result.merged or result.removed or result.error:
                    done.append(result)
    return done


def _batches(sources: list[Path], max_rows: int) -> Iterator[list[Path]]:
    """Files of at most `max_rows` rows together, smallest first (a late flush's file joins the day's
    other small files, not a full merged file it happens to sort beside); a batch of one is compact."""
    sized = sorted((pq.read_metadata(path).num_rows, path.name, path) for path in sources)
    batch: list[Path] = []
    rows = 0
    for count, _, path in sized:
        if batch and rows + count > max_rows:
            if len(batch) > 1:
                yield batch
            batch, rows = [], 0
        batch.append(path)
        rows += count
    if len(batch) > 1:
        yield batch


@dataclass(frozen=True)
class WriterStats:
    """What the writer did, for its self-metrics (`history_families`)."""

    write_errors_total: int
    rows_dropped_total: int
    buffered_rows: int
    last_success_timestamp: float | None  # unix seconds of the last flush that wrote everything
    compaction_errors_total: int = 0  # compaction steps that stopped on a directory or could not start


# At ~22 rows per node per round, a million rows is ~11 minutes of a 1,000-node fleet at 15 s rounds:
# the history of a disk that filled up and was cleared soon after is kept; a longer outage keeps the newest.
DEFAULT_MAX_BUFFERED_ROWS = 1_000_000


class HistoryWriter:
    """A snapshot listener that buffers rows and flushes them to the archive every `flush_seconds`.

    `observe` (the scrape thread) only appends to in-memory columns. `start()` runs a flusher thread;
    without it, call `flush()` yourself. `close()` stops the thread and flushes what is left.

    A flush first applies retention (so a disk filled by the archive itself makes room), then writes. If
    the write fails (a full disk), its rows go back to the front of the buffer for the next flush, up to
    `max_buffered_rows` (the oldest beyond that are dropped and counted), and the error is counted. After
    each flush the thread merges one file's worth of a closed day (`compact_after_seconds`, None: off).
    """

    def __init__(
        self,
        root: Path,
        flush_seconds: float = 60.0,
        retention_days: float | None = 30.0,
        max_bytes: int | None = None,
        clock: Callable[[], float] = time.time,
        max_buffered_rows: int = DEFAULT_MAX_BUFFERED_ROWS,
        compact_after_seconds: float | None = DEFAULT_COMPACT_AFTER_SECONDS,
    ) -> None:
        self.root = root
        self.compact_after_seconds = compact_after_seconds
        self.flush_seconds = flush_seconds
        self.retention_days = retention_days
        self.max_bytes = max_bytes
        self.max_buffered_rows = max_buffered_rows
        self._clock = clock
        self._buffer = RowBuffer.empty()
        self._lock = threading.Lock()  # guards _buffer and the counters; Parquet writing happens outside it
        self._flush_lock = threading.Lock()
        self._sequence = 0
        self._write_errors = 0
        self._rows_dropped = 0
        self._last_success: float | None = None
        self._compaction_errors = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        root.mkdir(parents=True, exist_ok=True)
        for path in remove_temporary_files(root):
            log.warning("removed %s, left by an interrupted write", path)

    def observe(self, observation: Observation) -> None:
        rows = observation_rows(observation)
        with self._lock:
            buffer = self._buffer
            for name in COLUMNS:
                getattr(buffer, name).extend(getattr(rows, name))
            self._bound()

    def _bound(self) -> None:
        excess = len(self._buffer) - self.max_buffered_rows
        if excess > 0:
            self._buffer.drop_oldest(excess)
            self._rows_dropped += excess

    def pending_rows(self) -> int:
        with self._lock:
            return len(self._buffer)

    def stats(self) -> WriterStats:
        with self._lock:
            return WriterStats(
                self._write_errors, self._rows_dropped, len(self._buffer), self._last_success, self._compaction_errors
            )

    def families(self) -> list[Family]:
        """The writer's self-metrics, for each /metrics request."""
        stats = self.stats()
        return history_families(
            stats.write_errors_total,
            stats.rows_dropped_total,
            stats.buffered_rows,
            stats.last_success_timestamp,
            stats.compaction_errors_total,
        )

    def _next_sequence(self) -> int:
        self._sequence += 1
        return self._sequence

    def flush(self) -> list[Path]:
        """Apply retention, then write the buffered rows. Returns the files written; on a failed write
        the rows are kept for the next flush and the error is raised."""
        with self._flush_lock:
            now = self._clock()
            try:
                for path in remove_temporary_files(self.root):  # file times are wall clock, not self._clock
                    log.warning("removed %s, left by an interrupted write", path)
                enforce_retention(self.root, self.retention_days, self.max_bytes, now)
            except OSError as exc:  # retention is best effort; the write may still fit
                log.warning("history retention failed: %s", exc)
            with self._lock:
                rows, self._buffer = self._buffer, RowBuffer.empty()
            if len(rows) == 0:
                return []
            try:
                table = rows.to_table()
                written = write_partitioned(self.root, table, self._next_sequence, now)
            except BaseException as exc:
                if isinstance(exc, PartialWriteError):  # those partitions are on disk: not twice
                    rows = rows.without_partitions(exc.written)
                with self._lock:
                    self._write_errors += 1
                    self._buffer.prepend(rows)
                    self._bound()
                raise
            with self._lock:
                self._last_success = now
            return written

    def compact_step(self) -> list[Compaction]:
        """Merge at most one file's worth of a closed day (`compact`), so the flusher keeps its pace; a
        failure is logged and loses nothing (the sources stay until their merged file is in place)."""
        if self.compact_after_seconds is None:
            return []
        try:
            done = compact(self.root, self._clock(), self.compact_after_seconds, max_merges=1)
        except OSError as exc:  # the lock file: a read-only archive
            log.warning("history compaction failed, the files are kept as they were: %s", exc)
            with self._lock:
                self._compaction_errors += 1
            return []
        for failed in (c for c in done if c.error is not None):
            log.warning("history compaction of %s stopped, its files are kept: %s", failed.directory, failed.error)
            with self._lock:
                self._compaction_errors += 1
        return done

    def _run(self) -> None:
        while not self._stop.wait(self.flush_seconds):
            try:
                self.flush()
            except Exception as exc:
                log.warning(
                    "history flush failed, rows kept for the next try (%d buffered): %s", self.pending_rows(), exc
                )
            self.compact_step()

    def start(self) -> HistoryWriter:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="history-writer", daemon=True)
            self._thread.start()
        return self

    def close(self) -> None:
        """Stop the flusher thread and flush what is left; a last flush that fails is logged with the
        number of rows lost (there is no next try), never raised into the shutdown."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        try:
            self.flush()
        except Exception as exc:
            log.error("history: %d rows lost at shutdown, the last flush failed: %s", self.pending_rows(), exc)
