"""JMX through the `jmxquery` package: one new JVM per read, so ~0.3-0.45 s CPU per node.

Fine for `ctlplane probe` and a handful of nodes; the persistent JPype client is the default.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence

from ctlplane.exporter.model import Failure, MBeanQuery, RawReading
from ctlplane.exporter.readings import parse_object_name
from ctlplane.exporter.sources.base import ReadTimeouts
from ctlplane.exporter.sources.jmx.base import Endpoint, JmxError


class JmxQueryClient:
    def __init__(self, *, timeout_seconds: float) -> None:
        self.timeout_seconds = timeout_seconds

    def read(self, endpoint: Endpoint, queries: Sequence[MBeanQuery]) -> list[RawReading]:
        from jmxquery import JMXConnection, JMXQuery

        if endpoint.ssl or endpoint.registry_ssl or endpoint.tls is not None:
            raise JmxError(f"{endpoint.address}: the jmxquery client does not support JMX over SSL")
        connection = JMXConnection(endpoint.service_url, endpoint.username, endpoint.password)
        jmx_queries = [JMXQuery(query.pattern, attribute=attr) for query in queries for attr in query.attributes]
        try:
            metrics = connection.query(jmx_queries, timeout=self.timeout_seconds)
        except subprocess.CalledProcessError as exc:
            raise JmxError(f"{endpoint.address}: cannot read JMX (jmxquery exit {exc.returncode})") from None
        except (AttributeError, subprocess.TimeoutExpired):
            # jmxquery 0.6.0 turns its own timeout into AttributeError ('NoneType' has no 'decode').
            raise JmxError(f"{endpoint.address}: timed out after {self.timeout_seconds:g}s", Failure.TIMEOUT) from None
        except OSError as exc:
            raise JmxError(f"{endpoint.address}: cannot start java for jmxquery: {exc}") from None

        # jmxquery answers per (MBean, attribute); fold back into one reading per MBean and query.
        values: dict[tuple[str, str], dict[str, float | str]] = {}
        for metric in metrics:
            if getattr(metric, "attributeKey", None):
                continue  # CompositeData members; the catalogue reads none
            name = str(metric.mBeanName)
            _, keys = parse_object_name(name)
            for query in queries:
                if metric.attribute in query.attributes and _matches(query.pattern, name) and query.accepts(keys):
                    converted = _convert(metric.value)
                    values.setdefault((query.pattern, name), {})[str(metric.attribute)] = converted
        readings = []
        for (pattern, name), attrs in values.items():
            _, keys = parse_object_name(name)
            readings.append(RawReading(pattern, name, keys, attrs))
        return readings

    def configure(self, timeouts: ReadTimeouts) -> None:
        self.timeout_seconds = timeouts.timeout_seconds  # each query's own timeout

    def close(self) -> None:
        pass


def _matches(pattern: str, name: str) -> bool:
    """ObjectName value-pattern match (`key=*`) with the key set equal, as JMX queryNames does."""
    pattern_domain, pattern_keys = parse_object_name(pattern)
    domain, keys = parse_object_name(name)
    if pattern_domain != domain or set(pattern_keys) != set(keys):
        return False
    return all(value == "*" or keys[key] == value for key, value in pattern_keys.items())


def _convert(value: object) -> float | str:
    """jmxquery reports some numbers as strings (Byte-typed gauges such as BrokerState come back as '3')."""
    if isinstance(value, int | float):
        return float(value)
    text = str(value)
    try:
        return float(text)
    except ValueError:
        return text
