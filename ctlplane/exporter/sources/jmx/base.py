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
class JmxTls:
    """A cluster's TLS material for remote JMX: paths, and the passwords read from their files."""

    trust_file: str | None = None  # JKS/PKCS12 or PEM certificates; None: the JDK's trust store
    trust_password: str | None = field(default=None, repr=False)  # never logged
    key_file: str | None = None  # JKS/PKCS12 with the client certificate
    key_password: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int
    username: str | None = None
    password: str | None = field(default=None, repr=False)  # never logged
    ssl: bool = False  # the node's connector speaks TLS (its stub carries the SSL factory: the server's choice)
    registry_ssl: bool = False  # the registry lookup over TLS too (com.sun.management.jmxremote.registry.ssl)
    tls: JmxTls | None = None  # the cluster's own trust and client key; None: the JVM's defaults

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
