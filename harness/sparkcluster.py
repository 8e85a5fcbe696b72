"""A real Spark standalone cluster: one master and N workers, each its own JVM process started from the installed
PySpark's `bin/spark-class` (no other download), on loopback ports; the pipeline's cluster test and the pipeline
bench's scaling figure run their jobs on it.

Executors are started by the workers as further processes; each worker's shutdown hook kills its
executors, and every daemon runs in a process group of its own, killed as a whole at the end.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pyspark

from harness.localkafka import free_port

SPARK_HOME = Path(pyspark.__file__).parent
START_DEADLINE_SECONDS = 120.0


@dataclass(frozen=True)
class StandaloneCluster:
    master_url: str  # spark://127.0.0.1:PORT
    ui_url: str  # the master's web UI; /json/ describes workers and applications
    logs: tuple[Path, ...]
    processes: tuple[subprocess.Popen[bytes], ...]
    workers: int

    def state(self) -> dict[str, object]:
        return dict(httpx.get(f"{self.ui_url}/json/", timeout=5).json())

    def wait_ready(self) -> None:
        """Until the master says every worker is ALIVE (a daemon that exits fails at once)."""
        deadline = time.monotonic() + START_DEADLINE_SECONDS
        while True:
            for process in self.processes:
                assert process.poll() is None, f"a Spark daemon exited\n{self.log_tails()}"
            with contextlib.suppress(httpx.HTTPError, ValueError):
                if self.state().get("aliveworkers") == self.workers:
                    return
            assert time.monotonic() < deadline, f"{self.workers} workers not ALIVE in time\n{self.log_tails()}"
            time.sleep(0.5)

    def log_tails(self, lines: int = 30) -> str:
        return "\n".join(f"--- {log}\n" + "\n".join(log.read_text().splitlines()[-lines:]) for log in self.logs)


def spark_env(workdir: Path) -> dict[str, str]:
    return {
        **os.environ,
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_DAEMON_MEMORY": "256m",  # the master's and workers' own heaps (default 1g each)
        # C1 only: on 2 cores the daemons' start-up is mostly C2 compiling code they run a few times
        "SPARK_DAEMON_JAVA_OPTS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
        "SPARK_LOG_DIR": str(workdir / "logs"),
        "SPARK_CONF_DIR": str(workdir / "conf"),  # none of the machine's spark-defaults.conf
    }


@contextlib.contextmanager
def standalone_cluster(
    workdir: Path, workers: int = 2, cores: int = 1, memory: str = "1g", prefix: tuple[str, ...] = ()
) -> Iterator[StandaloneCluster]:
    """A master and `workers` workers of `cores` cores and `memory` for executors each, started; yields at
    once (they start while the caller does other work): call `wait_ready()` before submitting. `prefix`
    comes before each daemon's command (the tests' `nice`: what a daemon starts inherits it)."""
    (workdir / "conf").mkdir(parents=True, exist_ok=True)
    env = spark_env(workdir)
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    master_port, ui_port = free_port(), free_port()
    master_url = f"spark://127.0.0.1:{master_port}"
    commands = [
        ("master", [spark_class, "org.apache.spark.deploy.master.Master",
                    "--host", "127.0.0.1", "--port", str(master_port), "--webui-port", str(ui_port)]),
    ]  # fmt: skip
    for number in range(workers):
        worker_dir = workdir / f"worker-{number}"
        worker_dir.mkdir(exist_ok=True)
        commands.append((f"worker-{number}", [
            spark_class, "org.apache.spark.deploy.worker.Worker",
            "--host", "127.0.0.1", "--port", str(free_port()), "--webui-port", str(free_port()),
            "--cores", str(cores), "--memory", memory, "--work-dir", str(worker_dir), master_url,
        ]))  # fmt: skip
    processes: list[subprocess.Popen[bytes]] = []
    logs: list[Path] = []
    try:
        for name, command in commands:
            log = workdir / f"{name}.log"
            logs.append(log)
            with log.open("wb") as output:
                processes.append(
                    subprocess.Popen(
                        [*prefix, *command], env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
                    )
                )
        yield StandaloneCluster(master_url, f"http://127.0.0.1:{ui_port}", tuple(logs), tuple(processes), workers)
    finally:
        for process in reversed(processes):  # workers first: each stops its executors
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
