"""`report`: archive -> daily summaries per cluster, worst nodes, and a self-contained HTML report (<out>/report)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from datetime import date

from pyspark.sql import SparkSession

from ctlplane.pipeline import transforms
from ctlplane.pipeline.args import add_job_arguments, rules_from_args
from ctlplane.pipeline.html import render_report
from ctlplane.pipeline.io import read_archive, stage, write_table, write_text
from ctlplane.pipeline.rules import EpisodeRules
from ctlplane.pipeline.session import build_session


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


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point for `spark-submit ctlplane/pipeline/jobs/report.py --archive … --out …`."""
    parser = argparse.ArgumentParser(prog="report", description=__doc__)
    add_job_arguments(parser)
    args = parser.parse_args(argv)
    spark = build_session(args.master, "ctlplane-report", dict(args.conf), progress=not args.no_progress)
    try:
        run(spark, args.archive, args.out, rules_from_args(args, None, None), args.start, args.end)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
