"""The SparkSession factory: `local[*]` by default, and whatever spark-submit says when run under it."""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

# Settings every job needs whatever the master: UTC days, Parquet timestamps DuckDB/pyarrow read
# (Spark's default is INT96), partition values kept as strings (a cluster named "1" stays "1").
BASE_CONF: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
    "spark.sql.adaptive.enabled": "true",
}


def under_spark_submit() -> bool:
    """spark-submit starts the JVM first and hands the Python driver its gateway port."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def build_session(
    master: str | None = None,
    app_name: str = "ctlplane-pipeline",
    conf: dict[str, str] | None = None,
    progress: bool = True,
) -> SparkSession:
    """A session for the jobs.

    `master=None` keeps spark-submit's `--master` when run under it, else `local[*]`. On a local master
    shuffle partitions default to 2 x cores instead of 200 (200 tiny tasks per shuffle cost 2-4x on two
    cores without AQE); on a cluster pass `spark.sql.shuffle.partitions` with `--conf`. `conf` wins.
    """
    # Python workers must run this interpreter (the venv), not whatever python3 is first on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if master is not None or not under_spark_submit():
        builder = builder.master(master or "local[*]")
    settings = {**BASE_CONF, "spark.ui.showConsoleProgress": "true" if progress else "false"}
    if (master or "local").startswith("local") and not under_spark_submit():
        settings["spark.ui.enabled"] = "false"
    settings.update(conf or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    if (session.sparkContext.master or "").startswith("local") and "spark.sql.shuffle.partitions" not in (conf or {}):
        session.conf.set("spark.sql.shuffle.partitions", str(2 * session.sparkContext.defaultParallelism))
    return session
