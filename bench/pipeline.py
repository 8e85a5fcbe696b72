"""Time the `episodes` and `sweep` jobs on Spark local[2] against the same episode SQL in DuckDB.

    .venv/bin/python -m bench.pipeline --rows 10 50 --dir /tmp/ctlplane-bench

(As a module: run as a script, bench/ would come first on sys.path and this file would shadow `pipeline`.)

Generates an archive in the exporter's own layout (ctlplane.exporter.history.archive.write_partitioned): 20 clusters x
6 nodes x 5 series every 15 s with deterministic faults, plus each cluster's count of active
controllers (the exporter's own series), then times each engine reading that Parquet and writing its
result as Parquet, on the files as written and on a copy compacted by `ctlplane.exporter.history.archive.compact` (what
the exporter does to each closed day). DuckDB is a bench-only dependency.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import shutil
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type information
from pyspark.sql import SparkSession

from bench.machine import load
from ctlplane.exporter.history.archive import compact, write_partitioned
from ctlplane.exporter.history.table import ACTIVE_CONTROLLERS_SERIES, HISTORY_SCHEMA
from ctlplane.pipeline import transforms
from ctlplane.pipeline.io import read_archive, write_table
from ctlplane.pipeline.rules import EpisodeRules, Kind
from ctlplane.pipeline.session import build_session
from harness.sparkcluster import standalone_cluster

CLUSTERS, NODES, INTERVAL = 20, 6, 15.0
T0_US = 1_714_521_600_000_000  # 2024-05-01T00:00:00Z
SERIES = ("kafka_broker_metadata_lag_records", "ctlplane_up", "kafka_broker_lifecycle_state",
          "kafka_controller_active", "kafka_control_plane_request_queue_size")  # fmt: skip
RULES = EpisodeRules(interval_seconds=INTERVAL)


def generate(root: Path, million_rows: int) -> int:
    """Write about `million_rows` M rows; returns the exact count."""
    per_round = CLUSTERS * NODES * len(SERIES)
    rounds = million_rows * 1_000_000 // per_round
    sequence = itertools.count(1)
    total = 0
    for first in range(0, rounds, 2000):  # 2000 rounds (8h20m) per batch keeps memory small
        r = np.arange(first, min(rounds, first + 2000))
        grid_c, grid_n = np.meshgrid(np.arange(CLUSTERS), np.arange(NODES), indexing="ij")
        c, n = grid_c.ravel(), grid_n.ravel()
        rr = np.repeat(r, len(c))
        cc, nn = np.tile(c, len(r)), np.tile(n, len(r))
        key = cc * NODES + nn
        lag = np.where((rr + key * 37) % 400 < 8, 5000.0, 10.0)
        up = np.where((rr + key * 53) % 997 < 3, 0.0, 1.0)
        fenced = (rr + key * 71) % 613 < 4
        leader = np.where((rr + cc * 11) % 500 < 3, 0.0, 1.0)
        second = np.where((rr + cc * 13) % 700 < 3, 1.0, 0.0)
        active = np.where(nn == 0, leader, np.where(nn == 1, second, 0.0))
        queue = np.where((rr + key * 29) % 800 < 6, 18.0, 1.0)
        k = len(rr)
        values = np.concatenate([lag, up, np.ones(k), active, queue])
        labels = np.concatenate(
            [np.full(k, ""), np.full(k, ""), np.where(fenced, "state=FENCED", "state=ACTIVE"),
             np.full(k, ""), np.full(k, "")]
        )  # fmt: skip
        states = np.where(fenced, "FENCED", "ACTIVE")
        table = pa.table(
            {
                "timestamp": pa.array(np.tile(T0_US + rr * int(INTERVAL * 1e6), 5)).cast(
                    HISTORY_SCHEMA.field("timestamp").type
                ),
                "cluster": pa.array(np.tile(np.char.add("c", cc.astype(str)), 5)),
                "node": pa.array(np.tile(np.char.add("n", nn.astype(str)), 5)),
                "role": pa.array(np.full(5 * k, "combined")),
                "series": pa.array(np.repeat(np.array(SERIES), k)),
                "labels": pa.array(labels),
                "value": pa.array(values),
                "state": pa.array(np.tile(states, 5)),
            },
            schema=HISTORY_SCHEMA,
        )
        # the exporter's own count per cluster and round (node ""), what the controller episodes read
        rounds_c, clusters_c = np.repeat(r, CLUSTERS), np.tile(np.arange(CLUSTERS), len(r))
        counted = np.where((rounds_c + clusters_c * 11) % 500 < 3, 0.0, 1.0) + np.where(
            (rounds_c + clusters_c * 13) % 700 < 3, 1.0, 0.0
        )
        n_c = len(rounds_c)
        cluster_rows = pa.table(
            {
                "timestamp": pa.array(T0_US + rounds_c * int(INTERVAL * 1e6)).cast(
                    HISTORY_SCHEMA.field("timestamp").type
                ),
                "cluster": pa.array(np.char.add("c", clusters_c.astype(str))),
                "node": pa.array(np.full(n_c, "")),
                "role": pa.array(np.full(n_c, "")),
                "series": pa.array(np.full(n_c, ACTIVE_CONTROLLERS_SERIES)),
                "labels": pa.array(np.full(n_c, "")),
                "value": pa.array(counted),
                "state": pa.nulls(n_c, pa.string()),
            },
            schema=HISTORY_SCHEMA,
        )
        table = pa.concat_tables([table, cluster_rows])
        write_partitioned(root, table, lambda: next(sequence))
        total += table.num_rows
    return total


def duckdb_episodes(root: Path, out: Path) -> int:
    gap = int(RULES.gap_seconds * 1e6)
    files = f"{root}/date=*/cluster=*/part-*.parquet"
    sql = f"""
    COPY (
    WITH src AS (SELECT timestamp, cluster, node, series, labels, value FROM read_parquet('{files}')
                 WHERE series IN {tuple(transforms.EPISODE_SERIES)}),
    q AS (
      SELECT cluster, node, 'stale_metadata' AS kind, timestamp,
             max(CASE WHEN series = '{transforms.LAG_RECORDS}' THEN value END) AS peak
      FROM src WHERE (series = '{transforms.LAG_RECORDS}' AND value >= {RULES.metadata_stale_records})
                  OR (series = '{transforms.LAG_SECONDS}' AND value >= {RULES.metadata_stale_seconds})
                  OR (series = '{transforms.FROZEN}' AND value >= 1) GROUP BY ALL
      UNION ALL SELECT cluster, node, 'fenced', timestamp, NULL FROM src
        WHERE series = 'kafka_broker_lifecycle_state' AND labels = 'state=FENCED' AND value >= 1 GROUP BY ALL
      UNION ALL SELECT cluster, node, 'unreachable', timestamp, NULL FROM src
        WHERE series = 'ctlplane_up' AND value < 1 GROUP BY ALL
      UNION ALL SELECT cluster, node, 'control_plane_saturated', timestamp,
             max(CASE WHEN series = '{transforms.QUEUE_SIZE}' THEN value END) FROM src
        WHERE (series = '{transforms.QUEUE_SIZE}' AND value >= {RULES.queue_saturation_size})
           OR (series IN {transforms.IDLE_RATIOS} AND value < {RULES.idle_saturation_ratio}) GROUP BY ALL
      UNION ALL SELECT cluster, '', CASE WHEN value < 0.5 THEN 'no_active_controller'
             ELSE 'several_active_controllers' END, timestamp, max(value) FROM src
        WHERE series = '{ACTIVE_CONTROLLERS_SERIES}' AND (value < 0.5 OR value >= 1.5) GROUP BY ALL),
    f AS (SELECT *, CASE WHEN lag(timestamp) OVER w IS NULL
                  OR epoch_us(timestamp) - epoch_us(lag(timestamp) OVER w) > {gap} THEN 1 ELSE 0 END AS brk
          FROM q WINDOW w AS (PARTITION BY cluster, node, kind ORDER BY timestamp)),
    i AS (SELECT *, sum(brk) OVER (PARTITION BY cluster, node, kind ORDER BY timestamp
                                   ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS island FROM f)
    SELECT cluster, node, kind, min(timestamp) AS start, max(timestamp) AS "end",
           (epoch_us(max(timestamp)) - epoch_us(min(timestamp))) / 1e6 AS duration_seconds,
           max(peak) AS peak, count(*) AS samples
    FROM i GROUP BY cluster, node, kind, island
    HAVING duration_seconds >= CASE kind WHEN 'control_plane_saturated' THEN 60 ELSE 30 END
    ) TO '{out}' (FORMAT parquet)
    """
    connection = duckdb.connect()
    connection.execute("SET threads = 2")
    connection.execute(sql)
    row = connection.execute(f"SELECT count(*) FROM read_parquet('{out}')").fetchone()
    assert row is not None, "count(*) always answers one row"
    count: int = row[0]
    connection.close()
    return count


def timed(action: Callable[[], int], repeats: int) -> tuple[list[float], int]:
    seconds = []
    result = 0
    for _ in range(repeats):
        started = time.perf_counter()
        result = action()
        seconds.append(time.perf_counter() - started)
    return seconds, result


def episodes_on_spark(spark: SparkSession, root: Path, out: Path) -> int:
    rows = read_archive(spark, str(root), series=transforms.EPISODE_SERIES)
    found = transforms.episodes(rows, RULES, [k for k in Kind if k is not Kind.CONTROLLER_CHURN])
    write_table(found, f"{out}/spark_episodes")
    return spark.read.parquet(f"{out}/spark_episodes").count()


def measure(spark: SparkSession, millions: int, layout: str, root: Path, out: Path, repeats: int) -> None:
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    files = sum(1 for _ in root.glob("date=*/cluster=*/*.parquet"))

    def spark_episodes() -> int:
        return episodes_on_spark(spark, root, out)

    def spark_sweep() -> int:
        rows = read_archive(spark, str(root), series=transforms.EPISODE_SERIES)
        reference = transforms.episodes(rows, RULES, [Kind.STALE_METADATA])
        table = transforms.sweep(rows, transforms.LAG_RECORDS, [100, 250, 500, 1000, 2500, 5000, 10000, 25000],
                                 [0, 15, 30, 60, 120, 300, 600], RULES.gap_seconds, reference)  # fmt: skip
        write_table(table, f"{out}/spark_sweep")
        return spark.read.parquet(f"{out}/spark_sweep").count()

    def duck() -> int:
        return duckdb_episodes(root, out / "duckdb_episodes.parquet")

    results = {}
    label = f"{millions}M {layout} ({files} files)"
    for name, action in (("spark episodes", spark_episodes), ("spark sweep", spark_sweep), ("duckdb episodes", duck)):
        first, _ = timed(action, 1)
        runs, count = timed(action, repeats)
        results[name] = statistics.median(runs)
        print(f"{label} {name:<16} first {first[0]:6.2f} s  median {results[name]:6.2f} s  "
              f"runs {' '.join(f'{s:.2f}' for s in runs)}  -> {count} rows")  # fmt: skip
    print(f"{label}: {load()}")
    ratio = results["spark episodes"] / results["duckdb episodes"]
    # the targets: <= 3x at 10 M rows, <= 2x at 50 M (Spark's fixed cost per job amortised)
    target = 3.0 if millions < 50 else 2.0
    print(f"{label} episodes Spark / DuckDB = {ratio:.2f}x (target <= {target:g}x)")


def cluster_scaling(archives: list[tuple[int, Path]], workers: list[int], workdir: Path, repeats: int) -> None:
    """The episodes job on a real standalone cluster (harness.sparkcluster) of each number of workers, one core
    and one executor each, the driver in this process; the scaling figure is the 1-worker median over the
    N-worker one (N at most the machine's cores: more workers than cores only share them)."""
    medians: dict[tuple[int, int], float] = {}
    for count in workers:
        with standalone_cluster(workdir / f"workers-{count}", workers=count, cores=1, memory="1g") as cluster:
            cluster.wait_ready()
            print(f"standalone cluster of {count} worker(s) ready; {load()}")
            conf = {"spark.executor.memory": "768m", "spark.sql.shuffle.partitions": str(2 * count)}
            spark = build_session(cluster.master_url, f"ctlplane-bench-{count}-workers", conf, progress=False)
            spark.sparkContext.setLogLevel("ERROR")
            try:
                for millions, root in archives:
                    action = functools.partial(episodes_on_spark, spark, root, workdir / f"out-{count}-{millions}")
                    first, _ = timed(action, 1)
                    runs, found = timed(action, repeats)
                    median = medians[(count, millions)] = statistics.median(runs)
                    print(f"{millions}M compacted, standalone {count} worker(s) x 1 core: episodes "
                          f"first {first[0]:6.2f} s  median {median:6.2f} s  "
                          f"runs {' '.join(f'{s:.2f}' for s in runs)}  -> {found} rows")  # fmt: skip
            finally:
                spark.stop()
    for millions, _ in archives:
        for count in workers[1:]:
            speedup = medians[(workers[0], millions)] / medians[(count, millions)]
            print(f"{millions}M compacted: {workers[0]} -> {count} workers = {speedup:.2f}x faster "
                  f"(ideal {count / workers[0]:g}x)")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, nargs="+", default=[10, 50], help="millions of rows per data set")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/ctlplane-bench"))
    parser.add_argument("--repeats", type=int, default=3, help="timed runs after one warm-up (median shown)")
    parser.add_argument("--no-local", action="store_true",
                        help="skip the local[2] runs (the archives are made all the same)")  # fmt: skip
    parser.add_argument("--workers", type=int, nargs="*", default=[1, 2],
                        help="standalone clusters of these many 1-core workers run the episodes job on the "
                             "compacted archives after the local runs (none: skip)")  # fmt: skip
    args = parser.parse_args()
    spark = build_session("local[2]", "ctlplane-bench", {"spark.driver.memory": "2g"}, progress=False)
    spark.sparkContext.setLogLevel("ERROR")
    try:
        for millions in args.rows:
            root = args.dir / f"m{millions}"
            if not root.exists():
                started = time.perf_counter()
                # the history writer makes the directories under its root, whose parent must exist (as the
                # exporter's history.path's does)
                args.dir.mkdir(parents=True, exist_ok=True)
                rows = generate(root, millions)
                print(f"generated {rows:,} rows in {time.perf_counter() - started:.1f} s -> {root}")
            compacted = args.dir / f"m{millions}-compacted"
            if not compacted.exists():
                shutil.copytree(root, compacted)
                started = time.perf_counter()
                done = compact(compacted, now=time.time(), close_after_seconds=0)
                files = sum(len(c.removed) for c in done), sum(len(c.merged) for c in done)
                print(f"compacted {files[0]} files into {files[1]} in {time.perf_counter() - started:.1f} s "
                      f"(ctlplane.exporter.history.archive.compact) -> {compacted}")  # fmt: skip
            for layout, archive in (("as written", root), ("compacted", compacted)):
                if not args.no_local:
                    measure(spark, millions, layout, archive, args.dir / f"out{millions}", args.repeats)
    finally:
        spark.stop()
    if args.workers:
        archives = [(millions, args.dir / f"m{millions}-compacted") for millions in args.rows]
        cluster_scaling(archives, args.workers, args.dir / "standalone", args.repeats)


if __name__ == "__main__":
    main()
