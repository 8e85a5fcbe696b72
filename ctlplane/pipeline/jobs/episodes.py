"""`episodes`: archive -> one row per incident episode (<out>/episodes Parquet, <out>/episodes_csv)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from datetime import date

from pyspark.sql import SparkSession

from ctlplane.pipeline import transforms
from ctlplane.pipeline.args import add_job_arguments, rules_from_args
from ctlplane.pipeline.io import read_archive, stage, write_table
from ctlplane.pipeline.rules import EpisodeRules, Kind
from ctlplane.pipeline.session import build_session


def run(
    spark: SparkSession,
    archive: str,
    out: str,
    rules: EpisodeRules,
    start: date | None = None,
    end: date | None = None,
    kinds: Sequence[Kind] = tuple(Kind),
) -> int:
    """Read, detect, write; returns the number of episodes written."""
    rows = read_archive(spark, archive, start, end, transforms.EPISODE_SERIES)
    found = transforms.episodes(rows, rules, kinds)
    with stage(f"episodes -> {out}/episodes"):
        write_table(found, f"{out}/episodes", f"{out}/episodes_csv")
    return spark.read.parquet(f"{out}/episodes").count()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point for `spark-submit ctlplane/pipeline/jobs/episodes.py --archive … --out …`."""
    parser = argparse.ArgumentParser(prog="episodes", description=__doc__)
    add_job_arguments(parser)
    args = parser.parse_args(argv)
    spark = build_session(args.master, "ctlplane-episodes", dict(args.conf), progress=not args.no_progress)
    try:
        run(spark, args.archive, args.out, rules_from_args(args, None, None), args.start, args.end)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
