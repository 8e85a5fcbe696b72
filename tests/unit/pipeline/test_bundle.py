"""`ctlplane pipeline package`: the zip spark-submit ships and the job scripts it runs (the real cluster run
is tests/integration/test_spark_cluster.py)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from ctlplane.cli import main
from ctlplane.pipeline.bundle import JOBS, write_bundle

ROOT = Path(__file__).resolve().parents[3]


def test_the_zip_holds_the_packages_the_jobs_import_and_nothing_compiled(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path)
    names = zipfile.ZipFile(bundle.zip_path).namelist()
    for module in (
        "ctlplane/pipeline/jobs/episodes.py",
        "ctlplane/pipeline/transforms.py",
        "ctlplane/exporter/config/__init__.py",
        "ctlplane/exporter/history/table.py",
    ):
        assert module in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    # imported from the zip, as an executor does with it on its path
    done = subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(bundle.zip_path)!r}); "
         "import ctlplane.exporter.config as c, ctlplane.pipeline.args as a; print(c.__file__, a.__file__)"],
        capture_output=True, text=True, cwd=tmp_path, check=True,
    )  # fmt: skip
    assert done.stdout.split() == [
        f"{bundle.zip_path}/ctlplane/exporter/config/__init__.py",
        f"{bundle.zip_path}/ctlplane/pipeline/args.py",
    ]
    # one top-level name, and of ctlplane only what the jobs import: no CLI, dashboard or demo
    assert {n.split("/")[0] for n in names} == {"ctlplane"}
    assert {n.split("/")[1] for n in names} == {"__init__.py", "exporter", "pipeline"}
    for job in JOBS:  # each job module is its own spark-submit script
        assert bundle.jobs[job].read_text() == (ROOT / "ctlplane" / "pipeline" / "jobs" / f"{job}.py").read_text()
    first = bundle.zip_path.read_bytes()
    assert write_bundle(tmp_path).zip_path.read_bytes() == first  # the same sources, the same bytes


def test_package_command_prints_the_submit_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["pipeline", "package", "--out", str(tmp_path / "spark")]) == 0
    out = capsys.readouterr().out
    assert f"--py-files {tmp_path}/spark/ctlplane-pipeline.zip {tmp_path}/spark/sweep.py" in out
    (tmp_path / "file").write_text("")
    assert main(["pipeline", "package", "--out", str(tmp_path / "file")]) == 1
    assert "error: pipeline package" in capsys.readouterr().err
