"""A node's endpoint that fails each way it can fails as that node's one-line error (client.py), on loopback."""

from __future__ import annotations

import base64
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from ctlplane.exporter.model import Failure, MBeanQuery, RawReading
from ctlplane.exporter.readings import plan_queries, samples_from_readings
from ctlplane.exporter.sources.base import ReadError
from ctlplane.exporter.sources.endpoint.client import EndpointClient, MetricsEndpoint
from ctlplane.exporter.sources.endpoint.profiles import profile
from harness.localkafka import encrypted_key, make_local_pki

PAGE = (
    "# TYPE kafka_server_KafkaServer_Value untyped\n"
    'kafka_server_KafkaServer_Value{name="BrokerState"} 3.0\n'
    'kafka_controller_KafkaController_Value{name="ActiveControllerCount"} 0.0\n'
)
Handler = Callable[[BaseHTTPRequestHandler], None]


@pytest.fixture
def serve() -> Iterator[Callable[[Handler], str]]:
    servers: list[ThreadingHTTPServer] = []

    def start(handle: Handler) -> str:
        class Page(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                handle(self)

            def log_message(self, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/metrics"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _answer(status: int, body: str, headers: dict[str, str] | None = None) -> Handler:
    def handle(request: BaseHTTPRequestHandler) -> None:
        data = body.encode()
        request.send_response(status)
        for key, value in (headers or {"Content-Length": str(len(data))}).items():
            request.send_header(key, value)
        request.end_headers()
        request.wfile.write(data)

    return handle


def _read(url: str, page_seconds: float = 10.0, **auth: str) -> list[RawReading]:
    # the page timeout bounds the whole read (a thread of its own answers it): 2 s, once, was too short for a
    # loopback page on a loaded machine; the timeout's own test gives it 2 s
    client = EndpointClient(timeout_seconds=2.0, page_timeout_seconds=page_seconds, max_bytes=4096)
    try:
        return client.read(MetricsEndpoint(url, profile("jmx_exporter"), **auth), plan_queries())
    finally:
        client.close()


def _error(url: str, page_seconds: float = 10.0, **auth: str) -> ReadError:
    with pytest.raises(ReadError) as error:
        _read(url, page_seconds, **auth)
    assert "\n" not in str(error.value) and str(error.value).startswith(url)
    return error.value


def test_a_page_reads_as_the_mbeans_it_names(serve: Callable[[Handler], str]) -> None:
    readings = _read(serve(_answer(200, PAGE)))
    series = {sample.series: sample.value for sample in samples_from_readings(readings)}
    assert series == {"kafka_broker_state": 3.0, "kafka_controller_active": 0.0}


def test_basic_auth_is_sent_and_a_refusal_is_an_auth_failure(serve: Callable[[Handler], str]) -> None:
    expected = "Basic " + base64.b64encode(b"prom:s3cret").decode()

    def guarded(request: BaseHTTPRequestHandler) -> None:
        if request.headers.get("Authorization") == expected:
            _answer(200, PAGE)(request)
        else:
            _answer(401, "no")(request)

    url = serve(guarded)
    assert _read(url, username="prom", password="s3cret")
    error = _error(url, username="prom", password="wrong")
    assert error.failure is Failure.AUTH and "HTTP 401" in str(error)


def test_a_server_error_is_the_nodes_error(serve: Callable[[Handler], str]) -> None:
    error = _error(serve(_answer(500, "boom")))
    assert error.failure is Failure.OTHER and "HTTP 500" in str(error)


def test_a_jmx_exporter_page_without_any_of_the_nodes_mbeans_is_the_nodes_error(
    serve: Callable[[Handler], str],
) -> None:
    """jmx_exporter's standalone server reads the node over remote JMX and answers 200 when the node does not,
    with none of its MBeans; its jmx_scrape_error is its previous scrape's (0 on the first failed page, 1 on
    the first good one again, seen on 1.0.1), so the page's content decides, not the gauge."""
    own = "jmx_scrape_duration_seconds 0.01\njmx_scrape_cached_beans 0.0\n"
    for gauge in ("0.0", "1.0"):
        error = _error(serve(_answer(200, f"{own}jmx_scrape_error {gauge}\n")))
        assert error.failure is Failure.OTHER
        assert str(error).endswith(f"the exporter served none of the node's MBeans (jmx_scrape_error {float(gauge):g})")
    # the node's MBeans there: read, whatever the gauge says of the scrape before
    readings = _read(serve(_answer(200, PAGE + "jmx_scrape_error 1.0\n")))
    assert {s.series for s in samples_from_readings(readings)} == {"kafka_broker_state", "kafka_controller_active"}


def test_a_refused_port_is_a_gone_process() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert _error(f"http://127.0.0.1:{port}/metrics").failure is Failure.GONE


def test_an_endpoint_that_never_answers_is_a_timeout(serve: Callable[[Handler], str]) -> None:
    release = threading.Event()

    def hang(request: BaseHTTPRequestHandler) -> None:
        release.wait(10)

    url = serve(hang)
    try:
        started = time.monotonic()
        error = _error(url, page_seconds=2.0)
        assert error.failure is Failure.TIMEOUT and time.monotonic() - started < 5
    finally:
        release.set()


class _Late:
    """A page answered only once released: counts the requests it was asked."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.asked = 0

    def __call__(self, request: BaseHTTPRequestHandler) -> None:
        self.asked += 1
        self.release.wait(10)
        _answer(200, PAGE)(request)


def _broker_state(read: list[RawReading]) -> bool:
    return any(r.object_name == "kafka.server:type=KafkaServer,name=BrokerState" for r in read)


def _read_within(
    client: EndpointClient, endpoint: MetricsEndpoint, queries: Sequence[MBeanQuery], tries: int = 20
) -> tuple[list[RawReading], list[ReadError]]:
    """The first page one of `tries` reads brings, and the errors of the reads before it: on a loaded machine a
    page due at once may still miss a 0.5 s page timeout, and the next read waits on the same request."""
    errors: list[ReadError] = []
    for _ in range(tries):
        try:
            return client.read(endpoint, queries), errors
        except ReadError as exc:
            errors.append(exc)
    raise AssertionError(f"no page in {tries} reads: {[str(e) for e in errors[-3:]]}")


def test_a_page_past_the_page_timeout_is_held_open_and_is_the_next_reads(serve: Callable[[Handler], str]) -> None:
    late = _Late()
    endpoint = MetricsEndpoint(serve(late), profile("jmx_exporter"))
    client = EndpointClient(timeout_seconds=0.5, page_timeout_seconds=0.5)
    try:
        for held in ("", " (its request of"):
            with pytest.raises(ReadError) as error:
                client.read(endpoint, plan_queries())
            assert error.value.failure is Failure.TIMEOUT and held in str(error.value), error.value
        late.release.set()
        page, errors = _read_within(client, endpoint, plan_queries())
        assert _broker_state(page)
        assert all(e.failure is Failure.TIMEOUT and "held open" in str(e) for e in errors), errors
        assert late.asked == 1  # the held request's page, not a second request
    finally:
        late.release.set()
        client.close()


def test_a_held_page_of_other_queries_or_one_ended_in_an_error_is_asked_again(serve: Callable[[Handler], str]) -> None:
    late = _Late()
    endpoint = MetricsEndpoint(serve(late), profile("jmx_exporter"))
    client = EndpointClient(timeout_seconds=0.5, page_timeout_seconds=0.5)
    fast = [query for query in plan_queries() if "KafkaServer" in query.pattern]
    try:
        with pytest.raises(ReadError):
            client.read(endpoint, fast)
        late.release.set()
        time.sleep(0.2)  # the held page lands, for queries the next read does not ask
        page, _ = _read_within(client, endpoint, plan_queries())
        assert _broker_state(page)
        assert late.asked == 2
    finally:
        late.release.set()
        client.close()

    first = threading.Event()

    def never_first(request: BaseHTTPRequestHandler) -> None:
        if not first.is_set():
            first.set()
            time.sleep(3.0)  # past the held request's own bound (4 page timeouts, 2 s): it ends in its error
            return
        _answer(200, PAGE)(request)

    client = EndpointClient(timeout_seconds=0.5, page_timeout_seconds=0.5)
    endpoint = MetricsEndpoint(serve(never_first), profile("jmx_exporter"))
    try:
        with pytest.raises(ReadError):
            client.read(endpoint, plan_queries())
        time.sleep(2.0)
        page, _ = _read_within(client, endpoint, plan_queries())  # asked again, not the ended one's error
        assert _broker_state(page)
    finally:
        client.close()


def test_a_page_cut_short_is_an_error_not_a_partial_read(serve: Callable[[Handler], str]) -> None:
    error = _error(serve(_answer(200, PAGE[:60], {"Content-Length": str(len(PAGE))})))
    assert error.failure is Failure.GONE


def test_a_page_beyond_the_size_cap_is_refused(serve: Callable[[Handler], str]) -> None:
    huge = PAGE + "".join(f'other_series{{i="{i}"}} 1\n' for i in range(1000))
    assert "larger than 4096 bytes" in str(_error(serve(_answer(200, huge))))


def test_a_hostile_line_of_a_wanted_series_is_named(serve: Callable[[Handler], str]) -> None:
    hostile = 'kafka_server_KafkaServer_Value{name="BrokerState",x="\\q"} 3.0\n'
    assert "line 1: an unknown escape in a label value" in str(_error(serve(_answer(200, hostile))))
    truncated = 'kafka_server_KafkaServer_Value{name="BrokerState",x="open} 3.0\n'
    assert "line 1: a label value without its closing quote" in str(_error(serve(_answer(200, truncated))))


def test_a_bearer_token_is_read_from_its_file_at_every_page(serve: Callable[[Handler], str], tmp_path: Path) -> None:
    """As a projected service-account token rotates under kube-rbac-proxy: the file's token of the moment
    goes out with each page, a refused one is the node's AUTH error, a missing file one line."""
    accepted = ["Bearer token-1"]

    def handle(request: BaseHTTPRequestHandler) -> None:
        ok = request.headers.get("Authorization") in accepted
        _answer(200 if ok else 401, PAGE if ok else "Unauthorized")(request)

    url = serve(handle)
    token = tmp_path / "token"
    token.write_text("token-1\n")
    client = EndpointClient(2.0)
    endpoint = MetricsEndpoint(url, profile("jmx_exporter"), bearer_token_file=str(token))
    assert any(r.object_name.endswith("BrokerState") for r in client.read(endpoint, plan_queries()))
    accepted[:] = ["Bearer token-2"]  # the server rotated first: the old token is refused
    with pytest.raises(ReadError) as refused:
        client.read(endpoint, plan_queries())
    assert refused.value.failure is Failure.AUTH and str(refused.value) == f"{url}: HTTP 401 (credentials refused)"
    token.write_text("token-2\n")
    assert client.read(endpoint, plan_queries())
    token.unlink()
    with pytest.raises(ReadError) as missing:
        client.read(endpoint, plan_queries())
    assert str(missing.value) == f"{url}: cannot read bearer_token_file {token}: No such file or directory"
    token.write_text("\n")
    with pytest.raises(ReadError, match=r"is empty$"):
        client.read(endpoint, plan_queries())
    client.close()


def test_an_encrypted_client_key_is_decrypted_with_its_password_file_for_mutual_tls(tmp_path: Path) -> None:
    """An https endpoint that requires a client certificate of its CA (a proxy in front of the agent), the
    client's key encrypted: read with key_password_file's password; with a wrong one, the node's one line."""
    pki = make_local_pki(tmp_path / "pki", ("server", "client"))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(pki.ca))
    context.verify_mode = ssl.CERT_REQUIRED
    context.load_cert_chain(str(pki.cert("server")), str(pki.key("server")))

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            _answer(200, PAGE)(self)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    password = tmp_path / "key-password"
    password.write_text("s3cret\n")
    endpoint = MetricsEndpoint(
        f"https://127.0.0.1:{server.server_address[1]}/metrics", profile("jmx_exporter"),
        ca_file=str(pki.ca), cert_file=str(pki.cert("client")),
        key_file=str(encrypted_key(pki, "client", "s3cret")), key_password_file=str(password),
    )  # fmt: skip
    client = EndpointClient(timeout_seconds=2.0, page_timeout_seconds=2.0)
    try:
        assert _broker_state(client.read(endpoint, plan_queries()))
        password.write_text("not-it\n")  # a new password file: the client is made again, and fails to load
        with pytest.raises(ReadError) as error:
            client.read(endpoint, plan_queries())
        assert "do not load" in str(error.value) and "not-it" not in str(error.value), error.value
    finally:
        client.close()
        server.shutdown()
        server.server_close()
