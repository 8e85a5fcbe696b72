"""One JVM each: a standalone ZooKeeper server and a Kafka node (broker, controller or both)."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.localkafka.agent import MetricsServer
from harness.localkafka.process import LOOPBACK, JvmProcess, free_port, jvm_command, write_log_config, write_properties
from harness.localkafka.versions import ZK_VERSION, major_minor

KAFKA_MAIN = "kafka.Kafka"
ZOOKEEPER_MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"

BROKER_HEAP_MB = 256
CONTROLLER_HEAP_MB = 192
ZOOKEEPER_HEAP_MB = 128

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


# --------------------------------------------------------------------------- ZooKeeper


@dataclass(eq=False)
class ZooKeeperServer(JvmProcess):
    """A standalone ZooKeeper server (QuorumPeerMain from the Kafka 3.x classpath)."""

    name: str
    port: int
    jmx_port: int
    log_path: Path
    data_dir: Path
    version: str = ZK_VERSION
    stop_when_unused: bool = False
    command: list[str] = field(default_factory=list, repr=False)
    cwd: Path = field(default_factory=Path.cwd, repr=False)
    ready_pattern: str = field(default=r"binding to port", repr=False)
    users: set[str] = field(default_factory=set, repr=False)
    _popen: subprocess.Popen[bytes] | None = field(default=None, init=False, repr=False)
    _log_offset: int = field(default=0, init=False, repr=False)

    @property
    def connect(self) -> str:
        """The connect string without chroot: ``127.0.0.1:<port>``."""
        return f"{LOOPBACK}:{self.port}"

    def four_letter_word(self, word: str, timeout: float = 2.0) -> str:
        """Send a 4lw command (all are whitelisted) and return the answer ('' on error)."""
        try:
            with socket.create_connection((LOOPBACK, self.port), timeout=timeout) as s:
                s.sendall(word.encode())
                chunks = []
                while chunk := s.recv(65536):
                    chunks.append(chunk)
        except OSError:
            return ""
        return b"".join(chunks).decode("utf-8", "replace")

    def is_ready(self) -> bool:
        return self.is_running and self.four_letter_word("ruok") == "imok"

    def release(self, user: str) -> None:
        """A cluster no longer uses this server; stop it if it was started implicitly and is unused."""
        self.users.discard(user)
        if self.stop_when_unused and not self.users:
            self.stop()


def start_zookeeper(
    workdir: Path,
    *,
    name: str = "zookeeper",
    version: str = ZK_VERSION,
    wait: bool = True,
    timeout: float = 120,
    stop_when_unused: bool = False,
) -> ZooKeeperServer:
    """Start a standalone ZooKeeper in ``<workdir>/<name>`` (wiped first) and wait for ``ruok``."""
    check_name(name)
    if major_minor(version)[0] >= 4:
        raise ValueError(f"Kafka {version} has no ZooKeeper; use a 3.x version")
    base = Path(workdir).resolve() / name
    shutil.rmtree(base, ignore_errors=True)
    data = base / "data"
    data.mkdir(parents=True)
    port, jmx_port = free_port(), free_port()
    cfg = base / "zk.cfg"
    write_properties(
        cfg,
        {
            "tickTime": "500",
            # the ceiling would be 20 ticks (10 s); Kafka's default zookeeper.session.timeout.ms is 18 s, which
            # bench.paging's ZooKeeper-mode runs ask for (ZooKeeperServer caps a session at maxSessionTimeout)
            "maxSessionTimeout": "40000",
            "initLimit": "10",
            "syncLimit": "5",
            "dataDir": str(data),
            "clientPort": str(port),
            "clientPortAddress": LOOPBACK,
            "maxClientCnxns": "0",
            "admin.enableServer": "false",
            "4lw.commands.whitelist": "*",
            "autopurge.purgeInterval": "0",
        },
    )
    log_config = write_log_config(base, version)
    zk = ZooKeeperServer(
        name=name,
        port=port,
        jmx_port=jmx_port,
        log_path=base / f"{name}.log",
        data_dir=data,
        version=version,
        stop_when_unused=stop_when_unused,
        command=jvm_command(
            version,
            ZOOKEEPER_MAIN,
            [str(cfg)],
            heap_mb=ZOOKEEPER_HEAP_MB,
            jmx_port=jmx_port,
            log_config=log_config,
        ),
        cwd=base,
    )
    zk.start()
    if wait:
        try:
            zk.wait_ready(timeout)
        except BaseException:
            zk.kill()
            raise
    return zk


# --------------------------------------------------------------------------- Kafka nodes and clusters


@dataclass(eq=False)
class KafkaNode(JvmProcess):
    """One Kafka JVM (broker-only or controller-only)."""

    name: str  # e.g. "broker-1", "controller-1"
    node_id: int
    roles: tuple[str, ...]  # ("broker",) or ("controller",)
    jmx_port: int
    port: int  # client listener (brokers) / controller listener (controllers)
    log_path: Path
    cluster: str = ""
    config_path: Path | None = None
    data_dir: Path | None = None
    listeners: dict[str, int] = field(default_factory=dict)  # listener name -> port
    metrics_port: int | None = None  # its Prometheus endpoint (agent.MetricsServer), if it serves one
    command: list[str] = field(default_factory=list, repr=False)
    cwd: Path = field(default_factory=Path.cwd, repr=False)
    ready_pattern: str = field(default=r"Kafka Server started", repr=False)
    _popen: subprocess.Popen[bytes] | None = field(default=None, init=False, repr=False)
    _log_offset: int = field(default=0, init=False, repr=False)

    @property
    def is_broker(self) -> bool:
        return "broker" in self.roles

    @property
    def is_controller(self) -> bool:
        return "controller" in self.roles

    @property
    def address(self) -> str:
        return f"{LOOPBACK}:{self.port}"


def kafka_node(
    cluster: str,
    name: str,
    node_id: int,
    roles: tuple[str, ...],
    node_dir: Path,
    props: dict[str, str],
    *,
    port: int,
    jmx_port: int,
    listeners: dict[str, int],
    version: str,
    log_config: Path,
    ready_pattern: str,
    metrics_agent: MetricsServer | None = None,
    heap_mb: int | None = None,
    jmx_options: Sequence[str] = (),
) -> KafkaNode:
    """Write the node's server.properties and describe the JVM that runs it (not started yet); `heap_mb`: its
    heap where not the default for its roles (a broker of 10,000 partitions needs more)."""
    metrics_port = free_port() if metrics_agent is not None else None
    agent_option = metrics_agent.jvm_option(node_dir, metrics_port) if metrics_agent and metrics_port else None
    if metrics_agent is not None and metrics_port is not None:
        props = {**props, **metrics_agent.properties(metrics_port)}
    cfg = node_dir / "server.properties"
    write_properties(cfg, props)
    default = BROKER_HEAP_MB if "broker" in roles else CONTROLLER_HEAP_MB  # a combined node holds partitions too
    heap = heap_mb or default
    return KafkaNode(
        name=name,
        node_id=node_id,
        roles=roles,
        jmx_port=jmx_port,
        port=port,
        log_path=node_dir / f"{name}.log",
        cluster=cluster,
        config_path=cfg,
        data_dir=node_dir / "data",
        listeners=listeners,
        metrics_port=metrics_port,
        command=jvm_command(
            version,
            KAFKA_MAIN,
            [str(cfg)],
            heap_mb=heap,
            jmx_port=jmx_port,
            log_config=log_config,
            agent_option=agent_option,
            extra_classpath=metrics_agent.classpath() if metrics_agent is not None else None,
            jmx_options=jmx_options,
        ),
        cwd=node_dir,
        ready_pattern=ready_pattern,
    )


def check_name(name: str) -> None:
    if not _NAME_RE.match(name) or name in {".", ".."}:
        raise ValueError(f"invalid name {name!r}: use letters, digits, '.', '_' and '-'")
