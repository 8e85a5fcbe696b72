"""`sweep`: archive -> pages, minutes firing and episodes caught per cluster, threshold and `for:` (<out>/sweep)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from datetime import date

from pyspark.sql import SparkSession

from ctlplane.exporter.thresholds import Thresholds
from ctlplane.pipeline import transforms
from ctlplane.pipeline.args import add_job_arguments, add_sweep_arguments, rules_from_args
from ctlplane.pipeline.io import read_archive, stage, write_table
from ctlplane.pipeline.jobs import run_job
from ctlplane.pipeline.rules import EpisodeRules, Kind


def run(
    spark: SparkSession,
    archive: str,
    out: str,
    rules: EpisodeRules,
    series: str,
    thresholds: Sequence[float],
    for_seconds: Sequence[float],
    reference: Kind = Kind.STALE_METADATA,
    start: date | None = None,
    end: date | None = None,
) -> int:
    """Read, sweep, write; returns the number of grid rows written."""
    rows = read_archive(spark, archive, start, end, (*transforms.EPISODE_SERIES, series))
    reference_episodes = transforms.episodes(rows, rules, (reference,))
    table = transforms.sweep(rows, series, thresholds, for_seconds, rules.gap_seconds, reference_episodes)
    with stage(f"sweep of {series} ({len(thresholds)} thresholds x {len(for_seconds)} for:) -> {out}/sweep"):
        write_table(table.orderBy("cluster", "threshold", "for_seconds"), f"{out}/sweep", f"{out}/sweep_csv")
    return spark.read.parquet(f"{out}/sweep").count()


def command(args: argparse.Namespace, health: Thresholds | None = None, interval_seconds: float | None = None) -> int:
    """The job as `ctlplane pipeline sweep` and spark-submit run it: `health`, `interval_seconds` from a
    loaded config where there is one."""
    return run_job(
        args,
        "sweep",
        lambda spark: run(
            spark,
            args.archive,
            args.out,
            rules_from_args(args, health, interval_seconds),
            args.series,
            args.thresholds,
            args.for_seconds,
            args.reference,
            args.start,
            args.end,
        ),
        "{count} sweep row(s) -> {out}/sweep\n",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point for `spark-submit ctlplane/pipeline/jobs/sweep.py --archive … --out …`."""
    parser = argparse.ArgumentParser(prog="sweep", description=__doc__)
    add_job_arguments(parser)
    add_sweep_arguments(parser)
    return command(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
