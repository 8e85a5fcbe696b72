"""The guard in front of every route of an HTTP app ctlplane serves: basic auth and a body-size cap, checked
before routing, before any body is read, before any Dash callback parses one.

Basic auth follows Prometheus' web config (`basic_auth_users`: user -> bcrypt hash). bcrypt is slow by
design (~0.1 s at cost 10), so it must never run on the event loop, where 24 wrong passwords once stalled
every endpoint, /healthz included, for 1.3 s. Here a check runs in a small thread pool, a verified
password is remembered for a few minutes (a Prometheus scraping every 15 s pays bcrypt once per
REMEMBER_SECONDS), wrong guesses are budgeted per client, and an unknown user is checked against a
dummy hash of the same cost so the answer does not tell which users exist.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

import anyio
import anyio.to_thread
import bcrypt
from fastapi import FastAPI
from starlette.types import ASGIApp as StarletteApp

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# /healthz says only whether rounds keep coming (status, sequence, snapshot age): open, so container
# health checks and Kubernetes probes work with auth on.
OPEN_PATHS = frozenset({"/healthz"})
MAX_BODY_BYTES = 1 << 20  # the largest body ctlplane takes is a Dash callback of a few KiB
REMEMBER_SECONDS = 300.0  # a verified (user, password) passes without bcrypt this long
FAILURES_PER_WINDOW = 10  # wrong passwords per client per window before answering 429
FAILURE_WINDOW_SECONDS = 60.0
BCRYPT_THREADS = 2  # the machine's cores: checks queue rather than starve the scraper
MAX_PENDING_CHECKS = 32  # beyond this many queued checks, answer 503 at once
BCRYPT_MAX_PASSWORD_BYTES = 72  # bcrypt reads no further; bcrypt 5 raises on longer input
_MAX_TRACKED = 4096  # clients with recent failures, remembered passwords: pruned beyond this


class RequestGuard:
    """ASGI middleware: `users` empty means no auth (the body cap still holds)."""

    def __init__(
        self, app: ASGIApp, users: Mapping[str, str] | None = None, clock: Callable[[], float] = time.monotonic
    ):
        self.app = app
        self.users = {user: hashed.encode() for user, hashed in (users or {}).items()}
        self.clock = clock
        self._remembered: dict[bytes, float] = {}  # sha256(user, password, hash) -> expiry
        self._failures: dict[str, deque[float]] = {}  # client host -> times of recent wrong passwords
        self._pending = 0
        self._limiter: anyio.CapacityLimiter | None = None  # made on the event loop, at first use
        # config.py accepts only whole hashes, so the cost is the two digits after "$2b$"
        cost = max((int(hashed[4:6]) for hashed in self.users.values()), default=4)
        self._dummy = bcrypt.hashpw(b"ctlplane: no such user", bcrypt.gensalt(rounds=cost)) if self.users else b""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        if scope["type"] == "http":
            declared = headers.get(b"content-length")
            if declared is not None:
                if not declared.isdigit():
                    await _respond(send, 400, b"bad content-length")
                    return
                if int(declared) > MAX_BODY_BYTES:
                    await _respond(send, 413, b"request body too large")
                    return
        if self.users and scope.get("path") not in OPEN_PATHS:
            refusal = await self._refusal(headers.get(b"authorization"), scope)
            if refusal is not None:
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})
                else:
                    await _respond(send, *refusal)
                return
        if scope["type"] == "websocket":
            await self.app(scope, receive, send)
            return
        await self._capped(scope, receive, send)

    async def _capped(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on, refusing it with 413 once a body without a length grows past the cap."""
        received = 0
        refused = False
        started = False

        async def counting_receive() -> Message:
            nonlocal received, refused
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > MAX_BODY_BYTES and not refused:
                    refused = True
                    if not started:
                        await _respond(send, 413, b"request body too large")
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if refused:
                return  # the 413 is the answer; whatever the app says after the disconnect is dropped
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counting_receive, guarded_send)
        except Exception:
            if not refused:
                raise  # the app failed on its own: ServerErrorMiddleware answers 500 and logs it

    async def _refusal(self, authorization: bytes | None, scope: Scope) -> tuple[int, bytes, dict[str, str]] | None:
        """None if the credentials are good; otherwise (status, body, headers) to answer with."""
        unauthorized = (401, b"unauthorized", {"www-authenticate": 'Basic realm="ctlplane"'})
        credentials = _basic_credentials(authorization)
        if credentials is None:
            return unauthorized
        user, password = credentials
        hashed = self.users.get(user.decode("utf-8", "replace"))
        digest = hashlib.sha256(user + b"\0" + password + b"\0" + (hashed or b"")).digest()
        now = self.clock()
        if hashed is not None and self._remembered.get(digest, 0.0) > now:
            return None
        client = (scope.get("client") or ("?", 0))[0]
        failures = self._failures.get(client)
        if failures is not None:
            while failures and failures[0] <= now - FAILURE_WINDOW_SECONDS:
                failures.popleft()
            if len(failures) >= FAILURES_PER_WINDOW:
                retry = math.ceil(failures[0] + FAILURE_WINDOW_SECONDS - now)
                return 429, b"too many failed logins", {"retry-after": str(max(1, retry))}
        if len(password) > BCRYPT_MAX_PASSWORD_BYTES:
            self._failed(client, now)
            return unauthorized
        if self._pending >= MAX_PENDING_CHECKS:
            return 503, b"busy checking passwords", {"retry-after": "1"}
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(BCRYPT_THREADS)
        self._pending += 1
        try:
            # Looked up at call time (bcrypt.checkpw, not a bound name) so tests can watch the calls.
            ok = await anyio.to_thread.run_sync(_check, password, hashed or self._dummy, limiter=self._limiter)
        finally:
            self._pending -= 1
        if ok and hashed is not None:
            self._remember(digest, now)
            return None
        self._failed(client, now)
        return unauthorized

    def _remember(self, digest: bytes, now: float) -> None:
        if len(self._remembered) >= _MAX_TRACKED:
            self._remembered = {key: expiry for key, expiry in self._remembered.items() if expiry > now}
            if len(self._remembered) >= _MAX_TRACKED:
                self._remembered.clear()
        self._remembered[digest] = now + REMEMBER_SECONDS

    def _failed(self, client: str, now: float) -> None:
        if client not in self._failures and len(self._failures) >= _MAX_TRACKED:
            horizon = now - FAILURE_WINDOW_SECONDS
            self._failures = {host: times for host, times in self._failures.items() if times and times[-1] > horizon}
        self._failures.setdefault(client, deque(maxlen=FAILURES_PER_WINDOW)).append(now)


class GuardedFastAPI(FastAPI):
    """A FastAPI app whose RequestGuard is the outermost of its middleware, whatever is added after it.
    Starlette puts the last-added middleware outside the others, and Dash, when it mounts on the app,
    adds DashMiddleware, which reads every JSON body (request.json() in _setup_timing): outside the guard
    it would read a stranger's body before auth."""

    def __init__(self, *, users: Mapping[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_middleware(RequestGuard, users=users or {})

    def build_middleware_stack(self) -> StarletteApp:
        guard: object = RequestGuard
        self.user_middleware.sort(key=lambda middleware: middleware.cls is not guard)  # stable: guard first
        return super().build_middleware_stack()


def _check(password: bytes, hashed: bytes) -> bool:
    try:
        return bool(bcrypt.checkpw(password, hashed))
    except ValueError:  # a hash bcrypt cannot read: config.py refuses those, so only a dummy could be one
        return False


def _basic_credentials(authorization: bytes | None) -> tuple[bytes, bytes] | None:
    """(user, password) from an `Authorization: Basic ...` header, or None if there is none or it is
    malformed (never an exception: a crafted header is a 401, not a 500)."""
    if authorization is None:
        return None
    scheme, _, encoded = authorization.strip().partition(b" ")
    if scheme.lower() != b"basic":
        return None
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True)
    except (binascii.Error, ValueError):
        return None
    user, sep, password = decoded.partition(b":")
    return (user, password) if sep else None


async def _respond(send: Send, status: int, body: bytes, headers: Mapping[str, str] | None = None) -> None:
    raw = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    raw += [(name.encode(), value.encode()) for name, value in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})
