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
A user's own jmx_exporter config file is a profile too (`metrics.rules_file`).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml

from ctlplane.exporter.sources.endpoint.naming import Inverse, Naming, NamingError, parse_naming

PROFILES = ("jmx_exporter", "strimzi", "confluent")
PROFILES_DIR = Path(__file__).with_name("rules")

# What the javaagent serves beside its rules, from the Prometheus client's JVM instrumentation
# (jmx_exporter 1.0.1 serves both, seen on real Kafka nodes; 0.x's simpleclient_hotspot the same names):
# the JVM's start time and its collectors' time, which no profile's rules serve as MBeans under Strimzi.
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
def profile(name: str) -> Naming:
    if name not in PROFILES:
        raise NamingError(f"unknown naming profile {name!r} (known: {', '.join(PROFILES)})")
    return load_config_text((PROFILES_DIR / f"{name}.yaml").read_text(), f"profile {name}")


def naming_from_file(path: Path) -> Naming:
    """A user's jmx_exporter config; NamingError (one line, naming the file) if it cannot be used."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise NamingError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from exc
    return load_config_text(text, str(path))
