"""Arguments shared by the `ctlplane pipeline` subcommands and the jobs run with spark-submit."""

from __future__ import annotations

import argparse
from datetime import date

from ctlplane.exporter.thresholds import HEALTH, Thresholds
from ctlplane.pipeline.rules import EpisodeRules, Kind, rules_from_health

DEFAULT_THRESHOLDS = (100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0, 10000.0, 25000.0)
DEFAULT_FOR_SECONDS = (0.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0)


def _min_duration(text: str) -> tuple[Kind, float]:
    kind, _, seconds = text.partition("=")
    try:
        return Kind(kind), float(seconds)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected KIND=SECONDS with KIND one of {', '.join(Kind)}, got {text!r}"
        ) from None


def _conf(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    return key, value


def _floats(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None
    if not values:
        raise argparse.ArgumentTypeError("expected at least one number")
    return values


def add_job_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--archive", required=True, help="archive root (local path, hdfs:// or s3a://)")
    parser.add_argument("--out", required=True, help="output root (local path, hdfs:// or s3a://)")
    parser.add_argument("--start", type=date.fromisoformat, help="first UTC day to read (YYYY-MM-DD)")
    parser.add_argument("--end", type=date.fromisoformat, help="last UTC day to read (YYYY-MM-DD)")
    parser.add_argument("--master", help="Spark master; default local[*], or spark-submit's --master")
    parser.add_argument("--conf", type=_conf, action="append", default=[], metavar="KEY=VALUE",
                        help="extra Spark setting (repeatable)")  # fmt: skip
    parser.add_argument("--interval", type=float, help="the exporter's scrape interval in seconds (default 15)")
    parser.add_argument("--min-duration", type=_min_duration, action="append", default=[], metavar="KIND=SECONDS",
                        help="minimum episode duration for a kind (repeatable)")  # fmt: skip
    parser.add_argument("--no-progress", action="store_true", help="hide Spark's console progress bar")


def add_sweep_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--series", default="kafka_broker_metadata_lag_records",
                        help="the rule's per-node series; the condition is series >= threshold")  # fmt: skip
    parser.add_argument("--thresholds", type=_floats, default=DEFAULT_THRESHOLDS, help="comma-separated")
    parser.add_argument("--for", dest="for_seconds", type=_floats, default=DEFAULT_FOR_SECONDS,
                        help="comma-separated `for:` durations in seconds")  # fmt: skip
    parser.add_argument("--reference", type=Kind, default=Kind.STALE_METADATA,
                        help="the episode kind the rule should catch")  # fmt: skip


def rules_from_args(
    args: argparse.Namespace, health: Thresholds | None, interval_seconds: float | None
) -> EpisodeRules:
    """Config thresholds (or the defaults), the interval (flag > config > 15 s), flag overrides."""
    interval = args.interval or interval_seconds or 15.0
    rules = rules_from_health(health or HEALTH, interval)
    return rules.with_min_seconds(dict(args.min_duration))
