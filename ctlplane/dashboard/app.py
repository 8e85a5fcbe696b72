"""`create_dashboard`: the Dash app, its pages and its one callback, built on a FastAPI server.

Pages are listed explicitly in `PAGES`. One callback on the URL builds a page (its live part and, on
the cluster page, its graphs); one on a `dcc.Interval` replaces the live part and the graphs' figures in
place, so pages update without a reload and graphs keep their zoom. Nothing is registered globally:
Dash's `register_page` writes to a module-level registry that outlives the app, which tests creating
several apps cannot undo.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from dash import ALL, Dash, Input, NoUpdate, Output, State, callback_context, dcc, html, no_update
from dash.backends._fastapi import reset_current_request, set_current_request
from dash.development.base_component import Component
from dash.exceptions import PreventUpdate
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse

from ctlplane.dashboard import views
from ctlplane.dashboard.callback_check import CallbackShapeCheck, id_has
from ctlplane.dashboard.source import (
    NO_ALERTS,
    AlertSource,
    AlertsResult,
    HistoryData,
    HistorySource,
    ObservationSource,
)
from ctlplane.dashboard.trail import EMPTY_TRAIL, ClusterTrail
from ctlplane.exporter.http.guard import GuardedFastAPI

DEFAULT_PREFIX = "/dashboard/"
LIVE_TYPE = "live"  # pattern-matching id type of the part of a page each refresh replaces


class AlertsProvider(Protocol):
    def result(self) -> AlertsResult: ...


@dataclass(frozen=True)
class Page:
    key: str
    path: str  # relative to the dashboard prefix, without the leading slash
    title: str


PAGES = (
    Page("fleet", "", "Fleet"),
    Page("cluster", "cluster/<name>", "Cluster"),
    Page("alerts", "alerts", "Alerts"),
    Page("history", "history", "History"),
)

CSS = """
body { font-family: system-ui, sans-serif; margin: 0; color: #1d1d1f; background: #fafafa; }
header { display: flex; gap: 1em; align-items: baseline; padding: .6em 1em; background: #23395d; }
header h1 { color: #fff; font-size: 1.2em; margin: 0 1em 0 0; }
header a.nav { color: #dfe7f5; text-decoration: none; margin-right: 1.2em; }
header a.nav:hover { text-decoration: underline; }
main { padding: 0 1em 1em; }
.simulated-banner { padding: .3em 1em; font-weight: 600; }
footer { padding: .4em 1em; color: #666; font-size: .85em; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { border: 1px solid #ccc; padding: .3em .6em; text-align: left; vertical-align: top; }
th { background: #eef; }
.node-table { font-size: .92em; }
.node-table th, .node-table td { padding: .25em .4em; }
.node-table td.evidence { overflow-wrap: anywhere; }
.table-scroll { overflow-x: auto; }
.badge { display: inline-block; padding: .05em .5em; margin-right: .3em; border-radius: .8em;
         font-size: .85em; font-weight: 600; border: 1px solid rgba(0,0,0,.15); }
.reasons { color: #333; font-size: .9em; }
.controller-card { border: 1px solid #ccc; padding: .5em 1em; margin: .5em 0; background: #fff; max-width: 60em; }
.controller-identity { font-size: 1.3em; font-weight: 600; padding: .2em .5em; display: inline-block; }
.controller-card dl { display: grid; grid-template-columns: max-content auto; gap: .1em 1em; }
.controller-card dd { margin: 0; }
.graphs { display: grid; grid-template-columns: repeat(auto-fit, minmax(520px, 1fr)); gap: .5em; }
.events { list-style: none; padding: 0; }
.event span { margin-right: .6em; }
.event .at { font-family: monospace; }
pre.command { background: #222; color: #eee; padding: .6em; display: inline-block; }
"""

INDEX = f"""<!DOCTYPE html>
<html>
<head>{{%metas%}}<title>{{%title%}}</title>{{%favicon%}}{{%css%}}<style>{CSS}</style></head>
<body>{{%app_entry%}}<footer>{{%config%}}{{%scripts%}}{{%renderer%}}</footer></body>
</html>"""


class Route(NamedTuple):
    """A page: its key, the cluster (or the missing path) it is of, and the broker of a broker page."""

    key: str
    name: str | None
    node: str | None = None


def route(relative: str) -> Route:
    """The page at a path relative to the prefix; unknown paths are ("missing", path)."""
    path = relative.strip("/")
    if path == "":
        return Route("fleet", None)
    if path.startswith("cluster/") and len(path) > len("cluster/"):
        cluster, _, node = path[len("cluster/") :].partition("/broker/")
        if node and "/" not in node:
            return Route("broker", cluster, node)
        return Route("cluster", path[len("cluster/") :])
    if path in ("alerts", "history"):
        return Route(path, None)
    return Route("missing", path)


def create_dashboard(
    source: ObservationSource,
    *,
    server: FastAPI | None = None,
    refresh_ms: int = 5000,
    alerts_url: str | None = None,
    history_dir: Path | None = None,
    url_prefix: str = DEFAULT_PREFIX,
    alert_source: AlertsProvider | None = None,
    clock: Callable[[], float] = time.time,
) -> Dash:
    """The dashboard mounted at `url_prefix` of `server` (a new FastAPI app if None: serve `app.server`)."""
    if not url_prefix.startswith("/") or not url_prefix.endswith("/"):
        raise ValueError(f"url_prefix must start and end with '/', got {url_prefix!r}")
    alerts: AlertsProvider | None = alert_source or (AlertSource(alerts_url) if alerts_url else None)
    history = HistorySource(history_dir, clock=clock) if history_dir is not None else None
    app = Dash(
        __name__,
        # Dash 4.1+ accepts a FastAPI app here; its annotation still names only Flask-era types.
        server=server if server is not None else GuardedFastAPI(title="ctlplane dashboard"),  # type: ignore[arg-type]  # see above
        routes_pathname_prefix=url_prefix,
        requests_pathname_prefix=url_prefix,
        title="ctlplane",
        # None disables the "Updating..." tab title on every refresh (documented; the annotation says str)
        update_title=None,  # type: ignore[arg-type]  # see above
        suppress_callback_exceptions=True,  # page components are created by the router callback
        serve_locally=True,  # no CDN: the dashboard works air-gapped
    )
    app.index_string = INDEX
    _serve_deep_links(app, url_prefix)
    app.layout = _layout(refresh_ms)
    pages = PageBuilder(source, alerts, history, url_prefix, refresh_ms, clock, app.strip_relative_path)
    _add_callbacks(app, pages)
    fastapi_server: FastAPI = app.server
    fastapi_server.add_middleware(
        CallbackShapeCheck, callback_map=app.callback_map, path=f"{url_prefix}_dash-update-component"
    )
    return app


def _serve_deep_links(app: Dash, url_prefix: str) -> None:
    # Deep links (/dashboard/cluster/x) must serve the page too. Dash's FastAPI backend adds its catch-all
    # only in the ASGI lifespan, through the process-global "current app" (wrong when a process builds
    # several apps, absent when lifespan is off); this route is the app's own. Like Dash's catch-all it
    # sets the request context that index() reads, which Dash's middleware sets only for its own paths.
    fastapi_server: FastAPI = app.server

    async def deep_link(request: Request) -> HTMLResponse:
        token = set_current_request(request)  # type: ignore[no-untyped-call]  # unannotated in Dash
        try:
            return HTMLResponse(app.index())  # type: ignore[no-untyped-call]  # unannotated in Dash
        finally:
            reset_current_request(token)  # type: ignore[no-untyped-call]  # unannotated in Dash

    fastapi_server.add_api_route(f"{url_prefix}{{path:path}}", deep_link, methods=["GET"], include_in_schema=False)


def _layout(refresh_ms: int) -> html.Div:
    """The frame every page is drawn in: the location, the refresh tick, the header, banner, page, status."""
    return html.Div(
        [
            dcc.Location(id="url", refresh=False),
            dcc.Interval(id="tick", interval=refresh_ms, n_intervals=0),
            html.Header([html.H1("ctlplane"), html.Nav(id="nav")]),
            html.Div(id="banner"),
            html.Main(id="page"),
            html.Div(id="status", className="status"),
        ]
    )


def _add_callbacks(app: Dash, pages: PageBuilder) -> None:
    """The page on navigation, its live part and graphs on every tick, the frame around it. The callbacks are
    async and build their pages in a worker thread: Dash's FastAPI backend calls a sync callback on the event
    loop, where a large fleet's page would hold up /metrics while it renders. Nothing they call waits for I/O
    (alerts and history are read in the background)."""

    @app.callback(Output("page", "children"), Input("url", "pathname"))
    async def show_page(pathname: str | None) -> Component:
        if not isinstance(pathname, str | None):
            raise PreventUpdate  # a crafted request: a browser sends the location's path
        return await asyncio.to_thread(pages.page, pathname)

    @app.callback(
        Output({"type": LIVE_TYPE, "path": ALL}, "children"),
        Output({"type": views.GRAPH_TYPE, "key": ALL}, "figure"),
        Input("tick", "n_intervals"),
        State("url", "pathname"),
        prevent_initial_call=True,
    )
    async def refresh(
        _: int | None, pathname: str | None
    ) -> tuple[list[Component | NoUpdate], list[views.Figure | NoUpdate]]:
        live_ids, graph_ids = callback_context.outputs_list
        if not (
            isinstance(pathname, str | None)
            and all(id_has(item, "path") for item in live_ids)
            and all(id_has(item, "key") for item in graph_ids)
        ):
            raise PreventUpdate  # a crafted request: a browser sends the ids of the components on the page
        return await asyncio.to_thread(pages.refresh, pathname, live_ids, graph_ids)

    @app.callback(
        Output("nav", "children"),
        Output("banner", "children"),
        Output("status", "children"),
        Input("tick", "n_intervals"),
    )
    async def frame(_: int | None) -> tuple[list[Component], Component | None, str]:
        return await asyncio.to_thread(pages.frame)


class PageBuilder:
    """What the callbacks show, built from the sources at call time (in a worker thread): a page on
    navigation, its live part and graphs on every tick, the frame around it."""

    def __init__(
        self,
        source: ObservationSource,
        alerts: AlertsProvider | None,
        history: HistorySource | None,
        url_prefix: str,
        refresh_ms: int,
        clock: Callable[[], float],
        strip_relative_path: Callable[[str], str | None],
    ) -> None:
        self.source = source
        self.alerts = alerts
        self.history = history
        self.url_prefix = url_prefix
        self.refresh_ms = refresh_ms
        self.clock = clock
        self._strip = strip_relative_path

    def _alerts(self) -> AlertsResult:
        return self.alerts.result() if self.alerts is not None else NO_ALERTS

    def _relative(self, pathname: str | None) -> str:
        return self._strip(pathname or self.url_prefix) or ""

    def _trail(self, page: Route) -> ClusterTrail:
        """One copy of the cluster's trail per render, shared by its live part and its graphs."""
        return self.source.trail(page.name) if page.key in ("cluster", "broker") and page.name else EMPTY_TRAIL

    def live(self, page: Route, trail: ClusterTrail = EMPTY_TRAIL) -> Component:
        """The part of a page that every refresh replaces (`trail`: the cluster page's cluster's)."""
        now = self.clock()
        observation = self.source.current()
        key, name = page.key, page.name
        if key == "fleet":
            return views.fleet_view(observation, self._alerts(), now, self.url_prefix)
        if key == "cluster" and name is not None:
            return views.cluster_view(name, observation, trail.events, self._alerts(), now, self.url_prefix)
        if key == "broker" and name is not None and page.node is not None:
            runs = trail.runs.get(page.node, ())
            return views.broker_view(name, page.node, observation, runs, trail.events, now, self.url_prefix)
        if key == "alerts":
            return views.alerts_view(self._alerts(), now)
        if key == "history":
            return views.history_view(self.history.result() if self.history is not None else HistoryData(None), now)
        return html.Div(
            [html.H2("Not found"), html.P(f"No page at {name!r}."), dcc.Link("Fleet", href=self.url_prefix)]
        )

    def page(self, pathname: str | None) -> Component:
        """On navigation: the page's live part, keyed by its path, and its graphs."""
        path = self._relative(pathname)
        page = route(path)
        key, name = page.key, page.name
        trail = self._trail(page)
        parts: list[Component] = [html.Div(self.live(page, trail), id={"type": LIVE_TYPE, "path": path})]
        if key == "cluster" and name is not None and self.source.current().health.cluster(name) is not None:
            parts.append(views.graphs_view(views.cluster_figures(trail)))
        return html.Div(parts)

    def refresh(
        self, pathname: str | None, live_ids: list[dict[str, Any]], graph_ids: list[dict[str, Any]]
    ) -> tuple[list[Component | NoUpdate], list[views.Figure | NoUpdate]]:
        """On every tick: new content for the live part and new figures for the graphs, in place.

        Outputs are matched by id, so a reply that arrives after navigation finds no old-page
        component to overwrite (the live part's id carries its path).
        """
        path = self._relative(pathname)
        page = route(path)
        key, name = page.key, page.name
        trail = self._trail(page)
        live = [self.live(page, trail) if item["id"]["path"] == path else no_update for item in live_ids]
        figures: list[views.Figure | NoUpdate]
        if graph_ids and key == "cluster" and name is not None:
            by_key = dict(views.cluster_figures(trail))
            figures = [by_key.get(item["id"]["key"], no_update) for item in graph_ids]
        else:
            figures = [no_update for _ in graph_ids]
        return live, figures

    def frame(self) -> tuple[list[Component], Component | None, str]:
        observation = self.source.current()
        status = views.status_line(
            observation,
            self.clock(),
            self.refresh_ms,
            getattr(self.source, "last_error", None),
            getattr(self.source, "exporters", 1),
        )
        return (
            views.nav_links(observation.health, self.url_prefix),
            views.simulation_banner(observation.snapshot),
            status,
        )
