"""Kafka's own tools on a local cluster: topics with an explicit replica assignment (its Admin client), the
quorum's description and its voter changes (MetadataQuorumCommand), unregistering a broker (ClusterTool),
ACLs (AclCommand, what `kafka-acls.sh` runs)."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence

from harness.localkafka.clusters import KafkaCluster, directory_id
from harness.localkafka.errors import LocalKafkaError
from harness.localkafka.jars import cache_dir, ensure_jars, ensure_tools_jar, read_text_or_none, tail_text
from harness.localkafka.nodes import KafkaNode
from harness.localkafka.process import java_executable
from harness.localkafka.versions import major_minor

# every release's jars; kafka-tools is not). Run with Java's single-file source launcher: nothing prebuilt.
_CREATE_TOPIC_SOURCE = """\
import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.common.KafkaFuture;

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
        // a 4th argument: that many topics `<name>-00000`.., each of the same assignment, in calls of 200
        int count = args.length > 3 ? Integer.parseInt(args[3]) : 0;
        try (Admin admin = Admin.create(props)) {
            if (args[2].equals("delete")) {
                admin.deleteTopics(List.of(args[1])).all().get();
            } else if (count == 0) {
                admin.createTopics(List.of(new NewTopic(args[1], assignment))).all().get();
            } else {
                for (int first = 0; first < count; first += 200) {
                    List<NewTopic> batch = new ArrayList<>();
                    for (int n = first; n < Math.min(count, first + 200); n++)
                        batch.add(new NewTopic(String.format("%s-%05d", args[1], n), assignment));
                    // a call retried after a timeout (a loaded ZooKeeper-mode controller) finds its first
                    // attempt's topics made: those are made, as asked
                    for (KafkaFuture<Void> made : admin.createTopics(batch).values().values()) {
                        try {
                            made.get();
                        } catch (java.util.concurrent.ExecutionException e) {
                            if (!(e.getCause() instanceof org.apache.kafka.common.errors.TopicExistsException)) throw e;
                        }
                    }
                }
            }
        }
    }
}
"""


def _admin(cluster: KafkaCluster, topic: str, what: str, timeout: float, count: int = 0) -> None:
    source = cache_dir() / "java" / "CreateTopic.java"
    source.parent.mkdir(parents=True, exist_ok=True)
    if read_text_or_none(source) != _CREATE_TOPIC_SOURCE:
        source.write_text(_CREATE_TOPIC_SOURCE)
    jars = ensure_jars(cluster.version)
    result = subprocess.run(
        [java_executable(), "-Xmx128m", "-cp", f"{jars}/*", str(source), cluster.bootstrap, topic, what]
        + ([str(count)] if count else []),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if result.returncode != 0:
        raise LocalKafkaError(f"topic {topic} in {cluster.name} ({what}) failed: {tail_text(result.stderr, 20)}")


def create_topic(cluster: KafkaCluster, topic: str, replicas: Sequence[Sequence[int]], timeout: float = 120) -> None:
    """Create ``topic`` with one partition per entry of ``replicas`` (broker ids, preferred leader first)."""
    _admin(cluster, topic, ";".join(",".join(str(r) for r in partition) for partition in replicas), timeout)


def create_topics(
    cluster: KafkaCluster, prefix: str, count: int, replicas: Sequence[Sequence[int]], timeout: float = 600
) -> None:
    """Create ``count`` topics ``<prefix>-00000``.., each with one partition per entry of ``replicas``, in
    createTopics calls of 200 topics: far faster than a call per topic (production.md), so that a broker of
    10,000 partitions is made in seconds."""
    assignment = ";".join(",".join(str(r) for r in partition) for partition in replicas)
    _admin(cluster, prefix, assignment, timeout, count)


def delete_topic(cluster: KafkaCluster, topic: str, timeout: float = 120) -> None:
    _admin(cluster, topic, "delete", timeout)


def _kafka_tool(cluster: KafkaCluster, command: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """One of Kafka's own tools (`org.apache.kafka.tools.<command[0]>`, the release's kafka-tools jar)."""
    classpath = f"{ensure_jars(cluster.version)}/*:{ensure_tools_jar(cluster.version)}"
    main, *args = command
    return subprocess.run(
        [java_executable(), "-Xmx128m", "-cp", classpath, f"org.apache.kafka.tools.{main}", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _controller_bootstrap(cluster: KafkaCluster) -> str:
    """Every running controller's CONTROLLER listener: `--bootstrap-controller` (KIP-919, 3.7+)."""
    controllers = [node for node in cluster.controllers() if node.is_running]
    if not controllers:
        raise LocalKafkaError(f"{cluster.name} has no running KRaft controllers to ask")
    return ",".join(f"127.0.0.1:{node.listeners['CONTROLLER']}" for node in controllers)


def add_controller(cluster: KafkaCluster, node: KafkaNode, timeout: float = 60) -> str:
    """`kafka-metadata-quorum.sh --command-config <its config> add-controller` (KIP-853, 3.9+): the running
    observer controller `node` becomes a voter (MetadataQuorumCommand.handleAddController reads its id, its
    metadata directory's id and its controller endpoints from that file). Returns the tool's line."""
    assert node.config_path is not None
    command = [
        "MetadataQuorumCommand",
        "--bootstrap-controller",
        _controller_bootstrap(cluster),
        "--command-config",
        str(node.config_path),
        "add-controller",
    ]
    result = _kafka_tool(cluster, command, timeout)
    if result.returncode != 0:
        raise LocalKafkaError(f"add-controller {node.name} to {cluster.name} failed: {tail_text(result.stderr, 20)}")
    return result.stdout.strip()


def remove_controller(cluster: KafkaCluster, node: KafkaNode, timeout: float = 60) -> str:
    """`kafka-metadata-quorum.sh remove-controller --controller-id N --controller-directory-id D` (KIP-853):
    the voter (`node`'s id, its metadata directory's id) leaves the voter set."""
    command = [
        "MetadataQuorumCommand",
        "--bootstrap-controller",
        _controller_bootstrap(cluster),
        "remove-controller",
        f"--controller-id={node.node_id}",
        f"--controller-directory-id={directory_id(node)}",
    ]
    result = _kafka_tool(cluster, command, timeout)
    if result.returncode != 0:
        raise LocalKafkaError(
            f"remove-controller {node.name} from {cluster.name} failed: {tail_text(result.stderr, 20)}"
        )
    return result.stdout.strip()


def describe_quorum_replication(cluster: KafkaCluster, timeout: float = 60) -> list[dict[str, str]]:
    """What `kafka-metadata-quorum.sh --bootstrap-controller … describe --replication` prints (Kafka's own
    MetadataQuorumCommand, 3.7+ for --bootstrap-controller, KIP-919), one dict per row keyed by its header:
    NodeId, DirectoryId, LogEndOffset, Lag, LastFetchTimestamp, LastCaughtUpTimestamp, Status."""
    command = [
        "MetadataQuorumCommand",
        "--bootstrap-controller",
        _controller_bootstrap(cluster),
        "describe",
        "--replication",
    ]
    result = _kafka_tool(cluster, command, timeout)
    if result.returncode != 0:
        raise LocalKafkaError(f"describe --replication of {cluster.name} failed: {tail_text(result.stderr, 20)}")
    lines = [line.split() for line in result.stdout.splitlines() if line.strip()]
    header = lines[0]
    return [dict(zip(header, row, strict=True)) for row in lines[1:]]


def unregister_broker(cluster: KafkaCluster, node_id: int, timeout: float = 60) -> None:
    """`kafka-cluster.sh unregister --id` (Kafka's own ClusterTool, KRaft): the controller drops the broker's
    registration, as an operator does for a broker that is gone for good."""
    command = ["ClusterTool", "unregister", "--bootstrap-server", cluster.bootstrap, "--id", str(node_id)]
    result = _kafka_tool(cluster, command, timeout)
    if result.returncode != 0:
        raise LocalKafkaError(f"unregister {node_id} in {cluster.name} failed: {tail_text(result.stderr, 20)}")


def acls(cluster: KafkaCluster, *arguments: str, bootstrap: str | None = None, timeout: float = 60) -> str:
    """`kafka-acls.sh --bootstrap-server <bootstrap> <arguments>`: the release's AclCommand (the kafka-tools
    jar's from 4.0, core's Scala one before: what the script runs in each). `bootstrap` defaults to the
    cluster's PLAINTEXT listener. Returns the tool's output."""
    command = ["AclCommand", "--bootstrap-server", bootstrap or cluster.bootstrap, *arguments]
    if major_minor(cluster.version) < (4, 0):
        result = subprocess.run(
            [java_executable(), "-Xmx128m", "-cp", f"{ensure_jars(cluster.version)}/*", "kafka.admin.AclCommand",
             *command[1:]],
            capture_output=True, text=True, timeout=timeout, check=False,
        )  # fmt: skip
    else:
        result = _kafka_tool(cluster, command, timeout)
    if result.returncode != 0:
        raise LocalKafkaError(
            f"kafka-acls {' '.join(arguments)} on {cluster.name} failed: {tail_text(result.stderr, 20)}"
        )
    return result.stdout
