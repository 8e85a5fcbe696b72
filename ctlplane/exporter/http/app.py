"""The HTTP face of the exporter: /metrics, /api/v1/snapshot, /healthz and a landing page.

No handler does JMX I/O: they read the latest snapshot, which the scraper thread replaces each round.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import logging
import signal
import ssl
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response

from ctlplane.exporter.config import TlsConfig
from ctlplane.exporter.families import Family
from ctlplane.exporter.http.guard import GuardedFastAPI
from ctlplane.exporter.http.jsonapi import health_to_dict, restart_answers, snapshot_to_dict
from ctlplane.exporter.http.page import MetricsPage, accepts_gzip
from ctlplane.exporter.http.schema import HealthDocument, RestartAnswer, SnapshotDocument
from ctlplane.exporter.model import FleetSnapshot
from ctlplane.exporter.state import Observation

LatestObservation = Callable[[], Observation]
log = logging.getLogger(__name__)

# Idle keep-alive connections are kept this long: longer than any usual scrape interval, so a scraper
# reuses its connection instead of racing the server's close (uvicorn's default is 5 s, and a request sent
# as the server closes the idle socket is reset: a failed scrape).
KEEP_ALIVE_SECONDS = 120


def server_options() -> dict[str, Any]:
    """uvicorn settings every ctlplane server uses (exporter, standalone dashboard, tests, benchmarks)."""
    # timeout_graceful_shutdown: on SIGTERM an in-flight request gets 3 s, not for ever (uvicorn's default):
    # `docker stop` kills 10 s after SIGTERM, and the history must be flushed within that.
    return {"timeout_keep_alive": KEEP_ALIVE_SECONDS, "log_level": "warning", "timeout_graceful_shutdown": 3}


# exporter-toolkit's client_auth_type -> what Python's ssl asks of a client's certificate
CLIENT_VERIFY_MODES = {
    "NoClientCert": ssl.CERT_NONE,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
TLS_VERSIONS = {"TLS12": ssl.TLSVersion.TLSv1_2, "TLS13": ssl.TLSVersion.TLSv1_3}


class QuietServer(uvicorn.Server):
    """uvicorn's Server, waking once a second instead of ten times.

    uvicorn's main loop sleeps 0.1 s at a time to notice `should_exit` and to refresh the Date header
    once a second (uvicorn/server.py `main_loop`, `on_tick`). Idle, those wake-ups alone cost ~1.8 ms of
    CPU a second (a bare uvicorn app measured for 60 s): a sixth of ctlplane's whole cost per scrape at
    one scrape a second (bench/vs_jmx_exporter.py). This one wakes when a second has passed, for the
    Date header, or at once when `should_exit` is set, from a signal handler or another thread."""

    TICK_SECONDS = 1.0

    def __init__(self, config: uvicorn.Config) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._should_exit = False
        super().__init__(config)

    @property
    def should_exit(self) -> bool:
        return self._should_exit

    @should_exit.setter
    def should_exit(self, value: bool) -> None:
        self._should_exit = value
        loop, wake = self._loop, self._wake
        if value and loop is not None and wake is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed: nothing waits any more
                loop.call_soon_threadsafe(wake.set)

    async def main_loop(self) -> None:
        self._wake = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        counter = 0
        should_exit = await self.on_tick(counter)
        while not should_exit:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.TICK_SECONDS)
            counter = (counter + 10) % 864000  # on_tick refreshes the Date header on multiples of 10
            should_exit = await self.on_tick(counter)


def http_server(app: Any, host: str, port: int, tls: TlsConfig | None = None) -> uvicorn.Server:
    """The uvicorn server for `app`: plain HTTP, or HTTPS with a minimum TLS version and, optionally,
    client certificates verified against the client CA (mTLS). uvicorn has no minimum-version option,
    so its SSL context is made here (Config.load) and tightened before the server starts."""
    options: dict[str, Any] = {}
    if tls is not None:
        options = {
            "ssl_certfile": str(tls.cert_file),
            "ssl_keyfile": str(tls.key_file),
            "ssl_ca_certs": str(tls.client_ca_file) if tls.client_ca_file else None,
            "ssl_cert_reqs": CLIENT_VERIFY_MODES[tls.client_auth_type],
        }
    config = uvicorn.Config(app, host=host, port=port, **server_options(), **options)
    config.load()
    if config.ssl is not None and tls is not None:
        config.ssl.minimum_version = TLS_VERSIONS[tls.min_version]
    return QuietServer(config)


def run_until_stopped(server: uvicorn.Server) -> None:
    """Serve until SIGINT or SIGTERM (call from the main thread), then return so the caller's cleanup
    runs. uvicorn turns SIGTERM into a graceful stop, then raises it again once stopped so the signal's
    own handler runs; the default one kills the process before the caller's `finally` (the exporter's
    history flush, `docker stop`). A handler that only notes it lets the shutdown finish."""
    signal.signal(signal.SIGTERM, lambda signum, frame: log.info("SIGTERM: stopping"))
    server.run()


class PageResponse(Response):
    """A body of parts - the page cached per round, then a small tail made per request - sent as they
    are, in slices.

    /metrics is ~8 MB at 1,000 nodes. Joining the parts copied the page on every request; sending it in
    slices also lets uvicorn's flow control hold at most about one slice per slow client instead of a
    copy of the rest of the page.
    """

    SLICE_BYTES = 256 * 1024

    def __init__(self, parts: Sequence[bytes], media_type: str, gzipped: bool = False) -> None:
        super().__init__(b"", media_type=media_type)
        self.parts = parts
        self.headers["content-length"] = str(sum(len(part) for part in parts))
        self.headers["vary"] = "Accept-Encoding"
        if gzipped:
            self.headers["content-encoding"] = "gzip"

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        for part in self.parts:
            for start in range(0, len(part), self.SLICE_BYTES):
                chunk = part[start : start + self.SLICE_BYTES]
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def create_app(
    source: LatestObservation,
    *,
    interval_seconds: float | Callable[[], float],
    version: str = "dev",
    basic_auth_users: Mapping[str, str] | None = None,
    clock: Callable[[], float] = time.time,
    per_request: Callable[[], Sequence[Family]] = tuple,
    observations: Callable[[Callable[[Observation], None]], None] | None = None,
    reload: Callable[[], str | None] | None = None,
) -> FastAPI:
    """The exporter's HTTP app. `per_request` gives families made fresh for each /metrics request (the
    history writer's self-metrics), beside the page cached per round. `observations` (ExporterState.
    subscribe) lets the app make each round's /metrics page when the round ends, not at its first scrape.
    `interval_seconds`, what /healthz judges a snapshot's age by: a callable is read per request, so the
    interval a reload sets counts (`ctlplane run` passes the scraper's)."""
    fixed = interval_seconds
    interval: Callable[[], float] = fixed if callable(fixed) else lambda: fixed
    # Auth and the body cap wrap every route, the docs and the dashboard mounted later alike, and run
    # before any of them reads a byte of the request (ctlplane/exporter/http/guard.py).
    app = GuardedFastAPI(
        users=basic_auth_users, title="ctlplane", version=version, docs_url="/api/docs", redoc_url=None
    )
    page = MetricsPage(version)
    app.state.observation_source = source
    if observations is not None:
        observations(lambda observation: page.prepare(observation.snapshot, observation.health))

    _serve_metrics(app, source, page, clock, per_request)
    _serve_reload(app, reload)
    _serve_api(app, source)
    _serve_status(app, source, clock, interval)
    return app


def _serve_metrics(
    app: FastAPI,
    source: LatestObservation,
    page: MetricsPage,
    clock: Callable[[], float],
    per_request: Callable[[], Sequence[Family]],
) -> None:
    # A plain (sync) route rather than make_asgi_app: no 307 redirect to /metrics/, and rendering runs
    # in the threadpool instead of the event loop.
    @app.get("/metrics", response_class=Response)
    def metrics(request: Request) -> Response:
        current = source()
        gzipped = accepts_gzip(request.headers.get("accept-encoding"))
        parts, content_type = page.render_parts(
            current.snapshot, current.health, request.headers.get("accept"), clock(), per_request(), gzipped
        )
        return PageResponse(parts, content_type, gzipped)


def _serve_reload(app: FastAPI, reload: Callable[[], str | None] | None) -> None:
    @app.post("/-/reload", response_class=PlainTextResponse)
    def reload_config() -> PlainTextResponse:
        """Prometheus' convention: read the config file again; 500 and why when it fails its checks (the
        running config stays)."""
        if reload is None:
            return PlainTextResponse("no config file to reload (started without --config)\n", status_code=404)
        failed = reload()
        if failed is not None:
            return PlainTextResponse(f"failed to reload config: {failed}\n", status_code=500)
        return PlainTextResponse("config reloaded\n")


def _serve_api(app: FastAPI, source: LatestObservation) -> None:
    # the models describe the documents (OpenAPI); jsonapi.py writes them from the models
    @app.get("/api/v1/snapshot", response_model=SnapshotDocument)
    def snapshot() -> JSONResponse:
        """Every node's readings of the last round."""
        return JSONResponse(snapshot_to_dict(source().snapshot))

    @app.get("/api/v1/health", response_model=HealthDocument)
    def health() -> JSONResponse:
        """Per cluster, the active controller and every broker's state with its evidence and cause."""
        current = source()
        return JSONResponse(health_to_dict(current.health, current.snapshot))

    @app.get("/api/v1/restart", response_model=list[RestartAnswer])
    def restart(cluster: str | None = None, node: str | None = None) -> JSONResponse:
        """May each node be restarted now without losing availability, and why not? `cluster` and `node`
        narrow the answer to one cluster or one node (404 where none is known)."""
        answers = restart_answers(source().health, cluster, node)
        if (cluster is not None or node is not None) and not answers:
            return JSONResponse({"detail": f"no node {node or '*'} in cluster {cluster or '*'}"}, status_code=404)
        return JSONResponse(answers)


def _serve_status(
    app: FastAPI, source: LatestObservation, clock: Callable[[], float], interval: Callable[[], float]
) -> None:
    @app.get("/healthz")
    def healthz() -> JSONResponse:
        current = source().snapshot
        age = clock() - current.taken_at
        # Healthy once a round has completed and rounds keep coming; unreachable brokers do not make
        # the exporter unhealthy (they are reported in the series), a stuck scrape loop does.
        healthy = current.sequence > 0 and age <= 3 * interval()
        body = {
            "status": "ok" if healthy else "unhealthy",
            "sequence": current.sequence,
            "snapshot_age_seconds": round(age, 3),
        }
        return JSONResponse(body, status_code=200 if healthy else 503)

    @app.get("/", response_class=HTMLResponse)
    def landing() -> str:
        return _landing_page(source().snapshot)


def _landing_page(current: FleetSnapshot) -> str:
    rows = "".join(
        f"<tr><td>{html.escape(cluster.name)}</td><td>{cluster.mode.value if cluster.mode else '?'}</td>"
        f"<td>{sum(node.up for node in cluster.nodes)}/{len(cluster.nodes)}</td></tr>"
        for cluster in current.clusters
    )
    links = (
        ("/dashboard/", "dashboard"),
        ("/metrics", "/metrics"),
        ("/api/v1/snapshot", "/api/v1/snapshot"),
        ("/api/v1/health", "/api/v1/health"),
        ("/healthz", "/healthz"),
    )
    return (
        "<!doctype html><html><head><title>ctlplane</title></head><body>"
        "<h1>ctlplane</h1><p>Kafka control-plane exporter.</p>"
        "<ul>" + "".join(f'<li><a href="{path}">{label}</a></li>' for path, label in links) + "</ul>"
        f"<table><tr><th>cluster</th><th>mode</th><th>nodes up</th></tr>{rows}</table>"
        "</body></html>"
    )
