"""prometheus/jmx_exporter's javaagent on a local node: the node serves its MBeans as Prometheus text on a
port of its own, as Amazon MSK (:11001), Strimzi (:9404) and Confluent's jmx-monitoring-stacks run it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.localkafka.jars import ensure_artifact
from harness.localkafka.process import LOOPBACK

# The newest release on Maven Central (io.prometheus.jmx:jmx_prometheus_javaagent, 2026-11)
JMX_EXPORTER_VERSION = "1.0.1"


@dataclass(frozen=True)
class MetricsAgent:
    """The agent's jmx_exporter config (YAML text; an empty one is its default naming, no rules)."""

    config: str = ""
    version: str = JMX_EXPORTER_VERSION

    def jar(self) -> Path:
        return ensure_artifact("io.prometheus.jmx", "jmx_prometheus_javaagent", self.version)

    def jvm_option(self, node_dir: Path, port: int) -> str:
        """`-javaagent:` for a node serving on LOOPBACK:port, its config written into the node's directory."""
        config = node_dir / "jmx_exporter.yaml"
        config.parent.mkdir(parents=True, exist_ok=True)
        # jmx_exporter 1.0 refuses an empty file; `{}` is the same config (no rules: the default naming)
        config.write_text(self.config or "{}\n")
        return f"-javaagent:{self.jar()}={LOOPBACK}:{port}:{config}"
