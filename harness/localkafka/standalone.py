"""jmx_exporter's standalone server (io.prometheus.jmx:jmx_prometheus_httpserver) beside a local node: a JVM of its
own that reads the node over remote JMX (`hostPort`) and serves what it read as Prometheus text, as a host runs
it where the javaagent cannot go into Kafka's JVM. It serves no JVM series of its own (its WebServer registers the
JMX collector and its build info only), and answers 200 with none of the node's MBeans when the node does not
answer (its `jmx_scrape_error` beside them is its previous scrape's).
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from harness.localkafka.agent import JMX_EXPORTER_VERSION
from harness.localkafka.jars import ensure_artifact
from harness.localkafka.process import LOOPBACK, JvmProcess, free_port, java_executable, port_open, stop_processes


@dataclass(eq=False)
class StandaloneExporter(JvmProcess):
    """One standalone server, serving /metrics on LOOPBACK:port for the node whose JMX port is `jmx_port`."""

    name: str
    port: int
    jmx_port: int  # the node's: the JMX port the server reads
    log_path: Path
    command: list[str] = field(default_factory=list, repr=False)
    cwd: Path = field(default_factory=Path.cwd, repr=False)
    ready_pattern: str = field(default="", repr=False)
    _popen: subprocess.Popen[bytes] | None = field(default=None, init=False, repr=False)
    _log_offset: int = field(default=0, init=False, repr=False)

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}/metrics"

    def is_ready(self) -> bool:
        return self.is_running and port_open(self.port)


def start_standalone_exporters(
    reads: Mapping[str, int], workdir: Path, config: str = "", version: str = JMX_EXPORTER_VERSION
) -> dict[str, StandaloneExporter]:
    """A standalone server per node (`reads`: node name -> its JMX port on LOOPBACK; `config` the jmx_exporter
    rules, none: the default naming), each started and ready: node name -> its server. The caller stops them
    (stop_standalone_exporters)."""
    jar = ensure_artifact("io.prometheus.jmx", "jmx_prometheus_httpserver", version)
    servers: dict[str, StandaloneExporter] = {}
    try:
        for name, jmx_port in reads.items():
            directory = workdir / f"standalone-{name}"
            directory.mkdir(parents=True, exist_ok=True)
            config_file = directory / "jmx_exporter.yaml"
            config_file.write_text(f"hostPort: {LOOPBACK}:{jmx_port}\n{config}")
            port = free_port()
            command = [java_executable(), "-Xmx64m", "-jar", str(jar), f"{LOOPBACK}:{port}", str(config_file)]
            server = StandaloneExporter(f"standalone-{name}", port, jmx_port, directory / "server.log")
            server.command, server.cwd = command, directory
            server.start()
            servers[name] = server
        for server in servers.values():
            server.wait_ready(60)
    except BaseException:
        stop_standalone_exporters(servers)
        raise
    return servers


def stop_standalone_exporters(servers: dict[str, StandaloneExporter]) -> None:
    stop_processes(list(servers.values()), 10)
