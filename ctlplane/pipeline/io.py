"""Reading the archive and writing job outputs; paths may be local, hdfs:// or s3a://."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import date

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ctlplane.pipeline.schema import history_struct

log = logging.getLogger(__name__)


def read_archive(
    spark: SparkSession,
    root: str,
    start: date | None = None,
    end: date | None = None,
    series: Sequence[str] | None = None,
) -> DataFrame:
    """The archive's rows, pruned to whole days in [start, end] and, if given, to these series.

    The day filter is on the `date=` directories (partition pruning: other days are never listed); the
    series filter is pushed into the Parquet scan, where the writer's sort by series lets row groups
    be skipped.
    """
    schema = history_struct().add("date", "string")
    frame = spark.read.schema(schema).option("basePath", root).parquet(root)
    if start is not None:
        frame = frame.where(F.col("date") >= start.isoformat())
    if end is not None:
        frame = frame.where(F.col("date") <= end.isoformat())
    if series is not None:
        frame = frame.where(F.col("series").isin(*series))
    return frame


def write_table(frame: DataFrame, path: str, csv_path: str | None = None) -> None:
    """Parquet at `path` (replaced), and the same rows as one CSV file with a header under `csv_path`."""
    frame.write.mode("overwrite").parquet(path)
    if csv_path is not None:
        frame.sparkSession.read.parquet(path).coalesce(1).write.mode("overwrite").option("header", True).csv(csv_path)


def write_text(spark: SparkSession, path: str, text: str) -> None:
    """One file at `path` through Hadoop's FileSystem, so hdfs:// and s3a:// work as well as local paths."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None  # a live session always has its gateway
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    filesystem = hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    stream = filesystem.create(hadoop_path, True)
    try:
        stream.write(bytearray(text.encode("utf-8")))
    finally:
        stream.close()


@contextmanager
def stage(name: str) -> Iterator[None]:
    """A stage log line with its duration (Spark's console progress bar shows the tasks in between)."""
    log.info("%s ...", name)
    started = time.monotonic()
    yield
    log.info("%s done in %.1f s", name, time.monotonic() - started)
