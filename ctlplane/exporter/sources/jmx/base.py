"""The one small interface every JMX client implements; failures cross it as JmxError."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ctlplane.exporter.model import MBeanQuery, RawReading
from ctlplane.exporter.sources.base import ReadError


class JmxError(ReadError):
    """The node's JMX could not be read (refused, timed out, authentication failed, vanished mid-read)."""


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int
    username: str | None = None
    password: str | None = field(default=None, repr=False)  # never logged
    ssl: bool = False

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def service_url(self) -> str:
        return f"service:jmx:rmi:///jndi/rmi://{self.host}:{self.port}/jmxrmi"


class JmxClient(Protocol):
    def read(self, endpoint: Endpoint, queries: Sequence[MBeanQuery]) -> list[RawReading]:
        """Read every MBean matching each query; absent MBeans or attributes are simply left out.

        Raises JmxError when the node cannot be read at all.
        """
        ...

    def close(self) -> None: ...
