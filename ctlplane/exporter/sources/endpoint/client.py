"""A node's Prometheus endpoint as a source of readings: GET its page, keep the samples its naming maps back.

Every way a read can fail is the node's own one-line error, as with JMX: refused (the process is gone),
no answer in time (hung, or a page that drips), 401/403 (credentials), another status, a page larger than
`max_bytes`, a malformed line of a wanted sample. The page is streamed line by line; only the lines of
wanted names are parsed and kept.

A connection must be made within the scrape timeout, but the page may take up to `page_timeout_seconds`
(scrape.page_timeout_seconds): jmx_exporter collects every MBean before it writes a byte, so a broker with
tens of thousands of partitions answers after tens of seconds (prometheus/jmx_exporter #955: 23 s at 10.8k
partitions). A read is never abandoned and asked again while the page is still being collected; the
scraper reads such a node at its own pace (scraper.py, "paced").
"""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import httpx

from ctlplane.exporter.catalog import CATALOG, SeriesType
from ctlplane.exporter.model import Failure, MBeanQuery, RawReading
from ctlplane.exporter.sources.base import CollectedReadings, NodeEndpoint, ReadError
from ctlplane.exporter.sources.endpoint.naming import Inversion, invert
from ctlplane.exporter.sources.endpoint.profiles import AGENT_ALIASES, EndpointNaming
from ctlplane.exporter.sources.endpoint.readings import Lookup, lookup, node_readings
from ctlplane.exporter.sources.endpoint.reporter import ReporterNaming, invert_reporter
from ctlplane.exporter.sources.endpoint.text import TextError, page_samples

# (MBean pattern, attribute) the catalogue reads as a String: a naming serves them only as a label
STRING_ATTRIBUTES = frozenset(
    (spec.mbean, spec.attribute) for spec in CATALOG if spec.type in (SeriesType.STATE, SeriesType.INFO)
)
# app-info's Version is a String no naming serves; its StartTimeMs (a long, on 4.3.1's AppInfo MBean) still
# carries the id key, the node id, which names the node in the quorum's view
CARRIERS = {("kafka.server:type=app-info,id=*", "Version"): "StartTimeMs"}
CHUNK_BYTES = 256 * 1024
# A broker with 10,000 partitions serves ~2-6 MB in default naming (5.6 MB at 5,000 partitions measured on
# Kafka 4.3.1, the whole page), 28 MB seen at 40,000: a page beyond this is refused, not held
MAX_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class MetricsEndpoint:
    """One node's Prometheus endpoint and how to read it."""

    url: str
    naming: EndpointNaming
    username: str | None = None
    password: str | None = field(default=None, repr=False)  # never logged
    ca_file: str | None = None  # PEM; the system's trust store without it

    @property
    def address(self) -> str:
        return self.url


def inversion_for(naming: EndpointNaming, queries: Sequence[MBeanQuery]) -> Inversion:
    if isinstance(naming, ReporterNaming):
        return invert_reporter(queries, STRING_ATTRIBUTES, AGENT_ALIASES)
    return invert(naming, queries, STRING_ATTRIBUTES, AGENT_ALIASES if naming.agent_series else (), CARRIERS)


class EndpointClient:
    """Reads MetricsEndpoints; one HTTP connection pool per trust setting, shared by the scrape workers. The
    timeouts are read at each request: a config reload sets them (set_timeouts). `timeout_seconds` bounds
    connecting, `page_timeout_seconds` the whole page (its first byte included)."""

    def __init__(self, timeout_seconds: float, page_timeout_seconds: float | None = None, max_bytes: int = MAX_BYTES):
        self.timeout_seconds = timeout_seconds
        self.page_timeout_seconds = page_timeout_seconds or timeout_seconds
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._clients: dict[str | None, httpx.Client] = {}
        self._lookups: dict[tuple[EndpointNaming, tuple[MBeanQuery, ...]], Lookup] = {}

    def set_timeouts(self, timeout_seconds: float, page_timeout_seconds: float) -> None:
        self.timeout_seconds, self.page_timeout_seconds = timeout_seconds, page_timeout_seconds

    def _client(self, ca_file: str | None) -> httpx.Client:
        with self._lock:
            client = self._clients.get(ca_file)
            if client is None:
                verify: ssl.SSLContext | bool = ssl.create_default_context(cafile=ca_file) if ca_file else True
                client = httpx.Client(verify=verify, follow_redirects=False)
                self._clients[ca_file] = client
            return client

    def _lookup(self, naming: EndpointNaming, queries: Sequence[MBeanQuery]) -> Lookup:
        key = (naming, tuple(queries))
        with self._lock:
            found = self._lookups.get(key)
        if found is None:
            found = lookup(inversion_for(naming, queries))
            with self._lock:
                self._lookups[key] = found
        return found

    def read(self, endpoint: NodeEndpoint, queries: Sequence[MBeanQuery]) -> list[RawReading]:
        if not isinstance(endpoint, MetricsEndpoint):
            raise ReadError(f"not a metrics endpoint: {endpoint.address}")
        found = self._lookup(endpoint.naming, queries)
        auth = httpx.BasicAuth(endpoint.username, endpoint.password or "") if endpoint.username else None
        page_seconds = self.page_timeout_seconds
        started = time.monotonic()
        deadline = started + page_seconds
        timeout = httpx.Timeout(self.timeout_seconds, read=page_seconds)
        try:
            client = self._client(endpoint.ca_file)
            with client.stream("GET", endpoint.url, auth=auth, timeout=timeout) as response:
                collected_after = time.monotonic() - started  # the page is collected before its headers
                _check_status(response)
                size = [0]
                chunks = self._chunks(response, deadline, page_seconds, size)
                readings = node_readings(page_samples(chunks, found.wanted), found, queries, endpoint.url)
                return CollectedReadings(readings, collected_after, size[0])
        except ReadError:
            raise
        except TextError as exc:
            raise ReadError(f"{endpoint.url}: {exc}") from None
        except httpx.ConnectTimeout:
            raise ReadError(f"{endpoint.url}: connect timed out", Failure.TIMEOUT) from None
        except httpx.ReadTimeout:
            raise ReadError(f"{endpoint.url}: page not complete within {page_seconds:g}s", Failure.TIMEOUT) from None
        except httpx.TimeoutException:
            raise ReadError(f"{endpoint.url}: no answer within {self.timeout_seconds:g}s", Failure.TIMEOUT) from None
        except httpx.ConnectError as exc:
            failure = Failure.OTHER if "SSL" in str(exc) or "certificate" in str(exc) else Failure.GONE
            raise ReadError(f"{endpoint.url}: {_first_line(exc) or 'connection refused'}", failure) from None
        except httpx.HTTPError as exc:
            # a connection reset or a page cut short mid-read: the process went away under the read
            raise ReadError(f"{endpoint.url}: {type(exc).__name__}: {_first_line(exc)}", Failure.GONE) from None

    def _chunks(
        self, response: httpx.Response, deadline: float, page_seconds: float, size: list[int]
    ) -> Iterator[bytes]:
        """The page's chunks, counted into size[0]."""
        for chunk in response.iter_bytes(CHUNK_BYTES):
            size[0] += len(chunk)
            if size[0] > self.max_bytes:
                raise ReadError(f"{response.url}: page larger than {self.max_bytes} bytes")
            if time.monotonic() > deadline:
                raise ReadError(f"{response.url}: page not complete within {page_seconds:g}s", Failure.TIMEOUT)
            yield chunk

    def close(self) -> None:
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            client.close()


def _check_status(response: httpx.Response) -> None:
    if response.status_code in (401, 403):
        raise ReadError(f"{response.url}: HTTP {response.status_code} (credentials refused)", Failure.AUTH)
    if response.status_code != 200:
        raise ReadError(f"{response.url}: HTTP {response.status_code}")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else ""
