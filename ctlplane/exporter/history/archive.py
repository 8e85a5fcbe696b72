"""The archive's files: partitioned writes (hidden name, fsync, rename), retention, the leftovers of
interrupted writes, and compaction of closed days."""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type hints
import pyarrow.compute as pc  # type: ignore[import-untyped]  # pyarrow ships no type hints
import pyarrow.parquet as pq  # type: ignore[import-untyped]  # pyarrow ships no type hints

from ctlplane.exporter.history.table import COLUMNS, HISTORY_SCHEMA

log = logging.getLogger(__name__)


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
    close_after_seconds: float,
    now: float | None = None,
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
