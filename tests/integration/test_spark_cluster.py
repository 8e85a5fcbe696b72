"""The pipeline on a real Spark standalone cluster (a master and two workers, each its own process, from the
installed PySpark): `ctlplane pipeline sweep --master spark://…`, and `spark-submit` of the report job with
the code shipped as `ctlplane pipeline package`'s zip to a Python that cannot import ctlplane, write the same
tables (and report.html) as the local run on the same archive. Each job is an application whose JVMs start
cold (~50 s of a 2-core machine, minutes on a loaded one), so each path runs one job: the CLI's `--master`
is the same code for every job (`ctlplane/pipeline/session.py`), and the episodes job is not run on the
cluster on its own: the report job writes its table with the same transform (`transforms.episodes`, every
kind) and the same writer."""

from __future__ import annotations

import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pyarrow.parquet as pq  # type: ignore[import-untyped]  # pyarrow ships no type information
from pyspark.sql import SparkSession

from ctlplane.exporter.thresholds import HEALTH
from ctlplane.pipeline.args import DEFAULT_FOR_SECONDS, DEFAULT_THRESHOLDS
from ctlplane.pipeline.jobs import episodes, report, sweep
from ctlplane.pipeline.rules import rules_from_health
from harness.sparkcluster import SPARK_HOME, spark_env, standalone_cluster
from tests.background import NICE
from tests.integration.test_history_pipeline import write_fault_archive

# the tables each job run on the cluster writes (report.html is compared apart: it is text)
TABLES = {
    "sweep": ("sweep",),
    "report": ("report/episodes", "report/daily", "report/worst_nodes"),
}
# the job run through the CLI's --master (ctlplane installed)
VIA_CLI = "sweep"
# One 512 MB executor per worker (each offers 1 g), few shuffle partitions for a small archive, and the
# driver's and executors' JVMs with C1 only: each job is a new application whose JVMs start cold, and on
# 2 cores C2 compiling Spark's code paths cost more than the few seconds of work (~25 s -> ~16 s a job).
# Settings only; the jobs' code and plans are the product's.
JIT = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
CLUSTER_CONF = (
    "spark.executor.memory=512m",
    "spark.sql.shuffle.partitions=4",
    f"spark.driver.extraJavaOptions={JIT}",
    f"spark.executor.extraJavaOptions={JIT}",
)
# spark-submit ships the zip the same way for every job: one job through it, the one that uses the most
# (episodes, the daily summary, worst nodes and report.html written through the JVM's FileSystem)
SUBMITTED = "report"
PLOTLY_DIV_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _rows(out: Path, table: str) -> list[tuple[object, ...]]:
    return sorted((tuple(row.values()) for row in pq.read_table(out / table).to_pylist()), key=repr)


def _python_without_ctlplane(where: Path) -> Path:
    """This venv's Python with its site-packages on PYTHONPATH but `site` off: pyspark, pyarrow and pydantic
    import, the editable ctlplane install (a .pth hook) does not."""
    wrapper = where / "python-without-ctlplane"
    site = sysconfig.get_paths()["purelib"]
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH="${{PYTHONPATH:+$PYTHONPATH:}}{site}" exec {sys.executable} -S "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


def _report_html(out: Path) -> str:
    # plotly names each figure's <div> with a random uuid4; everything else must be the same
    return PLOTLY_DIV_ID.sub("<id>", (out / "report" / "report.html").read_text())


def _run(command: list[str], env: dict[str, str], cwd: Path | None = None) -> None:
    # the driver (and so its JVM) below the other tests, as the cluster's daemons and executors (tests/background.py)
    done = subprocess.run([*NICE, *command], env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{' '.join(command)}\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"


def test_jobs_on_a_standalone_cluster_write_what_the_local_run_writes(spark: SparkSession, tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    write_fault_archive(archive)

    bundle = tmp_path / "bundle"
    env = spark_env(tmp_path / "spark")  # loopback only (SPARK_LOCAL_IP), as the cluster's daemons
    _run([sys.executable, "-m", "ctlplane.cli", "pipeline", "package", "--out", str(bundle)], env)
    bare_python = _python_without_ctlplane(tmp_path)
    probe = subprocess.run([str(bare_python), "-c", "import pyspark, pyarrow, pydantic, yaml; import ctlplane"],
                           cwd=tmp_path, capture_output=True, text=True)  # fmt: skip
    assert probe.returncode != 0 and "No module named 'ctlplane'" in probe.stderr, probe.stderr  # the test can fail

    conf = [arg for setting in CLUSTER_CONF for arg in ("--conf", setting)]
    with standalone_cluster(tmp_path / "spark", workers=2, prefix=NICE) as cluster:
        # the reference, run while the cluster's daemons start: the same jobs with the CLI's defaults (no
        # --config: the default thresholds, a 15 s interval) on the local master; the episodes job's table is
        # the report's own (the same transform), as the cluster's run of the report shows
        local = tmp_path / "local"
        rules = rules_from_health(HEALTH, 15.0)
        assert episodes.run(spark, str(archive), str(local), rules) > 0
        assert sweep.run(spark, str(archive), str(local), rules, "kafka_broker_metadata_lag_records",
                         DEFAULT_THRESHOLDS, DEFAULT_FOR_SECONDS) > 0  # fmt: skip
        assert report.run(spark, str(archive), str(local), rules) > 0
        spark.stop()  # the cluster's JVMs get the cores
        cluster.wait_ready()
        via_cli = tmp_path / "cli"
        _run([sys.executable, "-m", "ctlplane.cli", "pipeline", VIA_CLI, "--master", cluster.master_url,
              "--archive", str(archive), "--out", str(via_cli), "--no-progress", *conf], env)  # fmt: skip
        via_submit = tmp_path / "submit"
        bare = {**env, "PYSPARK_PYTHON": str(bare_python), "PYSPARK_DRIVER_PYTHON": str(bare_python)}
        _run([str(SPARK_HOME / "bin" / "spark-submit"), "--master", cluster.master_url,
              "--py-files", str(bundle / "ctlplane-pipeline.zip"), *conf, str(bundle / f"{SUBMITTED}.py"),
              "--archive", str(archive), "--out", str(via_submit), "--no-progress"], bare, cwd=tmp_path)  # fmt: skip
        state = cluster.state()
    # every job was an application of this master, and each ran an executor on both workers
    applications = 2
    completed = state["completedapps"]
    assert isinstance(completed, list) and len(completed) == applications, completed
    for worker in sorted(p for p in (tmp_path / "spark").glob("worker-*") if p.is_dir()):
        assert len(list(worker.glob("app-*"))) == applications, worker

    # the episodes job writes what the report's episodes table holds, which the cluster wrote below
    assert _rows(local, "episodes") == _rows(local, "report/episodes")
    for out, job in ((via_cli, VIA_CLI), (via_submit, SUBMITTED)):
        for table in TABLES[job]:
            assert _rows(out, table) == _rows(local, table), (out.name, job, table)
    assert _report_html(via_submit) == _report_html(local)
