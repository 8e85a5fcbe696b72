"""`report`: archive -> daily summaries per cluster, worst nodes, and a self-contained HTML report (<out>/report)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from datetime import date

from pyspark.sql import SparkSession

from ctlplane.exporter.thresholds import Thresholds
from ctlplane.pipeline import transforms
from ctlplane.pipeline.args import add_job_arguments, rules_from_args
from ctlplane.pipeline.html import render_report
from ctlplane.pipeline.io import read_archive, stage, write_table, write_text
from ctlplane.pipeline.jobs import run_job
from ctlplane.pipeline.rules import EpisodeRules


def run(
    spark: SparkSession,
    archive: str,
    out: str,
    rules: EpisodeRules,
    start: date | None = None,
    end: date | None = None,
) -> int:
    """Read, summarise, write the tables and report.html; returns the number of (day, cluster) rows."""
    rows = read_archive(spark, archive, start, end, transforms.EPISODE_SERIES)
    found = transforms.episodes(rows, rules)
    with stage(f"report tables -> {out}/report"):
        write_table(found, f"{out}/report/episodes")
        stored = spark.read.parquet(f"{out}/report/episodes")
        write_table(transforms.daily_summary(stored, rows), f"{out}/report/daily", f"{out}/report/daily_csv")
        write_table(transforms.worst_nodes(stored), f"{out}/report/worst_nodes", f"{out}/report/worst_nodes_csv")
    daily = [r.asDict() for r in spark.read.parquet(f"{out}/report/daily").orderBy("date", "cluster").collect()]
    worst = [
        r.asDict() for r in spark.read.parquet(f"{out}/report/worst_nodes").orderBy("date", "cluster", "rank").collect()
    ]
    with stage(f"report.html -> {out}/report/report.html"):
        write_text(spark, f"{out}/report/report.html", render_report(daily, worst))
    return len(daily)


def command(args: argparse.Namespace, health: Thresholds | None = None, interval_seconds: float | None = None) -> int:
    """The job as `ctlplane pipeline report` and spark-submit run it: `health`, `interval_seconds` from a
    loaded config where there is one."""
    return run_job(
        args,
        "report",
        lambda spark: run(
            spark, args.archive, args.out, rules_from_args(args, health, interval_seconds), args.start, args.end
        ),
        "{count} day x cluster row(s) -> {out}/report (report.html)\n",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point for `spark-submit ctlplane/pipeline/jobs/report.py --archive … --out …`."""
    parser = argparse.ArgumentParser(prog="report", description=__doc__)
    add_job_arguments(parser)
    return command(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
