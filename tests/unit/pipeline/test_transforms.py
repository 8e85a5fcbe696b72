from __future__ import annotations

from functools import reduce
from pathlib import Path

import pytest
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import types as T
from pyspark.testing import assertDataFrameEqual

from ctlplane.exporter.history.table import ACTIVE_CONTROLLERS_SERIES, HISTORY_SCHEMA
from ctlplane.pipeline import transforms
from ctlplane.pipeline.io import read_archive
from ctlplane.pipeline.rules import EpisodeRules, Kind
from ctlplane.pipeline.schema import history_struct
from tests.unit.pipeline.frames import EPISODE_DDL, archive, at, episode, row

RULES = EpisodeRules()  # 15 s interval, gap 22.5 s, stale at 1000 records / 15 s, min 30 s (saturation 60 s)
LAG = transforms.LAG_RECORDS
CONTROLLERS = ACTIVE_CONTROLLERS_SERIES


def test_history_struct_is_derived_from_the_arrow_schema() -> None:
    struct = history_struct()
    assert [(f.name, f.nullable) for f in struct] == [(f.name, f.nullable) for f in HISTORY_SCHEMA]
    assert [f.dataType for f in struct] == [
        T.TimestampType(), *[T.StringType()] * 5, T.DoubleType(), T.StringType()
    ]  # fmt: skip


def test_stale_metadata_episodes_threshold_minimum_and_gap(spark: SparkSession) -> None:
    rows = [
        # b1: one episode 15..60 (peak 5000), then a one-sample flap at 150 (shorter than 30 s: dropped)
        *(row(t, "b1", LAG, v) for t, v in ((0, 10), (15, 1500), (30, 2000), (45, 5000), (60, 1200), (75, 10))),
        row(150, "b1", LAG, 3000),
        # b2: lag in seconds over 15 s, records fine: an episode with no records peak
        *(row(t, "b2", transforms.LAG_SECONDS, 20) for t in (300, 315, 330, 345)),
        *(row(t, "b2", LAG, 0) for t in (300, 315, 330, 345)),
        # b3: a missed scrape at 45 (a 30 s gap > 22.5 s) splits the run in two
        *(row(t, "b3", LAG, 2000) for t in (0, 15, 30, 60, 75, 90)),
        # b4: applied offset frozen
        *(row(t, "b4", transforms.FROZEN, 1) for t in (0, 15, 30)),
        row(45, "b4", transforms.FROZEN, 0),
    ]
    expected = [
        episode("stale_metadata", 15, 60, 5000.0, 4, node="b1"),
        episode("stale_metadata", 300, 345, None, 4, node="b2"),
        episode("stale_metadata", 0, 30, 2000.0, 3, node="b3"),
        episode("stale_metadata", 60, 90, 2000.0, 3, node="b3"),
        episode("stale_metadata", 0, 30, None, 3, node="b4"),
    ]
    actual = transforms.episodes(archive(spark, rows), RULES, [Kind.STALE_METADATA])
    assertDataFrameEqual(actual, spark.createDataFrame(expected, EPISODE_DDL), checkRowOrder=False)


def test_episodes_of_every_kind(spark: SparkSession) -> None:
    times = range(0, 135, 15)
    rows = [
        # b1 fenced 0..45, then active
        *(row(t, "b1", "kafka_broker_lifecycle_state", 1, "state=FENCED") for t in (0, 15, 30, 45)),
        *(row(t, "b1", "kafka_broker_lifecycle_state", 1, "state=ACTIVE") for t in range(60, 135, 15)),
        # every node's up flag each round; b2 unreachable 30..60; k2 is read 3 s into each round
        *(row(t, n, "ctlplane_up", 0 if n == "b2" and 30 <= t <= 60 else 1) for t in times for n in ("b1", "b2", "k1")),
        *(row(t + 3, "k2", "ctlplane_up", 1) for t in times),
        # the exporter's count of active controllers: two at 0..30, none at 75..105
        *(row(t, "", CONTROLLERS, 2 if t <= 30 else 0 if 75 <= t <= 105 else 1) for t in times),
        # b1 control-plane queue at 18 of 20 for 60 s
        *(row(t, "b1", transforms.QUEUE_SIZE, 18) for t in (0, 15, 30, 45, 60)),
        row(75, "b1", transforms.QUEUE_SIZE, 2),
        # failovers at 15, 45 and 60 (three within 10 minutes: churn); the counter resets at 105
        *(row(t, "", transforms.FAILOVERS, v) for t, v in zip(times, (0, 1, 1, 2, 3, 3, 3, 0, 0), strict=True)),
    ]
    expected = [
        episode("fenced", 0, 45, None, 4, node="b1"),
        episode("unreachable", 30, 60, None, 3, node="b2"),
        episode("several_active_controllers", 0, 30, 2.0, 3, node=""),
        episode("no_active_controller", 75, 105, 0.0, 3, node=""),
        episode("control_plane_saturated", 0, 60, 18.0, 5, node="b1"),
        episode("controller_churn", 15, 60, 3.0, 3, node=""),
    ]
    actual = transforms.episodes(archive(spark, rows), RULES)
    assertDataFrameEqual(actual, spark.createDataFrame(expected, EPISODE_DDL), checkRowOrder=False)


def _mixed_archive(spark: SparkSession) -> DataFrame:
    """Every kind at once, overlapping in time and node (b2 is unreachable while it also counts in the
    controller buckets; b1 is fenced, stale and saturated at the same rounds)."""
    times = range(0, 180, 15)
    return archive(
        spark,
        [
            *(
                row(t, n, "ctlplane_up", 0 if n == "b2" and 30 <= t <= 75 else 1)
                for t in times
                for n in ("b1", "b2", "k1")
            ),
            *(row(t, "", CONTROLLERS, 2 if t <= 45 else 0 if 90 <= t <= 135 else 1) for t in times),
            *(
                row(t, "b1", "kafka_broker_lifecycle_state", 1, "state=FENCED" if t <= 60 else "state=ACTIVE")
                for t in times
            ),
            *(row(t, "b1", LAG, 5000 if 15 <= t <= 90 else 5) for t in times),
            *(row(t, "b1", transforms.LAG_SECONDS, 40 if 30 <= t <= 120 else 0) for t in times),
            *(row(t, "b1", transforms.QUEUE_SIZE, 19 if t <= 105 else 1) for t in times),
            *(row(t, "b1", transforms.IDLE_RATIOS[0], 0.01 if 60 <= t <= 150 else 0.9) for t in times),
            *(
                row(t, "", transforms.FAILOVERS, v)
                for t, v in zip(times, (0, 1, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3), strict=True)
            ),
        ],
    )


def test_each_kind_alone_is_its_slice_of_every_kind(spark: SparkSession) -> None:
    rows = _mixed_archive(spark)
    every = transforms.episodes(rows, RULES)
    assert {r.kind for r in every.select("kind").distinct().collect()} == {k.value for k in Kind}
    for kind in Kind:
        alone = transforms.episodes(rows, RULES, [kind])
        assertDataFrameEqual(alone, every.where(every.kind == kind.value), checkRowOrder=False)


def test_the_controller_episodes_count_what_the_exporter_counts_not_every_claim(spark: SparkSession) -> None:
    # During a ZooKeeper migration's PRE_MIGRATION the ZooKeeper brokers' controller claims beside the
    # KRaft controller (seen on 3.9.2; ctlplane/exporter/health/controller.py `_claimants`): two
    # ActiveControllerCount=1, one controller. The rules page on kafka_cluster_active_controllers, so the
    # episodes must too.
    times = range(0, 120, 15)
    rows = [
        *(row(t, "kraft-1", "kafka_controller_active", 1) for t in times),
        *(row(t, "zk-broker-1", "kafka_controller_active", 1) for t in times),
        *(row(t, "", CONTROLLERS, 1) for t in times),
    ]
    found = transforms.episodes(archive(spark, rows), RULES)
    assert found.collect() == []


def test_the_jobs_load_every_series_a_kind_reads(spark: SparkSession) -> None:
    # the jobs read only EPISODE_SERIES (pushed into the Parquet scan): a kind reading another series
    # would silently find nothing
    read = {series for condition in transforms.conditions(RULES).values() for series in condition.series}
    assert read | {transforms.FAILOVERS} <= set(transforms.EPISODE_SERIES)


def test_a_sample_qualifies_for_one_kind_at_most(spark: SparkSession) -> None:
    # the single pass labels each sample with one CASE: a sample two kinds claim would hide one of them
    values = (0.0, 0.01, 0.5, 1.0, 1.5, 2.0, 18.0, 100.0, 5000.0)
    probes = [
        row(0, "b1", series, value, labels)
        for condition in transforms.conditions(RULES).values()
        for series in condition.series
        for value in values
        for labels in ("", "state=FENCED")
    ]
    qualifies = [c.qualifies.cast("int") for c in transforms.conditions(RULES).values()]
    most = archive(spark, probes).select(reduce(Column.__add__, qualifies).alias("kinds")).agg({"kinds": "max"})
    assert most.collect()[0][0] == 1


def test_every_sample_seen_twice_changes_no_result(spark: SparkSession) -> None:
    # What readers see between a compaction's rename of its merged file and the deletion of its sources
    # (ctlplane/exporter/history/ `compact`): each row of that day twice. Every job must give the same answer.
    rows = _mixed_archive(spark)
    twice = rows.unionByName(rows)
    found, found_twice = transforms.episodes(rows, RULES), transforms.episodes(twice, RULES)
    assertDataFrameEqual(found_twice, found, checkRowOrder=False)
    thresholds, fors = [1000, 5000], [0, 30]
    assertDataFrameEqual(
        transforms.sweep(twice, LAG, thresholds, fors, RULES.gap_seconds, found_twice),
        transforms.sweep(rows, LAG, thresholds, fors, RULES.gap_seconds, found),
        checkRowOrder=False,
    )
    assertDataFrameEqual(
        transforms.daily_summary(found_twice, twice), transforms.daily_summary(found, rows), checkRowOrder=False
    )
    assertDataFrameEqual(transforms.worst_nodes(found_twice), transforms.worst_nodes(found), checkRowOrder=False)


def _in_plan(frame: DataFrame, operator: str) -> int:
    """How many times `operator` appears in the frame's executed plan."""
    plan: str = frame._jdf.queryExecution().executedPlan().toString()
    return plan.count(operator)


SCAN, SHUFFLE = "FileScan parquet", "Exchange hashpartitioning"


@pytest.fixture
def mixed_rows(spark: SparkSession, tmp_path: Path) -> DataFrame:
    """The mixed archive written as the exporter partitions it and read back for the episode series."""
    _mixed_archive(spark).write.partitionBy("cluster").parquet(str(tmp_path / "archive"))
    return read_archive(spark, str(tmp_path / "archive"), series=transforms.EPISODE_SERIES)


def test_the_episodes_of_every_kind_but_churn_read_the_archive_once(mixed_rows: DataFrame) -> None:
    # One scan, not one per detector: on 10 M rows each pass over the Parquet costs ~0.4-0.7 s on two
    # cores (bench/pipeline.py). Churn reads its own series again (a lag over the failover counter).
    but_churn = [k for k in Kind if k is not Kind.CONTROLLER_CHURN]
    assert _in_plan(transforms.episodes(mixed_rows, RULES, but_churn), SCAN) == 1
    assert _in_plan(transforms.episodes(mixed_rows, RULES, [Kind.NO_ACTIVE_CONTROLLER]), SCAN) == 1
    assert _in_plan(transforms.episodes(mixed_rows, RULES), SCAN) == 2


def test_the_episodes_of_every_kind_but_churn_shuffle_once(mixed_rows: DataFrame) -> None:
    # The round's peak and the islands both group by (cluster, node, kind) first: one shuffle by those keys
    # serves both, where planning each on its own keys shuffled twice (bench/pipeline.py: ~0.4 s of a 10 M
    # row job's ~2 s on two cores, a stage and its tasks)
    but_churn = [k for k in Kind if k is not Kind.CONTROLLER_CHURN]
    assert _in_plan(transforms.episodes(mixed_rows, RULES, but_churn), SHUFFLE) == 1


def test_sweep_pages_minutes_and_caught_match_a_hand_computed_case(spark: SparkSession) -> None:
    lag = [(0, 600), (15, 1200), (30, 1200), (45, 600), (60, 50), *((t, 3000) for t in range(300, 375, 15))]
    rows = [*(row(t, "b1", LAG, v) for t, v in lag), row(0, "b9", LAG, 10, cluster="c2")]
    reference = spark.createDataFrame(
        [episode("stale_metadata", 0, 45, None, 4), episode("stale_metadata", 300, 360, None, 5)], EPISODE_DDL
    )
    # >= 500: runs 0..45 (45 s) and 300..360 (60 s); >= 1000: runs 15..30 (15 s) and 300..360 (60 s).
    # for 30 s: 500 fires 15 + 30 s, 1000 fires only the long run (30 s) from 330, catching one episode.
    expected = [
        ("c1", 500.0, 0.0, 2, 105 / 60, 2, 2),
        ("c1", 500.0, 30.0, 2, 45 / 60, 2, 2),
        ("c1", 1000.0, 0.0, 2, 75 / 60, 2, 2),
        ("c1", 1000.0, 30.0, 1, 30 / 60, 1, 2),
        *(("c2", thr, f, 0, 0.0, 0, 0) for thr in (500.0, 1000.0) for f in (0.0, 30.0)),
    ]
    actual = transforms.sweep(archive(spark, rows), LAG, [1000, 500], [30, 0], RULES.gap_seconds, reference)
    ddl = (
        "cluster string, threshold double, for_seconds double, pages long, minutes_firing double, "
        "episodes_caught long, episodes_total long"
    )
    assertDataFrameEqual(actual, spark.createDataFrame(expected, ddl), checkRowOrder=False)


def test_sweep_of_the_unplanned_fencing_flag_counts_what_the_15_s_rule_would_page(spark: SparkSession) -> None:
    # docs/alerts.md: `ctlplane pipeline sweep --series kafka_broker_fenced_unplanned --thresholds 1 --for ...`
    flag = "kafka_broker_fenced_unplanned"
    crash = [(0, 0), (15, 1), (30, 1), (45, 1), (60, 1), (75, 0)]
    rows = [
        *(row(t, "b1", flag, v) for t, v in crash),
        *(row(t, "b2", flag, 1 if t == 30 else 0) for t in range(0, 90, 15)),  # one round: a blip
        *(row(t, "b3", flag, 0) for t in range(0, 90, 15)),  # a restart: FENCED maybe, never unplanned
    ]
    none = spark.createDataFrame([], EPISODE_DDL)
    actual = transforms.sweep(archive(spark, rows), flag, [1], [0, 15, 30], RULES.gap_seconds, none)
    expected = [("c1", 1.0, 0.0, 2, 45 / 60), ("c1", 1.0, 15.0, 1, 30 / 60), ("c1", 1.0, 30.0, 1, 15 / 60)]
    assertDataFrameEqual(
        actual.select("cluster", "threshold", "for_seconds", "pages", "minutes_firing"),
        spark.createDataFrame(
            expected, "cluster string, threshold double, for_seconds double, pages long, minutes_firing double"
        ),
        checkRowOrder=False,
    )


def test_daily_summary_and_worst_nodes(spark: SparkSession) -> None:
    day2 = 86_400
    found = spark.createDataFrame(
        [
            episode("fenced", 0, 120, None, 9, node="b1"),
            episode("stale_metadata", 600, 660, 4000.0, 5, node="b2"),
            episode("unreachable", 900, 1200, None, 21, node="b2"),
            episode("controller_churn", 0, 500, 3.0, 3, node=""),
            episode("fenced", day2, day2 + 60, None, 5, node="b1"),
        ],
        EPISODE_DDL,
    )
    rows = archive(
        spark,
        [
            row(0, "b1", LAG, 4000),
            row(15, "b1", LAG, 100),
            row(0, "b1", "ctlplane_up", 1),
            row(0, "b2", "ctlplane_up", 0),
            row(15, "b1", "ctlplane_up", 1),
            row(15, "b2", "ctlplane_up", 1),
            row(0, "b1", "ctlplane_up", 1, cluster="c2"),  # a quiet cluster: a row of zeros
        ],
    )
    kinds = [k.value for k in Kind]
    zeros = dict.fromkeys(kinds, 0)
    day1_counts = {**zeros, "fenced": 1, "stale_metadata": 1, "unreachable": 1, "controller_churn": 1}
    day2_counts = {**zeros, "fenced": 1}
    expected_daily = spark.createDataFrame(
        [
            (at(0).date(), "c1", 4, *day1_counts.values(), 8.0, 8.0 / 3, 4000.0, 0.25),
            (at(day2).date(), "c1", 1, *day2_counts.values(), 1.0, 1.0, None, None),
            (at(0).date(), "c2", 0, *zeros.values(), 0.0, None, None, 0.0),
        ],
        "date date, cluster string, episodes long, "
        + ", ".join(f"{k} long" for k in kinds)
        + ", episode_minutes double, mttr_minutes double, max_lag_records double, unreachable_ratio double",
    )
    assertDataFrameEqual(transforms.daily_summary(found, rows), expected_daily, checkRowOrder=False)
    expected_worst = spark.createDataFrame(
        [
            (at(0).date(), "c1", 1, "b2", 2, 6.0),
            (at(0).date(), "c1", 2, "b1", 1, 2.0),
            (at(day2).date(), "c1", 1, "b1", 1, 1.0),
        ],
        "date date, cluster string, rank int, node string, episodes long, episode_minutes double",
    )
    assertDataFrameEqual(transforms.worst_nodes(found), expected_worst, checkRowOrder=False)
