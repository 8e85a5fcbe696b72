"""The Spark jobs import only the archive's table and the thresholds from the exporter: nothing of its HTTP
side, config loading or JMX reaches a Spark driver started by spark-submit."""

from __future__ import annotations

import json
import subprocess
import sys

JOBS = ("ctlplane.pipeline.jobs.episodes", "ctlplane.pipeline.jobs.sweep", "ctlplane.pipeline.jobs.report")
# what the exporter's other modules would bring: the config model, its YAML, the HTTP and exposition side, JMX
NOT_ON_A_DRIVER = ("pydantic", "yaml", "prometheus_client", "fastapi", "uvicorn", "jpype", "dash")


def test_the_jobs_import_the_history_table_and_the_thresholds_and_nothing_heavier() -> None:
    probe = (
        "import importlib, json, sys\n"
        f"for job in {JOBS!r}: importlib.import_module(job)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    modules = set(json.loads(done.stdout))
    exporter = sorted(m for m in modules if m.startswith("ctlplane.exporter."))
    assert exporter == ["ctlplane.exporter.history", "ctlplane.exporter.history.table", "ctlplane.exporter.thresholds"]
    assert not [m for m in NOT_ON_A_DRIVER if m in modules]
