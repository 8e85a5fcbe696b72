"""JVM processes: start, signal, stop, and the command line and logging each one gets; loopback ports."""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import random
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from harness.localkafka.classdata import sharing_flags
from harness.localkafka.errors import ClusterStartError, LocalKafkaError
from harness.localkafka.jars import ensure_jars, tail_text
from harness.localkafka.versions import logging_flavour

LOOPBACK = "127.0.0.1"
ENV_EXTRA_JVM_OPTS = "CTLPLANE_KAFKA_JVM_OPTS"

_LOG_TAIL_LINES = 40
POLL_INTERVAL_SECONDS = 0.25


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


# Ports are picked below the kernel's ephemeral range: bind(0) hands out ports inside it, and while a
# node is stopped (a restart) any process's outgoing connection can take such a port as its local one,
# and the node cannot bind it again (seen in CI: "Socket server failed to bind to 127.0.0.1:34177:
# Address already in use" on a broker's restart).
LOWEST_PORT = 20000
DEFAULT_EPHEMERAL_RANGE = (32768, 60999)  # Linux's default net.ipv4.ip_local_port_range


def ephemeral_port_range() -> tuple[int, int]:
    """The kernel's range for outgoing connections' local ports (Linux's default where unreadable)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = (int(part) for part in f.read().split())
        return low, high
    except (OSError, ValueError):
        return DEFAULT_EPHEMERAL_RANGE


# Processes that start local clusters side by side (the suite's xdist workers) each take a share of the
# ports: "I/N" takes the I-th of N equal slices (0-based), so two processes never pick the same free port
# for nodes that bind it only seconds later.
ENV_PORT_SHARE = "CTLPLANE_PORT_SHARE"


def local_ports() -> range:
    """The ports free_port picks from: outside the ephemeral range, and only this process's share of them."""
    low, high = ephemeral_port_range()
    below, above = range(LOWEST_PORT, low), range(high + 1, 65536)
    ports = below if len(below) >= len(above) else above
    share = os.environ.get(ENV_PORT_SHARE)
    return ports if not share else port_share(ports, share)


def port_share(ports: range, share: str) -> range:
    """The `share` ("I/N") slice of `ports`; a LocalKafkaError naming the variable if it is not one."""
    index, sep, count = share.partition("/")
    if not (sep and index.isdigit() and count.isdigit() and int(index) < int(count) <= len(ports) // 100):
        raise LocalKafkaError(f"{ENV_PORT_SHARE}={share!r}: expected I/N with 0 <= I < N and 100 ports or more a share")
    size = len(ports) // int(count)
    start = ports.start + int(index) * size
    return range(start, start + size)


def free_port() -> int:
    """A currently free TCP port on 127.0.0.1 outside the ephemeral range, never handed out twice by this
    process."""
    candidates = local_ports()
    with _ports_lock:
        for _ in range(500):
            port = random.choice(candidates) if len(candidates) >= 100 else 0  # 0: the kernel's pick
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                try:
                    s.bind((LOOPBACK, port))
                except OSError:
                    continue  # someone listens there
                port = int(s.getsockname()[1])
            if port not in _reserved_ports:
                _reserved_ports.add(port)
                return port
    raise LocalKafkaError("could not find a free loopback port")


def free_port_base(offsets: Sequence[int]) -> int:
    """A base such that base + each of `offsets` is a free port (as free_port), all reserved for the
    caller: for nodes whose ports follow their ids (a JMX address rule `127.0.0.1:{id+BASE}`)."""
    candidates = local_ports()
    low, high = min(offsets), max(offsets)
    with _ports_lock:
        for _ in range(500):
            base = random.randrange(candidates.start - low, candidates.stop - high)
            ports = [base + offset for offset in offsets]
            if any(port in _reserved_ports for port in ports) or not all(_bindable(port) for port in ports):
                continue
            _reserved_ports.update(ports)
            return base
    raise LocalKafkaError(f"could not find free loopback ports at offsets {low}..{high} of one base")


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((LOOPBACK, port))
        except OSError:
            return False
    return True


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


_live: set[JvmProcess] = set()
_live_lock = threading.Lock()


def _kill_all_live() -> None:
    """atexit safety net: SIGKILL every process this module started that still runs."""
    with _live_lock:
        procs = list(_live)
    for proc in procs:
        with contextlib.suppress(Exception):
            proc.kill()


atexit.register(_kill_all_live)


class JvmProcess:
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
            log.write(f"==== harness.localkafka: starting {self.name} at {stamp} ====\n".encode())
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
        stop_processes([self], timeout)

    def kill(self) -> None:
        """SIGKILL the process group and reap it."""
        p = self._popen
        if p is not None and p.poll() is None:
            self._signal(signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(30)
        self._forget()

    def pause(self) -> None:
        """SIGSTOP: the JVM freezes (no heartbeats, no JMX answers). Returns once every thread of it is stopped
        (/proc: state T): the signal is delivered asynchronously, and at load 6+ a thread of a jmx_exporter agent
        once still read a request sent just after it."""
        self._require_running("pause")
        self._signal(signal.SIGSTOP)
        pid = self.pid
        deadline = time.monotonic() + 10
        while pid is not None and time.monotonic() < deadline:
            states = []
            for task in Path(f"/proc/{pid}/task").iterdir():
                with contextlib.suppress(OSError):  # a thread that ended
                    states.append((task / "stat").read_text().rsplit(")", 1)[1].split()[0])
            if states and all(state == "T" for state in states):
                return
            time.sleep(0.02)
        raise LocalKafkaError(f"{self.name} not stopped within 10 s of SIGSTOP")

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
        return tail_text(text, lines)

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
            time.sleep(POLL_INTERVAL_SECONDS)

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


def stop_processes(procs: Sequence[JvmProcess], timeout: float) -> None:
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


def jvm_command(
    version: str,
    main_class: str,
    args: Sequence[str],
    *,
    heap_mb: int,
    jmx_port: int | None,
    log_config: Path,
    agent_option: str | None = None,
    extra_classpath: Path | None = None,
    jmx_options: Sequence[str] = (),
) -> list[str]:
    jars = ensure_jars(version)
    java = java_executable()
    cmd = [
        java,
        *sharing_flags(java, version, main_class),
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
            *jmx_options,  # after the defaults: a -D given twice takes its last value (ssl=true, …)
        ]
    if logging_flavour(version) == "log4j2":
        cmd.append(f"-Dlog4j2.configurationFile={log_config}")
    else:
        cmd.append(f"-Dlog4j.configuration={log_config.as_uri()}")
    if agent_option is not None:
        cmd.append(agent_option)
    cmd += shlex.split(os.environ.get(ENV_EXTRA_JVM_OPTS, ""))
    classpath = f"{jars}/*" + (f":{extra_classpath}/*" if extra_classpath is not None else "")
    cmd += ["-cp", classpath, main_class, *args]
    return cmd


# A line per partition and event (a log loaded, recovered, truncated; a partition's replica state) goes to WARN:
# a restarted broker of 10,000 partitions logged 110,000 such lines (27 MB) on the way to RUNNING.
_LOG4J1 = """\
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.Target=System.out
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.state.change.logger=WARN
log4j.logger.kafka.log.LogCleaner=WARN
log4j.logger.kafka.log=WARN
log4j.logger.kafka.cluster.Partition=WARN
log4j.logger.kafka.server.ReplicaFetcherThread=WARN
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
logger.log.name = kafka.log
logger.log.level = WARN
logger.storage.name = org.apache.kafka.storage.internals.log
logger.storage.level = WARN
logger.partition.name = kafka.cluster.Partition
logger.partition.level = WARN
logger.fetcher.name = kafka.server.ReplicaFetcherThread
logger.fetcher.level = WARN
"""


def write_log_config(directory: Path, version: str) -> Path:
    if logging_flavour(version) == "log4j2":
        path = directory / "log4j2.properties"
        path.write_text(_LOG4J2)
    else:
        path = directory / "log4j.properties"
        path.write_text(_LOG4J1)
    return path


def read_properties(path: Path) -> dict[str, str]:
    """A Java properties file's `key=value` lines (no escapes or continuations: the files Kafka writes)."""
    props = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#") and "=" in line:
            key, value = line.split("=", 1)
            props[key.strip()] = value.strip()
    return props


def write_properties(path: Path, props: dict[str, str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"{k}={v}" for k, v in props.items()]
    path.write_text("# generated by harness.localkafka\n" + "\n".join(lines) + "\n")
