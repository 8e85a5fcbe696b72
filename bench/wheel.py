"""What carrying Kafka's client costs the wheel (issue #50): its size with the jars and without, installed
size, and install time.

    .venv/bin/python -m bench.wheel [--runs 3]

Builds the wheel as `make wheel` and tests/integration/test_wheel.py build it (the sources copied, Kafka's
client jars placed by tools/client_jars.py from the checkout's cache, `uv build`), and the same sources
without the jars. For each: the wheel's bytes, the package's bytes installed, and the median of --runs
`pip install --no-deps` into a fresh virtualenv (pip's own bytecode compilation included; ctlplane's
dependencies, ~90 packages, are the same either way and left out). Target: none set by the issue beyond
"sensible"; the jars are ~10 MB of a ~1 GB image.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ROOT = Path(__file__).resolve().parent.parent
UV = Path(sys.executable).with_name("uv")
MB = 1e6


def build(work: Path, with_jars: bool) -> Path:
    source = work / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "ctlplane", source / "ctlplane", ignore=shutil.ignore_patterns("__pycache__", "jars"))
    if with_jars:
        into = source / "ctlplane" / "exporter" / "jars"
        subprocess.run([sys.executable, "-m", "tools.client_jars", "--into", str(into)], cwd=ROOT, check=True)
    subprocess.run([str(UV), "build", "--quiet", "--wheel", "--out-dir", str(work / "dist"), str(source)], check=True)
    (wheel,) = (work / "dist").glob("ctlplane-*.whl")
    return wheel


def install_seconds(wheel: Path, work: Path) -> tuple[float, int]:
    """Seconds of `pip install --no-deps` into a fresh virtualenv, and the installed package's bytes."""
    venv = work / "venv"
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    started = time.perf_counter()
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--no-deps", str(wheel)], check=True)
    seconds = time.perf_counter() - started
    (package,) = venv.glob("lib/python*/site-packages/ctlplane")
    return seconds, sum(p.stat().st_size for p in package.rglob("*") if p.is_file())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(f"{'wheel':<16} {'wheel MB':>9} {'installed MB':>13} {'pip install --no-deps s':>24}")
    for label, with_jars in (("with the jars", True), ("without", False)):
        with tempfile.TemporaryDirectory(prefix="bench-wheel-") as temporary:
            work = Path(temporary)
            wheel = build(work, with_jars)
            timings = [install_seconds(wheel, work) for _ in range(args.runs)]
            seconds = statistics.median(t for t, _ in timings)
            installed = timings[-1][1]
            print(f"{label:<16} {wheel.stat().st_size / MB:>9.2f} {installed / MB:>13.2f} {seconds:>24.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
