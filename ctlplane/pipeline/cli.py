"""`ctlplane pipeline episodes|sweep|report` and `ctlplane history import`: registered by ctlplane/cli.py.

Handlers take the parsed args and plain values (the `health:` thresholds and the scrape interval from
the loaded Settings, when there is a config); they never read configuration themselves.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ctlplane.exporter.config import DEFAULT_COMPACT_AFTER_SECONDS
from ctlplane.exporter.thresholds import Thresholds
from ctlplane.pipeline.args import add_job_arguments, add_sweep_arguments

if TYPE_CHECKING:
    pass


def cmd_episodes(
    args: argparse.Namespace, health: Thresholds | None = None, interval_seconds: float | None = None
) -> int:
    from ctlplane.pipeline.jobs import episodes  # pyspark only when a job runs: `ctlplane run` never loads it

    return episodes.command(args, health, interval_seconds)


def cmd_sweep(args: argparse.Namespace, health: Thresholds | None = None, interval_seconds: float | None = None) -> int:
    from ctlplane.pipeline.jobs import sweep

    return sweep.command(args, health, interval_seconds)


def cmd_report(
    args: argparse.Namespace, health: Thresholds | None = None, interval_seconds: float | None = None
) -> int:
    from ctlplane.pipeline.jobs import report

    return report.command(args, health, interval_seconds)


def _instant(text: str) -> float:
    """Unix seconds, or an ISO 8601 time (UTC unless it names a zone)."""
    try:
        return float(text)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected unix seconds or ISO 8601, got {text!r}") from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def _duration(text: str) -> float:
    units = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    for suffix in ("ms", "s", "m", "h"):
        if text.endswith(suffix):
            number = text.removesuffix(suffix)
            try:
                return float(number) * units[suffix]
            except ValueError:
                break
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a duration like 15s, 1m or 30, got {text!r}") from None


def cmd_history_import(args: argparse.Namespace) -> int:
    import httpx

    from ctlplane.pipeline.backfill import MAX_POINTS_PER_QUERY, BackfillError, import_range

    def progress(line: str) -> None:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()

    try:
        with httpx.Client(base_url=args.prometheus, timeout=args.timeout) as client:
            rows = import_range(
                client,
                args.start,
                args.end,
                args.step,
                args.out,
                progress,
                max_points=MAX_POINTS_PER_QUERY if args.max_points is None else args.max_points,
                deadline_seconds=args.deadline,
            )
    except (BackfillError, httpx.HTTPError, OSError, ValueError) as exc:
        # one line, never a traceback; the chunks written before it stay in the archive
        reason = str(exc) if isinstance(exc, BackfillError) else f"{type(exc).__name__}: {exc}"
        sys.stderr.write(f"error: history import from {args.prometheus}: {reason}\n")
        return 1
    sys.stdout.write(f"{rows} row(s) -> {args.out}\n")
    return 0


def cmd_history_compact(args: argparse.Namespace) -> int:
    from ctlplane.exporter.history.archive import compact

    failed = 0
    for done in compact(args.archive, close_after_seconds=args.close_after):
        where = done.directory.relative_to(args.archive)
        sys.stdout.write(f"{where}: {len(done.removed)} file(s) -> {len(done.merged)} merged\n")
        if done.error is not None:
            failed += 1
            sys.stderr.write(f"error: compaction of {where} stopped, its files are kept: {done.error}\n")
    return 1 if failed else 0


def cmd_package(args: argparse.Namespace) -> int:
    from ctlplane.pipeline.bundle import write_bundle

    try:
        bundle = write_bundle(args.out)
    except (OSError, RuntimeError) as exc:
        sys.stderr.write(f"error: pipeline package -> {args.out}: {exc}\n")
        return 1
    sys.stdout.write(f"{bundle.zip_path}\n")
    for job in bundle.jobs:
        sys.stdout.write(f"  {bundle.submit_line(job)}\n")
    return 0


def add_subcommands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `pipeline {episodes,sweep,report,package}` and `history {import,compact}` on ctlplane's subparsers.

    Every handler is `args.func(args)`; the pipeline ones also accept `health=` and `interval_seconds=`
    from the loaded Settings (see docs/pipeline.md for the wiring).
    """
    pipeline = subparsers.add_parser("pipeline", help="Spark jobs over the history archive")
    jobs = pipeline.add_subparsers(dest="job", required=True)
    for name, handler, help_text in (
        ("episodes", cmd_episodes, "incident episodes (stale metadata, fenced, unreachable, controllers, ...)"),
        ("sweep", cmd_sweep, "pages / minutes firing / episodes caught for a threshold x for: grid"),
        ("report", cmd_report, "daily summaries per cluster and an HTML report"),
    ):
        job = jobs.add_parser(name, help=help_text)
        job.add_argument("--config", type=Path, help="ctlplane config: thresholds from `health:`, the scrape interval")
        add_job_arguments(job)
        if name == "sweep":
            add_sweep_arguments(job)
        # the package the job needs beyond ctlplane's own dependencies, and the extra that installs it
        job.set_defaults(func=handler, wants_settings=True, needs=(("pyspark", "pipeline"),))
    package = jobs.add_parser("package", help="the zip and job scripts for spark-submit on a cluster")
    package.add_argument("--out", type=Path, required=True, help="directory to write them into")
    package.set_defaults(func=cmd_package)
    history = subparsers.add_parser("history", help="the history archive")
    actions = history.add_subparsers(dest="action", required=True)
    backfill = actions.add_parser("import", help="backfill the archive from an existing Prometheus")
    backfill.add_argument("--prometheus", required=True, help="base URL, e.g. http://prometheus:9090")
    backfill.add_argument("--start", type=_instant, required=True, help="unix seconds or ISO 8601 (UTC)")
    backfill.add_argument("--end", type=_instant, required=True, help="unix seconds or ISO 8601 (UTC)")
    backfill.add_argument("--out", type=Path, required=True, help="archive root")
    backfill.add_argument("--step", type=_duration, default=15.0, help="sample spacing (default 15s)")
    backfill.add_argument("--timeout", type=float, default=60.0, help="seconds per range query")
    backfill.add_argument(
        "--deadline", type=float, default=None, help="seconds for the whole import; chunks done by then are kept"
    )
    backfill.add_argument(
        "--max-points",
        type=int,
        default=None,  # backfill.MAX_POINTS_PER_QUERY, imported only when an import runs (it loads pyarrow)
        help="points per series per query (default: Prometheus's limit of 11,000; lower it for many series)",
    )
    backfill.set_defaults(func=cmd_history_import)
    merge = actions.add_parser("compact", help="merge each closed day's files per cluster (the exporter does it too)")
    merge.add_argument("--archive", type=Path, required=True, help="archive root (history.path)")
    merge.add_argument(
        "--close-after",
        type=_duration,
        default=DEFAULT_COMPACT_AFTER_SECONDS,
        help="merge a day once it ended this long ago (default 1h: the writer's late flushes land first)",
    )
    merge.set_defaults(func=cmd_history_compact)
