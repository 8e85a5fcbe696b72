"""What serves a local node's metrics as Prometheus text on a port of its own, where remote JMX is not the way in:
- prometheus/jmx_exporter's javaagent, as Amazon MSK (:11001), Strimzi's `metricsConfig` (:9404) and Confluent's
  jmx-monitoring-stacks run it;
- the Strimzi Metrics Reporter (strimzi/metrics-reporter), a Kafka metrics reporter on the node's classpath that
  serves Kafka's own metrics registries with no JMX at all, as Strimzi's `metricsConfig: strimziMetricsReporter`
  runs it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ctlplane.exporter.sources.endpoint.profiles import STRIMZI_OPERATOR_ALLOWLIST
from harness.localkafka.jars import ensure_artifact, ensure_artifact_with_dependencies
from harness.localkafka.process import LOOPBACK

# The newest release on Maven Central (io.prometheus.jmx:jmx_prometheus_javaagent, 2026-11)
JMX_EXPORTER_VERSION = "1.0.1"
# The newest release of io.strimzi:metrics-reporter whose jar Maven Central serves here (0.3.0 split it into
# server-/client-metrics-reporter, not served); built against Kafka 3.8.1, runs on 4.3.1 (tests/integration)
METRICS_REPORTER_VERSION = "0.2.0"


@dataclass(frozen=True)
class MetricsAgent:
    """The agent's jmx_exporter config (YAML text; an empty one is its default naming, no rules)."""

    config: str = ""
    version: str = JMX_EXPORTER_VERSION

    def jar(self) -> Path:
        return ensure_artifact("io.prometheus.jmx", "jmx_prometheus_javaagent", self.version)

    def jvm_option(self, node_dir: Path, port: int) -> str | None:
        """`-javaagent:` for a node serving on LOOPBACK:port, its config written into the node's directory."""
        config = node_dir / "jmx_exporter.yaml"
        config.parent.mkdir(parents=True, exist_ok=True)
        # jmx_exporter 1.0 refuses an empty file; `{}` is the same config (no rules: the default naming)
        config.write_text(self.config or "{}\n")
        return f"-javaagent:{self.jar()}={LOOPBACK}:{port}:{config}"

    def properties(self, port: int) -> dict[str, str]:
        return {}

    def classpath(self) -> Path | None:
        return None


@dataclass(frozen=True)
class MetricsReporter:
    """The Strimzi Metrics Reporter on the node's classpath, serving /metrics on LOOPBACK:port, with an allowlist
    (Strimzi's operator default unless given; `(".*",)` serves everything, the reporter's own default)."""

    allowlist: tuple[str, ...] = STRIMZI_OPERATOR_ALLOWLIST
    version: str = METRICS_REPORTER_VERSION

    def jvm_option(self, node_dir: Path, port: int) -> str | None:
        return None

    def properties(self, port: int) -> dict[str, str]:
        # the 0.2.0 class names (0.3.0 renamed them ServerKafkaMetricsReporter / ServerYammerMetricsReporter).
        # JmxReporter listed too, so the tests can read the same node over remote JMX beside it: since Kafka 4.0
        # a `metric.reporters` that does not list it leaves Kafka's own metrics (raft-metrics,
        # broker-metadata-metrics) out of JMX (CommonClientConfigs.METRIC_REPORTER_CLASSES_DOC, KIP-830)
        return {
            "metric.reporters": "io.strimzi.kafka.metrics.KafkaPrometheusMetricsReporter,"
            "org.apache.kafka.common.metrics.JmxReporter",
            "kafka.metrics.reporters": "io.strimzi.kafka.metrics.YammerPrometheusMetricsReporter",
            "prometheus.metrics.reporter.listener": f"http://{LOOPBACK}:{port}",
            "prometheus.metrics.reporter.allowlist": ",".join(self.allowlist),
        }

    def classpath(self) -> Path | None:
        return ensure_artifact_with_dependencies("io.strimzi", "metrics-reporter", self.version)


MetricsServer = MetricsAgent | MetricsReporter
