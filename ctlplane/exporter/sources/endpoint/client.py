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

A page not complete within the page timeout is that read's error, but its request is held open for the next
read, not abandoned and asked again (HELD_PAGE_TIMEOUTS): a node has one request open at a time.
"""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from ctlplane.exporter.catalog import CATALOG, SeriesType
from ctlplane.exporter.model import Failure, MBeanQuery, RawReading
from ctlplane.exporter.sources.base import CollectedReadings, NodeEndpoint, ReadError, ReadTimeouts
from ctlplane.exporter.sources.endpoint.naming import Inversion, invert
from ctlplane.exporter.sources.endpoint.profiles import AGENT_ALIASES, EndpointNaming
from ctlplane.exporter.sources.endpoint.readings import Lookup, lookup, node_readings
from ctlplane.exporter.sources.endpoint.reporter import ReporterNaming, invert_reporter
from ctlplane.exporter.sources.endpoint.text import TextError, page_samples
from ctlplane.exporter.sources.files import FileStamp, file_stamps

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
# A request whose page is not complete within the page timeout is held open for the node's next read rather
# than abandoned and asked again: jmx_exporter answers every request it has accepted, each collecting the whole
# page on a thread of its own (its HTTPServerFactory: up to 10 at once), so requests abandoned while a broker
# was paused (SIGSTOP, a long GC) or slow wait in its listen backlog and are collected side by side when it
# resumes, for nobody, each the slower for the others (a CI run: a Strimzi-named broker's page, 20 s timeout,
# unread for 3 minutes after its broker resumed). A held request is given up after this many page timeouts (at
# most HELD_AT_MOST_SECONDS, never less than one page timeout): a peer gone without a reset is asked again.
HELD_PAGE_TIMEOUTS = 4
HELD_AT_MOST_SECONDS = 600.0


@dataclass(frozen=True)
class MetricsEndpoint:
    """One node's Prometheus endpoint and how to read it."""

    url: str
    naming: EndpointNaming
    username: str | None = None
    password: str | None = field(default=None, repr=False)  # never logged
    ca_file: str | None = None  # PEM; the system's trust store without it
    cert_file: str | None = None  # PEM client certificate and its key, for an endpoint that asks for one
    key_file: str | None = None
    bearer_token_file: str | None = None  # read at every page: a rotated token is used at once
    key_password_file: str | None = None  # an encrypted key_file's password, read with the key

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
        # each set of TLS files (CA, client certificate, key) -> what the files were when its client was made
        # (FileStamps) and that client: a file renewed in place (cert-manager, a Secret's `..data` swap) makes
        # a new client at the next read, without a restart
        self._clients: dict[TlsFiles, tuple[FileStamps, httpx.Client]] = {}
        self._retired: list[httpx.Client] = []  # replaced, maybe still streaming a page: closed by close()
        self._lookups: dict[tuple[EndpointNaming, tuple[MBeanQuery, ...]], Lookup] = {}
        self._held: dict[str, _Request] = {}  # url -> its request past a read's page timeout, still open

    def configure(self, timeouts: ReadTimeouts) -> None:
        self.timeout_seconds, self.page_timeout_seconds = timeouts.timeout_seconds, timeouts.page_timeout_seconds

    def _client(self, endpoint: MetricsEndpoint) -> httpx.Client:
        files = (endpoint.ca_file, endpoint.cert_file, endpoint.key_file, endpoint.key_password_file)
        stamps = file_stamps(files)
        with self._lock:
            known = self._clients.get(files)
            if known is not None and known[0] == stamps:
                return known[1]
        client = httpx.Client(verify=_tls_context(endpoint), follow_redirects=False)
        with self._lock:
            replaced = self._clients.get(files)
            self._clients[files] = (stamps, client)
            if replaced is not None:
                self._retired.append(replaced[1])
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
        wanted = tuple(queries)
        started = time.monotonic()
        request = self._take_held(endpoint.url, wanted) or self._ask(endpoint, wanted)
        page = self._await(endpoint, request, started)
        if request.queries != wanted:
            # the held request answered other queries (the slow tier's, an elected controller's): its node
            # answers again, so it is asked for these, within what is left of this read's page timeout
            page = self._await(endpoint, self._ask(endpoint, wanted), started)
        return page

    def _ask(self, endpoint: MetricsEndpoint, queries: tuple[MBeanQuery, ...]) -> _Request:
        page_seconds = self.page_timeout_seconds
        hold = max(page_seconds, min(HELD_PAGE_TIMEOUTS * page_seconds, HELD_AT_MOST_SECONDS))
        found = self._lookup(endpoint.naming, queries)
        timeouts = (self.timeout_seconds, hold)
        page: Future[CollectedReadings] = Future()

        def fetch() -> None:
            page.set_running_or_notify_cancel()
            try:
                page.set_result(self._fetch(endpoint, found, queries, timeouts))
            except BaseException as exc:  # the read waiting for it raises it
                page.set_exception(exc)

        # a daemon thread of its own, one per request: a held one never holds the process's exit
        request = _Request(queries, time.monotonic(), page)
        threading.Thread(target=fetch, name=f"ctlplane-page {endpoint.url}", daemon=True).start()
        return request

    def _take_held(self, url: str, queries: tuple[MBeanQuery, ...]) -> _Request | None:
        """The node's held request: still open, or done with a page of these queries since the last read."""
        with self._lock:
            held = self._held.pop(url, None)
        if held is None or not held.page.done():
            return held
        if held.page.exception() is None and held.queries == queries:
            return held
        return None  # it ended in an error, or with other queries' page: the node is asked afresh

    def _await(self, endpoint: MetricsEndpoint, request: _Request, started: float) -> CollectedReadings:
        """The request's page within the page timeout of this read (`started`), its values' time counted from
        the read's start (before it where a held request's page was collected earlier); else the request held."""
        page_seconds = self.page_timeout_seconds
        try:
            page = request.page.result(timeout=max(0.0, started + page_seconds - time.monotonic()))
        except FutureTimeout:
            with self._lock:
                self._held[endpoint.url] = request
            held = (
                f" (its request of {started - request.started:.0f}s ago is held open, not asked again)"
                if request.started < started
                else ""
            )
            error = f"{endpoint.url}: page not complete within {page_seconds:g}s{held}"
            raise ReadError(error, Failure.TIMEOUT) from None
        return CollectedReadings(page, page.collected_after + request.started - started, page.page_bytes)

    def _fetch(
        self, endpoint: MetricsEndpoint, found: Lookup, queries: Sequence[MBeanQuery], timeouts: tuple[float, float]
    ) -> CollectedReadings:
        """One request for the page, on a thread of its own: connecting within the scrape timeout,
        the whole page within `hold` (the read waiting for it gives up sooner, and holds it)."""
        connect_seconds, hold = timeouts
        auth = httpx.BasicAuth(endpoint.username, endpoint.password or "") if endpoint.username else None
        headers = _bearer(endpoint)
        started = time.monotonic()
        deadline = started + hold
        timeout = httpx.Timeout(connect_seconds, read=hold)
        try:
            client = self._client(endpoint)
            with client.stream("GET", endpoint.url, auth=auth, headers=headers, timeout=timeout) as response:
                collected_after = time.monotonic() - started  # the page is collected before its headers
                _check_status(response)
                size = [0]
                chunks = self._chunks(response, deadline, hold, size)
                readings = node_readings(page_samples(chunks, found.wanted), found, queries, endpoint.url)
                return CollectedReadings(readings, collected_after, size[0])
        except ReadError:
            raise
        except TextError as exc:
            raise ReadError(f"{endpoint.url}: {exc}") from None
        except httpx.ConnectTimeout:
            raise ReadError(f"{endpoint.url}: connect timed out", Failure.TIMEOUT) from None
        except httpx.ReadTimeout:
            raise ReadError(f"{endpoint.url}: page not complete within {hold:g}s", Failure.TIMEOUT) from None
        except httpx.TimeoutException:
            raise ReadError(f"{endpoint.url}: no answer within {connect_seconds:g}s", Failure.TIMEOUT) from None
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
            clients = [client for _, client in self._clients.values()] + self._retired
            self._clients, self._retired, self._held = {}, [], {}
        for client in clients:
            client.close()  # a held request's stream ends with its client


@dataclass(frozen=True)
class _Request:
    """A page asked for: the queries it answers, when it was sent (monotonic) and its page to come."""

    queries: tuple[MBeanQuery, ...]
    started: float
    page: Future[CollectedReadings]


TlsFiles = tuple[str | None, str | None, str | None, str | None]
FileStamps = tuple[FileStamp | None, ...]


def client_tls_context(
    ca_file: str | None, cert_file: str | None, key_file: str | None, key_password: str | None = None
) -> ssl.SSLContext | bool:
    """An endpoint's trust (`ca_file`, else the system's) and client certificate, its key decrypted with
    `key_password` where encrypted, loaded now (True: the system's trust, no certificate); ssl.SSLError or
    OSError where a file does not load. check-config loads the same."""
    if ca_file is None and cert_file is None:
        return True
    context = ssl.create_default_context(cafile=ca_file)
    if cert_file is not None:
        # never prompted for: a password OpenSSL asks for and is not given fails the load
        context.load_cert_chain(cert_file, key_file, password=key_password or "")
    return context


def key_password(path: str | None) -> str | None:
    """An encrypted key's password from its file (stripped), None without one; OSError if it cannot be read."""
    return None if path is None else Path(path).read_text().strip()


def _tls_context(endpoint: MetricsEndpoint) -> ssl.SSLContext | bool:
    """The endpoint's trust and client certificate, loaded now; ReadError (one line) where a file does not load."""
    try:
        password = key_password(endpoint.key_password_file)
        return client_tls_context(endpoint.ca_file, endpoint.cert_file, endpoint.key_file, password)
    except (ssl.SSLError, OSError) as exc:
        files = ", ".join(file for file in (endpoint.ca_file, endpoint.cert_file, endpoint.key_file) if file)
        raise ReadError(f"{endpoint.url}: {files} do not load: {_first_line(exc) or type(exc).__name__}") from None


def _bearer(endpoint: MetricsEndpoint) -> dict[str, str] | None:
    """The Authorization header of the token in bearer_token_file as it is now; ReadError if it cannot be read."""
    if endpoint.bearer_token_file is None:
        return None
    try:
        token = Path(endpoint.bearer_token_file).read_text().strip()
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        file = endpoint.bearer_token_file
        raise ReadError(f"{endpoint.url}: cannot read bearer_token_file {file}: {reason}") from None
    if not token:
        raise ReadError(f"{endpoint.url}: bearer_token_file {endpoint.bearer_token_file} is empty")
    return {"Authorization": f"Bearer {token}"}


# nginx's pages for a TLS client certificate it did not get or could not verify (its 496 and 495 pages,
# ngx_http_special_response.c), which it sends with status 400, not 403: ingress-nginx, the commonest proxy in
# front of pods, refuses a client certificate so
CLIENT_CERTIFICATE_REFUSED = (b"No required SSL certificate was sent", b"The SSL certificate error")


def _check_status(response: httpx.Response) -> None:
    if response.status_code in (401, 403):
        raise ReadError(f"{response.url}: HTTP {response.status_code} (credentials refused)", Failure.AUTH)
    if response.status_code == 400:
        first = next(response.iter_bytes(4096), b"")  # the page's first chunk: a 400 is not bounded by max_bytes
        if any(text in first for text in CLIENT_CERTIFICATE_REFUSED):
            raise ReadError(f"{response.url}: HTTP 400 (client certificate refused)", Failure.AUTH)
    if response.status_code != 200:
        raise ReadError(f"{response.url}: HTTP {response.status_code}")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else ""
