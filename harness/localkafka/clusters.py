"""Clusters: ZooKeeper-mode and KRaft clusters of local nodes, started and stopped together."""

from __future__ import annotations

import base64
import hashlib
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from harness.localkafka import classdata
from harness.localkafka.agent import MetricsServer
from harness.localkafka.errors import ClusterStartError, LocalKafkaError
from harness.localkafka.jars import ensure_jars, tail_text
from harness.localkafka.nodes import KafkaNode, ZooKeeperServer, check_name, kafka_node, start_zookeeper
from harness.localkafka.process import (
    LOOPBACK,
    POLL_INTERVAL_SECONDS,
    free_port,
    java_executable,
    jvm_command,
    read_properties,
    stop_processes,
    write_log_config,
)
from harness.localkafka.tls import LocalPki
from harness.localkafka.versions import KRAFT_VERSION, ZK_VERSION, major_minor

STORAGE_TOOL_MAIN = "kafka.tools.StorageTool"
# What lets a broker of 10,000 partitions fit one machine of 2 cores (production.md "Large brokers"): each
# segment maps an offset and a time index, preallocated to log.index.size.max.bytes (10 MiB by default), and
# vm.max_map_count is 65,530 (~2 maps a segment); each partition's log holds a descriptor open (ulimit -n). Measured
# 2026-12-03: 10,000 partitions of 1,000 topics made in 3 s, 10,088 descriptors and 20,346 maps, the broker
# idle at ~0.02 of a core, back from kill -9 in 20 s.
LARGE_BROKER_OVERRIDES = {
    "log.segment.bytes": str(1024 * 1024),
    "log.index.size.max.bytes": str(64 * 1024),
    "num.recovery.threads.per.data.dir": "2",
    "log.cleaner.enable": "false",
}


SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


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
    migrating: bool = False  # ZooKeeper brokers beside a KRaft quorum with the migration flag (migration.py)
    pki: LocalPki | None = None  # the CA of the brokers' TLS listeners, when started with one

    def node(self, name: str) -> KafkaNode:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(f"cluster {self.name} has no node {name!r}; nodes: {[n.name for n in self.nodes]}")

    def brokers(self) -> list[KafkaNode]:
        return [n for n in self.nodes if n.is_broker]

    def listener_bootstrap(self, listener: str) -> list[str]:
        """The broker-only nodes' addresses on `listener` (e.g. SASL_PLAINTEXT, SSL), [] where none has it."""
        return [f"{LOOPBACK}:{n.listeners[listener]}" for n in self.brokers() if listener in n.listeners]

    def controllers(self) -> list[KafkaNode]:
        """KRaft controller nodes ([] in ZooKeeper mode, where a broker is the controller)."""
        return [n for n in self.nodes if n.is_controller]

    @property
    def is_running(self) -> bool:
        return any(n.is_running for n in self.nodes)

    def wait_ready(self, timeout: float = 180) -> None:
        """Wait until every node serves (see ``JvmProcess.is_ready``).

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
        wait_for_nodes(self, self.nodes, lambda n: n.is_ready(), max(1.0, deadline - time.monotonic()), "not ready")

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
        stop_processes([n for n in self.nodes if not n.is_controller], timeout)
        stop_processes(self.controllers(), timeout)
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


def _cluster_dir(workdir: Path, name: str) -> Path:
    check_name(name)
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
    jmx_port_base: int | None = None,
    metrics_agent: MetricsServer | None = None,
    control_plane_ports: Mapping[str, tuple[int, int]] | None = None,
    sasl_users: Mapping[str, str] | None = None,
    broker_overrides: Mapping[str, str] | None = None,
    broker_heap_mb: int | None = None,
) -> KafkaCluster:
    """Start a ZooKeeper-mode cluster of ``brokers`` brokers (ids 1..N) in ``<workdir>/<name>``.

    ``zookeeper``: None starts a private ZooKeeper (stopped with the cluster); a
    ``ZooKeeperServer`` (e.g. ``other_cluster.zookeeper``) is shared and stopped
    when its last cluster stops if it was started implicitly; a string is an
    external connect string ``host:port``. ``chroot`` defaults to ``/<name>``
    ("" or "/" for none). With ``control_plane_listener`` the brokers get a second
    listener CONTROLLER used as ``control.plane.listener.name`` (KIP-291).
    ``broker_overrides`` is added to every broker's properties, ``node_overrides[node name]`` to that broker's
    last. ``broker_heap_mb``: the brokers' heap, where not the harness's default (a broker of many partitions).
    ``wait`` waits for ``wait_ready(timeout)``; on failure everything is stopped.
    ``jmx_port_base``: each broker's JMX port is the base plus its id (as start_kraft_cluster).
    ``metrics_agent``: every broker serves its metrics so (jmx_exporter's javaagent or the Strimzi Metrics
    Reporter) on ``node.metrics_port``.
    ``control_plane_ports[node name]``: (the port its CONTROLLER listener takes, the port it advertises), so
    that a caller can put a link between the controller and that broker (harness.netcut): the controller
    sends its requests to the advertised endpoint of the control-plane listener (ControllerChannelManager).
    ``sasl_users`` (user -> password): a second client listener, ``SASL_PLAINTEXT``, as start_kraft_cluster's;
    the SCRAM credentials are written to ZooKeeper once the brokers are up (ConfigCommand ``--zookeeper``, which
    every ZooKeeper-mode release takes for SCRAM), where the brokers pick them up as a config change.
    """
    if control_plane_ports and not control_plane_listener:
        raise ValueError("control_plane_ports needs control_plane_listener")
    if major_minor(version)[0] >= 4:
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
        log_config = write_log_config(base, version)
        for broker_id in range(1, brokers + 1):
            node_name = f"broker-{broker_id}"
            node_dir = base / node_name
            port = free_port()
            jmx_port = free_port() if jmx_port_base is None else jmx_port_base + broker_id
            listeners = {"PLAINTEXT": port}
            advertised = dict(listeners)
            if control_plane_listener:
                listens, advertises = (control_plane_ports or {}).get(node_name, (free_port(), None))
                listeners["CONTROLLER"] = listens
                advertised["CONTROLLER"] = advertises or listens
            listener_str = ",".join(f"{k}://{LOOPBACK}:{v}" for k, v in listeners.items())
            props = {
                "broker.id": str(broker_id),
                "listeners": listener_str,
                "advertised.listeners": ",".join(f"{k}://{LOOPBACK}:{v}" for k, v in advertised.items()),
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
            props |= _secured_listener_props(props, listeners, sasl_users or {}, None)
            props.update(broker_overrides or {})
            props.update((node_overrides or {}).get(node_name, {}))
            cluster.nodes.append(
                kafka_node(
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
                    metrics_agent=metrics_agent,
                    heap_mb=broker_heap_mb,
                )
            )
        cluster.bootstrap = ",".join(n.address for n in cluster.nodes)
        # Brokers retry the ZooKeeper connection (zookeeper.connection.timeout.ms), so no need to wait here.
        for n in cluster.nodes:
            n.start()
        if wait or sasl_users:
            cluster.wait_ready(timeout)
        for user, password in (sasl_users or {}).items():
            _add_zookeeper_scram_user(cluster, user, password)
    except BaseException:
        cluster.stop(timeout=10)
        raise
    return cluster


def _add_zookeeper_scram_user(cluster: KafkaCluster, user: str, password: str, timeout: float = 60) -> None:
    """SCRAM-SHA-256/512 credentials for `user` in the cluster's ZooKeeper (`kafka-configs.sh --zookeeper
    --entity-type users --add-config SCRAM-...`): the brokers' user config handler loads them on the change
    notification. The chroot must exist, so the brokers are up first (they create it)."""
    credentials = ",".join(f"{mechanism}=[password={password}]" for mechanism in SCRAM_MECHANISMS)
    result = subprocess.run(
        [java_executable(), "-Xmx128m", "-cp", f"{ensure_jars(cluster.version)}/*", "kafka.admin.ConfigCommand",
         "--zookeeper", cluster.zookeeper_connect or "", "--alter", "--entity-type", "users", "--entity-name", user,
         "--add-config", credentials],
        capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip
    if result.returncode != 0:
        raise LocalKafkaError(
            f"SCRAM credentials for {user} in {cluster.name} failed: {tail_text(result.stderr or result.stdout, 20)}"
        )


def set_scram_password(
    cluster: KafkaCluster, user: str, password: str, mechanisms: Sequence[str] = SCRAM_MECHANISMS, timeout: float = 60
) -> None:
    """`user`'s SCRAM credentials (each of `mechanisms`) set to `password` through the brokers' plaintext
    listener (`kafka-configs.sh --bootstrap-server --alter --entity-type users --add-config SCRAM-...`, KIP-554:
    the Admin API's alterUserScramCredentials, which takes one mechanism of a user per call): a new user, or a
    password changed, the old one refused from then on."""
    for mechanism in mechanisms:
        result = subprocess.run(
            [java_executable(), "-Xmx128m", "-cp", f"{ensure_jars(cluster.version)}/*", "kafka.admin.ConfigCommand",
             "--bootstrap-server", cluster.bootstrap, "--alter", "--entity-type", "users", "--entity-name", user,
             "--add-config", f"{mechanism}=[password={password}]"],
            capture_output=True, text=True, timeout=timeout, check=False,
        )  # fmt: skip
        if result.returncode != 0:
            raise LocalKafkaError(
                f"{mechanism} credentials for {user} in {cluster.name} failed: "
                f"{tail_text(result.stderr or result.stdout, 20)}"
            )


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
    broker_session_timeout_ms: int = 9000,  # Kafka's default (BrokerHeartbeatManager, KRaftConfigs)
    broker_overrides: Mapping[str, str] | None = None,
    node_overrides: Mapping[str, Mapping[str, str]] | None = None,
    controller_ports: Mapping[int, int] | None = None,
    combined: bool = False,
    sasl_users: Mapping[str, str] | None = None,
    pki: LocalPki | None = None,
    wait: bool = True,
    timeout: float = 180,
    jmx_port_base: int | None = None,
    held: Collection[str] = (),
    dynamic_voters: int | None = None,
    metrics_agent: MetricsServer | None = None,
    broker_heap_mb: int | None = None,
    jmx_options: Sequence[str] = (),
) -> KafkaCluster:
    """Start a KRaft cluster in ``<workdir>/<name>``: controller-only nodes
    ``controller-1..`` (node ids 101..) with static ``controller.quorum.voters``
    and broker-only nodes ``broker-1..`` (node ids 1..). With ``combined`` the voters are
    ``combined-1..`` instead, each running both roles (``process.roles=broker,controller``).

    ``broker.heartbeat.interval.ms`` is min(1000, session timeout / 3); ``broker_overrides`` are
    added to every broker's properties last, then ``node_overrides[node name]`` to that node's.
    ``controller_ports`` (node id -> port) fixes the controllers' listener ports, so that a caller can
    put something between a node and the quorum before the cluster starts.
    ``sasl_users`` (user -> password) gives every broker-only node a second client listener,
    ``SASL_PLAINTEXT``, that takes those users with PLAIN and SCRAM-SHA-256/512 (the SCRAM credentials are
    written by the storage format, KIP-900, Kafka 3.5+). With ``pki`` (tls.make_local_pki, its "server"
    certificate) they also get ``SSL``, which requires a client certificate the CA signed, and with both,
    ``SASL_SSL`` (the same users over TLS, no client certificate). ``cluster.listener_bootstrap(name)``
    lists a listener's addresses.
    ``jmx_options``: JVM options every node's JMX agent gets after the harness's own (TLS: ``ssl=true``, …).
    ``wait`` waits for ``wait_ready(timeout)``; on failure everything is stopped.
    ``jmx_port_base``: each node's JMX port is the base plus its node id (free_port_base), as one host with a
    JMX port per node would have it; otherwise each gets a free port. ``held``: nodes (by name) created and
    formatted but not started, for a caller to start later (a broker added to a running cluster).
    ``broker_heap_mb``: the brokers' heap, where not the harness's default (a broker of many partitions).
    ``dynamic_voters``: a dynamic quorum (KIP-853, Kafka 3.9+) instead of static voters: every node finds the
    quorum through ``controller.quorum.bootstrap.servers``, the first ``dynamic_voters`` controllers are
    formatted as its initial voters (``--initial-controllers``, each with its directory id) and the others with
    ``--no-initial-controllers``: those run as observers until ``admin.add_controller`` makes them voters.
    ``metrics_agent``: every node serves its metrics so (jmx_exporter's javaagent or the Strimzi Metrics
    Reporter) on ``node.metrics_port``.
    """
    major, minor = major_minor(version)
    if sasl_users and (major, minor) < (3, 5):
        raise ValueError(f"sasl_users needs Kafka >= 3.5 (SCRAM credentials at format time), got {version}")
    if (major, minor) < (3, 3):
        raise ValueError(f"KRaft needs Kafka >= 3.3, got {version}")
    if controllers < 1 or brokers < 0:
        raise ValueError("need controllers >= 1 and brokers >= 0")
    if broker_session_timeout_ms < 300:
        raise ValueError("broker_session_timeout_ms must be >= 300")
    if dynamic_voters is not None and ((major, minor) < (3, 9) or not 1 <= dynamic_voters <= controllers):
        raise ValueError(f"dynamic_voters needs Kafka >= 3.9 and 1..{controllers} initial voters, got {dynamic_voters}")
    heartbeat_ms = max(100, min(1000, broker_session_timeout_ms // 3))
    base = _cluster_dir(workdir, name)
    cluster_id = kraft_cluster_id(name)
    log_config = write_log_config(base, version)

    fixed = controller_ports or {}
    voter_ports = {nid: fixed.get(nid) or free_port() for nid in range(101, 101 + controllers)}
    voters = ",".join(f"{nid}@{LOOPBACK}:{p}" for nid, p in voter_ports.items())
    quorum = (
        {"controller.quorum.voters": voters}
        if dynamic_voters is None
        else {"controller.quorum.bootstrap.servers": ",".join(f"{LOOPBACK}:{p}" for p in voter_ports.values())}
    )
    shared = {
        **quorum,
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
        pki=pki,
    )
    serving = brokers + (controllers if combined else 0)  # nodes that hold partitions

    def broker_props(port: int) -> dict[str, str]:
        return {
            "advertised.listeners": f"PLAINTEXT://{LOOPBACK}:{port}",
            "inter.broker.listener.name": "PLAINTEXT",
            **_common_broker_props(serving),
            "share.coordinator.state.topic.replication.factor": str(min(3, serving)),
            "share.coordinator.state.topic.min.isr": "1",
            **(broker_overrides or {}),
        }

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
        if not combined:
            specs.append((f"controller-{i}", nid, ("controller",), port, {"CONTROLLER": port}, props))
            continue
        client = free_port()
        props |= {
            "process.roles": "broker,controller",
            "listeners": f"PLAINTEXT://{LOOPBACK}:{client},CONTROLLER://{LOOPBACK}:{port}",
            **broker_props(client),
        }
        listeners = {"PLAINTEXT": client, "CONTROLLER": port}
        specs.append((f"combined-{i}", nid, ("broker", "controller"), client, listeners, props))
    for i in range(1, brokers + 1):
        port = free_port()
        props = {
            "process.roles": "broker",
            "node.id": str(i),
            "listeners": f"PLAINTEXT://{LOOPBACK}:{port}",
            **shared,
            **broker_props(port),
        }
        listeners = {"PLAINTEXT": port}
        secured = _secured_listener_props(props, listeners, sasl_users or {}, pki)
        props |= secured
        specs.append((f"broker-{i}", i, ("broker",), port, listeners, props))
    _check_node_overrides(node_overrides, [spec[0] for spec in specs])
    for spec in specs:
        spec[5].update((node_overrides or {}).get(spec[0], {}))
    if unknown_held := set(held) - {spec[0] for spec in specs}:
        raise ValueError(f"held nodes the cluster does not have: {sorted(unknown_held)}")

    try:
        for node_name, nid, roles, port, listeners, props in specs:
            node_dir = base / node_name
            props["log.dirs"] = str(node_dir / "data")
            cluster.nodes.append(
                kafka_node(
                    name,
                    node_name,
                    nid,
                    roles,
                    node_dir,
                    props,
                    port=port,
                    jmx_port=free_port() if jmx_port_base is None else jmx_port_base + nid,
                    listeners=listeners,
                    version=version,
                    log_config=log_config,
                    ready_pattern=r"Kafka Server started",
                    metrics_agent=metrics_agent,
                    heap_mb=broker_heap_mb if "broker" in roles else None,
                    jmx_options=jmx_options,
                )
            )
        cluster.bootstrap = ",".join(n.address for n in cluster.brokers())
        scram = [
            f"{mechanism}=[name={user},password={password}]"
            for user, password in (sasl_users or {}).items()
            for mechanism in SCRAM_MECHANISMS
        ]
        format_storage(
            cluster,
            log_config,
            extra_args=[arg for entry in scram for arg in ("--add-scram", entry)],
            node_args=_dynamic_quorum_format_args(cluster, voter_ports, dynamic_voters),
        )
        for node in cluster.controllers():
            node.start()
        if (major, minor) >= (4, 1):
            _wait_for_controller_metrics_publisher(cluster, timeout)
        for node in cluster.nodes:
            if not node.is_controller and node.name not in held:
                node.start()
        if wait:
            started = [node for node in cluster.nodes if node.name not in held]
            wait_for_nodes(cluster, started, lambda n: n.is_ready(), timeout, "not ready")
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
    wait_for_nodes(
        cluster,
        cluster.controllers(),
        lambda n: re.search(_CONTROLLER_METRICS_PUBLISHER_READY, n.log_since_start()) is not None,
        timeout,
        "did not initialise ControllerMetadataMetricsPublisher",
    )


def wait_for_nodes(
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
        time.sleep(POLL_INTERVAL_SECONDS)


def _secured_listener_props(
    props: Mapping[str, str], listeners: dict[str, int], users: Mapping[str, str], pki: LocalPki | None
) -> dict[str, str]:
    """A broker's extra client listeners, each on a new port added to `listeners`: SASL_PLAINTEXT for
    `users` (PLAIN, their passwords in the listener's JAAS config as PlainLoginModule's user_<name>
    options; SCRAM-SHA-256/512, credentials from the format), SSL with a required client certificate for
    `pki`, and SASL_SSL for both. Properties per listener name: `listener.name.<name>.<config>`."""
    secured = [
        name for name, wanted in (("SASL_PLAINTEXT", users), ("SSL", pki), ("SASL_SSL", users and pki)) if wanted
    ]
    if not secured:
        return {}
    for name in secured:
        listeners[name] = free_port()
    endpoints = ",".join(f"{name}://{LOOPBACK}:{listeners[name]}" for name in secured)
    extra = {
        "listeners": f"{props['listeners']},{endpoints}",
        "advertised.listeners": f"{props['advertised.listeners']},{endpoints}",
        "listener.security.protocol.map": (
            props["listener.security.protocol.map"] + "".join(f",{name}:{name}" for name in secured)
        ),
    }
    if users:
        plain_users = " ".join(f'user_{user}="{password}"' for user, password in users.items())
        extra["sasl.enabled.mechanisms"] = ",".join(("PLAIN", *SCRAM_MECHANISMS))
        for name in (n for n in secured if n.startswith("SASL_")):
            prefix = f"listener.name.{name.lower()}"
            extra[f"{prefix}.plain.sasl.jaas.config"] = (
                f"org.apache.kafka.common.security.plain.PlainLoginModule required {plain_users};"
            )
            for mechanism in SCRAM_MECHANISMS:
                extra[f"{prefix}.{mechanism.lower()}.sasl.jaas.config"] = (
                    "org.apache.kafka.common.security.scram.ScramLoginModule required;"
                )
    if pki is not None:
        extra |= {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(pki.bundle("server")),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(pki.ca),
            "listener.name.ssl.ssl.client.auth": "required",
        }
    return extra


def _initial_directory_id(cluster: str, node: str) -> str:
    """A fixed, valid directory id (a Uuid, base64url) for an initial voter's metadata log directory."""
    return kraft_cluster_id(f"{cluster}/{node}/metadata")


def directory_id(node: KafkaNode) -> str:
    """The node's metadata log directory id as its format wrote it (meta.properties `directory.id`, 3.7+): for
    an initial voter the one `--initial-controllers` named, for any other node a random one."""
    assert node.data_dir is not None
    meta = read_properties(node.data_dir / "meta.properties")
    if "directory.id" not in meta:
        raise ClusterStartError(f"{node.name}: no directory.id in {node.data_dir / 'meta.properties'}")
    return meta["directory.id"]


def _dynamic_quorum_format_args(
    cluster: KafkaCluster, voter_ports: Mapping[int, int], initial: int | None
) -> dict[str, list[str]]:
    """Each node's format arguments for a dynamic quorum (StorageTool's reconfigurable-quorum options): the
    initial voters name every initial voter with its endpoint and directory id; the others join later."""
    if initial is None:
        return {}
    controllers = cluster.controllers()
    voters = ",".join(
        f"{n.node_id}@{LOOPBACK}:{voter_ports[n.node_id]}:{_initial_directory_id(cluster.name, n.name)}"
        for n in controllers[:initial]
    )
    first = {n.name for n in controllers[:initial]}
    return {
        n.name: [f"--initial-controllers={voters}"] if n.name in first else ["--no-initial-controllers"]
        for n in cluster.nodes
    }


def format_storage(
    cluster: KafkaCluster,
    log_config: Path,
    nodes: Sequence[KafkaNode] | None = None,
    extra_args: Sequence[str] = (),
    node_args: Mapping[str, Sequence[str]] | None = None,
) -> None:
    """Run ``kafka.tools.StorageTool format`` for every node of ``nodes`` (default: all; concurrently),
    with ``extra_args`` (``--add-scram ...``) and the node's ``node_args`` after the usual ones.

    Static ``controller.quorum.voters`` + a fixed cluster id need no ``--standalone`` or
    ``--initial-controllers``; a dynamic quorum's nodes get theirs in ``node_args``.
    """
    assert cluster.cluster_id is not None
    procs: list[tuple[KafkaNode, subprocess.Popen[str]]] = []
    for n in cluster.nodes if nodes is None else nodes:
        assert n.config_path is not None
        cmd = jvm_command(
            cluster.version,
            STORAGE_TOOL_MAIN,
            [
                "format",
                "--config",
                str(n.config_path),
                # One argument, "=" joined: a random id (ZooKeeper's, which a migration keeps) starts with
                # "-" one time in 64, and argparse4j would take a separate one for an option.
                f"--cluster-id={cluster.cluster_id}",
                "--ignore-formatted",
                *extra_args,
                *(node_args or {}).get(n.name, ()),
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
            errors.append(f"{n.name}: StorageTool format exited with {p.returncode}:\n{tail_text(out, 20)}")
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
    """The `clusters:` list of a ctlplane config that watches these clusters over their JMX ports, and a
    KRaft cluster of 3.7+ also through its quorum's own view (`bootstrap_controllers`, KIP-919)."""
    return [
        {
            "name": cluster.name,
            "nodes": [
                {
                    "address": f"{LOOPBACK}:{node.jmx_port}",
                    "name": node.name,
                    "role": "combined" if len(node.roles) > 1 else node.roles[0],
                    "node_id": node.node_id,
                }
                for node in cluster.nodes
            ],
            **({"bootstrap_controllers": controllers} if (controllers := quorum_bootstrap(cluster)) else {}),
        }
        for cluster in clusters
    ]


def quorum_bootstrap(cluster: KafkaCluster) -> list[str]:
    """The controllers' addresses for `bootstrap.controllers` (KIP-919, Kafka 3.7+), [] where there are none."""
    if cluster.mode != "kraft" or major_minor(cluster.version) < (3, 7):
        return []
    return [f"{LOOPBACK}:{node.listeners['CONTROLLER']}" for node in cluster.controllers()]


def build_archives(version: str, *, directory: Path | None = None) -> list[Path]:
    """Build the class-data sharing archives of `version`'s JVMs (no-op where they exist): start the smallest
    cluster that runs each of its main classes, stop it cleanly, keep one archive per main class (classdata.py
    `write_archives`). Returns the archives."""

    def run_cluster(work: Path) -> None:
        if major_minor(version) >= (4, 0):
            # one node in both roles: one JVM loads the classes of a broker and of a controller
            cluster = start_kraft_cluster("cds", work, version=version, controllers=1, brokers=0, combined=True)
        else:
            cluster = start_zk_cluster("cds", work, version=version, brokers=1)
        cluster.stop()

    return classdata.write_archives(java_executable(), version, run_cluster, directory=directory)


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
