"""What every node source implements, and the one object the scraper reads through."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ctlplane.exporter.model import Failure, MBeanQuery, RawReading


class ReadError(Exception):
    """The node could not be read (refused, timed out, authentication failed, a malformed answer)."""

    def __init__(self, message: str, failure: Failure = Failure.OTHER) -> None:
        super().__init__(message)
        self.failure = failure


class CollectedReadings(list[RawReading]):
    """Readings of a page of `page_bytes`, whose values were taken `collected_after` seconds into the read
    rather than at its start: a jmx_exporter page is collected whole before its first byte is written
    (JmxCollector collects every MBean, then the HTTP server writes), so a page whose first byte took 23 s
    holds values as of then."""

    def __init__(self, readings: list[RawReading], collected_after: float, page_bytes: int = 0) -> None:
        super().__init__(readings)
        self.collected_after = collected_after
        self.page_bytes = page_bytes


class NodeEndpoint(Protocol):
    """Where a node is read: a JMX endpoint or a metrics endpoint."""

    @property
    def address(self) -> str: ...


@dataclass(frozen=True)
class ReadTimeouts:
    """How long a node's read may take (ScrapeConfig): to connect and answer, and for a metrics page."""

    timeout_seconds: float
    page_timeout_seconds: float


class NodeSource(Protocol):
    # `endpoint` is Any: each source takes its own kind (a JMX client an Endpoint, the endpoint client a
    # MetricsEndpoint), and routed.Sources hands each the kind it takes
    def read(self, endpoint: Any, queries: Sequence[MBeanQuery]) -> list[RawReading]:
        """Read every MBean matching each query; absent MBeans or attributes are simply left out.

        Raises ReadError when the node cannot be read at all.
        """
        ...

    def configure(self, timeouts: ReadTimeouts) -> None:
        """Read with these timeouts from the next read on (a reload); a source whose timeouts are fixed at
        its start says so in its own docstring."""
        ...

    def close(self) -> None: ...
