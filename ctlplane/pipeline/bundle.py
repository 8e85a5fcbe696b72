"""What spark-submit needs to run the jobs on a cluster: the code as one zip for `--py-files`, and the job
scripts to name as the application.

The zip holds `ctlplane.pipeline` and `ctlplane.exporter` under the one name `ctlplane` (the jobs read the
history schema and the health thresholds from the exporter), taken from wherever this installation imports
them, so it works from a source tree and from a wheel alike. Spark puts a `--py-files` zip on the driver's
and every executor's `sys.path` (`SparkContext.addPyFile` accepts .zip, .egg and .jar, not .whl), so the
cluster's Python needs only ctlplane's third-party dependencies, not ctlplane itself.
"""

from __future__ import annotations

import importlib.util
import shutil
import zipfile
from dataclasses import dataclass
from pathlib import Path

ZIP_NAME = "ctlplane-pipeline.zip"
PACKAGES = ("ctlplane.pipeline", "ctlplane.exporter")
JOBS = ("episodes", "sweep", "report")
# Fixed timestamps inside the zip: the same sources give the same bytes (a cluster's cache, a diff).
_EPOCH = (1980, 1, 1, 0, 0, 0)


@dataclass(frozen=True)
class SubmitBundle:
    zip_path: Path
    jobs: dict[str, Path]  # job name -> the script to hand spark-submit

    def submit_line(self, job: str) -> str:
        return (
            f"spark-submit --master <master> --py-files {self.zip_path} {self.jobs[job]} "
            "--archive <archive> --out <out>"
        )


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"package {name!r} is not importable from this installation")
    return Path(next(iter(spec.submodule_search_locations)))


def _add(bundle: zipfile.ZipFile, name: str, data: bytes) -> None:
    entry = zipfile.ZipInfo(name, date_time=_EPOCH)
    entry.compress_type = zipfile.ZIP_DEFLATED
    entry.external_attr = 0o644 << 16
    bundle.writestr(entry, data)


def write_bundle(out: Path) -> SubmitBundle:
    """Write `out/ctlplane-pipeline.zip` and `out/<job>.py` for each job; returns where they are."""
    out.mkdir(parents=True, exist_ok=True)
    zip_path = out / ZIP_NAME
    partial = out / f".{ZIP_NAME}.tmp"
    with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        # the namespace's own (empty) __init__, then the two packages under it
        top = _package_dir("ctlplane") / "__init__.py"
        _add(bundle, "ctlplane/__init__.py", top.read_bytes())
        for package in PACKAGES:
            root = _package_dir(package)
            for source in sorted(root.rglob("*")):
                if not source.is_file() or "__pycache__" in source.parts or source.suffix == ".pyc":
                    continue
                _add(bundle, f"{package.replace('.', '/')}/{source.relative_to(root).as_posix()}", source.read_bytes())
    partial.replace(zip_path)  # a half-written zip is never left under the name spark-submit is given
    jobs_dir = _package_dir("ctlplane.pipeline") / "jobs"
    jobs: dict[str, Path] = {}
    for job in JOBS:
        # the job modules are their own spark-submit scripts (each has `if __name__ == "__main__"`)
        jobs[job] = out / f"{job}.py"
        shutil.copyfile(jobs_dir / f"{job}.py", jobs[job])
    return SubmitBundle(zip_path, jobs)
