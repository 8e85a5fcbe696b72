"""Pure DataFrame -> DataFrame transforms over the archive (`ctlplane.exporter.history.table.HISTORY_SCHEMA` rows).

The episodes are found in one pass over the archive (churn in a second, over its own series): every
sample is labelled with the kind it qualifies for, the rows that qualify for none are dropped first,
and only then runs one window (gaps and islands) over all kinds: a time gap larger than
`EpisodeRules.gap_seconds` between consecutive qualifying samples of the same key ends an island. On
two cores filtering first is ~3.6x faster than windowing over every row, and it is exact while the
gap tolerance is below two scrape intervals (shared/reference/spark.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from ctlplane.exporter.history.table import ACTIVE_CONTROLLERS_SERIES, FENCED_STATE, LIFECYCLE_SERIES, UP_SERIES
from ctlplane.pipeline.rules import EpisodeRules, Kind

EPISODE_COLUMNS = ("cluster", "node", "kind", "start", "end", "duration_seconds", "peak", "samples")
LAG_RECORDS = "kafka_broker_metadata_lag_records"
LAG_SECONDS = "kafka_broker_metadata_lag_seconds"
FROZEN = "kafka_broker_metadata_frozen"
QUEUE_SIZE = "kafka_control_plane_request_queue_size"
IDLE_RATIOS = ("kafka_control_plane_request_handler_idle_ratio", "kafka_control_plane_network_processor_idle_ratio")
FAILOVERS = "kafka_controller_failovers_total"
# Every series the detectors read: the jobs read only these rows (and only the columns they use).
EPISODE_SERIES = (LAG_RECORDS, LAG_SECONDS, FROZEN, QUEUE_SIZE, *IDLE_RATIOS, ACTIVE_CONTROLLERS_SERIES, FAILOVERS,
                  LIFECYCLE_SERIES, UP_SERIES)  # fmt: skip


def _micros(column: str = "timestamp") -> Column:
    return F.unix_micros(F.col(column))


def islands(
    qualifying: DataFrame, keys: Sequence[str], gap_seconds: float, peak_of: Callable[[str], Column] = F.max
) -> DataFrame:
    """Runs of qualifying samples per key: (keys, start, end, duration_seconds, peak, samples).

    `qualifying` has the keys, `timestamp` and `peak_value` (nullable), one row per key and timestamp;
    `peak` is `peak_of` over the run's `peak_value`s (the worst value by default, or e.g. their sum).
    """
    ordered = Window.partitionBy(*keys).orderBy("t")
    running = ordered.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    previous = F.lag("t").over(ordered)
    gap = F.lit(round(gap_seconds * 1_000_000))
    flagged = qualifying.withColumn("t", _micros()).withColumn(
        "brk", F.when(previous.isNull() | (F.col("t") - previous > gap), 1).otherwise(0)
    )
    numbered = flagged.withColumn("island", F.sum("brk").over(running))
    return (
        numbered.groupBy(*keys, "island")
        .agg(
            F.min("timestamp").alias("start"),
            F.max("timestamp").alias("end"),
            peak_of("peak_value").cast("double").alias("peak"),
            F.count(F.lit(1)).alias("samples"),
        )
        .withColumn("duration_seconds", (_micros("end") - _micros("start")).cast("double") / 1_000_000)
        .drop("island")
    )


@dataclass(frozen=True)
class Condition:
    """What a kind reads: the series, when one sample qualifies, and the value its peak keeps."""

    series: tuple[str, ...]
    qualifies: Column
    peak: Column | None = None


def conditions(rules: EpisodeRules) -> dict[Kind, Condition]:
    """Every kind found from single samples (all but churn). A sample qualifies for one kind at most (a
    unit test holds it), which lets one CASE over one scan label every sample."""
    series, value = F.col("series"), F.col("value")
    # The exporter's own count, what KafkaNoActiveController / KafkaMultipleActiveControllers page on
    # (alerts/controller.rules.yml), not a sum of the nodes' ActiveControllerCount: during a ZooKeeper
    # migration's PRE_MIGRATION the ZooKeeper brokers' controller claims too, and the exporter does not
    # count it (ctlplane/exporter/health/controller.py `_claimants`). Written every round, 0 when no node could be read.
    controllers = series == ACTIVE_CONTROLLERS_SERIES
    return {
        # metadata lag at or over the records or seconds threshold, or the applied offset frozen
        Kind.STALE_METADATA: Condition(
            (LAG_RECORDS, LAG_SECONDS, FROZEN),
            ((series == LAG_RECORDS) & (value >= rules.metadata_stale_records))
            | ((series == LAG_SECONDS) & (value >= rules.metadata_stale_seconds))
            | ((series == FROZEN) & (value >= 1)),
            F.when(series == LAG_RECORDS, value),
        ),
        # the broker's lifecycle as the archive's `state` column has it (the exporter's and the backfill's rows)
        Kind.FENCED: Condition(
            (LIFECYCLE_SERIES,),
            (series == LIFECYCLE_SERIES) & (F.col("state") == FENCED_STATE) & (value >= 1),
        ),
        # ctlplane could not read the node (any role)
        Kind.UNREACHABLE: Condition((UP_SERIES,), (series == UP_SERIES) & (value < 1)),
        Kind.NO_ACTIVE_CONTROLLER: Condition((ACTIVE_CONTROLLERS_SERIES,), controllers & (value < 0.5), value),
        Kind.SEVERAL_ACTIVE_CONTROLLERS: Condition((ACTIVE_CONTROLLERS_SERIES,), controllers & (value >= 1.5), value),
        # the control-plane queue near its capacity of 20, or its threads nearly never idle
        Kind.CONTROL_PLANE_SATURATED: Condition(
            (QUEUE_SIZE, *IDLE_RATIOS),
            ((series == QUEUE_SIZE) & (value >= rules.queue_saturation_size))
            | (series.isin(*IDLE_RATIOS) & (value < rules.idle_saturation_ratio)),
            F.when(series == QUEUE_SIZE, value),
        ),
    }


def _single_pass_episodes(rows: DataFrame, rules: EpisodeRules, wanted: set[Kind]) -> DataFrame:
    """Every episode of the wanted kinds but churn from one scan of `rows`.

    Each sample is labelled with the kind it qualifies for (one CASE), samples that qualify for none are
    dropped, one aggregation reduces a node's qualifying samples of one round to their peak (lag records
    and lag seconds may both qualify), and one window finds the islands of every kind. Before: a scan,
    a shuffle and a window per kind, 5x the I/O.
    """
    chosen = {kind: c for kind, c in conditions(rules).items() if kind in wanted}
    kind: Column = F.lit(None).cast("string")
    peak: Column = F.lit(None).cast("double")
    minimum: Column = F.lit(0.0)
    for each, condition in chosen.items():
        kind = F.when(condition.qualifies, F.lit(each.value)).otherwise(kind)
        if condition.peak is not None:
            peak = F.when(condition.qualifies, condition.peak).otherwise(peak)
        minimum = F.when(F.col("kind") == each.value, F.lit(rules.min_for(each))).otherwise(minimum)
    # Shuffled by the islands' keys before the round's peak: that aggregation and the islands' window are then
    # both served by the one shuffle (a subset of the aggregation's keys satisfies its distribution), where
    # each planned on its own keys shuffles twice. The rows shuffled are the qualifying ones alone, so the
    # partial aggregation this forgoes had little to merge.
    qualifying = (
        rows.select("cluster", "node", kind.alias("kind"), "timestamp", peak.alias("peak"))
        .where(F.col("kind").isNotNull())
        .repartition("cluster", "node", "kind")
        .groupBy("cluster", "node", "kind", "timestamp")
        .agg(F.max("peak").alias("peak_value"))
    )
    found = islands(qualifying, ("cluster", "node", "kind"), rules.gap_seconds)
    return found.where(F.col("duration_seconds") >= minimum).select(*EPISODE_COLUMNS)


def _as_episodes(found: DataFrame, kind: Kind, min_seconds: float) -> DataFrame:
    if "node" not in found.columns:
        found = found.withColumn("node", F.lit(""))
    return (
        found.where(F.col("duration_seconds") >= min_seconds)
        .withColumn("kind", F.lit(kind.value))
        .select(*EPISODE_COLUMNS)
    )


def controller_churn_episodes(archive: DataFrame, rules: EpisodeRules) -> DataFrame:
    """Runs of controller failovers, each within `churn_window_seconds` of the previous, of at least
    `churn_failovers`; peak = failovers in the run. A counter reset (exporter restart) is not a failover."""
    ordered = Window.partitionBy("cluster").orderBy("timestamp")
    increase = F.col("value") - F.lag("value").over(ordered)
    # peak = the run's summed increases (each event is in exactly one run: no join back to the events)
    events = (
        archive.where(F.col("series") == FAILOVERS)
        .select("cluster", "timestamp", "value")
        .withColumn("peak_value", increase)
        .where(F.col("peak_value") > 0)
    )
    churn = islands(events, ("cluster",), rules.churn_window_seconds, peak_of=F.sum).where(
        F.col("peak") >= rules.churn_failovers
    )
    return _as_episodes(churn, Kind.CONTROLLER_CHURN, rules.min_for(Kind.CONTROLLER_CHURN))


def episodes(archive: DataFrame, rules: EpisodeRules, kinds: Sequence[Kind] = tuple(Kind)) -> DataFrame:
    """Every episode of the chosen kinds: one row per (cluster, node, kind, start)."""
    wanted = set(kinds)
    rows = archive.where(F.col("series").isin(*EPISODE_SERIES)).select(
        "timestamp", "cluster", "node", "series", "labels", "value", "state"
    )
    parts = []
    if wanted - {Kind.CONTROLLER_CHURN}:
        parts.append(_single_pass_episodes(rows, rules, wanted))
    if Kind.CONTROLLER_CHURN in wanted:
        parts.append(controller_churn_episodes(rows, rules))
    return reduce(DataFrame.unionByName, parts)


# --- the sweep ---------------------------------------------------------------------------------------


def sweep(
    archive: DataFrame,
    series: str,
    thresholds: Sequence[float],
    for_seconds: Sequence[float],
    gap_seconds: float,
    reference: DataFrame,
) -> DataFrame:
    """What a rule `series >= threshold for: F` would have done, per cluster, for every threshold and F.

    An alert instance is one (cluster, node) run of samples at or over the threshold (the same gap rule
    as episodes). It pages if the run lasts at least F (last - first sample), and fires from start + F
    to its last sample. `reference` episodes (cluster, node, start, end) are "caught" when a firing
    interval of the same node overlaps them. One scan: each row is exploded into the thresholds it
    exceeds, so the thresholds cost no extra passes.

    Columns: cluster, threshold, for_seconds, pages, minutes_firing, episodes_caught, episodes_total.
    """
    ordered_thresholds = sorted(set(thresholds))
    ordered_fors = sorted(set(for_seconds))
    of_series = archive.where(F.col("series") == series).select("timestamp", "cluster", "node", "value")
    firing = _firing(of_series, ordered_thresholds, ordered_fors, gap_seconds)
    per_grid = firing.groupBy("cluster", "threshold", "for_seconds").agg(
        F.count(F.lit(1)).alias("pages"),
        (F.sum(F.col("duration_seconds") - F.col("for_seconds")) / 60.0).alias("minutes_firing"),
    )
    ref = reference.select(
        "cluster", "node", _micros("start").alias("ref_start"), _micros("end").alias("ref_end")
    ).withColumn("ref_id", F.monotonically_increasing_id())
    caught = (
        firing.join(ref, ["cluster", "node"])
        .where((F.col("fire_start") <= F.col("ref_end")) & (F.col("fire_end") >= F.col("ref_start")))
        .groupBy("cluster", "threshold", "for_seconds")
        .agg(F.countDistinct("ref_id").alias("episodes_caught"))
    )
    totals = ref.groupBy("cluster").agg(F.count(F.lit(1)).alias("episodes_total"))
    clusters = of_series.select("cluster").union(ref.select("cluster")).distinct()
    grid_values = archive.sparkSession.createDataFrame(
        [(float(t), float(f)) for t in ordered_thresholds for f in ordered_fors],
        "threshold double, for_seconds double",
    )
    return (
        clusters.crossJoin(F.broadcast(grid_values))
        .join(per_grid, ["cluster", "threshold", "for_seconds"], "left")
        .join(caught, ["cluster", "threshold", "for_seconds"], "left")
        .join(totals, "cluster", "left")
        .select(
            "cluster",
            "threshold",
            "for_seconds",
            F.coalesce("pages", F.lit(0)).cast("long").alias("pages"),
            F.coalesce("minutes_firing", F.lit(0.0)).alias("minutes_firing"),
            F.coalesce("episodes_caught", F.lit(0)).cast("long").alias("episodes_caught"),
            F.coalesce("episodes_total", F.lit(0)).cast("long").alias("episodes_total"),
        )
    )


def _firing(
    of_series: DataFrame, ordered_thresholds: Sequence[float], ordered_fors: Sequence[float], gap_seconds: float
) -> DataFrame:
    """Each (threshold, cluster, node) run at or over the threshold that lasts at least `for_seconds`, per
    `for_seconds`, with the interval it fires in (microseconds)."""
    over = F.filter(F.array(*(F.lit(float(t)) for t in ordered_thresholds)), lambda t: F.col("value") >= t)
    exploded = (
        of_series.where(F.col("value") >= ordered_thresholds[0])
        .select("timestamp", "cluster", "node", F.explode(over).alias("threshold"))
        .withColumn("peak_value", F.lit(None).cast("double"))
    )
    runs = islands(exploded, ("threshold", "cluster", "node"), gap_seconds)
    fors = of_series.sparkSession.createDataFrame([(float(f),) for f in ordered_fors], "for_seconds double")
    return (
        runs.crossJoin(F.broadcast(fors))
        .where(F.col("duration_seconds") >= F.col("for_seconds"))
        .withColumn("fire_start", _micros("start") + (F.col("for_seconds") * 1_000_000).cast("long"))
        .withColumn("fire_end", _micros("end"))
    )


# --- daily report ------------------------------------------------------------------------------------


def daily_summary(episode_rows: DataFrame, archive: DataFrame) -> DataFrame:
    """Per cluster and UTC day: episodes by kind, episode minutes, MTTR, worst lag, unreachable share.

    MTTR is the mean episode duration in minutes over every kind but controller churn (a churn run's
    length is the spacing of failovers, not a time to recover). Days with samples but no episode appear
    with zeros. Columns: date, cluster, episodes, <one column per kind>, episode_minutes, mttr_minutes,
    max_lag_records, unreachable_ratio.
    """
    dated = episode_rows.withColumn("date", F.to_date("start"))
    recoverable = F.col("kind") != Kind.CONTROLLER_CHURN.value
    counts = dated.groupBy("date", "cluster").agg(
        F.count(F.lit(1)).alias("episodes"),
        *(F.count(F.when(F.col("kind") == kind.value, 1)).alias(kind.value) for kind in Kind),
        (F.sum(F.when(recoverable, F.col("duration_seconds"))) / 60.0).alias("episode_minutes"),
        (F.avg(F.when(recoverable, F.col("duration_seconds"))) / 60.0).alias("mttr_minutes"),
    )
    samples = (
        archive.where(F.col("series").isin(LAG_RECORDS, UP_SERIES))
        .withColumn("date", F.to_date("timestamp"))
        .groupBy("date", "cluster")
        .agg(
            F.max(F.when(F.col("series") == LAG_RECORDS, F.col("value"))).alias("max_lag_records"),
            (
                F.count(F.when((F.col("series") == UP_SERIES) & (F.col("value") < 1), 1))
                / F.count(F.when(F.col("series") == UP_SERIES, 1))
            ).alias("unreachable_ratio"),
        )
    )
    zero_if_missing = [F.coalesce(kind.value, F.lit(0)).cast("long").alias(kind.value) for kind in Kind]
    return samples.join(counts, ["date", "cluster"], "full").select(
        "date",
        "cluster",
        F.coalesce("episodes", F.lit(0)).cast("long").alias("episodes"),
        *zero_if_missing,
        F.coalesce("episode_minutes", F.lit(0.0)).alias("episode_minutes"),
        "mttr_minutes",
        "max_lag_records",
        "unreachable_ratio",
    )


def worst_nodes(episode_rows: DataFrame, top: int = 3) -> DataFrame:
    """Per cluster and day, the `top` nodes with the most episode minutes (cluster-wide kinds excluded).

    Columns: date, cluster, rank, node, episodes, episode_minutes.
    """
    per_node = (
        episode_rows.where(F.col("node") != "")
        .withColumn("date", F.to_date("start"))
        .groupBy("date", "cluster", "node")
        .agg(
            F.count(F.lit(1)).alias("episodes"),
            (F.sum("duration_seconds") / 60.0).alias("episode_minutes"),
        )
    )
    ranking = Window.partitionBy("date", "cluster").orderBy(F.desc("episode_minutes"), F.desc("episodes"), "node")
    return (
        per_node.withColumn("rank", F.row_number().over(ranking))
        .where(F.col("rank") <= top)
        .select("date", "cluster", "rank", "node", "episodes", "episode_minutes")
    )
