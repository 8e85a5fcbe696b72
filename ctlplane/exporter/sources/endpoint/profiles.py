"""The naming profiles ctlplane knows, each a jmx_exporter config as its publisher ships it (rules/).

- `jmx_exporter`: no rules, jmx_exporter's default naming. Amazon MSK's open monitoring serves this
  (`kafka_controller_KafkaController_Value{name="ActiveControllerCount"}`; MSK does not publish its config:
  an inference from public scrapes of MSK, which show jmx_exporter 0.12 and the default names).
- `strimzi`: Strimzi's example `kafka-metrics.yaml` (strimzi/strimzi-kafka-operator
  packaging/examples/metrics/kafka-metrics.yaml), the rules that can match an MBean ctlplane reads, in
  their order (rules/strimzi.yaml says which were left out).
- `confluent`: Confluent's jmx-monitoring-stacks broker rules (confluentinc/jmx-monitoring-stacks
  shared-assets/jmx-exporter/kafka_broker.yml), its exclusions whole and the rules that can match an MBean
  ctlplane reads. It excludes every `kafka.server:type=*` MBean: no raft-metrics, no broker-metadata-metrics.
- `strimzi_reporter`: the Strimzi Metrics Reporter (no JMX; reporter.py) with the allowlist Strimzi's operator
  gives it by default; a wider allowlist is read in full.
- `aiven`: Aiven for Apache Kafka's Prometheus names (aiven/devportal kafka-metrics-prometheus.rst), written as
  the jmx_exporter config that serves them (rules/aiven.yaml says what is inferred).
A user's own jmx_exporter config file is a profile too (`metrics.rules_file`).
"""

from __future__ import annotations

import dataclasses
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from ctlplane.exporter.sources.endpoint.naming import Inverse, Naming, NamingError, parse_naming
from ctlplane.exporter.sources.endpoint.reporter import ReporterNaming

PROFILES = ("jmx_exporter", "strimzi", "confluent", "strimzi_reporter", "aiven")
PROFILES_DIR = Path(__file__).with_name("rules")

# What the javaagent serves beside its rules, from the Prometheus client's JVM instrumentation
# (jmx_exporter 1.0.1 serves both, seen on real Kafka nodes; 0.x's simpleclient_hotspot the same names; the
# Strimzi Metrics Reporter 0.2.0 the same, from client 1.3.6): the JVM's start time and its collectors' time,
# which no profile's rules serve as MBeans under Strimzi, and the reporter serves no java.lang MBean at all.
AGENT_ALIASES: tuple[tuple[str, Inverse], ...] = (
    (
        "process_start_time_seconds",
        Inverse("java.lang:type=Runtime", "java.lang", "StartTime", (("type", "Runtime"),), (), (), None, 0.001),
    ),
    (
        "jvm_gc_collection_seconds_sum",
        Inverse(
            "java.lang:type=GarbageCollector,name=*",
            "java.lang",
            "CollectionTime",
            (("type", "GarbageCollector"),),
            (("gc", "name"),),
            (),
            None,
            0.001,
        ),
    ),
)


# The allowlist Strimzi's operator gives a Kafka cluster's Metrics Reporter when the user gives none
# (strimzi/strimzi-kafka-operator cluster-operator KafkaCluster.DEFAULT_METRICS_ALLOW_LIST, 2026): regular
# expressions matched whole against each metric's name before its `_total`/`_info` suffix
# (AbstractReporter.matches), so its two `..._total` entries match nothing.
STRIMZI_OPERATOR_ALLOWLIST = (
    "kafka_cluster_partition.*",
    "kafka_controller_kafkacontroller.*",
    "kafka_controller_controllerstats_uncleanleaderelectionspersec_total",
    "kafka_log_log_size",
    "kafka_network_requestmetrics.*",
    "kafka_network_socketserver_networkprocessoravgidlepercent",
    "kafka_server_app_info.*",
    "kafka_server_brokertopicmetrics.*",
    "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_total",
    "kafka_server_kafkaserver_brokerstate",
    "kafka_server_kafkaserver_clusterid_info",
    "kafka_server_kafkaserver_linux.*",
    "kafka_server_raft.*",
    "kafka_server_replicamanager.*",
    "kafka_server_request_queue_size",
    "kafka_server_socket_server.*",
)

EndpointNaming = Naming | ReporterNaming


def load_config_text(text: str, where: str) -> Naming:
    try:
        data: Any = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise NamingError(f"{where}: not YAML: {str(exc).splitlines()[0]}") from exc
    try:
        return parse_naming(data)
    except NamingError as exc:
        raise NamingError(f"{where}: {exc}") from exc


@cache
def profile(name: str) -> EndpointNaming:
    if name not in PROFILES:
        raise NamingError(f"unknown naming profile {name!r} (known: {', '.join(PROFILES)})")
    if name == "strimzi_reporter":
        return ReporterNaming(STRIMZI_OPERATOR_ALLOWLIST)
    naming = load_config_text((PROFILES_DIR / f"{name}.yaml").read_text(), f"profile {name}")
    # Aiven's agent is Telegraf, not jmx_exporter's: none of the JVM series jmx_exporter adds
    return dataclasses.replace(naming, agent_series=False) if name == "aiven" else naming


def naming_from_file(path: Path) -> Naming:
    """A user's jmx_exporter config; NamingError (one line, naming the file) if it cannot be used. Read once
    while the file is unchanged: every node of a cluster, and every round's discovered node, shares it."""
    try:
        stat = path.stat()
    except OSError as exc:
        raise NamingError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return _naming_file(path, stat.st_mtime_ns, stat.st_size)


@cache
def _naming_file(path: Path, mtime_ns: int, size: int) -> Naming:
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise NamingError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from exc
    return load_config_text(text, str(path))
