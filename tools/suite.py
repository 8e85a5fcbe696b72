"""`make test` and `make lint`: the lint steps side by side, beside the tests (pytest-xdist, tests/suite.py),
and where the time went.

    python -m tools.suite lint                   # the lint steps only
    python -m tools.suite test -- PYTEST_ARGS    # the lint steps beside pytest PYTEST_ARGS
    python -m tools.suite test --group G -- ...  # one group of tests/suite.py alone, no lint (G=lint: lint)

Each lint step's output is printed whole when it fails, as one line when it passes. The exit status is
non-zero if any step or pytest failed. At the end: each step's wall time, pytest's (its own table has the
time per test group), and the whole run's.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent  # the virtualenv's: ruff, mypy, lint-imports, hadolint, pytest

# (name, command); they read the tree and write only their own caches, so they run side by side.
LINT_STEPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ruff check", (str(BIN / "ruff"), "check", ".")),
    ("ruff format", (str(BIN / "ruff"), "format", "--check", ".")),
    ("mypy", (str(BIN / "mypy"), "ctlplane", "harness", "tools", "bench")),
    ("import contracts", (str(BIN / "lint-imports"),)),
    ("hadolint", (str(BIN / "hadolint"), "Dockerfile")),
    ("alert rules (promtool, amtool)", ("alerts/check.sh",)),
    # a broken link, a page missing from nav or a nav entry without a page fails it (mkdocs.yml `validation`)
    ("docs (mkdocs --strict)", (str(BIN / "mkdocs"), "build", "--strict", "--quiet")),
)


@dataclass
class Step:
    name: str
    command: Sequence[str]
    seconds: float = 0.0
    returncode: int | None = None
    output: str = ""


def _run(step: Step) -> None:
    started = time.monotonic()
    try:
        done = subprocess.run(step.command, cwd=ROOT, capture_output=True, text=True, check=False)
        step.returncode, step.output = done.returncode, done.stdout + done.stderr
    except OSError as exc:
        step.returncode, step.output = 127, f"{step.command[0]}: {exc}"
    step.seconds = time.monotonic() - started


def _lint_threads(steps: Sequence[Step]) -> list[threading.Thread]:
    threads = [threading.Thread(target=_run, args=(step,), name=step.name) for step in steps]
    for thread in threads:
        thread.start()
    return threads


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _report(steps: Sequence[Step]) -> bool:
    ok = True
    for step in steps:
        if step.returncode == 0:
            _say(f"lint: {step.name}: ok ({step.seconds:.1f} s)")
        else:
            ok = False
            _say(f"lint: {step.name}: FAILED (exit {step.returncode}): {' '.join(step.command)}")
            _say(step.output.rstrip())
    return ok


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.suite", description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=("lint", "test"))
    parser.add_argument("--group", help="test: only this group of tests/suite.py (lint: only the lint)")
    argv = list(sys.argv[1:] if argv is None else argv)
    # everything after "--" is pytest's (argparse would give an optional before it the positionals' turn)
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    args.pytest_args = argv[split + 1 :]
    started = time.monotonic()
    lint = args.what == "lint" or args.group in (None, "lint")
    tests = args.what == "test" and args.group != "lint"
    steps = [Step(name, command) for name, command in LINT_STEPS] if lint else []
    threads = _lint_threads(steps)
    pytest_seconds, pytest_status = 0.0, 0
    if tests:
        selection = ["-m", f"{args.group} and not matrix"] if args.group else []
        pytest_started = time.monotonic()
        # its output streams as it comes; the lint steps' after it
        command = [str(BIN / "pytest"), *args.pytest_args, *selection]
        pytest_status = subprocess.run(command, cwd=ROOT, check=False).returncode
        pytest_seconds = time.monotonic() - pytest_started
    for thread in threads:
        thread.join()
    lint_ok = _report(steps)
    if steps:
        _say(f"lint: {max(step.seconds for step in steps):.1f} s wall, its {len(steps)} steps side by side")
    if tests:
        _say(f"pytest: {pytest_seconds:.1f} s wall (exit {pytest_status}; its time per group is above)")
    if tests:
        _say(f"test: {time.monotonic() - started:.1f} s wall")
    return 0 if lint_ok and pytest_status == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
