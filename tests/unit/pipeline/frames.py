"""Hand-built archive rows: `row(seconds, node, series, value)` with the archive's schema."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from pyspark.sql import DataFrame, SparkSession

from ctlplane.exporter.history.table import LIFECYCLE_SERIES
from ctlplane.pipeline.schema import history_struct

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
Row = tuple[datetime, str, str, str, str, str, float, str | None]


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def row(
    seconds: float,
    node: str,
    series: str,
    value: float,
    labels: str = "",
    cluster: str = "c1",
    state: str | None = None,
) -> Row:
    """`state`: the broker's lifecycle state column; a lifecycle row's own by default (`state=FENCED` -> FENCED), as
    the exporter and the backfill write it."""
    if state is None and series == LIFECYCLE_SERIES:
        state = labels.removeprefix("state=")
    return (at(seconds), cluster, node, "broker" if node else "", series, labels, float(value), state)


def archive(spark: SparkSession, rows: list[Row]) -> DataFrame:
    return spark.createDataFrame(rows, history_struct())


EPISODE_DDL = (
    "cluster string, node string, kind string, start timestamp, end timestamp, duration_seconds double, "
    "peak double, samples long"
)


def episode(
    kind: str, start: float, end: float, peak: float | None, samples: int, node: str = "b1", cluster: str = "c1"
) -> tuple[str, str, str, datetime, datetime, float, float | None, int]:
    return (cluster, node, kind, at(start), at(end), float(end - start), peak, samples)
