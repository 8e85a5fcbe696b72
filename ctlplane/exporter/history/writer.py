"""The exporter's history writer: buffers each round's rows, flushes them to the archive on its own
thread, applies retention and compacts closed days; its self-metrics."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ctlplane.exporter.config import DEFAULT_COMPACT_AFTER_SECONDS
from ctlplane.exporter.families import Family, history_families
from ctlplane.exporter.history.archive import (
    Compaction,
    PartialWriteError,
    compact,
    enforce_retention,
    remove_temporary_files,
    write_partitioned,
)
from ctlplane.exporter.history.rows import observation_rows
from ctlplane.exporter.history.table import COLUMNS, RowBuffer
from ctlplane.exporter.state import Observation

log = logging.getLogger(__name__)


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
            done = compact(self.root, self.compact_after_seconds, self._clock(), max_merges=1)
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
