"""A ZooKeeper -> KRaft migration (KIP-866) of a local cluster, phase by phase, on Kafka 3.9.

    cluster = start_migrating_cluster("mig", workdir)   # ZooKeeper brokers + KRaft controllers: PRE_MIGRATION
    enable_migration_on_brokers(cluster)                # roll the brokers with the migration flag: MIGRATION
    roll_brokers_to_kraft(cluster)                      # roll them as KRaft brokers: still MIGRATION (dual write)
    finalize_migration(cluster)                         # roll the controllers without it: POST_MIGRATION

The steps and their configs follow Kafka's "ZooKeeper to KRaft Migration" (docs/ops.html): the controllers
run with `zookeeper.metadata.migration.enable` and the ZooKeeper connect string and are formatted with the
ZooKeeper cluster's id (`InconsistentClusterIdException` otherwise); their node ids differ from every
broker id (one id space); their `inter.broker.listener.name` is the brokers' (ClusterControlManager rejects
a migrating broker's registration without it). A migrating ZooKeeper broker registers `metadata.version` as
exactly its `inter.broker.protocol.version`, which must equal the controllers' (3.9 here). A KRaft broker
keeps its `broker.id` as `node.id` and needs no format: as a migrating ZooKeeper broker it already wrote
`meta.properties` in every log dir.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from harness.localkafka.clusters import KafkaCluster, format_storage, start_zk_cluster
from harness.localkafka.errors import ClusterStartError
from harness.localkafka.nodes import KafkaNode, ZooKeeperServer, kafka_node
from harness.localkafka.process import LOOPBACK, free_port, read_properties, write_log_config, write_properties
from harness.localkafka.versions import major_minor

MIGRATION_VERSION = "3.9.2"
CONTROLLER_IDS_FROM = 3001  # never a broker id
PROTOCOLS = "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"
KRAFT_READY = r"Kafka Server started"


def reconfigure(
    node: KafkaNode, set_: Mapping[str, str], remove: Sequence[str] = (), ready: str | None = None, timeout: float = 180
) -> None:
    """Stop `node` (SIGTERM: controlled shutdown), rewrite its server.properties, start it and wait."""
    assert node.config_path is not None
    props = read_properties(node.config_path)
    for key in remove:
        props.pop(key, None)
    props.update(set_)
    node.stop()
    write_properties(node.config_path, props)
    if ready is not None:
        node.ready_pattern = ready
    node.start()
    node.wait_ready(timeout)


def _cluster_id(broker: KafkaNode) -> str:
    assert broker.data_dir is not None
    meta = read_properties(broker.data_dir / "meta.properties")
    if "cluster.id" not in meta:
        raise ClusterStartError(f"{broker.name}: no cluster.id in {broker.data_dir / 'meta.properties'}")
    return meta["cluster.id"]


def _voters(cluster: KafkaCluster) -> str:
    return ",".join(f"{n.node_id}@{LOOPBACK}:{n.port}" for n in cluster.controllers())


def start_migrating_cluster(
    name: str,
    workdir: Path,
    *,
    brokers: int = 3,
    controllers: int = 1,
    version: str = MIGRATION_VERSION,
    zookeeper: ZooKeeperServer | None = None,
    timeout: float = 180,
) -> KafkaCluster:
    """ZooKeeper-mode brokers at `inter.broker.protocol.version` = the release, then a KRaft controller quorum
    with the migration flag beside them (PRE_MIGRATION until the brokers are rolled)."""
    if major_minor(version) < (3, 6) or major_minor(version)[0] >= 4:
        raise ValueError(f"a migration needs ZooKeeper mode and metadata transactions (3.6-3.9), got {version}")
    ibp = "{}.{}".format(*major_minor(version))
    cluster = start_zk_cluster(
        name,
        workdir,
        brokers=brokers,
        control_plane_listener=False,  # KRaft brokers may not keep it (KafkaConfig rejects it there)
        version=version,
        zookeeper=zookeeper,
        node_overrides={f"broker-{i}": {"inter.broker.protocol.version": ibp} for i in range(1, brokers + 1)},
        timeout=timeout,
    )
    try:
        cluster.migrating = True
        cluster.cluster_id = _cluster_id(cluster.brokers()[0])
        assert cluster.workdir is not None
        log_config = write_log_config(cluster.workdir, version)
        added = []
        ports = {CONTROLLER_IDS_FROM + i: free_port() for i in range(controllers)}
        voters = ",".join(f"{nid}@{LOOPBACK}:{port}" for nid, port in ports.items())
        for index, (nid, port) in enumerate(ports.items(), start=1):
            node_name = f"controller-{index}"
            node_dir = cluster.workdir / node_name
            props = {
                "process.roles": "controller",
                "node.id": str(nid),
                "listeners": f"CONTROLLER://{LOOPBACK}:{port}",
                "controller.listener.names": "CONTROLLER",
                "controller.quorum.voters": voters,
                "listener.security.protocol.map": PROTOCOLS,
                "inter.broker.listener.name": "PLAINTEXT",
                "zookeeper.metadata.migration.enable": "true",
                "zookeeper.connect": cluster.zookeeper_connect or "",
                "zookeeper.session.timeout.ms": "6000",
                "log.dirs": str(node_dir / "data"),
                "num.network.threads": "2",
                "num.io.threads": "2",
            }
            added.append(
                kafka_node(
                    name,
                    node_name,
                    nid,
                    ("controller",),
                    node_dir,
                    props,
                    port=port,
                    jmx_port=free_port(),
                    listeners={"CONTROLLER": port},
                    version=version,
                    log_config=log_config,
                    ready_pattern=KRAFT_READY,
                )
            )
        cluster.nodes.extend(added)
        format_storage(cluster, log_config, added)
        for node in added:
            node.start()
        for node in added:
            node.wait_ready(timeout)
    except BaseException:
        cluster.stop(timeout=10)
        raise
    return cluster


def enable_migration_on_brokers(cluster: KafkaCluster, timeout: float = 180) -> None:
    """Roll every ZooKeeper broker with the migration flag and the quorum's address (phase 1)."""
    for broker in cluster.brokers():
        reconfigure(
            broker,
            {
                "zookeeper.metadata.migration.enable": "true",
                "controller.quorum.voters": _voters(cluster),
                "controller.listener.names": "CONTROLLER",
                "listener.security.protocol.map": PROTOCOLS,
            },
            timeout=timeout,
        )


def roll_brokers_to_kraft(cluster: KafkaCluster, count: int | None = None, timeout: float = 180) -> None:
    """Restart the first `count` brokers (default all) as KRaft brokers, node.id = broker.id (phase 2)."""
    for broker in cluster.brokers()[:count]:
        reconfigure(
            broker,
            {"process.roles": "broker", "node.id": str(broker.node_id)},
            remove=(
                "broker.id",
                "zookeeper.connect",
                "zookeeper.session.timeout.ms",
                "zookeeper.connection.timeout.ms",
                "zookeeper.metadata.migration.enable",
                "inter.broker.protocol.version",
            ),
            ready=KRAFT_READY,
            timeout=timeout,
        )


def finalize_migration(cluster: KafkaCluster, timeout: float = 180) -> None:
    """Roll the controllers without the migration flag and ZooKeeper (POST_MIGRATION; no way back)."""
    for controller in cluster.controllers():
        reconfigure(
            controller,
            {},
            remove=("zookeeper.metadata.migration.enable", "zookeeper.connect", "zookeeper.session.timeout.ms"),
            timeout=timeout,
        )
