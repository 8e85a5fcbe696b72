"""The Strimzi Metrics Reporter's naming, back from served samples to MBean readings.

The reporter (strimzi/metrics-reporter, Strimzi's `metricsConfig: type: strimziMetricsReporter`) is not JMX: it
serves Kafka's two metrics registries as they are, so its names follow the metric, not a config. As its 0.2.0
release (the one run in tests/integration/test_endpoint_source.py on Kafka 4.3.1) and its main branch name them:
- a Yammer metric (every `kafka.*:type=T,name=N,...` MBean) is `<group>_<type>_<name>`, the group being the JMX
  domain, sanitised (each character outside `[a-zA-Z0-9_:]` one `_`) and lowercased (YammerMetricWrapper
  .prometheusName), its tags (the MBean's other keys) as labels under their own case. A Gauge is a gauge, or an
  `_info` series carrying a non-numeric value in a label named after the metric (`SessionState`); a Meter or a
  Counter a counter (`_total`, its Count); a Timer or a Histogram a summary: quantiles 0.5, 0.75, 0.95, 0.98, 0.99
  and 0.999, `_count` and `_sum` (YammerCollector) — so a Meter's rates, and a histogram's Min and Max, are not
  served; its Mean is sum / count, as Yammer computes it;
- a Kafka metric (`kafka.server:type=<group>,<tags>` attribute `<name>`) is `<namespace>_<group>_<name>`, the
  namespace `kafka.server` (KafkaMetricWrapper.prometheusName), its tags as labels; a number a gauge, anything
  else an `_info` series with the value in a label named after the metric (`current_state`);
- the JVM's start time and collectors come from the Prometheus client's JVM instrumentation, under the same
  names as jmx_exporter's agent (profiles.AGENT_ALIASES).
Which metrics are served is an allowlist of regular expressions matched whole against the name before its
suffix (AbstractReporter.matches). The map back covers everything the reporter can serve: a wider allowlist
than the profile's is read in full; the profile's allowlist says what the evidence table promises.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ctlplane.exporter.model import MBeanQuery
from ctlplane.exporter.sources.endpoint.naming import KEY_MARK, Inverse, Inversion, probe_keys, unreserved

_ILLEGAL = re.compile(r"[^a-zA-Z0-9_:]")
_ILLEGAL_LABEL = re.compile(r"[^a-zA-Z0-9_]")
_PERCENTILE = re.compile(r"(\d+)thPercentile")
_MARK_PREFIX = KEY_MARK.split("{", 1)[0]
# MBeans Kafka registers itself, not metrics: AppInfoParser.registerAppInfo's `type=app-info,id=<node id>`
# (its metrics twin, group app-info, has no id tag: served as kafka_server_app_info_version_info{version=…})
_NOT_METRICS = frozenset({"app-info"})


@dataclass(frozen=True)
class ReporterNaming:
    """The Strimzi Metrics Reporter serving the MBeans' metrics, with the allowlist it is given."""

    allowlist: tuple[str, ...] = (".*",)

    def allows(self, base: str) -> bool:
        return any(re.fullmatch(entry, base) for entry in self.allowlist)


def metric_name(text: str) -> str:
    """PrometheusNaming.sanitizeMetricName then lowercased, then prometheusName: no reserved suffix."""
    return unreserved(_ILLEGAL.sub("_", text).lower())


def label_name(text: str) -> str:
    return _ILLEGAL_LABEL.sub("_", text)


def _quantile(attribute: str) -> str | None:
    """`99thPercentile` -> "0.99", `999thPercentile` -> "0.999", `50thPercentile` -> "0.5"."""
    match = _PERCENTILE.fullmatch(attribute)
    if match is None:
        return None
    digits = match.group(1).rstrip("0") or "0"
    return f"0.{digits}"


def base_name(domain: str, keys: Sequence[tuple[str, str]], attribute: str) -> str | None:
    """The name before its suffix of the metric behind one MBean attribute, or None (not a Kafka metric, or a
    wildcard key folded into the name)."""
    key_map = dict(keys)
    if not domain.startswith("kafka.") or "type" not in key_map or key_map["type"] in _NOT_METRICS:
        return None
    parts = (domain, key_map["type"], key_map["name"]) if "name" in key_map else (domain, key_map["type"], attribute)
    if any(part.startswith(_MARK_PREFIX) for part in parts):
        return None
    return metric_name("_".join(parts))


def _served(
    domain: str, keys: Sequence[tuple[str, str]], attribute: str, string: bool
) -> list[tuple[str, tuple[tuple[str, str], ...], str | None, bool]]:
    """(sample name, extra required labels, value label, per_count) for each sample that may carry the attribute."""
    base = base_name(domain, keys, attribute)
    if base is None:
        return []
    key_map = dict(keys)
    if "name" not in key_map:  # a Kafka metric: the attribute is the metric
        return [(f"{base}_info", (), label_name(attribute), False)] if string else [(base, (), None, False)]
    if attribute == "Value":
        return [(f"{base}_info", (), label_name(key_map["name"]), False)] if string else [(base, (), None, False)]
    if attribute == "Count":  # a Meter's or Counter's total, or a Timer's or Histogram's count
        return [(f"{base}_total", (), None, False), (f"{base}_count", (), None, False)]
    if attribute == "Mean":
        return [(f"{base}_sum", (), None, True)]
    quantile = _quantile(attribute)
    if quantile is not None:
        return [(base, (("quantile", quantile),), None, False)]
    return []  # rates, Min, Max, StdDev: not served


def invert_reporter(
    queries: Sequence[MBeanQuery], string_attributes: frozenset[tuple[str, str]], aliases: Sequence[tuple[str, Inverse]]
) -> Inversion:
    """The map back for every attribute the queries read, as the reporter serves them."""
    by_name: dict[str, list[Inverse]] = {}
    for query in queries:
        for domain, keys in probe_keys(query.pattern, dict(query.only)):
            markers = {value: key for key, value in keys if value.startswith(_MARK_PREFIX)}
            fixed = tuple((key, value) for key, value in keys if value not in markers)
            # tags: every key but type and name, a label under its own (sanitised) name
            tags = [(key, value) for key, value in keys if key not in ("type", "name")]
            key_labels = tuple((label_name(key), key) for key, value in tags if value in markers)
            required = tuple((label_name(key), value) for key, value in tags if value not in markers)
            for attribute in query.attributes:
                string = (query.pattern, attribute) in string_attributes
                for name, extra, value_label, per_count in _served(domain, keys, attribute, string):
                    inverse = Inverse(
                        query.pattern,
                        domain,
                        attribute,
                        fixed,
                        key_labels,
                        tuple(sorted(required + extra)),
                        value_label,
                        1.0,
                        per_count=per_count,
                    )
                    by_name.setdefault(name, []).append(inverse)
    wanted = {query.pattern for query in queries}
    for name, alias in aliases:
        if alias.pattern in wanted:
            by_name.setdefault(name, []).append(alias)
    return Inversion({name: tuple(inverses) for name, inverses in by_name.items()})


def unserved(naming: ReporterNaming, pattern: str, attribute: str, string: bool) -> str | None:
    """Why the reporter, under this allowlist, serves no sample of an MBean attribute (words for the
    manual's evidence table); None where it serves one."""
    domain, keys = next(iter(probe_keys(pattern, {})))
    if domain == "java.lang":
        return None  # the Prometheus client's JVM series, not an allowlisted metric
    base = base_name(domain, keys, attribute)
    if base is None:
        return "not a metric: an MBean Kafka registers itself"
    if not _served(domain, keys, attribute, string):
        return "a rate: the reporter serves a Meter's count, not its rates"
    if not naming.allows(base):
        return f"`{base}` is not in the allowlist"
    return None
