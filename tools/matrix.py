"""`make test-matrix`: the real-cluster tests of one mode, once per Kafka release of the matrix.

Each entry runs in its own pytest process with the release under test set in the environment
(tests/kafka_versions.py), the tests marked `kraft` or `zookeeper` of the fault table, the health model
and the exporter's per-release series check, and records its fault timelines into
alerts/tests/recorded/ (`<mode>-<major.minor>[-nolistener]-<fault>.test.yml`, replayed by `make lint`).
A failing entry does not stop the others; the summary (stdout and .data/matrix/summary.md) says which
passed and how long each took, then the cause accuracy of each fault-table row (#35: the rounds whose cause
was right, from the rows' own checks, tests/integration/faults.py expect_causes), and the exit code is
non-zero if any failed.

    python -m tools.matrix                 # every entry
    python -m tools.matrix kraft-3.6 zk-2.8-nolistener   # some
    python -m tools.matrix --list
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ctlplane.exporter.releases import MATRIX, MatrixEntry
from harness.localkafka import cluster_label, ensure_jars

ROOT = Path(__file__).resolve().parents[1]
TEST_FILES = (
    "tests/integration/test_fault_table.py",
    "tests/integration/test_health_kafka.py",
    "tests/integration/test_exporter_kafka.py",
    "tests/integration/test_combined_mode.py",
    "tests/integration/test_migration.py",
    "tests/integration/test_quorum_view.py",
    "tests/integration/test_dynamic_quorum.py",
    "tests/integration/test_partitioned_controller.py",
    "tests/integration/test_metadata_canary.py",
)


@dataclass(frozen=True)
class Outcome:
    entry: MatrixEntry
    passed: bool
    seconds: float
    summary: str  # pytest's last line


def label(entry: MatrixEntry) -> str:
    return cluster_label(entry.mode, entry.version, entry.control_plane_listener)


def cause_report(log_dir: Path, entry: MatrixEntry) -> Path:
    return log_dir / f"{label(entry)}-causes.jsonl"


def environment(entry: MatrixEntry, record: bool, causes: Path | None = None) -> dict[str, str]:
    env = dict(os.environ, PYTHONUNBUFFERED="1")  # the log shows each test as it ends
    if causes is not None:
        env["CTLPLANE_CAUSE_REPORT"] = str(causes)
    if entry.mode == "kraft":
        env["CTLPLANE_TEST_KRAFT_VERSION"] = entry.version
    else:
        env["CTLPLANE_TEST_ZK_VERSION"] = entry.version
        env["CTLPLANE_TEST_ZK_LISTENER"] = "1" if entry.control_plane_listener else "0"
    if record:
        env["CTLPLANE_RECORD_FIXTURES"] = "1"
    return env


def run(entry: MatrixEntry, record: bool, log_dir: Path) -> Outcome:
    ensure_jars(entry.version)
    marker = "kraft" if entry.mode == "kraft" else "zookeeper"
    log = log_dir / f"{label(entry)}.log"
    command = [sys.executable, "-m", "pytest", "-v", "-m", marker, "--durations=10", *TEST_FILES]
    causes = cause_report(log_dir, entry)
    causes.unlink(missing_ok=True)
    started = time.monotonic()
    with open(log, "w") as out:
        result = subprocess.run(
            command, cwd=ROOT, env=environment(entry, record, causes), stdout=out, stderr=subprocess.STDOUT, check=False
        )
    lines = [line for line in log.read_text().splitlines() if line.strip()]
    return Outcome(entry, result.returncode == 0, time.monotonic() - started, lines[-1] if lines else "(no output)")


def cause_accuracy(outcomes: list[Outcome], log_dir: Path) -> str:
    """Per entry and fault-table row: the rounds whose cause was right, of the rounds its checks looked at."""
    rows = ["| entry | row | cause right | checks failed |", "|---|---|---|---|"]
    for outcome in outcomes:
        path = cause_report(log_dir, outcome.entry)
        checks = [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []
        by_row: dict[str, list[dict[str, object]]] = {}
        for check in checks:
            by_row.setdefault(str(check["test"]).rsplit("::", 1)[-1], []).append(check)
        for row, found in by_row.items():
            right = sum(int(str(c["right"])) for c in found)
            rounds = sum(int(str(c["rounds"])) for c in found)
            failed = sum(1 for c in found if not c["ok"])
            rows.append(f"| {label(outcome.entry)} | {row} | {right}/{rounds} rounds | {failed or '-'} |")
    return "\n".join(rows) + "\n"


def summary(outcomes: list[Outcome], log_dir: Path | None = None) -> str:
    rows = ["| entry | Kafka | result | minutes | pytest |", "|---|---|---|---|---|"]
    for o in outcomes:
        result = "passed" if o.passed else "**FAILED**"
        rows.append(f"| {label(o.entry)} | {o.entry.version} | {result} | {o.seconds / 60:.1f} | {o.summary} |")
    total = sum(o.seconds for o in outcomes) / 60
    text = "\n".join(rows) + f"\n\nTotal: {total:.1f} min.\n"
    if log_dir is not None:
        text += "\nCause accuracy per fault-table row (#35):\n\n" + cause_accuracy(outcomes, log_dir)
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.matrix", description=__doc__.split("\n\n")[0])
    parser.add_argument("entries", nargs="*", help="labels to run (default: all); see --list")
    parser.add_argument("--list", action="store_true", help="print the entries and exit")
    parser.add_argument("--no-record", action="store_true", help="do not write alerts/tests/recorded/")
    args = parser.parse_args(argv)
    known = {label(entry): entry for entry in MATRIX}
    if args.list:
        sys.stdout.write("".join(f"{name}  Kafka {entry.version}\n" for name, entry in known.items()))
        return 0
    unknown = [name for name in args.entries if name not in known]
    if unknown:
        parser.error(f"unknown entries {unknown}; known: {sorted(known)}")
    chosen = [known[name] for name in args.entries] if args.entries else list(MATRIX)
    log_dir = ROOT / ".data" / "matrix"
    log_dir.mkdir(parents=True, exist_ok=True)
    outcomes = []
    for entry in chosen:
        sys.stdout.write(f"== {label(entry)} (Kafka {entry.version}) ...\n")
        sys.stdout.flush()
        outcome = run(entry, not args.no_record, log_dir)
        outcomes.append(outcome)
        state = "passed" if outcome.passed else f"FAILED, see {log_dir / (label(entry) + '.log')}"
        sys.stdout.write(f"   {state} in {outcome.seconds / 60:.1f} min: {outcome.summary}\n")
        sys.stdout.flush()
    text = summary(outcomes, log_dir)
    (log_dir / "summary.md").write_text(text)
    sys.stdout.write("\n" + text)
    return 0 if all(o.passed for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
