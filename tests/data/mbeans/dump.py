"""Dump the control-plane MBeans of real local Kafka nodes into reference text files.

    .venv/bin/python tests/data/mbeans/dump.py [--workdir DIR] [--out DIR] [--settle SECONDS]

Starts the three test clusters with harness.localkafka (zk-3.9 with the KIP-291
control-plane listener, zk-3.9-nolistener sharing its ZooKeeper, kraft-4.3),
creates one topic per cluster through Kafka's Java Admin client (so that
LeaderAndIsr & co. have been sent at least once), waits, then reads every MBean
over JMX with JPype and writes one file per node kind:

    zk-3.9.2-broker-cp-listener.txt           ZK broker with the listener, not the controller
    zk-3.9.2-active-controller-cp-listener.txt  ZK broker with the listener, the active controller
    zk-3.9.2-broker-no-listener.txt           ZK broker without the listener (1-broker cluster: also its controller)
    kraft-4.3.1-active-controller.txt
    kraft-4.3.1-standby-controller.txt
    kraft-4.3.1-broker.txt

Selection: every MBean of ``kafka.controller`` and ``kafka.server``; of ``kafka.network``
only types RequestChannel and SocketServer, and RequestMetrics for the requests in
``REQUESTS``. One line per MBean: the ObjectName (as registered), then its attribute
names; for the MBeans matched by ``WITH_VALUES`` each attribute is written
``name=value`` (strings JSON-quoted).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jpype
import jpype.imports

from harness import localkafka
from harness.localkafka import KafkaCluster, KafkaNode

HERE = Path(__file__).resolve().parent
REQUESTS = (
    "LeaderAndIsr",
    "UpdateMetadata",
    "StopReplica",
    "BrokerHeartbeat",
    "BrokerRegistration",
    "AlterPartition",
    "ControlledShutdown",
)
NETWORK_TYPES = ("RequestChannel", "SocketServer")
# MBeans whose attribute values are written too: the ObjectName equals one of these
# or starts with one of these followed by ","
WITH_VALUES = (
    "kafka.server:type=raft-metrics",
    "kafka.server:type=broker-metadata-metrics",
    "kafka.server:type=app-info",
    "kafka.controller:type=KafkaController",
    "kafka.server:type=KafkaServer",
    "kafka.server:type=MetadataLoader",
    "kafka.server:type=ControllerServer",
    "kafka.network:type=SocketServer,name=ControlPlaneNetworkProcessorAvgIdlePercent",
    "kafka.network:type=SocketServer,name=ControlPlaneExpiredConnectionsKilledCount",
    "kafka.network:type=SocketServer,name=NetworkProcessorAvgIdlePercent",
)


def with_values(name: str) -> bool:
    return any(name == p or name.startswith(p + ",") for p in WITH_VALUES)


def log(msg: str) -> None:
    sys.stdout.write(f"[dump] {msg}\n")
    sys.stdout.flush()


class Jmx:
    """A JPype JMX connector to one node."""

    def __init__(self, node: KafkaNode) -> None:
        from javax.management.remote import JMXConnectorFactory, JMXServiceURL

        self.node = node
        self.connector: Any = JMXConnectorFactory.connect(JMXServiceURL(node.jmx_url), None)
        self.mbsc: Any = self.connector.getMBeanServerConnection()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.connector.close()

    def names(self, pattern: str) -> list[Any]:
        from javax.management import ObjectName

        return list(self.mbsc.queryNames(ObjectName(pattern), None))

    def value(self, name: str, attribute: str = "Value") -> Any:
        from javax.management import ObjectName

        try:
            return self.mbsc.getAttribute(ObjectName(name), attribute)
        except Exception:
            return None

    def attributes(self, name: Any) -> list[str]:
        return [str(a.getName()) for a in self.mbsc.getMBeanInfo(name).getAttributes()]

    def render(self, name: Any, attribute: str) -> str:
        try:
            v = self.mbsc.getAttribute(name, attribute)
        except Exception as e:
            return f"<error: {type(e).__name__}>"
        if v is None:
            return "null"
        if isinstance(v, (jpype.JString, str)):
            return json.dumps(str(v))
        return str(v)


def selected(name: str) -> bool:
    domain, _, props = name.partition(":")
    if domain in ("kafka.controller", "kafka.server"):
        return True
    if domain != "kafka.network":
        return False
    kv = dict(p.split("=", 1) for p in props.split(","))
    if kv.get("type") in NETWORK_TYPES:
        return True
    return kv.get("type") == "RequestMetrics" and kv.get("request") in REQUESTS


def dump_lines(jmx: Jmx) -> list[str]:
    lines = []
    for on in jmx.names("kafka.*:*"):
        name = str(on.toString())
        if not selected(name):
            continue
        attrs = sorted(jmx.attributes(on))
        if with_values(name):
            rendered = [f"{a}={jmx.render(on, a)}" for a in attrs]
        else:
            rendered = attrs
        lines.append(" ".join([name, *rendered]))
    return sorted(lines)


def write_dump(path: Path, description: str, jmx: Jmx) -> int:
    lines = dump_lines(jmx)
    header = [
        "# Kafka MBean reference dump (ctlplane)",
        f"# source: {description}",
        f"# generated by tests/data/mbeans/dump.py on {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC",
        "# selection: kafka.controller:*, kafka.server:*, kafka.network:type=RequestChannel|SocketServer,*,",
        f"#   kafka.network:type=RequestMetrics,*,request={'|'.join(REQUESTS)}",
        "# format: ObjectName (as registered), then its attribute names (sorted); name=value",
        "#   (strings JSON-quoted) for the ObjectNames equal to or starting with (+ ',') one of:",
        *(f"#   {p}" for p in WITH_VALUES),
        f"# mbeans: {len(lines)}",
    ]
    path.write_text("\n".join(header + lines) + "\n")
    log(f"wrote {path.relative_to(HERE.parent.parent.parent)} ({len(lines)} MBeans)")
    return len(lines)


def create_topic(cluster: KafkaCluster, topic: str, partitions: int, replication: int) -> None:
    from java.util import Properties

    admin_class = jpype.JClass("org.apache.kafka.clients.admin.Admin")
    new_topic_class = jpype.JClass("org.apache.kafka.clients.admin.NewTopic")
    props = Properties()
    props.put("bootstrap.servers", cluster.bootstrap)
    admin = admin_class.create(props)
    try:
        new = new_topic_class(topic, partitions, jpype.JShort(replication))
        admin.createTopics([new]).all().get()
    finally:
        admin.close()


@contextlib.contextmanager
def connected(node: KafkaNode) -> Iterator[Jmx]:
    jmx = Jmx(node)
    try:
        yield jmx
    finally:
        jmx.close()


def active_count(node: KafkaNode) -> int:
    with connected(node) as jmx:
        v = jmx.value("kafka.controller:type=KafkaController,name=ActiveControllerCount")
    return int(v) if v is not None else -1


def wait_for_one_active(nodes: list[KafkaNode], timeout: float = 60) -> tuple[KafkaNode, list[KafkaNode]]:
    deadline = time.monotonic() + timeout
    while True:
        counts = {n.name: active_count(n) for n in nodes}
        active = [n for n in nodes if counts[n.name] == 1]
        if len(active) == 1 and all(v == 0 for k, v in counts.items() if k != active[0].name):
            return active[0], [n for n in nodes if n is not active[0]]
        if time.monotonic() > deadline:
            raise RuntimeError(f"no single active controller: {counts}")
        time.sleep(1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", help="cluster directory (default: a temporary one)")
    parser.add_argument("--out", default=str(HERE), help="output directory (default: %(default)s)")
    parser.add_argument("--settle", type=float, default=20, help="seconds to wait before dumping")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    jars = localkafka.ensure_jars(localkafka.KRAFT_VERSION)
    classpath = [str(p) for p in sorted(jars.glob("kafka-clients-*.jar")) + sorted(jars.glob("slf4j-api-*.jar"))]
    jpype.startJVM(
        "-Xmx128m",
        "-XX:+UseSerialGC",
        "-Dsun.rmi.transport.tcp.responseTimeout=10000",
        "-Dsun.rmi.transport.tcp.handshakeTimeout=10000",
        classpath=classpath,
        convertStrings=False,
    )

    with contextlib.ExitStack() as stack:
        workdir = Path(args.workdir) if args.workdir else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        started = time.monotonic()
        clusters = localkafka.start_test_fleet(workdir)
        for c in clusters:
            stack.callback(c.stop)
        log(f"clusters ready after {time.monotonic() - started:.1f}s")
        zk, zk_plain, kraft = clusters
        create_topic(zk, "ctlplane-dump", 3, 3)
        create_topic(zk_plain, "ctlplane-dump", 1, 1)
        create_topic(kraft, "ctlplane-dump", 2, 2)
        log(f"topics created; settling {args.settle:.0f}s")
        time.sleep(args.settle)

        zk_active, zk_others = wait_for_one_active(zk.brokers())
        kraft_active, kraft_standby = wait_for_one_active(kraft.controllers())
        (plain_broker,) = zk_plain.brokers()
        v = localkafka.ZK_VERSION
        k = localkafka.KRAFT_VERSION
        targets = [
            (
                f"zk-{v}-broker-cp-listener.txt",
                zk_others[0],
                f"Kafka {v}, ZooKeeper mode, cluster {zk.name} (3 brokers, control.plane.listener.name="
                f"CONTROLLER), {zk_others[0].name} (node id {zk_others[0].node_id}), NOT the active controller",
            ),
            (
                f"zk-{v}-active-controller-cp-listener.txt",
                zk_active,
                f"Kafka {v}, ZooKeeper mode, cluster {zk.name} (3 brokers, control.plane.listener.name="
                f"CONTROLLER), {zk_active.name} (node id {zk_active.node_id}), the ACTIVE controller",
            ),
            (
                f"zk-{v}-broker-no-listener.txt",
                plain_broker,
                f"Kafka {v}, ZooKeeper mode, cluster {zk_plain.name} (1 broker, no control-plane listener), "
                f"{plain_broker.name} (node id {plain_broker.node_id}), also its cluster's active controller",
            ),
            (
                f"kraft-{k}-active-controller.txt",
                kraft_active,
                f"Kafka {k}, KRaft, cluster {kraft.name} (3 controllers + 2 brokers), "
                f"{kraft_active.name} (node id {kraft_active.node_id}, process.roles=controller), ACTIVE controller",
            ),
            (
                f"kraft-{k}-standby-controller.txt",
                kraft_standby[0],
                f"Kafka {k}, KRaft, cluster {kraft.name} (3 controllers + 2 brokers), {kraft_standby[0].name} "
                f"(node id {kraft_standby[0].node_id}, process.roles=controller), standby controller",
            ),
            (
                f"kraft-{k}-broker.txt",
                kraft.node("broker-1"),
                f"Kafka {k}, KRaft, cluster {kraft.name} (3 controllers + 2 brokers), broker-1 "
                f"(node id {kraft.node('broker-1').node_id}, process.roles=broker)",
            ),
        ]
        for filename, node, description in targets:
            with connected(node) as jmx:
                write_dump(out / filename, description, jmx)
    return 0


if __name__ == "__main__":
    sys.exit(main())
