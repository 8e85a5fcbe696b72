"""The one node source the scraper reads through: each node by the source its endpoint's kind names."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from ctlplane.exporter.model import MBeanQuery, RawReading
from ctlplane.exporter.sources.base import NodeEndpoint, ReadError, ReadTimeouts
from ctlplane.exporter.sources.endpoint.client import EndpointClient, MetricsEndpoint
from ctlplane.exporter.sources.jmx.base import Endpoint, JmxClient


class Sources:
    """Remote JMX for an Endpoint, the Prometheus endpoint for a MetricsEndpoint.

    The JMX client starts a JVM; `start_jmx=False` leaves that to the first JMX read, so a config that reads
    every node through its metrics endpoint (and no quorum's view, whose Admin client needs the JVM) runs
    on a host with no Java at all."""

    def __init__(self, jmx: Callable[[], JmxClient], endpoints: EndpointClient, *, start_jmx: bool = True) -> None:
        self._make_jmx = jmx
        self._jmx: JmxClient | None = jmx() if start_jmx else None
        self._lock = threading.Lock()
        self.endpoints = endpoints

    @property
    def jmx(self) -> JmxClient:
        with self._lock:
            if self._jmx is None:
                self._jmx = self._make_jmx()
            return self._jmx

    def read(self, endpoint: NodeEndpoint, queries: Sequence[MBeanQuery]) -> list[RawReading]:
        if isinstance(endpoint, MetricsEndpoint):
            return self.endpoints.read(endpoint, queries)
        if isinstance(endpoint, Endpoint):
            return self.jmx.read(endpoint, queries)
        raise ReadError(f"no source reads a {type(endpoint).__name__} ({endpoint.address})")

    def configure(self, timeouts: ReadTimeouts) -> None:
        """The metrics endpoints' timeouts; remote JMX keeps its own (JmxClient.configure)."""
        self.endpoints.configure(timeouts)

    def close(self) -> None:
        try:
            self.endpoints.close()
        finally:
            with self._lock:
                jmx, self._jmx = self._jmx, None
            if jmx is not None:
                jmx.close()
