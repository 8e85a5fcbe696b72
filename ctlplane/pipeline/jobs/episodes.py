"""`episodes`: archive -> one row per incident episode (<out>/episodes Parquet, <out>/episodes_csv)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from datetime import date

from pyspark.sql import SparkSession

from ctlplane.exporter.thresholds import Thresholds
from ctlplane.pipeline import transforms
from ctlplane.pipeline.args import add_job_arguments, rules_from_args
from ctlplane.pipeline.io import read_archive, stage, write_table
from ctlplane.pipeline.jobs import run_job
from ctlplane.pipeline.rules import EpisodeRules, Kind


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


def command(args: argparse.Namespace, health: Thresholds | None = None, interval_seconds: float | None = None) -> int:
    """The job as `ctlplane pipeline episodes` and spark-submit run it: `health`, `interval_seconds` from a
    loaded config where there is one."""
    return run_job(
        args,
        "episodes",
        lambda spark: run(
            spark, args.archive, args.out, rules_from_args(args, health, interval_seconds), args.start, args.end
        ),
        "{count} episode(s) -> {out}/episodes\n",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point for `spark-submit ctlplane/pipeline/jobs/episodes.py --archive … --out …`."""
    parser = argparse.ArgumentParser(prog="episodes", description=__doc__)
    add_job_arguments(parser)
    return command(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
