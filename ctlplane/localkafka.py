"""Start real Apache Kafka clusters locally from cached Maven jars.

Stdlib only. Every process is a JVM started directly (``java ... -cp '<jars>/*'
<main class>``) in its own process group, bound to 127.0.0.1 on free ports,
with remote JMX enabled (no auth, no SSL) on ``jmx_port``.

* ZooKeeper mode (Kafka <= 3.9): one ZooKeeper (QuorumPeerMain) and N brokers,
  optionally with the KIP-291 control-plane listener. Several clusters can share
  one ZooKeeper, each under its own chroot.
* KRaft mode: controller-only nodes (static ``controller.quorum.voters``) and
  broker-only nodes.

Jars come from ``ensure_jars`` (Maven, ``tests/kafka/pom.xml``) into
``<cache>/kafka/<version>``. Nothing is left running: ``KafkaCluster.stop`` stops
every process of a cluster, and an ``atexit`` handler (plus, on Linux, a
parent-death signal) kills whatever is still alive when Python exits.

CLI: ``python -m ctlplane.localkafka up [--workdir DIR]``.
"""

from __future__ import annotations

import argparse
import atexit
import base64
import contextlib
import ctypes
import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, ClassVar

ZK_VERSION = "3.9.2"  # last release with ZooKeeper mode
KRAFT_VERSION = "4.3.1"  # newest 4.x we fetch

LOOPBACK = "127.0.0.1"
KAFKA_MAIN = "kafka.Kafka"
ZOOKEEPER_MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
STORAGE_TOOL_MAIN = "kafka.tools.StorageTool"
JARS_MARKER = ".ctlplane-complete"
ENV_CACHE_DIR = "CTLPLANE_CACHE_DIR"
ENV_EXTRA_JVM_OPTS = "CTLPLANE_KAFKA_JVM_OPTS"

BROKER_HEAP_MB = 256
CONTROLLER_HEAP_MB = 192
ZOOKEEPER_HEAP_MB = 128

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_LOG_TAIL_LINES = 40
_POLL_INTERVAL = 0.25


class LocalKafkaError(RuntimeError):
    """Base error of this module."""


class JarFetchError(LocalKafkaError):
    """Maven could not fetch the Kafka jars."""


class ClusterStartError(LocalKafkaError):
    """A process exited or did not become ready in time."""


# --------------------------------------------------------------------------- paths, jars


def repo_root() -> Path:
    """The repository root (the directory holding ``ctlplane/``)."""
    return Path(__file__).resolve().parent.parent


def cache_dir() -> Path:
    """``$CTLPLANE_CACHE_DIR`` or ``<repo>/.cache``."""
    env = os.environ.get(ENV_CACHE_DIR)
    return Path(env).expanduser().resolve() if env else repo_root() / ".cache"


def _major_minor(version: str) -> tuple[int, int]:
    m = re.match(r"^(\d+)\.(\d+)", version)
    if not m:
        raise ValueError(f"not a Kafka version: {version!r}")
    return int(m.group(1)), int(m.group(2))


def logging_flavour(version: str) -> str:
    """SLF4J binding profile of ``tests/kafka/pom.xml``: reload4j (3.x) or log4j2 (4.x+)."""
    return "log4j2" if _major_minor(version)[0] >= 4 else "reload4j"


def _pom_path() -> Path:
    return repo_root() / "tests" / "kafka" / "pom.xml"


def _jars_stamp(version: str) -> str:
    pom = _pom_path()
    digest = hashlib.sha256(pom.read_bytes()).hexdigest() if pom.is_file() else "missing"
    return f"kafka.version={version}\nkafka.logging={logging_flavour(version)}\npom.sha256={digest}\n"


def ensure_jars(version: str) -> Path:
    """Return ``<cache>/kafka/<version>``, fetching the jars with Maven if needed.

    The directory is complete when it holds a marker file whose content matches
    the version, the logging binding and the hash of ``tests/kafka/pom.xml``
    (editing the pom therefore triggers a re-fetch). Maven writes into a
    temporary directory that replaces the old one only after success.
    """
    target = cache_dir() / "kafka" / version
    stamp = _jars_stamp(version)
    marker = target / JARS_MARKER
    if _read_text(marker) == stamp:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with _file_lock(target.parent / f".{version}.lock"):
        if _read_text(marker) == stamp:
            return target
        mvn = shutil.which("mvn")
        if mvn is None:
            raise JarFetchError(f"Kafka {version} jars are missing in {target} and 'mvn' is not on PATH")
        pom = _pom_path()
        if not pom.is_file():
            raise JarFetchError(f"cannot fetch Kafka {version} jars: {pom} does not exist")
        tmp = target.parent / f".{version}.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        cmd = [
            mvn,
            "-q",
            "-B",
            "-f",
            str(pom),
            f"-Dkafka.version={version}",
            f"-Dkafka.logging={logging_flavour(version)}",
            "dependency:copy-dependencies",
            f"-DoutputDirectory={tmp}",
        ]
        res = subprocess.run(cmd, capture_output=True, text=True, check=False)
        main_jar = tmp / f"kafka_2.13-{version}.jar"
        if res.returncode != 0 or not main_jar.is_file():
            shutil.rmtree(tmp, ignore_errors=True)
            out = _tail_text(res.stdout + res.stderr, 30)
            raise JarFetchError(
                f"fetching Kafka {version} jars failed (exit code {res.returncode}): {shlex.join(cmd)}\n{out}"
            )
        old = target.parent / f".{version}.old-{os.getpid()}"
        if target.exists():
            target.rename(old)
        tmp.rename(target)
        shutil.rmtree(old, ignore_errors=True)
        marker.write_text(stamp)
    return target


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    with open(path, "a+b") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _tail_text(text: str, lines: int) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def java_executable() -> str:
    """``$JAVA_HOME/bin/java`` if it exists, else ``java`` from PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        if candidate.is_file():
            return str(candidate)
    found = shutil.which("java")
    if found is None:
        raise LocalKafkaError("no Java runtime found: set JAVA_HOME or put 'java' on PATH")
    return found


# --------------------------------------------------------------------------- ports


_reserved_ports: set[int] = set()
_ports_lock = threading.Lock()


def free_port() -> int:
    """A currently free TCP port on 127.0.0.1, never handed out twice by this process."""
    with _ports_lock:
        for _ in range(200):
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.bind((LOOPBACK, 0))
                port = int(s.getsockname()[1])
            if port not in _reserved_ports:
                _reserved_ports.add(port)
                return port
    raise LocalKafkaError("could not find a free loopback port")


def port_open(port: int, host: str = LOOPBACK, timeout: float = 1.0) -> bool:
    """True if a TCP connection to host:port succeeds."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


# --------------------------------------------------------------------------- processes


def _pdeathsig_preexec() -> Callable[[], None] | None:
    """On Linux, make the child die with SIGKILL when this process dies.

    Only used from the main thread: the signal fires when the *thread* that
    forked the child exits.
    """
    if sys.platform != "linux" or threading.current_thread() is not threading.main_thread():
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def setup() -> None:
        prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
        if os.getppid() != parent:
            os._exit(1)

    return setup


_live: set[_JvmProcess] = set()
_live_lock = threading.Lock()


def _kill_all_live() -> None:
    """atexit safety net: SIGKILL every process this module started that still runs."""
    with _live_lock:
        procs = list(_live)
    for proc in procs:
        with contextlib.suppress(Exception):
            proc.kill()


atexit.register(_kill_all_live)


class _JvmProcess:
    """Process control shared by KafkaNode and ZooKeeperServer (a mixin over dataclass fields)."""

    name: str
    port: int
    jmx_port: int
    log_path: Path
    command: list[str]
    cwd: Path
    ready_pattern: str
    _popen: subprocess.Popen[bytes] | None
    _log_offset: int

    def start(self) -> None:
        """(Re)start the JVM with the same configuration and data directory."""
        if self.is_running:
            return
        if not self.command:
            raise LocalKafkaError(f"{self.name}: no command configured")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            stamp = time.strftime("%Y-%m-%d %H:%M:%S")
            log.write(f"==== ctlplane.localkafka: starting {self.name} at {stamp} ====\n".encode())
            log.flush()
            self._log_offset = log.tell()
            self._popen = subprocess.Popen(
                self.command,
                cwd=self.cwd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_pdeathsig_preexec(),
            )
        with _live_lock:
            _live.add(self)

    def stop(self, timeout: float = 30) -> None:
        """SIGTERM (controlled shutdown), wait up to ``timeout`` s, then SIGKILL."""
        _stop_processes([self], timeout)

    def kill(self) -> None:
        """SIGKILL the process group and reap it."""
        p = self._popen
        if p is not None and p.poll() is None:
            self._signal(signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(30)
        self._forget()

    def pause(self) -> None:
        """SIGSTOP: the JVM freezes (no heartbeats, no JMX answers)."""
        self._require_running("pause")
        self._signal(signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT after ``pause``."""
        self._require_running("resume")
        self._signal(signal.SIGCONT)

    @property
    def pid(self) -> int | None:
        p = self._popen
        return p.pid if p is not None and p.poll() is None else None

    @property
    def is_running(self) -> bool:
        """True while the process exists (also when paused)."""
        return self._popen is not None and self._popen.poll() is None

    @property
    def returncode(self) -> int | None:
        return None if self._popen is None else self._popen.poll()

    @property
    def jmx_address(self) -> str:
        return f"{LOOPBACK}:{self.jmx_port}"

    @property
    def jmx_url(self) -> str:
        return f"service:jmx:rmi:///jndi/rmi://{LOOPBACK}:{self.jmx_port}/jmxrmi"

    def log_since_start(self) -> str:
        """The log written since the last ``start()``."""
        try:
            with open(self.log_path, "rb") as fh:
                fh.seek(self._log_offset)
                return fh.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = _LOG_TAIL_LINES) -> str:
        try:
            with open(self.log_path, "rb") as fh:
                fh.seek(0, os.SEEK_END)
                size = fh.tell()
                fh.seek(max(0, size - 256 * 1024))
                text = fh.read().decode("utf-8", "replace")
        except OSError as e:
            return f"(no log: {e})"
        return _tail_text(text, lines)

    def is_ready(self) -> bool:
        """Running, the start-up log line seen since the last start, and the port accepting."""
        if not self.is_running:
            return False
        if re.search(self.ready_pattern, self.log_since_start()) is None:
            return False
        return port_open(self.port)

    def check_alive(self, context: str = "") -> None:
        """Raise ClusterStartError quoting the log tail if the process is not running."""
        if self.is_running:
            return
        what = f"{self.name}{f' of {context}' if context else ''}"
        if self._popen is None:
            raise ClusterStartError(f"{what} is not started")
        raise ClusterStartError(
            f"{what} exited with code {self._popen.returncode}; last lines of {self.log_path}:\n{self.log_tail()}"
        )

    def wait_ready(self, timeout: float = 180) -> None:
        """Wait until ``is_ready``; raise ClusterStartError (quoting the log) otherwise."""
        deadline = time.monotonic() + timeout
        while True:
            self.check_alive()
            if self.is_ready():
                return
            if time.monotonic() > deadline:
                raise ClusterStartError(
                    f"{self.name} not ready after {timeout:.0f}s; last lines of {self.log_path}:\n{self.log_tail()}"
                )
            time.sleep(_POLL_INTERVAL)

    # internals

    def _require_running(self, action: str) -> None:
        if not self.is_running:
            raise LocalKafkaError(f"cannot {action} {self.name}: not running")

    def _signal(self, sig: signal.Signals) -> None:
        p = self._popen
        if p is None or p.poll() is not None:
            return
        # start_new_session=True: the JVM leads its own process group (pgid == pid).
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(p.pid, sig)

    def _forget(self) -> None:
        with _live_lock:
            _live.discard(self)


def _stop_processes(procs: Sequence[_JvmProcess], timeout: float) -> None:
    """SIGTERM all (plus SIGCONT in case they are paused), wait, SIGKILL leftovers."""
    running = [p for p in procs if p.is_running]
    for p in running:
        p._signal(signal.SIGTERM)
        p._signal(signal.SIGCONT)
    deadline = time.monotonic() + timeout
    for p in running:
        popen = p._popen
        if popen is None:
            continue
        try:
            popen.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
    for p in procs:
        p._forget()


def _jvm_command(
    version: str,
    main_class: str,
    args: Sequence[str],
    *,
    heap_mb: int,
    jmx_port: int | None,
    log_config: Path,
) -> list[str]:
    jars = ensure_jars(version)
    cmd = [
        java_executable(),
        f"-Xms{min(64, heap_mb)}m",
        f"-Xmx{heap_mb}m",
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",
        "-XX:+ExitOnOutOfMemoryError",
        "-Djava.awt.headless=true",
        "-Dzookeeper.jmx.log4j.disable=true",
    ]
    if jmx_port is not None:
        cmd += [
            "-Dcom.sun.management.jmxremote",
            f"-Dcom.sun.management.jmxremote.port={jmx_port}",
            f"-Dcom.sun.management.jmxremote.rmi.port={jmx_port}",
            f"-Dcom.sun.management.jmxremote.host={LOOPBACK}",
            f"-Djava.rmi.server.hostname={LOOPBACK}",
            "-Dcom.sun.management.jmxremote.authenticate=false",
            "-Dcom.sun.management.jmxremote.ssl=false",
            "-Dcom.sun.management.jmxremote.local.only=false",
        ]
    if logging_flavour(version) == "log4j2":
        cmd.append(f"-Dlog4j2.configurationFile={log_config}")
    else:
        cmd.append(f"-Dlog4j.configuration={log_config.as_uri()}")
    cmd += shlex.split(os.environ.get(ENV_EXTRA_JVM_OPTS, ""))
    cmd += ["-cp", f"{jars}/*", main_class, *args]
    return cmd


_LOG4J1 = """\
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.Target=System.out
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.state.change.logger=WARN
log4j.logger.kafka.log.LogCleaner=WARN
log4j.logger.org.apache.zookeeper=WARN
log4j.logger.org.apache.zookeeper.server.ZooKeeperServer=INFO
log4j.logger.org.apache.zookeeper.server.NIOServerCnxnFactory=INFO
"""

_LOG4J2 = """\
status = warn
appender.stdout.type = Console
appender.stdout.name = STDOUT
appender.stdout.target = SYSTEM_OUT
appender.stdout.layout.type = PatternLayout
appender.stdout.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.statechange.name = state.change.logger
logger.statechange.level = WARN
logger.cleaner.name = kafka.log.LogCleaner
logger.cleaner.level = WARN
"""


def _write_log_config(directory: Path, version: str) -> Path:
    if logging_flavour(version) == "log4j2":
        path = directory / "log4j2.properties"
        path.write_text(_LOG4J2)
    else:
        path = directory / "log4j.properties"
        path.write_text(_LOG4J1)
    return path


def _write_properties(path: Path, props: dict[str, str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"{k}={v}" for k, v in props.items()]
    path.write_text("# generated by ctlplane.localkafka\n" + "\n".join(lines) + "\n")


# --------------------------------------------------------------------------- ZooKeeper


@dataclass(eq=False)
class ZooKeeperServer(_JvmProcess):
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
    _check_name(name)
    if _major_minor(version)[0] >= 4:
        raise ValueError(f"Kafka {version} has no ZooKeeper; use a 3.x version")
    base = Path(workdir).resolve() / name
    shutil.rmtree(base, ignore_errors=True)
    data = base / "data"
    data.mkdir(parents=True)
    port, jmx_port = free_port(), free_port()
    cfg = base / "zk.cfg"
    _write_properties(
        cfg,
        {
            "tickTime": "500",
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
    log_config = _write_log_config(base, version)
    zk = ZooKeeperServer(
        name=name,
        port=port,
        jmx_port=jmx_port,
        log_path=base / f"{name}.log",
        data_dir=data,
        version=version,
        stop_when_unused=stop_when_unused,
        command=_jvm_command(
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
class KafkaNode(_JvmProcess):
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


@dataclass(eq=False)
class KafkaCluster:
    """A running local cluster. ``nodes`` holds the Kafka JVMs (not ZooKeeper)."""

    MODES: ClassVar[tuple[str, str]] = ("zookeeper", "kraft")

    name: str
    mode: str  # "zookeeper" or "kraft"
    version: str
    nodes: list[KafkaNode]
    bootstrap: str  # "127.0.0.1:port,..."
    workdir: Path | None = None
    cluster_id: str | None = None  # KRaft: fixed id used to format storage
    zookeeper: ZooKeeperServer | None = None  # managed ZooKeeper (None for KRaft/external)
    zookeeper_connect: str | None = None  # full connect string incl. chroot (ZK mode)
    control_plane_listener: bool = False

    def node(self, name: str) -> KafkaNode:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(f"cluster {self.name} has no node {name!r}; nodes: {[n.name for n in self.nodes]}")

    def brokers(self) -> list[KafkaNode]:
        return [n for n in self.nodes if n.is_broker]

    def controllers(self) -> list[KafkaNode]:
        """KRaft controller nodes ([] in ZooKeeper mode, where a broker is the controller)."""
        return [n for n in self.nodes if n.is_controller]

    @property
    def is_running(self) -> bool:
        return any(n.is_running for n in self.nodes)

    def wait_ready(self, timeout: float = 180) -> None:
        """Wait until every node serves (see ``_JvmProcess.is_ready``).

        ZooKeeper mode: ZooKeeper answers ``imok`` and every broker logged
        "[KafkaServer id=N] started" and accepts connections.
        KRaft: every controller and broker logged "Kafka Server started" and
        accepts connections. A KRaft broker logs that only after the active
        controller unfenced it (BrokerServer waits for the initial unfence), so
        this also proves the quorum has a leader and all brokers are unfenced.
        """
        deadline = time.monotonic() + timeout
        zk = self.zookeeper
        if zk is not None:
            zk.wait_ready(max(1.0, deadline - time.monotonic()))
        _wait_for(self, self.nodes, lambda n: n.is_ready(), max(1.0, deadline - time.monotonic()), "not ready")

    def start(self) -> None:
        """Start every stopped node (after ``stop``); does not wait."""
        zk = self.zookeeper
        if zk is not None:
            zk.users.add(self.name)
            zk.start()
        for n in self.controllers() + [n for n in self.nodes if not n.is_controller]:
            n.start()

    def stop(self, timeout: float = 30) -> None:
        """Stop brokers, then controllers, then the managed ZooKeeper if no other cluster uses it.

        SIGTERM first (controlled shutdown), SIGKILL after ``timeout`` s.
        """
        _stop_processes([n for n in self.nodes if not n.is_controller], timeout)
        _stop_processes(self.controllers(), timeout)
        zk = self.zookeeper
        if zk is not None:
            zk.release(self.name)

    def describe(self) -> list[dict[str, object]]:
        """One dict per node (cluster, name, roles, node_id, ports, jmx, pid)."""
        return [
            {
                "cluster": self.name,
                "mode": self.mode,
                "version": self.version,
                "name": n.name,
                "roles": list(n.roles),
                "node_id": n.node_id,
                "port": n.port,
                "listeners": dict(n.listeners),
                "jmx": n.jmx_address,
                "jmx_url": n.jmx_url,
                "pid": n.pid,
                "log": str(n.log_path),
            }
            for n in self.nodes
        ]

    def __enter__(self) -> KafkaCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


# Creates a topic with an explicit replica assignment through Kafka's own Admin client (kafka-clients is in
# every release's jars; kafka-tools is not). Run with Java's single-file source launcher: nothing prebuilt.
_CREATE_TOPIC_SOURCE = """\
import java.util.*;
import org.apache.kafka.clients.admin.*;

public class CreateTopic {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        Map<Integer, List<Integer>> assignment = new HashMap<>();
        String[] partitions = args[2].equals("delete") ? new String[0] : args[2].split(";");
        for (int i = 0; i < partitions.length; i++) {
            List<Integer> replicas = new ArrayList<>();
            for (String id : partitions[i].split(",")) replicas.add(Integer.parseInt(id));
            assignment.put(i, replicas);
        }
        try (Admin admin = Admin.create(props)) {
            if (args[2].equals("delete")) {
                admin.deleteTopics(List.of(args[1])).all().get();
            } else {
                admin.createTopics(List.of(new NewTopic(args[1], assignment))).all().get();
            }
        }
    }
}
"""


def _admin(cluster: KafkaCluster, topic: str, what: str, timeout: float) -> None:
    source = cache_dir() / "java" / "CreateTopic.java"
    source.parent.mkdir(parents=True, exist_ok=True)
    if _read_text(source) != _CREATE_TOPIC_SOURCE:
        source.write_text(_CREATE_TOPIC_SOURCE)
    jars = ensure_jars(cluster.version)
    result = subprocess.run(
        [java_executable(), "-Xmx128m", "-cp", f"{jars}/*", str(source), cluster.bootstrap, topic, what],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if result.returncode != 0:
        raise LocalKafkaError(f"topic {topic} in {cluster.name} ({what}) failed: {_tail_text(result.stderr, 20)}")


def create_topic(cluster: KafkaCluster, topic: str, replicas: Sequence[Sequence[int]], timeout: float = 120) -> None:
    """Create ``topic`` with one partition per entry of ``replicas`` (broker ids, preferred leader first)."""
    _admin(cluster, topic, ";".join(",".join(str(r) for r in partition) for partition in replicas), timeout)


def delete_topic(cluster: KafkaCluster, topic: str, timeout: float = 120) -> None:
    _admin(cluster, topic, "delete", timeout)


def _kafka_node(
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
) -> KafkaNode:
    """Write the node's server.properties and describe the JVM that runs it (not started yet)."""
    cfg = node_dir / "server.properties"
    _write_properties(cfg, props)
    heap = CONTROLLER_HEAP_MB if "controller" in roles else BROKER_HEAP_MB
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
        command=_jvm_command(version, KAFKA_MAIN, [str(cfg)], heap_mb=heap, jmx_port=jmx_port, log_config=log_config),
        cwd=node_dir,
        ready_pattern=ready_pattern,
    )


def _check_name(name: str) -> None:
    if not _NAME_RE.match(name) or name in {".", ".."}:
        raise ValueError(f"invalid name {name!r}: use letters, digits, '.', '_' and '-'")


def _cluster_dir(workdir: Path, name: str) -> Path:
    _check_name(name)
    base = Path(workdir).resolve() / name
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    return base


def _topic_defaults() -> dict[str, str]:
    # KRaft: topic defaults belong to the controllers (4.x warns when a broker sets them).
    return {"num.partitions": "1", "default.replication.factor": "1"}


def _common_broker_props(brokers: int) -> dict[str, str]:
    rf = str(min(3, brokers))
    return {
        "offsets.topic.replication.factor": rf,
        "offsets.topic.num.partitions": "5",
        "transaction.state.log.replication.factor": rf,
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "5",
        "group.initial.rebalance.delay.ms": "0",
        "num.network.threads": "2",
        "num.io.threads": "2",
        "num.recovery.threads.per.data.dir": "1",
        "num.replica.fetchers": "1",
        "log.cleaner.dedupe.buffer.size": str(8 * 1024 * 1024),
        "log.cleaner.threads": "1",
    }


def start_zk_cluster(
    name: str,
    workdir: Path,
    *,
    brokers: int = 3,
    control_plane_listener: bool = True,
    version: str = ZK_VERSION,
    zookeeper: ZooKeeperServer | str | None = None,
    chroot: str | None = None,
    node_overrides: Mapping[str, Mapping[str, str]] | None = None,
    wait: bool = True,
    timeout: float = 180,
) -> KafkaCluster:
    """Start a ZooKeeper-mode cluster of ``brokers`` brokers (ids 1..N) in ``<workdir>/<name>``.

    ``zookeeper``: None starts a private ZooKeeper (stopped with the cluster); a
    ``ZooKeeperServer`` (e.g. ``other_cluster.zookeeper``) is shared and stopped
    when its last cluster stops if it was started implicitly; a string is an
    external connect string ``host:port``. ``chroot`` defaults to ``/<name>``
    ("" or "/" for none). With ``control_plane_listener`` the brokers get a second
    listener CONTROLLER used as ``control.plane.listener.name`` (KIP-291).
    ``node_overrides[node name]`` is added to that broker's properties last.
    ``wait`` waits for ``wait_ready(timeout)``; on failure everything is stopped.
    """
    if _major_minor(version)[0] >= 4:
        raise ValueError(f"Kafka {version} has no ZooKeeper mode; use {ZK_VERSION}")
    if brokers < 1:
        raise ValueError("brokers must be >= 1")
    _check_node_overrides(node_overrides, [f"broker-{i}" for i in range(1, brokers + 1)])
    base = _cluster_dir(workdir, name)
    chroot = f"/{name}" if chroot is None else chroot.rstrip("/")
    if chroot and not chroot.startswith("/"):
        raise ValueError(f"chroot must start with '/': {chroot!r}")

    zk: ZooKeeperServer | None
    if zookeeper is None:
        zk = start_zookeeper(base, name="zookeeper", version=version, wait=False, stop_when_unused=True)
        zk_connect = zk.connect
    elif isinstance(zookeeper, ZooKeeperServer):
        zk = zookeeper
        zk_connect = zk.connect
    else:
        zk = None
        zk_connect = zookeeper
    if zk is not None:
        zk.users.add(name)
    cluster = KafkaCluster(
        name=name,
        mode="zookeeper",
        version=version,
        nodes=[],
        bootstrap="",
        workdir=base,
        zookeeper=zk,
        zookeeper_connect=zk_connect + chroot,
        control_plane_listener=control_plane_listener,
    )
    try:
        if zk is not None and not zk.is_running:
            zk.start()
        log_config = _write_log_config(base, version)
        for broker_id in range(1, brokers + 1):
            node_name = f"broker-{broker_id}"
            node_dir = base / node_name
            port, jmx_port = free_port(), free_port()
            listeners = {"PLAINTEXT": port}
            if control_plane_listener:
                listeners["CONTROLLER"] = free_port()
            listener_str = ",".join(f"{k}://{LOOPBACK}:{v}" for k, v in listeners.items())
            props = {
                "broker.id": str(broker_id),
                "listeners": listener_str,
                "advertised.listeners": listener_str,
                "listener.security.protocol.map": ",".join(f"{k}:PLAINTEXT" for k in listeners),
                "inter.broker.listener.name": "PLAINTEXT",
                "zookeeper.connect": cluster.zookeeper_connect or "",
                "zookeeper.session.timeout.ms": "6000",
                "zookeeper.connection.timeout.ms": "60000",
                "log.dirs": str(node_dir / "data"),
                "controlled.shutdown.retry.backoff.ms": "1000",
                **_topic_defaults(),
                **_common_broker_props(brokers),
            }
            if control_plane_listener:
                props["control.plane.listener.name"] = "CONTROLLER"
            props.update((node_overrides or {}).get(node_name, {}))
            cluster.nodes.append(
                _kafka_node(
                    name,
                    node_name,
                    broker_id,
                    ("broker",),
                    node_dir,
                    props,
                    port=port,
                    jmx_port=jmx_port,
                    listeners=listeners,
                    version=version,
                    log_config=log_config,
                    ready_pattern=rf"\[KafkaServer id={broker_id}\] started",
                )
            )
        cluster.bootstrap = ",".join(n.address for n in cluster.nodes)
        # Brokers retry the ZooKeeper connection (zookeeper.connection.timeout.ms), so no need to wait here.
        for n in cluster.nodes:
            n.start()
        if wait:
            cluster.wait_ready(timeout)
    except BaseException:
        cluster.stop(timeout=10)
        raise
    return cluster


def _check_node_overrides(overrides: Mapping[str, Mapping[str, str]] | None, names: Sequence[str]) -> None:
    unknown = set(overrides or {}) - set(names)
    if unknown:
        raise ValueError(f"node_overrides for nodes the cluster does not have: {sorted(unknown)}")


def kraft_cluster_id(name: str) -> str:
    """A fixed, valid KRaft cluster id derived from the cluster name (22 chars, base64url)."""
    digest = hashlib.sha256(f"ctlplane:{name}".encode()).digest()[:16]
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def start_kraft_cluster(
    name: str,
    workdir: Path,
    *,
    controllers: int = 3,
    brokers: int = 2,
    version: str = KRAFT_VERSION,
    broker_session_timeout_ms: int = 6000,
    broker_overrides: Mapping[str, str] | None = None,
    node_overrides: Mapping[str, Mapping[str, str]] | None = None,
    controller_ports: Mapping[int, int] | None = None,
    wait: bool = True,
    timeout: float = 180,
) -> KafkaCluster:
    """Start a KRaft cluster in ``<workdir>/<name>``: controller-only nodes
    ``controller-1..`` (node ids 101..) with static ``controller.quorum.voters``
    and broker-only nodes ``broker-1..`` (node ids 1..).

    ``broker.heartbeat.interval.ms`` is min(1000, session timeout / 3); ``broker_overrides`` are
    added to every broker's properties last, then ``node_overrides[node name]`` to that node's.
    ``controller_ports`` (node id -> port) fixes the controllers' listener ports, so that a caller can
    put something between a node and the quorum before the cluster starts.
    ``wait`` waits for ``wait_ready(timeout)``; on failure everything is stopped.
    """
    major, minor = _major_minor(version)
    if (major, minor) < (3, 3):
        raise ValueError(f"KRaft needs Kafka >= 3.3, got {version}")
    if controllers < 1 or brokers < 0:
        raise ValueError("need controllers >= 1 and brokers >= 0")
    if broker_session_timeout_ms < 300:
        raise ValueError("broker_session_timeout_ms must be >= 300")
    heartbeat_ms = max(100, min(1000, broker_session_timeout_ms // 3))
    base = _cluster_dir(workdir, name)
    cluster_id = kraft_cluster_id(name)
    log_config = _write_log_config(base, version)

    fixed = controller_ports or {}
    voter_ports = {nid: fixed.get(nid) or free_port() for nid in range(101, 101 + controllers)}
    voters = ",".join(f"{nid}@{LOOPBACK}:{p}" for nid, p in voter_ports.items())
    shared = {
        "controller.quorum.voters": voters,
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "broker.session.timeout.ms": str(broker_session_timeout_ms),
        "broker.heartbeat.interval.ms": str(heartbeat_ms),
        "num.network.threads": "2",
        "num.io.threads": "2",
    }
    cluster = KafkaCluster(
        name=name,
        mode="kraft",
        version=version,
        nodes=[],
        bootstrap="",
        workdir=base,
        cluster_id=cluster_id,
    )
    specs: list[tuple[str, int, tuple[str, ...], int, dict[str, int], dict[str, str]]] = []
    for i in range(1, controllers + 1):
        nid = 100 + i
        port = voter_ports[nid]
        props = {
            "process.roles": "controller",
            "node.id": str(nid),
            "listeners": f"CONTROLLER://{LOOPBACK}:{port}",
            **shared,
            **_topic_defaults(),
        }
        specs.append((f"controller-{i}", nid, ("controller",), port, {"CONTROLLER": port}, props))
    for i in range(1, brokers + 1):
        port = free_port()
        props = {
            "process.roles": "broker",
            "node.id": str(i),
            "listeners": f"PLAINTEXT://{LOOPBACK}:{port}",
            "advertised.listeners": f"PLAINTEXT://{LOOPBACK}:{port}",
            "inter.broker.listener.name": "PLAINTEXT",
            **shared,
            **_common_broker_props(brokers),
            "share.coordinator.state.topic.replication.factor": str(min(3, brokers)),
            "share.coordinator.state.topic.min.isr": "1",
            **(broker_overrides or {}),
        }
        specs.append((f"broker-{i}", i, ("broker",), port, {"PLAINTEXT": port}, props))
    _check_node_overrides(node_overrides, [spec[0] for spec in specs])
    for spec in specs:
        spec[5].update((node_overrides or {}).get(spec[0], {}))

    try:
        for node_name, nid, roles, port, listeners, props in specs:
            node_dir = base / node_name
            props["log.dirs"] = str(node_dir / "data")
            cluster.nodes.append(
                _kafka_node(
                    name,
                    node_name,
                    nid,
                    roles,
                    node_dir,
                    props,
                    port=port,
                    jmx_port=free_port(),
                    listeners=listeners,
                    version=version,
                    log_config=log_config,
                    ready_pattern=r"Kafka Server started",
                )
            )
        cluster.bootstrap = ",".join(n.address for n in cluster.brokers())
        _format_storage(cluster, log_config)
        for node in cluster.controllers():
            node.start()
        if (major, minor) >= (4, 1):
            _wait_for_controller_metrics_publisher(cluster, timeout)
        for node in cluster.nodes:
            if not node.is_controller:
                node.start()
        if wait:
            cluster.wait_ready(timeout)
    except BaseException:
        cluster.stop(timeout=10)
        raise
    return cluster


# Kafka 4.1+ creates a controller's BrokerRegistrationState,broker=N gauge only when that controller's
# ControllerMetadataMetricsPublisher sees broker N's registration appear in a LOG_DELTA; the first image a
# publisher is given is a SNAPSHOT manifest (MetadataLoader.initializeNewPublishers), whose publishSnapshot
# sets the counts but adds no per-broker gauge. A controller whose loader caught up only after the brokers
# registered (a slow start on a loaded machine) would never have the gauges, so the brokers start after
# every controller has initialised that publisher.
_CONTROLLER_METRICS_PUBLISHER_READY = r"InitializeNewPublishers: initializing ControllerMetadataMetricsPublisher"


def _wait_for_controller_metrics_publisher(cluster: KafkaCluster, timeout: float) -> None:
    _wait_for(
        cluster,
        cluster.controllers(),
        lambda n: re.search(_CONTROLLER_METRICS_PUBLISHER_READY, n.log_since_start()) is not None,
        timeout,
        "did not initialise ControllerMetadataMetricsPublisher",
    )


def _wait_for(
    cluster: KafkaCluster,
    nodes: Sequence[KafkaNode],
    done: Callable[[KafkaNode], bool],
    timeout: float,
    what: str,
) -> None:
    """Poll until `done` holds for every node of `nodes`; a node that exits, or the deadline, raises
    ClusterStartError naming the pending nodes (`what`) and quoting the first one's log."""
    deadline = time.monotonic() + timeout
    pending = list(nodes)
    while True:
        for node in nodes:
            node.check_alive(f"cluster {cluster.name}")
        pending = [n for n in pending if not done(n)]
        if not pending:
            return
        if time.monotonic() > deadline:
            first = pending[0]
            raise ClusterStartError(
                f"cluster {cluster.name}: {', '.join(n.name for n in pending)} {what} "
                f"after {timeout:.0f}s; last lines of {first.log_path}:\n{first.log_tail()}"
            )
        time.sleep(_POLL_INTERVAL)


def _format_storage(cluster: KafkaCluster, log_config: Path) -> None:
    """Run ``kafka.tools.StorageTool format`` for every node (concurrently).

    Static ``controller.quorum.voters`` + a fixed cluster id: no ``--standalone``
    or ``--initial-controllers`` needed (those are for dynamic quorums).
    """
    assert cluster.cluster_id is not None
    procs: list[tuple[KafkaNode, subprocess.Popen[str]]] = []
    for n in cluster.nodes:
        assert n.config_path is not None
        cmd = _jvm_command(
            cluster.version,
            STORAGE_TOOL_MAIN,
            [
                "format",
                "--config",
                str(n.config_path),
                "--cluster-id",
                cluster.cluster_id,
                "--ignore-formatted",
            ],
            heap_mb=128,
            jmx_port=None,
            log_config=log_config,
        )
        p = subprocess.Popen(
            cmd,
            cwd=n.cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        procs.append((n, p))
    errors = []
    for n, p in procs:
        try:
            out, _ = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
        if p.returncode != 0:
            errors.append(f"{n.name}: StorageTool format exited with {p.returncode}:\n{_tail_text(out, 20)}")
    if errors:
        raise ClusterStartError(f"cluster {cluster.name}: formatting storage failed\n" + "\n".join(errors))


# --------------------------------------------------------------------------- fleets


def _start_fleet(starters: Iterable[Callable[[], KafkaCluster]], timeout: float) -> list[KafkaCluster]:
    clusters: list[KafkaCluster] = []
    try:
        for starter in starters:
            clusters.append(starter())
        deadline = time.monotonic() + timeout
        for c in clusters:
            c.wait_ready(max(1.0, deadline - time.monotonic()))
    except BaseException:
        for c in reversed(clusters):
            c.stop(timeout=10)
        raise
    return clusters


def clusters_config(clusters: Iterable[KafkaCluster]) -> list[dict[str, Any]]:
    """The `clusters:` list of a ctlplane config that watches these clusters over their JMX ports."""
    return [
        {
            "name": cluster.name,
            "nodes": [
                {
                    "address": f"{LOOPBACK}:{node.jmx_port}",
                    "name": node.name,
                    "role": "combined" if len(node.roles) > 1 else node.roles[0],
                }
                for node in cluster.nodes
            ],
        }
        for cluster in clusters
    ]


def start_default_fleet(workdir: Path, *, timeout: float = 240) -> list[KafkaCluster]:
    """The clusters ``ctlplane run`` monitors without a config: "zk-3.9" (ZooKeeper
    mode, 3 brokers, control-plane listener) and "kraft-4.3" (3 controllers + 2 brokers).
    Both start concurrently; returns once both are ready."""
    return _start_fleet(
        [
            lambda: start_zk_cluster("zk-3.9", workdir, brokers=3, control_plane_listener=True, wait=False),
            lambda: start_kraft_cluster("kraft-4.3", workdir, controllers=3, brokers=2, wait=False),
        ],
        timeout,
    )


def start_test_fleet(workdir: Path, *, timeout: float = 300) -> list[KafkaCluster]:
    """The three test clusters: "zk-3.9" (3 brokers, listener), "zk-3.9-nolistener"
    (1 broker, same ZooKeeper, chroot /zk-3.9-nolistener) and "kraft-4.3"."""
    zk_main = start_zk_cluster("zk-3.9", workdir, brokers=3, control_plane_listener=True, wait=False)
    try:
        rest = _start_fleet(
            [
                lambda: start_zk_cluster(
                    "zk-3.9-nolistener",
                    workdir,
                    brokers=1,
                    control_plane_listener=False,
                    zookeeper=zk_main.zookeeper,
                    wait=False,
                ),
                lambda: start_kraft_cluster("kraft-4.3", workdir, controllers=3, brokers=2, wait=False),
            ],
            timeout,
        )
        zk_main.wait_ready(timeout)
    except BaseException:
        zk_main.stop(timeout=10)
        raise
    return [zk_main, *rest]


# --------------------------------------------------------------------------- CLI


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
    parser = argparse.ArgumentParser(prog="python -m ctlplane.localkafka", description=__doc__.split("\n\n")[0])
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
    jars = sub.add_parser("jars", help="fetch the jars of the given versions (default: both)")
    jars.add_argument("versions", nargs="*", default=[ZK_VERSION, KRAFT_VERSION])
    args = parser.parse_args(argv)
    if args.command == "jars":
        for v in args.versions:
            sys.stdout.write(f"{v}: {ensure_jars(v)}\n")
        return 0
    return _cmd_up(args)


if __name__ == "__main__":
    sys.exit(main())
