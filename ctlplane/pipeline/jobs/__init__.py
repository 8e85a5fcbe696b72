"""One module per job, each with one entry path: `command(args, health, interval_seconds)`, which `ctlplane
pipeline <job>` calls and the job's own `main()` (spark-submit) calls after parsing the same arguments; `run()`
reads, applies pure transforms from `ctlplane.pipeline.transforms`, writes."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from pyspark.sql import SparkSession

from ctlplane.pipeline.session import build_session


def run_job(args: argparse.Namespace, name: str, work: Callable[[SparkSession], int], written: str) -> int:
    """A Spark session for the job, `work` in it, the session stopped whatever happens; `written` (with
    `{count}` and `{out}`) says what was written."""
    spark = build_session(args.master, f"ctlplane-{name}", dict(args.conf), progress=not args.no_progress)
    try:
        count = work(spark)
    finally:
        spark.stop()
    sys.stdout.write(written.format(count=count, out=args.out))
    return 0
