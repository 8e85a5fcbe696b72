"""Backfill the archive from an existing Prometheus: range queries of ctlplane's series, chunked.

No Spark here: rows go through the exporter's own writer (`exporter.history`), into the same layout.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx

from exporter.catalog import all_series_names
from exporter.history import IMPORT_PREFIX, LIFECYCLE_SERIES, RowBuffer, format_labels, write_partitioned

# Prometheus refuses range queries of more than 11,000 points per series.
MAX_POINTS_PER_QUERY = 11_000
# Labels that become columns, or that Prometheus adds and the exporter never wrote.
_COLUMN_LABELS = frozenset({"__name__", "cluster", "node", "role"})
_TARGET_LABELS = frozenset({"job", "instance"})


def chunk_ranges(
    start: float, end: float, step: float, max_points: int = MAX_POINTS_PER_QUERY
) -> list[tuple[float, float]]:
    """[start, end] cut into consecutive query ranges of at most `max_points` samples each.

    Range queries include both ends, so each chunk starts one step after the previous one ended.
    """
    if end < start or step <= 0:
        raise ValueError("need start <= end and step > 0")
    span = step * (max_points - 1)
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
) -> int:
    """Query `client` (base URL = the Prometheus server) chunk by chunk and write each chunk; returns rows."""
    selector = series_selector(names)
    ranges = chunk_ranges(start, end, step, max_points)
    total = 0
    sequence = iter(range(1, 1 << 62))
    for number, (lower, upper) in enumerate(ranges, 1):
        response = client.post(
            "/api/v1/query_range", data={"query": selector, "start": lower, "end": upper, "step": step}
        )
        response.raise_for_status()
        body = response.json()
        if body.get("status") != "success":
            raise RuntimeError(f"Prometheus: {body.get('errorType')}: {body.get('error')}")
        rows = matrix_rows(body["data"]["result"])
        write_partitioned(root, rows.to_table(), lambda: next(sequence), now=upper, prefix=IMPORT_PREFIX)
        total += len(rows)
        progress(f"chunk {number}/{len(ranges)} ({math.floor(100 * number / len(ranges))}%): {len(rows)} rows")
    return total
