"""Real Kafka clusters from harness.localkafka, checked over JMX with jmxquery."""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from jmxquery import JMXConnection, JMXQuery

from harness import localkafka
from harness.localkafka import KafkaCluster, KafkaNode

pytestmark = pytest.mark.kafka

BROKER_STATE = "kafka.server:type=KafkaServer,name=BrokerState"
ACTIVE_CONTROLLER = "kafka.controller:type=KafkaController,name=ActiveControllerCount"
FENCED_BROKERS = "kafka.controller:type=KafkaController,name=FencedBrokerCount"
REGISTRATION_STATE = "kafka.controller:type=KafkaController,name=BrokerRegistrationState"
CP_QUEUE = "kafka.network:type=RequestChannel,name=ControlPlaneRequestQueueSize"
DP_QUEUE = "kafka.network:type=RequestChannel,name=RequestQueueSize"
UPTIME = "java.lang:type=Runtime"

T = TypeVar("T")


def jmx_values(node: KafkaNode, *mbeans: str, attribute: str = "Value") -> dict[str, object]:
    """Read ``attribute`` of each MBean (wildcards allowed); MBeans that do not exist are absent.

    jmxquery answers a missing MBean with no row (no error), so a JVM attribute is read in the
    same call to tell "no such MBean" from "no answer".
    """
    conn = JMXConnection(node.jmx_url)
    queries = [JMXQuery(m, attribute=attribute) for m in mbeans]
    results = conn.query([*queries, JMXQuery(UPTIME, attribute="Uptime")], timeout=60)
    assert any(r.mBeanName == UPTIME for r in results), f"no JMX answer from {node.name} ({node.jmx_address})"
    return {r.mBeanName: _number(r.value) for r in results if r.attribute == attribute and r.mBeanName != UPTIME}


def _number(value: object) -> object:
    """jmxquery renders some types (e.g. Byte, as BrokerState is) as strings: '3' -> 3."""
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return value
    return value


def jmx_value(node: KafkaNode, mbean: str) -> object:
    return jmx_values(node, mbean).get(mbean)


def exactly_one_active(counts: dict[str, object]) -> bool:
    values = list(counts.values())
    return values.count(1) == 1 and values.count(0) == len(values) - 1


def eventually(probe: Callable[[], T], ok: Callable[[T], bool], timeout: float = 60, interval: float = 1) -> T:
    """Call ``probe`` until ``ok(result)``; return the last result (the assertion reports it)."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if ok(value) or time.monotonic() > deadline:
            return value
        time.sleep(interval)


def broker_states(cluster: KafkaCluster) -> dict[str, object]:
    return {n.name: jmx_values(n, BROKER_STATE).get(BROKER_STATE) for n in cluster.brokers()}


def active_controller_counts(nodes: list[KafkaNode]) -> dict[str, object]:
    return {n.name: jmx_values(n, ACTIVE_CONTROLLER).get(ACTIVE_CONTROLLER) for n in nodes}


def active_controller(cluster: KafkaCluster) -> KafkaNode:
    counts = active_controller_counts(cluster.controllers())
    active = [name for name, v in counts.items() if v == 1]
    assert len(active) == 1, counts
    return cluster.node(active[0])


# --------------------------------------------------------------------------- ZooKeeper mode


def test_jars_are_cached() -> None:
    for version in (localkafka.ZK_VERSION, localkafka.KRAFT_VERSION):
        jars = localkafka.ensure_jars(version)
        assert (jars / f"kafka_2.13-{version}.jar").is_file()
        assert (jars / localkafka.JARS_MARKER).is_file()


def test_zk_cluster_layout(zk_cluster: KafkaCluster) -> None:
    assert zk_cluster.mode == "zookeeper"
    assert zk_cluster.version == localkafka.ZK_VERSION
    assert [n.name for n in zk_cluster.brokers()] == ["broker-1", "broker-2", "broker-3"]
    assert zk_cluster.controllers() == []
    assert zk_cluster.node("broker-2").node_id == 2
    assert zk_cluster.bootstrap == ",".join(f"127.0.0.1:{n.port}" for n in zk_cluster.nodes)
    for n in zk_cluster.nodes:
        assert n.is_running and n.pid is not None
        assert set(n.listeners) == {"PLAINTEXT", "CONTROLLER"}
        assert n.config_path is not None
        props = n.config_path.read_text()
        assert "control.plane.listener.name=CONTROLLER" in props
        assert f"listeners=PLAINTEXT://127.0.0.1:{n.port},CONTROLLER://127.0.0.1:" in props
    assert zk_cluster.zookeeper_connect is not None and zk_cluster.zookeeper_connect.endswith("/zk-3.9")


def test_zk_brokers_running_and_one_controller(zk_cluster: KafkaCluster) -> None:
    states = eventually(lambda: broker_states(zk_cluster), lambda s: all(v == 3 for v in s.values()))
    assert states == {"broker-1": 3, "broker-2": 3, "broker-3": 3}
    counts = eventually(
        lambda: active_controller_counts(zk_cluster.brokers()),
        exactly_one_active,
    )
    assert len(counts) == 3 and exactly_one_active(counts), counts


def test_zk_control_plane_queue_exists_with_listener(zk_cluster: KafkaCluster) -> None:
    for n in zk_cluster.brokers():
        values = jmx_values(n, CP_QUEUE, DP_QUEUE)
        assert DP_QUEUE in values, (n.name, values)
        assert CP_QUEUE in values, (n.name, values)


def test_zk_cluster_without_listener(zk_cluster_no_listener: KafkaCluster) -> None:
    (broker,) = zk_cluster_no_listener.brokers()
    assert set(broker.listeners) == {"PLAINTEXT"}
    values = eventually(
        lambda: jmx_values(broker, BROKER_STATE, ACTIVE_CONTROLLER, CP_QUEUE, DP_QUEUE),
        lambda v: v.get(BROKER_STATE) == 3 and v.get(ACTIVE_CONTROLLER) == 1,
    )
    assert values.get(BROKER_STATE) == 3
    assert values.get(ACTIVE_CONTROLLER) == 1  # its own chroot: its own controller
    assert DP_QUEUE in values
    assert CP_QUEUE not in values


def test_zk_clusters_share_one_zookeeper(zk_cluster: KafkaCluster, zk_cluster_no_listener: KafkaCluster) -> None:
    zk = zk_cluster.zookeeper
    assert zk is not None and zk is zk_cluster_no_listener.zookeeper
    assert zk.four_letter_word("ruok") == "imok"
    dump = zk.four_letter_word("dump")
    assert "/zk-3.9/brokers/ids/3" in dump
    assert "/zk-3.9-nolistener/brokers/ids/1" in dump


# --------------------------------------------------------------------------- KRaft


def test_kraft_cluster_layout(kraft_cluster: KafkaCluster) -> None:
    assert kraft_cluster.mode == "kraft"
    assert kraft_cluster.version == localkafka.KRAFT_VERSION
    assert [n.name for n in kraft_cluster.controllers()] == ["controller-1", "controller-2", "controller-3"]
    assert [n.name for n in kraft_cluster.brokers()] == ["broker-1", "broker-2"]
    assert all(n.roles == ("controller",) for n in kraft_cluster.controllers())
    assert all(n.roles == ("broker",) for n in kraft_cluster.brokers())
    assert len({n.node_id for n in kraft_cluster.nodes}) == 5
    assert kraft_cluster.bootstrap == ",".join(f"127.0.0.1:{n.port}" for n in kraft_cluster.brokers())


def test_kraft_brokers_running_and_one_active_controller(kraft_cluster: KafkaCluster) -> None:
    states = eventually(lambda: broker_states(kraft_cluster), lambda s: all(v == 3 for v in s.values()))
    assert states == {"broker-1": 3, "broker-2": 3}
    counts = eventually(
        lambda: active_controller_counts(kraft_cluster.controllers()),
        exactly_one_active,
    )
    assert len(counts) == 3 and exactly_one_active(counts), counts
    # broker-only nodes register no kafka.controller MBeans
    for b in kraft_cluster.brokers():
        values = jmx_values(b, BROKER_STATE, ACTIVE_CONTROLLER)
        assert BROKER_STATE in values and ACTIVE_CONTROLLER not in values


def test_every_kraft_controller_has_a_registration_gauge_for_every_broker(kraft_cluster: KafkaCluster) -> None:
    """Kafka 4.1+ adds BrokerRegistrationState,broker=N on a controller only for a registration it sees
    appear while running (ControllerMetadataMetricsPublisher); start_kraft_cluster starts the brokers after
    every controller is ready to see them, so whichever controller is active, the gauges are there."""
    gauges = [f"{REGISTRATION_STATE},broker={b.node_id}" for b in kraft_cluster.brokers()]
    for controller in kraft_cluster.controllers():
        values = jmx_values(controller, *gauges)
        assert values == dict.fromkeys(gauges, 30), (controller.name, values)


def test_kraft_pause_resume_broker(kraft_cluster: KafkaCluster) -> None:
    broker = kraft_cluster.node("broker-2")
    registration = f"{REGISTRATION_STATE},broker={broker.node_id}"  # 4.1+: 10 fenced, 30 active
    controller = active_controller(kraft_cluster)
    assert jmx_values(controller, FENCED_BROKERS, registration) == {FENCED_BROKERS: 0, registration: 30}
    broker.pause()
    try:
        # no heartbeats for longer than broker.session.timeout.ms (9 s): the controller fences it
        fenced = eventually(
            lambda: jmx_values(controller, FENCED_BROKERS, registration),
            lambda v: v == {FENCED_BROKERS: 1, registration: 10},
            timeout=40,
        )
        assert fenced == {FENCED_BROKERS: 1, registration: 10}
        assert broker.is_running  # stopped, not dead
    finally:
        broker.resume()
    unfenced = eventually(
        lambda: jmx_values(controller, FENCED_BROKERS, registration),
        lambda v: v == {FENCED_BROKERS: 0, registration: 30},
    )
    assert unfenced == {FENCED_BROKERS: 0, registration: 30}
    assert jmx_value(broker, BROKER_STATE) == 3


def test_kraft_stop_start_broker(kraft_cluster: KafkaCluster) -> None:
    broker = kraft_cluster.node("broker-1")
    old_pid = broker.pid
    broker.stop()
    assert not broker.is_running and broker.pid is None
    controller = active_controller(kraft_cluster)
    assert eventually(lambda: jmx_value(controller, FENCED_BROKERS), lambda v: v == 1, timeout=30) == 1
    broker.start()
    assert broker.pid is not None and broker.pid != old_pid
    broker.wait_ready(120)
    state = eventually(lambda: jmx_value(broker, BROKER_STATE), lambda v: v == 3)
    assert state == 3
    assert eventually(lambda: jmx_value(controller, FENCED_BROKERS), lambda v: v == 0) == 0
    kraft_cluster.wait_ready(60)


def test_storage_is_formatted_with_a_cluster_id_that_starts_with_a_dash(tmp_path: Path) -> None:
    """A ZooKeeper-made cluster id (the migration takes the brokers' own) is base64url of a random UUID, so one in
    64 starts with "-": StorageTool's argparse4j then read it as an option ("--cluster-id: expected one argument")."""
    from harness.localkafka.clusters import format_storage
    from harness.localkafka.nodes import kafka_node
    from harness.localkafka.process import write_log_config

    version = localkafka.KRAFT_VERSION
    dashed = base64.urlsafe_b64encode(b"\xf8" + bytes(15)).decode().rstrip("=")
    assert dashed.startswith("-") and len(dashed) == 22
    port = localkafka.free_port()
    node = kafka_node(
        "dashed",
        "controller-1",
        101,
        ("controller",),
        tmp_path / "controller-1",
        {
            "process.roles": "controller",
            "node.id": "101",
            "listeners": f"CONTROLLER://127.0.0.1:{port}",
            "controller.listener.names": "CONTROLLER",
            "controller.quorum.voters": f"101@127.0.0.1:{port}",
            "log.dirs": str(tmp_path / "controller-1" / "data"),
        },
        port=port,
        jmx_port=localkafka.free_port(),
        listeners={"CONTROLLER": port},
        version=version,
        log_config=write_log_config(tmp_path, version),
        ready_pattern="Kafka Server started",
    )
    cluster = KafkaCluster(name="dashed", mode="kraft", version=version, nodes=[node], bootstrap="", cluster_id=dashed)
    format_storage(cluster, write_log_config(tmp_path, version))
    meta = (tmp_path / "controller-1" / "data" / "meta.properties").read_text()
    assert f"cluster.id={dashed}" in meta
