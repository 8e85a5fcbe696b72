"""The dashboard's only I/O: where observations, alerts and pipeline outputs come from.

- `InProcessSource` reads the exporter's `ExporterState` (the default: `ctlplane run` serves both).
- `RemoteSource` polls a remote exporter's `/api/v1/snapshot` and `/api/v1/health` and keeps its own
  bounded trail (ctlplane/dashboard/trail.py) (`ctlplane dashboard --exporter URL`).
- `ExportersSource` shows several exporters (the replicas of a sharded fleet) as one fleet
  (`--exporter URL` repeated).
- `AlertSource` reads Alertmanager's `/api/v2/alerts` or Prometheus' `/api/v1/alerts`.
- `HistorySource` reads the Spark pipeline's episode, sweep and report files (`read_history`) in the background.

Parsing is kept in pure functions (`ctlplane.exporter.http.jsonapi.health_from_dict`, `parse_alertmanager`,
`parse_prometheus`) so it is tested on documents, not servers.
"""

from __future__ import annotations

import csv
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit, urlunsplit

import httpx

from ctlplane.dashboard.trail import ClusterTrail, Trail
from ctlplane.exporter.health import ClusterHealth, FleetHealth
from ctlplane.exporter.http.jsonapi import health_from_dict, snapshot_from_dict
from ctlplane.exporter.model import ClusterSnapshot, FleetSnapshot
from ctlplane.exporter.state import ExporterState, Observation

log = logging.getLogger(__name__)

EMPTY_OBSERVATION = Observation(FleetSnapshot(0, 0.0, 0.0, ()), FleetHealth(()))


class BackgroundRefresh:
    """Runs a slow refresh (a remote API, a file system) in a daemon thread, one at a time.

    Dashboard callbacks run on the server's event loop, which also serves /metrics: a read there that
    hangs (a black-holed Alertmanager, a hung NFS mount) stalls every scrape. Callbacks therefore only
    read cached values and call `start()`, which returns at once; a read that hangs holds its own thread,
    and `running_since` says how long the page has been waiting for it.
    """

    def __init__(self, refresh: Callable[[], object], name: str, clock: Callable[[], float] = time.time) -> None:
        self._refresh = refresh
        self._name = name
        self._clock = clock
        self._lock = threading.Lock()
        self.running_since: float | None = None

    def start(self) -> float:
        """Start a refresh unless one is running; when the running one started."""
        with self._lock:
            if self.running_since is None:
                self.running_since = self._clock()
                threading.Thread(target=self._run, name=self._name, daemon=True).start()
            return self.running_since

    def _run(self) -> None:
        try:
            self._refresh()
        except Exception:  # a refresh reports its own errors in its result; this is a bug's last stop
            log.exception("%s failed", self._name)
        finally:
            with self._lock:
                self.running_since = None


class ObservationSource(Protocol):
    """What the pages read: the latest observation and, per cluster, what is kept of the window."""

    def current(self) -> Observation: ...

    def trail(self, cluster: str) -> ClusterTrail: ...


class InProcessSource:
    """The exporter's own state, read without copying (observations are immutable); each round is folded
    into the dashboard's bounded `Trail` as the state observes it."""

    def __init__(self, state: ExporterState, *, window_seconds: float = 3600.0) -> None:
        self.state = state
        self._trail = Trail(window_seconds)
        state.subscribe(self._trail.add)

    def current(self) -> Observation:
        return self.state.current()

    def trail(self, cluster: str) -> ClusterTrail:
        return self._trail.cluster(cluster)


def split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """(the URL without user:password, the basic-auth pair it carried or None). The dashboard shows and
    logs only the first; httpx sends the second as basic auth, as it would have from the URL."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    host = parts.hostname or ""
    netloc = (f"[{host}]" if ":" in host else host) + (f":{parts.port}" if parts.port is not None else "")
    bare = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    return bare, (unquote(parts.username or ""), unquote(parts.password or ""))


class RemoteSource:
    """A remote exporter's JSON API, polled by a background thread into a bounded `Trail`.

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
        bare, in_url = split_credentials(base_url)
        self.base_url = bare.rstrip("/")
        self._client = client or httpx.Client(timeout=timeout_seconds, auth=auth or in_url)
        self._current = EMPTY_OBSERVATION
        self._trail = Trail(window_seconds)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.last_error: str | None = None

    def current(self) -> Observation:
        return self._current

    def trail(self, cluster: str) -> ClusterTrail:
        return self._trail.cluster(cluster)

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
        self._trail.add(observation)  # a round already folded (polled twice) is ignored there
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


class ExportersSource:
    """Several exporters' JSON APIs as one fleet: the replicas of a sharded exporter (`--shard I/N`), each
    serving whole clusters of its own.

    Each exporter is polled by its own `RemoteSource` (a hung one holds only its own thread). The fleet is
    their clusters in the order the exporters were given; an exporter that stops answering keeps its
    clusters on the page as last seen, and `last_error` names it, with those clusters, until it answers
    again. A cluster served by two exporters (replicas started with different shard counts) is shown
    once, from the first, and named in `last_error`.
    """

    def __init__(self, sources: Sequence[RemoteSource]) -> None:
        if not sources:
            raise ValueError("at least one exporter")
        self.sources = tuple(sources)
        self.base_url = ", ".join(source.base_url for source in self.sources)
        self.exporters = len(self.sources)

    def current(self) -> Observation:
        return merge_observations([source.current() for source in self.sources])

    def _owner(self, cluster: str) -> RemoteSource | None:
        return next((s for s in self.sources if s.current().snapshot.cluster(cluster) is not None), None)

    def trail(self, cluster: str) -> ClusterTrail:
        owner = self._owner(cluster)
        return owner.trail(cluster) if owner is not None else self.sources[0].trail(cluster)

    @property
    def last_error(self) -> str | None:
        problems = []
        for source in self.sources:
            if source.last_error is not None:
                shown = ", ".join(c.name for c in source.current().snapshot.clusters) or "none"
                problems.append(
                    f"{source.base_url} unreachable: {source.last_error} (its clusters as last seen: {shown})"
                )
        owners: dict[str, str] = {}
        for source in self.sources:
            for cluster in source.current().snapshot.clusters:
                if cluster.name in owners:
                    problems.append(f"cluster {cluster.name} is served by {owners[cluster.name]} and "
                                    f"{source.base_url} (replicas with different --shard counts?)")  # fmt: skip
                else:
                    owners[cluster.name] = source.base_url
        return "; ".join(problems) or None

    def poll_once(self) -> Observation:
        for source in self.sources:
            source.poll_once()
        return self.current()

    def start(self, interval_seconds: float) -> None:
        for source in self.sources:
            source.start(interval_seconds)

    def close(self) -> None:
        for source in self.sources:
            source.close()


def merge_observations(observations: Sequence[Observation]) -> Observation:
    """One fleet from several exporters' observations: every cluster once (the first exporter serving it
    wins), the round numbers summed (0 only while none has scraped), the oldest round's start time (the
    status line's age is the stalest exporter's)."""
    observed = [o for o in observations if o.snapshot.sequence > 0]
    if not observed:
        return EMPTY_OBSERVATION
    clusters: dict[str, tuple[ClusterSnapshot, ClusterHealth | None]] = {}
    for observation in observed:
        for cluster in observation.snapshot.clusters:
            clusters.setdefault(cluster.name, (cluster, observation.health.cluster(cluster.name)))
    snapshot = FleetSnapshot(
        sum(o.snapshot.sequence for o in observed),
        min(o.snapshot.taken_at for o in observed),
        max(o.snapshot.round_duration_seconds for o in observed),
        tuple(cluster for cluster, _ in clusters.values()),
    )
    health = FleetHealth(tuple(cluster_health for _, cluster_health in clusters.values() if cluster_health))
    return Observation(snapshot, health)


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
    waiting_since: float | None = None  # a read has been in flight since then

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
    """Alertmanager or Prometheus alerts, fetched in the background while a page reads them (at most once
    per `min_interval_seconds`); `result()` never waits for the network.

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
        bare, auth = split_credentials(url)
        self.url = bare.rstrip("/")  # shown on the Alerts page: never with its user:password
        self.min_interval_seconds = min_interval_seconds
        self.recent_seconds = recent_seconds
        self._client = client or httpx.Client(timeout=timeout_seconds, auth=auth)
        self._clock = clock
        self._api: str | None = None
        self._result = AlertsResult(url=self.url)
        self._recent: dict[tuple[tuple[str, str], ...], Alert] = {}
        self._lock = threading.Lock()
        self._background = BackgroundRefresh(self.refresh, "dashboard-alerts", clock)

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
        """The last fetch's result at once; a fetch starts in the background when that one is due."""
        result = self._result
        fetched = result.fetched_at
        if fetched is None or self._clock() - fetched >= self.min_interval_seconds:
            return replace(result, waiting_since=self._background.start())
        return result

    def refresh(self) -> AlertsResult:
        """Fetch now, in the caller's thread (the background thread's work)."""
        try:
            api, active = self._fetch()
            error = None
        except (httpx.HTTPError, ValueError) as exc:
            api, active, error = None, (), f"{type(exc).__name__}: {exc}"
        now = self._clock()
        with self._lock:
            if error is not None:
                self._result = replace(self._result, error=error, fetched_at=now)
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
    read_at: float | None = None  # None: not read yet
    reading_since: float | None = None  # a read has been in flight since then


def _read_csv(path: Path) -> Table:
    with path.open(newline="") as handle:
        reader = csv.reader(handle)
        header: list[str] = next(reader, [])
        return Table(tuple(header), tuple(tuple(row) for row in reader))


def _read_parquet(path: Path) -> Table:
    # optional, and untyped: only needed when the pipeline wrote Parquet
    import pyarrow.parquet as pq  # type: ignore[import-untyped]  # pyarrow ships no type hints

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


OUTPUT_DIRECTORIES = ("episodes", "sweep", "report/daily")


def _part_files(directory: Path) -> list[Path]:
    # Spark's _SUCCESS and .crc files and the writer's .tmp files are skipped by these patterns.
    return sorted([*directory.glob("[!._]*.parquet"), *directory.glob("[!._]*.csv")])


def _read_tables(directory: Path, files: list[str], errors: list[str]) -> Table | None:
    tables = []
    for path in _part_files(directory):
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
    episodes, sweep, daily = (_read_tables(directory / name, files, errors) for name in OUTPUT_DIRECTORIES)
    return HistoryData(str(directory), episodes, sweep, daily, tuple(files), tuple(errors))


def _signature(directory: Path) -> tuple[tuple[str, int, int], ...]:
    """What changes when the pipeline writes: each part file's path, modification time and size."""
    signature = []
    for name in OUTPUT_DIRECTORIES:
        for path in _part_files(directory / name):
            try:
                status = path.stat()
            except OSError:  # removed since the listing: the next check sees the new set
                continue
            signature.append((str(path), status.st_mtime_ns, status.st_size))
    return tuple(signature)


class HistorySource:
    """The pipeline's outputs under `directory`, read in the background and again only when a part file
    is added, removed or rewritten (checked at most once per `check_seconds`); `result()` never touches
    the disk, so a hung mount cannot stall the server."""

    def __init__(
        self,
        directory: Path,
        *,
        check_seconds: float = 10.0,
        read: Callable[[Path], HistoryData] = read_history,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.directory = directory
        self.check_seconds = check_seconds
        self._read = read
        self._clock = clock
        self._data = HistoryData(str(directory))
        self._signature: tuple[tuple[str, int, int], ...] | None = None
        self._checked_at: float | None = None
        self._background = BackgroundRefresh(self.refresh, "dashboard-history", clock)

    def result(self) -> HistoryData:
        """The last read at once; a check (and, if files changed, a read) starts in the background when due."""
        checked = self._checked_at
        if checked is None or self._clock() - checked >= self.check_seconds:
            return replace(self._data, reading_since=self._background.start())
        return self._data

    def refresh(self) -> HistoryData:
        """Check now, in the caller's thread, and read if anything changed."""
        signature = _signature(self.directory)
        if signature != self._signature:
            self._data = replace(self._read(self.directory), read_at=self._clock())
            self._signature = signature
        self._checked_at = self._clock()
        return self._data
