"""python -m harness.localkafka: start the test clusters by hand, or fetch jars."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from ctlplane.exporter.sources.admin.client import client_jars
from harness.localkafka.clusters import KafkaCluster, build_archives, start_test_fleet
from harness.localkafka.errors import LocalKafkaError
from harness.localkafka.jars import ensure_jars, repo_root
from harness.localkafka.process import LOOPBACK
from harness.localkafka.versions import KRAFT_VERSION, ZK_VERSION


def _format_table(clusters: Sequence[KafkaCluster]) -> str:
    rows = [("CLUSTER", "NAME", "ROLES", "NODE_ID", "JMX", "LISTENERS")]
    for c in clusters:
        zk = c.zookeeper
        if zk is not None and zk.users and sorted(zk.users)[0] == c.name:
            rows.append((c.name, zk.name, "zookeeper", "-", zk.jmx_address, f"client={zk.connect}"))
        for n in c.nodes:
            listeners = " ".join(f"{k}={LOOPBACK}:{v}" for k, v in n.listeners.items())
            rows.append((c.name, n.name, ",".join(n.roles), str(n.node_id), n.jmx_address, listeners))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    for c in clusters:
        extra = f" zookeeper.connect={c.zookeeper_connect}" if c.zookeeper_connect else ""
        extra += f" cluster.id={c.cluster_id}" if c.cluster_id else ""
        lines.append(f"# {c.name}: {c.mode} {c.version} bootstrap={c.bootstrap}{extra}")
    return "\n".join(lines) + "\n"


def _cmd_up(args: argparse.Namespace) -> int:
    workdir = Path(args.workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    stop_event = threading.Event()
    starting = True

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop_event.set()
        if starting:  # abort the start-up; start_test_fleet stops what it started
            raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    started = time.monotonic()
    sys.stdout.write(f"starting local Kafka clusters in {workdir} ...\n")
    sys.stdout.flush()
    try:
        clusters = start_test_fleet(workdir)
    except KeyboardInterrupt:
        sys.stdout.write("interrupted during start-up; stopped\n")
        return 130
    except LocalKafkaError as e:
        sys.stderr.write(f"error: {e}\n")
        return 1
    starting = False
    try:
        if args.json:
            data = [row for c in clusters for row in c.describe()]
            sys.stdout.write(json.dumps(data, indent=2) + "\n")
        else:
            sys.stdout.write(_format_table(clusters))
        sys.stdout.write(f"ready after {time.monotonic() - started:.1f}s; Ctrl-C or SIGTERM stops everything\n")
        sys.stdout.flush()
        reported: set[str] = set()
        while not stop_event.wait(1.0):
            for c in clusters:
                for n in c.nodes:
                    key = f"{c.name}/{n.name}"
                    if not n.is_running and key not in reported:
                        reported.add(key)
                        sys.stdout.write(f"warning: {key} exited with code {n.returncode}; see {n.log_path}\n")
                        sys.stdout.flush()
    finally:
        sys.stdout.write("stopping ...\n")
        sys.stdout.flush()
        for c in reversed(clusters):
            c.stop()
    sys.stdout.write("stopped\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.localkafka", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser(
        "up",
        help="start the three test clusters and wait for Ctrl-C",
        description=(
            "Start zk-3.9 (ZooKeeper mode, 3 brokers, control-plane listener), zk-3.9-nolistener "
            "(1 broker, same ZooKeeper, own chroot) and kraft-4.3 (3 controllers + 2 brokers)."
        ),
    )
    up.add_argument("--workdir", default=str(repo_root() / ".data" / "localkafka"), help="data and log directory")
    up.add_argument("--json", action="store_true", help="print the node list as JSON")
    jars = sub.add_parser(
        "jars", help="fetch the jars of the given versions (default: both) and Kafka's client for the quorum's view"
    )
    jars.add_argument("versions", nargs="*", default=[ZK_VERSION, KRAFT_VERSION])
    jars.add_argument(
        "--class-archives",
        action="store_true",
        help="also build each version's class-data sharing archives (a small cluster started and stopped once; "
        "local nodes then start in ~60%% of the CPU)",
    )
    args = parser.parse_args(argv)
    if args.command == "jars":
        for v in args.versions:
            sys.stdout.write(f"{v}: {ensure_jars(v)}\n")
        if args.class_archives:
            for v in args.versions:
                archives = build_archives(v)
                said = ", ".join(a.name for a in archives) or "none (the JDK cannot write them; nodes start without)"
                sys.stdout.write(f"{v} class-data archives: {said}\n")
        sys.stdout.write(f"kafka-clients: {client_jars()[0].parent}\n")
        return 0
    return _cmd_up(args)


if __name__ == "__main__":
    sys.exit(main())
