"""Start and stop the simulator as a subprocess (`python -m ctlplane.demo`), and `ctlplane demo` on top of it.

`ctlplane demo` is split so the CLI keeps the exporter's wiring: `cmd_demo(args, serve)` starts the
simulator, prints what is simulated and how to switch scenarios, and hands `serve` a settings document
(a dict for `ctlplane.exporter.config.file.parse_settings`); the CLI's `serve` runs the exporter on it exactly as
`ctlplane run` does. The simulator stops when `serve` returns or raises.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from ctlplane.demo.scenarios import Scenario
from ctlplane.exporter.config import DEFAULT_PORT

SettingsDocument = dict[str, Any]


@dataclass(frozen=True)
class SimulatedNode:
    cluster: str
    name: str
    node_id: int
    mode: str
    role: str
    version: str
    port: int

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"


class SimulatorError(RuntimeError):
    pass


class SimulatorProcess:
    """A running simulator; a context manager that stops it on exit."""

    def __init__(self, process: subprocess.Popen[bytes], ready: dict[str, Any], log_path: Path) -> None:
        self.process = process
        self.pid = process.pid
        self.control_url: str = ready["control_url"]
        self.seed: int = ready["seed"]
        self.nodes = tuple(SimulatedNode(**node) for node in ready["nodes"])
        self.log_path = log_path

    def node(self, cluster: str, name: str) -> SimulatedNode:
        return next(n for n in self.nodes if n.cluster == cluster and n.name == name)

    def _request(self, method: str, path: str, body: object = None) -> dict[str, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.control_url + path, data=data, method=method, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                result: dict[str, Any] = json.loads(response.read())
                return result
        except urllib.error.HTTPError as exc:
            raise SimulatorError(json.loads(exc.read()).get("error", str(exc))) from None

    def set_scenario(self, name: str, cluster: str | None = None, node: str | None = None) -> dict[str, Any]:
        """Switch a cluster to a scenario now; returns {"cluster", "scenario", "node", "at"}."""
        return self._request("POST", "/scenario", {"name": name, "cluster": cluster, "node": node})

    def scenarios(self) -> dict[str, Any]:
        return self._request("GET", "/scenario")

    def settings_document(
        self, *, interval_seconds: float = 15.0, timeout_seconds: float | None = None, http_port: int = DEFAULT_PORT
    ) -> SettingsDocument:
        clusters: dict[str, list[dict[str, str]]] = {}
        for node in self.nodes:
            clusters.setdefault(node.cluster, []).append(
                {"address": node.address, "name": node.name, "role": node.role}
            )
        return {
            "clusters": [{"name": name, "nodes": nodes} for name, nodes in clusters.items()],
            "scrape": {
                "interval_seconds": interval_seconds,
                "timeout_seconds": timeout_seconds if timeout_seconds is not None else interval_seconds * 0.8,
            },
            "http": {"port": http_port},
        }

    def rss_and_threads(self) -> tuple[int, int]:
        """The simulator's resident set (bytes) and thread count, from /proc."""
        fields = dict(
            line.split(":", 1) for line in Path(f"/proc/{self.pid}/status").read_text().splitlines() if ":" in line
        )
        return int(fields["VmRSS"].split()[0]) * 1024, int(fields["Threads"])

    def stop(self, timeout: float = 25.0) -> None:
        """SIGTERM, then SIGKILL if it has not exited within `timeout` seconds."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        if self.process.stdout is not None:
            self.process.stdout.close()

    def __enter__(self) -> SimulatorProcess:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


def _first_line(stream: IO[bytes], timeout: float) -> bytes:
    lines: queue.Queue[bytes] = queue.Queue()
    threading.Thread(target=lambda: lines.put(stream.readline()), daemon=True).start()
    try:
        return lines.get(timeout=timeout)
    except queue.Empty:
        return b""


def _wait_for_ports(nodes: Sequence[SimulatedNode], deadline: float) -> None:
    pending = list(nodes)
    while pending:
        node = pending[0]
        try:
            with socket.create_connection(("127.0.0.1", node.port), timeout=1):
                pending.pop(0)
        except OSError:
            if time.monotonic() > deadline:
                raise SimulatorError(f"{node.cluster}/{node.name} port {node.port} does not answer") from None
            time.sleep(0.05)


def start_simulator(
    *,
    seed: int = 0,
    scenario: str = Scenario.HEALTHY.value,
    cluster: str | None = None,
    node: str | None = None,
    script: str = "",
    fleet_clusters: int = 0,
    fleet_nodes: int = 10,
    max_heap: str = "256m",
    ready_timeout: float = 180.0,
    python: str = sys.executable,
) -> SimulatorProcess:
    """Start `python -m ctlplane.demo` and return once every simulated node's JMX port answers.

    Without `fleet_clusters`: the standard shape (ZooKeeper 3.9 with the control-plane listener, KRaft
    4.x with 3 controllers and 3 brokers). `scenario` starts at once on `cluster` (default: the first
    cluster it applies to); `script` adds timed steps (SECONDS:SCENARIO[@CLUSTER[/NODE]],...).
    """
    steps = [] if scenario == Scenario.HEALTHY.value and not cluster else [f"0:{scenario}{_where(cluster, node)}"]
    if script:
        steps.append(script)
    command = [python, "-m", "ctlplane.demo", "--seed", str(seed), "--max-heap", max_heap]
    if steps:
        command += ["--script", ",".join(steps)]
    if fleet_clusters:
        command += ["--fleet-clusters", str(fleet_clusters), "--fleet-nodes", str(fleet_nodes)]
    log_file = tempfile.NamedTemporaryFile(prefix="ctlplane-demo-", suffix=".log", delete=False)
    log_path = Path(log_file.name)
    root = str(Path(__file__).resolve().parents[2])  # the directory holding ctlplane/
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log_file, stdin=subprocess.DEVNULL, env=env)
    log_file.close()
    assert process.stdout is not None
    line = _first_line(process.stdout, ready_timeout)
    if not line:
        process.kill()
        process.wait(5)
        raise SimulatorError(
            f"simulator did not start (exit {process.returncode}); log: {log_path.read_text()[-2000:]}"
        )
    simulator = SimulatorProcess(process, json.loads(line), log_path)
    try:
        _wait_for_ports(simulator.nodes, time.monotonic() + ready_timeout)
    except BaseException:
        simulator.stop()
        raise
    return simulator


def _where(cluster: str | None, node: str | None) -> str:
    if cluster is None:
        return ""
    return f"@{cluster}" + (f"/{node}" if node else "")


def add_demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--scenario", default=Scenario.HEALTHY.value, choices=[s.value for s in Scenario], help="start in this scenario"
    )
    parser.add_argument("--cluster", help="cluster the scenario applies to (default: the first it fits)")
    parser.add_argument("--node", help="node the scenario targets (default: the last broker)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the value model (same seed, same values)")
    parser.add_argument("--nodes", type=int, default=0, help="fleet mode: about this many nodes, in clusters of 10")
    parser.add_argument("--interval", type=float, default=5.0, help="scrape interval, seconds")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="exporter HTTP port")


def cmd_demo(args: argparse.Namespace, serve: Callable[[SettingsDocument], int], out: IO[str] = sys.stdout) -> int:
    """Start the simulator, then `serve(settings_document)` until it returns; the simulator stops after."""
    fleet_clusters = -(-args.nodes // 10) if args.nodes else 0
    with start_simulator(
        seed=args.seed, scenario=args.scenario, cluster=args.cluster, node=args.node, fleet_clusters=fleet_clusters
    ) as simulator:
        state = simulator.scenarios()["clusters"]
        out.write(
            f"SIMULATED Kafka: {len(simulator.nodes)} nodes in {len(state)} cluster(s), seed {simulator.seed} "
            f"(pid {simulator.pid})\n"
        )
        for name, cluster in state.items():
            where = f" on {cluster['node']}" if cluster["node"] else ""
            out.write(f"  {name:<12} {cluster['mode']:<10} scenario {cluster['scenario']}{where}\n")
        out.write(
            f"  switch:  curl -XPOST {simulator.control_url}/scenario "
            """-d '{"name": "controller-failover", "cluster": "kraft-4.3"}'\n"""
            f"  state:   curl {simulator.control_url}/scenario\n"
        )
        out.flush()
        return serve(
            simulator.settings_document(
                interval_seconds=args.interval, timeout_seconds=args.interval * 0.8, http_port=args.port
            )
        )
