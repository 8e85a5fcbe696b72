"""Backfill the archive from an existing Prometheus: range queries of ctlplane's series, chunked.

No Spark here: rows go through the exporter's own archive writing (`ctlplane.exporter.history.archive`),
into the same layout.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from ctlplane.exporter.catalog import all_series_names
from ctlplane.exporter.config import CLUSTER_NAME_PATTERN
from ctlplane.exporter.history.archive import IMPORT_PREFIX, write_partitioned
from ctlplane.exporter.history.table import LIFECYCLE_SERIES, RowBuffer, format_labels

# Prometheus refuses range queries of more than 11,000 points per series.
MAX_POINTS_PER_QUERY = 11_000
# A chunk's answer is parsed whole (JSON); beyond this it is refused rather than exhaust memory. A fleet
# with many series needs smaller chunks (--max-points) rather than a bigger cap.
MAX_RESPONSE_BYTES = 256 * 1024 * 1024
# More queries than this is a mistyped --step (1ms over a year), not a backfill.
MAX_CHUNKS = 100_000
_CLUSTER_NAME = re.compile(CLUSTER_NAME_PATTERN)


class BackfillError(Exception):
    """An import that cannot go on; the message is one line for the operator. Chunks written before it
    stay in the archive (each is a complete file)."""


# Labels that become columns, or that Prometheus adds and the exporter never wrote.
_COLUMN_LABELS = frozenset({"__name__", "cluster", "node", "role"})
_TARGET_LABELS = frozenset({"job", "instance"})


def chunk_ranges(
    start: float, end: float, step: float, max_points: int = MAX_POINTS_PER_QUERY
) -> list[tuple[float, float]]:
    """[start, end] cut into consecutive query ranges of at most `max_points` samples each.

    Range queries include both ends, so each chunk starts one step after the previous one ended.
    """
    if end < start or step <= 0 or max_points < 2:
        raise BackfillError("need --start <= --end, --step > 0 and --max-points >= 2")
    span = step * (max_points - 1)
    if (end - start) / span > MAX_CHUNKS:
        raise BackfillError(
            f"{(end - start) / span:,.0f} queries at --step {step:g}s: more than {MAX_CHUNKS:,}; use a larger --step"
        )
    ranges = []
    lower = start
    while lower <= end:
        upper = min(end, lower + span)
        ranges.append((lower, upper))
        lower = upper + step
    return ranges


def series_selector(names: Iterable[str] | None = None) -> str:
    """One selector matching every series ctlplane emits (or the given ones)."""
    chosen = sorted(names if names is not None else all_series_names())
    return '{__name__=~"' + "|".join(chosen) + '"}'


def matrix_rows(result: Sequence[Mapping[str, Any]], out: RowBuffer | None = None) -> RowBuffer:
    """Rows from a range query's `data.result` (resultType matrix).

    The lifecycle gauge (one series per state, 1 for the current state) keeps only its 1-samples, as
    the exporter writes it; each broker row then gets that state in the `state` column.
    """
    out = out if out is not None else RowBuffer.empty()
    start_index = len(out)
    states: dict[tuple[int, str, str], str] = {}
    for series in result:
        metric: Mapping[str, str] = series["metric"]
        name = metric["__name__"]
        cluster = metric.get("cluster", "")
        node = metric.get("node", "")
        role = metric.get("role", "")
        extra = [(k, v) for k, v in metric.items() if k not in _COLUMN_LABELS and k not in _TARGET_LABELS]
        labels = format_labels(extra)
        for stamp, text in series["values"]:
            value = float(text)
            ts = round(float(stamp) * 1_000_000)
            if name == LIFECYCLE_SERIES:
                if value != 1.0:
                    continue
                states[(ts, cluster, node)] = metric.get("state", "")
            out.add(ts, cluster, node, role, name, labels, value, None)
    for index in range(start_index, len(out)):
        out.state[index] = states.get((out.timestamp[index], out.cluster[index], out.node[index]))
    return out


def import_range(
    client: httpx.Client,
    start: float,
    end: float,
    step: float,
    root: Path,
    progress: Callable[[str], None] = lambda _line: None,
    names: Iterable[str] | None = None,
    max_points: int = MAX_POINTS_PER_QUERY,
    deadline_seconds: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    """Query `client` (base URL = the Prometheus server) chunk by chunk and write each chunk; returns rows.

    Every failure is a BackfillError (or httpx.HTTPError / OSError from the network or the disk) naming
    the chunk; chunks written before it stay. Series whose `cluster` label is not a cluster name (it
    becomes a directory) are left out and counted."""
    selector = series_selector(names)
    ranges = chunk_ranges(start, end, step, max_points)
    total = skipped = 0
    began = clock()
    deadline = None if deadline_seconds is None else began + deadline_seconds
    sequence = iter(range(1, 1 << 62))
    for number, (lower, upper) in enumerate(ranges, 1):
        if deadline is not None and clock() > deadline:
            raise BackfillError(
                f"--deadline of {deadline_seconds:g}s passed after chunk {number - 1}/{len(ranges)} "
                f"({total} rows written); continue with --start {_iso(lower)}"
            )
        result = _query_chunk(client, selector, lower, upper, step, f"chunk {number}/{len(ranges)}", max_points)
        kept = [series for series in result if _CLUSTER_NAME.match(series.get("metric", {}).get("cluster", "x"))]
        skipped += len(result) - len(kept)
        rows = matrix_rows(kept)
        write_partitioned(root, rows.to_table(), lambda: next(sequence), now=upper, prefix=IMPORT_PREFIX)
        total += len(rows)
        progress(_progress_line(number, len(ranges), total, clock() - began))
    if skipped:
        progress(f"left out {skipped} series whose cluster label is not a cluster name ({CLUSTER_NAME_PATTERN})")
    return total


def _query_chunk(
    client: httpx.Client, selector: str, lower: float, upper: float, step: float, what: str, max_points: int
) -> list[dict[str, Any]]:
    """One range query, streamed and capped at MAX_RESPONSE_BYTES; its `data.result`."""
    form = {"query": selector, "start": lower, "end": upper, "step": step}
    with client.stream("POST", "/api/v1/query_range", data=form) as response:
        body = bytearray()
        for part in response.iter_bytes():
            body += part
            if len(body) > MAX_RESPONSE_BYTES:
                raise BackfillError(
                    f"{what}: Prometheus's answer is over {MAX_RESPONSE_BYTES >> 20} MiB; "
                    f"use a smaller --max-points (now {max_points})"
                )
    try:
        document = json.loads(body)
    except ValueError:
        document = None
    if not isinstance(document, dict) or document.get("status") != "success":
        detail = (
            f"{document.get('errorType')}: {document.get('error')}"
            if isinstance(document, dict)
            else f"not a Prometheus API answer: {bytes(body[:200])!r}"
        )
        raise BackfillError(f"{what}: HTTP {response.status_code}: {detail}")
    data = document.get("data")
    result = data.get("result") if isinstance(data, dict) else None
    if not isinstance(result, list) or (data or {}).get("resultType") != "matrix":
        raise BackfillError(f"{what}: the answer has no matrix result")
    return result


def _progress_line(done: int, chunks: int, rows: int, elapsed: float) -> str:
    width = 24
    filled = width * done // chunks
    eta = elapsed / done * (chunks - done)
    return (
        f"[{'#' * filled}{'.' * (width - filled)}] {math.floor(100 * done / chunks):3d}% "
        f"chunk {done}/{chunks}, {rows} rows, {elapsed:.0f}s elapsed, ~{eta:.0f}s left"
    )


def _iso(unix: float) -> str:
    return datetime.fromtimestamp(unix, UTC).isoformat().replace("+00:00", "Z")
