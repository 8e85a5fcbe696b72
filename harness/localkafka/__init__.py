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

CLI: ``python -m harness.localkafka up [--workdir DIR]``.

Where things are: ``versions`` (the pinned releases, how a version reads), ``jars`` (Maven into the
cache), ``process`` (a JVM: command line, logging, signals, ports), ``nodes`` (ZooKeeper and Kafka
nodes), ``clusters`` (ZooKeeper-mode and KRaft clusters, the test fleets), ``tls`` (a throw-away CA for
TLS listeners), ``agent`` (jmx_exporter's javaagent on a node), ``standalone`` (jmx_exporter's standalone
server beside a node), ``admin`` (Kafka's tools: topics, the
quorum's voters), and ``__main__`` (the CLI). This module re-exports what callers use.
"""

from harness.localkafka.admin import (
    acls,
    add_controller,
    create_topic,
    create_topics,
    delete_topic,
    describe_quorum_replication,
    remove_controller,
    unregister_broker,
)
from harness.localkafka.agent import (
    JMX_EXPORTER_VERSION,
    METRICS_REPORTER_VERSION,
    MetricsAgent,
    MetricsReporter,
    MetricsServer,
)
from harness.localkafka.clusters import (
    LARGE_BROKER_OVERRIDES,
    KafkaCluster,
    clusters_config,
    directory_id,
    kraft_cluster_id,
    quorum_bootstrap,
    set_scram_password,
    start_default_fleet,
    start_kraft_cluster,
    start_test_fleet,
    start_zk_cluster,
)
from harness.localkafka.errors import ClusterStartError, JarFetchError, LocalKafkaError
from harness.localkafka.jars import JARS_MARKER, cache_dir, ensure_jars, repo_root
from harness.localkafka.nodes import KafkaNode, ZooKeeperServer, start_zookeeper
from harness.localkafka.process import LOOPBACK, free_port, java_executable, port_open
from harness.localkafka.tls import (
    LocalPki,
    encrypted_key,
    jks_keystore,
    jks_truststore,
    make_local_pki,
    pkcs12_keystore,
    pkcs12_truststore,
    traditional_key,
)
from harness.localkafka.versions import KRAFT_VERSION, ZK_VERSION, cluster_label, logging_flavour, major_minor

__all__ = [
    "JARS_MARKER",
    "JMX_EXPORTER_VERSION",
    "KRAFT_VERSION",
    "LARGE_BROKER_OVERRIDES",
    "LOOPBACK",
    "METRICS_REPORTER_VERSION",
    "ZK_VERSION",
    "ClusterStartError",
    "JarFetchError",
    "KafkaCluster",
    "KafkaNode",
    "LocalKafkaError",
    "LocalPki",
    "MetricsAgent",
    "MetricsReporter",
    "MetricsServer",
    "ZooKeeperServer",
    "acls",
    "add_controller",
    "cache_dir",
    "cluster_label",
    "clusters_config",
    "create_topic",
    "create_topics",
    "delete_topic",
    "describe_quorum_replication",
    "directory_id",
    "encrypted_key",
    "ensure_jars",
    "free_port",
    "java_executable",
    "jks_keystore",
    "jks_truststore",
    "kraft_cluster_id",
    "logging_flavour",
    "major_minor",
    "make_local_pki",
    "pkcs12_keystore",
    "pkcs12_truststore",
    "port_open",
    "quorum_bootstrap",
    "remove_controller",
    "repo_root",
    "set_scram_password",
    "start_default_fleet",
    "start_kraft_cluster",
    "start_test_fleet",
    "start_zk_cluster",
    "start_zookeeper",
    "traditional_key",
    "unregister_broker",
]
