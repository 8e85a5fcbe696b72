"""The dashboard's only I/O: where observations, alerts and pipeline outputs come from.

- `InProcessSource` reads the exporter's `ExporterState` (the default: `ctlplane run` serves both).
- `RemoteSource` polls a remote exporter's `/api/v1/snapshot` and `/api/v1/health` and keeps its own
  bounded window (`ctlplane dashboard --exporter URL`).
- `AlertSource` reads Alertmanager's `/api/v2/alerts` or Prometheus' `/api/v1/alerts`.
- `read_history` reads the Spark pipeline's episode and sweep files.

Parsing is kept in pure functions (`exporter.jsonapi.health_from_dict`, `parse_alertmanager`,
`parse_prometheus`) so it is tested on documents, not servers.
"""

from __future__ import annotations

import csv
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import httpx

from exporter.health import FleetHealth
from exporter.jsonapi import health_from_dict, snapshot_from_dict
from exporter.model import FleetSnapshot
from exporter.state import ExporterState, Observation

log = logging.getLogger(__name__)

EMPTY_OBSERVATION = Observation(FleetSnapshot(0, 0.0, 0.0, ()), FleetHealth(()))


class ObservationSource(Protocol):
    """What the pages read: the latest observation and the recent window (oldest first)."""

    def current(self) -> Observation: ...

    def window(self) -> tuple[Observation, ...]: ...


class InProcessSource:
    """The exporter's own state, read without copying (observations are immutable)."""

    def __init__(self, state: ExporterState) -> None:
        self.state = state

    def current(self) -> Observation:
        return self.state.current()

    def window(self) -> tuple[Observation, ...]:
        return self.state.window()


class RemoteSource:
    """A remote exporter's JSON API, polled by a background thread into a bounded window.

    Health comes from the exporter (its thresholds and failover memory), not recomputed here.
    """

    def __init__(
        self,
        base_url: str,
        *,
        window_seconds: float = 3600.0,
        timeout_seconds: float = 5.0,
        auth: tuple[str, str] | None = None,
        client: httpx.Client | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.window_seconds = window_seconds
        self._client = client or httpx.Client(timeout=timeout_seconds, auth=auth)
        self._current = EMPTY_OBSERVATION
        self._window: deque[Observation] = deque()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.last_error: str | None = None

    def current(self) -> Observation:
        return self._current

    def window(self) -> tuple[Observation, ...]:
        with self._lock:
            return tuple(self._window)

    def poll_once(self) -> Observation:
        """Fetch snapshot and health; a new sequence number is appended to the window."""
        try:
            snapshot_doc = self._client.get(f"{self.base_url}/api/v1/snapshot").raise_for_status().json()
            health_doc = self._client.get(f"{self.base_url}/api/v1/health").raise_for_status().json()
        except (httpx.HTTPError, ValueError) as exc:
            self.last_error = f"{type(exc).__name__}: {exc}"
            return self._current
        self.last_error = None
        snapshot = snapshot_from_dict(snapshot_doc)
        if health_doc.get("sequence") != snapshot.sequence:
            # A round ended between the two requests: wait for the next poll rather than pair a
            # snapshot with another round's health.
            return self._current
        observation = Observation(snapshot, health_from_dict(health_doc))
        with self._lock:
            if snapshot.sequence != self._current.snapshot.sequence and snapshot.sequence > 0:
                self._window.append(observation)
                while self._window and snapshot.taken_at - self._window[0].snapshot.taken_at > self.window_seconds:
                    self._window.popleft()
            self._current = observation
        return observation

    def start(self, interval_seconds: float) -> None:
        def run() -> None:
            while not self._stop.is_set():
                self.poll_once()
                self._stop.wait(interval_seconds)

        self._thread = threading.Thread(target=run, name="dashboard-poller", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._client.close()


# --- alerts -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Alert:
    name: str
    state: str  # firing, pending, suppressed, resolved
    severity: str
    labels: Mapping[str, str]
    summary: str
    runbook_url: str | None
    starts_at: float | None
    ends_at: float | None = None  # set on alerts that were firing and are gone (resolved)

    @property
    def cluster(self) -> str | None:
        return self.labels.get("cluster")


@dataclass(frozen=True)
class AlertsResult:
    """What the Alerts page shows: the configured URL, what it returned, and what it returned before."""

    url: str | None
    api: str | None = None  # "alertmanager" or "prometheus"
    active: tuple[Alert, ...] = ()
    recent: tuple[Alert, ...] = ()  # seen earlier, gone now
    error: str | None = None
    fetched_at: float | None = None

    def firing(self, cluster: str | None = None) -> tuple[Alert, ...]:
        return tuple(a for a in self.active if a.state == "firing" and (cluster is None or a.cluster == cluster))


NO_ALERTS = AlertsResult(url=None)


def _timestamp(text: str | None) -> float | None:
    if not text or text.startswith("0001-"):  # Go's zero time
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _alert(labels: Mapping[str, str], annotations: Mapping[str, str], state: str, starts: str | None) -> Alert:
    return Alert(
        name=labels.get("alertname", "?"),
        state=state,
        severity=labels.get("severity", ""),
        labels=dict(labels),
        summary=annotations.get("summary") or annotations.get("description") or "",
        runbook_url=annotations.get("runbook_url"),
        starts_at=_timestamp(starts),
    )


def parse_alertmanager(document: Sequence[Mapping[str, Any]]) -> tuple[Alert, ...]:
    """Alertmanager `GET /api/v2/alerts`: a list of gettableAlert; status.state active|suppressed|unprocessed."""
    alerts = []
    for item in document:
        state = item.get("status", {}).get("state", "active")
        alerts.append(
            _alert(
                item.get("labels", {}),
                item.get("annotations", {}),
                "firing" if state == "active" else state,
                item.get("startsAt"),
            )
        )
    return tuple(alerts)


def parse_prometheus(document: Mapping[str, Any]) -> tuple[Alert, ...]:
    """Prometheus `GET /api/v1/alerts`: {"data": {"alerts": [{labels, annotations, state, activeAt}]}}."""
    return tuple(
        _alert(item.get("labels", {}), item.get("annotations", {}), item.get("state", "firing"), item.get("activeAt"))
        for item in document.get("data", {}).get("alerts", [])
    )


def _identity(alert: Alert) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(alert.labels.items()))


class AlertSource:
    """Alertmanager or Prometheus alerts, fetched on demand (at most once per `min_interval_seconds`).

    Alerts that disappear between fetches are kept as `recent` (resolved) for `recent_seconds`.
    """

    def __init__(
        self,
        url: str,
        *,
        timeout_seconds: float = 3.0,
        min_interval_seconds: float = 2.0,
        recent_seconds: float = 3600.0,
        client: httpx.Client | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.url = url.rstrip("/")
        self.min_interval_seconds = min_interval_seconds
        self.recent_seconds = recent_seconds
        self._client = client or httpx.Client(timeout=timeout_seconds)
        self._clock = clock
        self._api: str | None = None
        self._result = AlertsResult(url=self.url)
        self._recent: dict[tuple[tuple[str, str], ...], Alert] = {}
        self._lock = threading.Lock()

    def _fetch(self) -> tuple[str, tuple[Alert, ...]]:
        candidates = [self._api] if self._api else ["alertmanager", "prometheus"]
        if self.url.endswith("/api/v2/alerts"):
            return "alertmanager", parse_alertmanager(self._client.get(self.url).raise_for_status().json())
        if self.url.endswith("/api/v1/alerts"):
            return "prometheus", parse_prometheus(self._client.get(self.url).raise_for_status().json())
        error: Exception | None = None
        for api in candidates:
            path = "/api/v2/alerts" if api == "alertmanager" else "/api/v1/alerts"
            try:
                response = self._client.get(self.url + path).raise_for_status()
                document = response.json()
            except (httpx.HTTPError, ValueError) as exc:
                error = exc
                continue
            if api == "alertmanager" and isinstance(document, list):
                return api, parse_alertmanager(document)
            if api == "prometheus" and isinstance(document, dict):
                return api, parse_prometheus(document)
        raise error or ValueError("neither an Alertmanager nor a Prometheus alerts API answered")

    def result(self) -> AlertsResult:
        now = self._clock()
        with self._lock:
            fetched = self._result.fetched_at
            if fetched is not None and now - fetched < self.min_interval_seconds:
                return self._result
            try:
                api, active = self._fetch()
            except (httpx.HTTPError, ValueError) as exc:
                self._result = replace(self._result, error=f"{type(exc).__name__}: {exc}", fetched_at=now)
                return self._result
            self._api = api
            current = {_identity(a) for a in active}
            for alert in self._result.active:
                if _identity(alert) not in current and alert.state == "firing":
                    self._recent[_identity(alert)] = replace(alert, state="resolved", ends_at=now)
            for key in current:
                self._recent.pop(key, None)
            self._recent = {k: a for k, a in self._recent.items() if now - (a.ends_at or now) <= self.recent_seconds}
            recent = tuple(sorted(self._recent.values(), key=lambda a: -(a.ends_at or 0.0)))
            self._result = AlertsResult(self.url, api, active, recent, None, now)
            return self._result

    def close(self) -> None:
        self._client.close()


# --- the Spark pipeline's outputs ---------------------------------------------------------------------


@dataclass(frozen=True)
class Table:
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]


@dataclass(frozen=True)
class HistoryData:
    """The pipeline's outputs under `<dir>` (docs/pipeline.md): `episodes/`, `sweep/` and `report/daily/`,
    each a directory of Parquet part files as Spark writes them (CSV files there are read too)."""

    directory: str | None
    episodes: Table | None = None
    sweep: Table | None = None
    daily: Table | None = None
    files: tuple[str, ...] = ()
    errors: tuple[str, ...] = field(default_factory=tuple)


def _read_csv(path: Path) -> Table:
    with path.open(newline="") as handle:
        reader = csv.reader(handle)
        header: list[str] = next(reader, [])
        return Table(tuple(header), tuple(tuple(row) for row in reader))


def _read_parquet(path: Path) -> Table:
    # optional, and untyped: only needed when the pipeline wrote Parquet
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    table = pq.read_table(path)
    columns = tuple(table.column_names)
    data = table.to_pydict()
    return Table(columns, tuple(zip(*(data[c] for c in columns), strict=True)))


def _concat(tables: Sequence[Table]) -> Table | None:
    """One table from part files; parts with other columns than the first are left out."""
    if not tables:
        return None
    columns = tables[0].columns
    rows = [row for t in tables if t.columns == columns for row in t.rows]
    return Table(columns, tuple(rows))


def _read_tables(directory: Path, files: list[str], errors: list[str]) -> Table | None:
    tables = []
    # Spark's _SUCCESS and .crc files and the writer's .tmp files are skipped by these patterns.
    for path in sorted([*directory.glob("[!._]*.parquet"), *directory.glob("[!._]*.csv")]):
        try:
            tables.append(_read_parquet(path) if path.suffix == ".parquet" else _read_csv(path))
            files.append(str(path))
        except Exception as exc:  # a broken file is reported on the page, not raised
            errors.append(f"{path}: {type(exc).__name__}: {exc}")
    return _concat(tables)


def read_history(directory: Path | None) -> HistoryData:
    if directory is None:
        return HistoryData(None)
    errors: list[str] = []
    files: list[str] = []
    episodes = _read_tables(directory / "episodes", files, errors)
    sweep = _read_tables(directory / "sweep", files, errors)
    daily = _read_tables(directory / "report" / "daily", files, errors)
    return HistoryData(str(directory), episodes, sweep, daily, tuple(files), tuple(errors))
