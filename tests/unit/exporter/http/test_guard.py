"""HTTP basic auth and request limits of the exporter's app: checked before any route, any body, any
Dash callback; bcrypt never on the event loop; a flood of wrong passwords cannot take the exporter down."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator
from typing import Any

import bcrypt
import pytest
from fastapi.testclient import TestClient

from ctlplane.dashboard.cli import mount_dashboard
from ctlplane.exporter.http import guard as httpguard
from ctlplane.exporter.http.app import create_app
from ctlplane.exporter.state import ExporterState
from ctlplane.exporter.thresholds import Thresholds
from tests.unit.exporter.test_families import sample_fleet

HASHED = bcrypt.hashpw(b"pw", bcrypt.gensalt(rounds=4)).decode()


def _basic(user: str, password: str | bytes) -> dict[str, str]:
    raw = password if isinstance(password, bytes) else password.encode()
    return {"Authorization": "Basic " + base64.b64encode(user.encode() + b":" + raw).decode()}


def _app(**kwargs: Any):  # type: ignore[no-untyped-def]
    state = ExporterState(sample_fleet(), Thresholds())
    app = create_app(state.current, interval_seconds=15, version="test", clock=lambda: 1005.0, **kwargs)
    mount_dashboard(app, state)
    return app


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bool]]:
    """Every bcrypt check made, as "was it on a running event loop?"."""
    seen: list[bool] = []
    real = bcrypt.checkpw

    def recording(password: bytes, hashed: bytes) -> bool:
        try:
            asyncio.get_running_loop()
            seen.append(True)
        except RuntimeError:
            seen.append(False)
        return real(password, hashed)

    monkeypatch.setattr(bcrypt, "checkpw", recording)
    yield seen


def test_bcrypt_never_runs_on_the_event_loop(checks: list[bool]) -> None:
    http = TestClient(_app(basic_auth_users={"prometheus": HASHED}))
    assert http.get("/metrics", headers=_basic("prometheus", "nope")).status_code == 401
    assert http.get("/metrics", headers=_basic("prometheus", "pw")).status_code == 200
    assert checks == [False, False]


def test_a_verified_password_is_remembered_and_an_unknown_user_costs_a_check_too(checks: list[bool]) -> None:
    http = TestClient(_app(basic_auth_users={"prometheus": HASHED}))
    for _ in range(5):
        assert http.get("/metrics", headers=_basic("prometheus", "pw")).status_code == 200
    assert len(checks) == 1  # remembered (for a while) after the first
    assert http.get("/metrics", headers=_basic("nobody", "pw")).status_code == 401
    assert len(checks) == 2  # against a dummy hash: an unknown user answers as slowly as a wrong password


@pytest.mark.parametrize("password", [b"x" * 73, b"x" * 1000, b"\xff\xfe"])
def test_an_overlong_or_undecodable_password_is_401_not_500(password: bytes) -> None:
    http = TestClient(_app(basic_auth_users={"prometheus": HASHED}), raise_server_exceptions=False)
    assert http.get("/metrics", headers=_basic("prometheus", password)).status_code == 401


@pytest.mark.parametrize(
    "header", ["Basic", "Basic !!!", "Basic " + base64.b64encode(b"no-colon").decode(), "Bearer x"]
)
def test_malformed_credentials_are_401(header: str) -> None:
    http = TestClient(_app(basic_auth_users={"prometheus": HASHED}), raise_server_exceptions=False)
    assert http.get("/metrics", headers={"Authorization": header}).status_code == 401


def test_wrong_passwords_are_rate_limited_per_client_and_a_remembered_one_still_passes(checks: list[bool]) -> None:
    http = TestClient(_app(basic_auth_users={"prometheus": HASHED}))
    assert http.get("/metrics", headers=_basic("prometheus", "pw")).status_code == 200
    answers = [http.get("/metrics", headers=_basic("prometheus", f"guess{i}")).status_code for i in range(30)]
    budget = httpguard.FAILURES_PER_WINDOW
    assert answers[:budget] == [401] * budget and set(answers[budget:]) == {429}, answers
    assert len(checks) == 1 + budget  # refused guesses never reach bcrypt
    assert http.get("/metrics", headers=_basic("prometheus", "pw")).status_code == 200  # remembered: passes


def test_docs_and_openapi_are_guarded_and_healthz_is_open() -> None:
    http = TestClient(_app(basic_auth_users={"prometheus": HASHED}))
    for path in ("/api/docs", "/openapi.json", "/metrics", "/", "/api/v1/health", "/dashboard/"):
        assert http.get(path).status_code == 401, path
    health = http.get("/healthz")
    assert health.status_code in (200, 503) and set(health.json()) == {"status", "sequence", "snapshot_age_seconds"}


def _asgi(app: Any, method: str, path: str, headers: dict[str, str], chunks: list[bytes]) -> tuple[int, int]:
    """Send one request straight to the ASGI app; return (status, how many body chunks the app read)."""
    reads = 0
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        nonlocal reads
        reads += 1
        if reads <= len(chunks):
            return {"type": "http.request", "body": chunks[reads - 1], "more_body": reads < len(chunks)}
        await asyncio.sleep(3600)  # a client that sends nothing more
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 18309),
    }
    asyncio.run(asyncio.wait_for(app(scope, receive, send), 30))
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    return status, reads


def test_no_body_is_read_before_authentication() -> None:
    app = _app(basic_auth_users={"prometheus": HASHED})
    body = b'{"output": "x", "inputs": []}'
    status, reads = _asgi(
        app,
        "POST",
        "/dashboard/_dash-update-component",
        {"content-type": "application/json", "content-length": str(len(body))},
        [body],
    )
    assert (status, reads) == (401, 0)


def test_an_oversized_body_is_refused_before_it_is_read() -> None:
    app = _app()
    declared = httpguard.MAX_BODY_BYTES + 1
    status, reads = _asgi(
        app,
        "POST",
        "/dashboard/_dash-update-component",
        {"content-type": "application/json", "content-length": str(declared)},
        [b"{"],
    )
    assert (status, reads) == (413, 0)


def test_a_chunked_body_that_grows_past_the_cap_is_refused() -> None:
    app = _app()
    chunk = b" " * (256 * 1024)
    chunks = [chunk] * (httpguard.MAX_BODY_BYTES // len(chunk) + 2)
    status, reads = _asgi(
        app,
        "POST",
        "/dashboard/_dash-update-component",
        {"content-type": "application/json", "transfer-encoding": "chunked"},
        chunks,
    )
    assert status == 413 and reads <= len(chunks)
