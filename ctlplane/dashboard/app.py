"""`create_dashboard`: the Dash app, its pages and its one callback, built on a FastAPI server.

Pages are listed explicitly in `PAGES`. One callback on the URL builds a page (its live part and, on
the cluster page, its graphs); one on a `dcc.Interval` replaces the live part and the graphs' figures in
place, so pages update without a reload and graphs keep their zoom. Nothing is registered globally:
Dash's `register_page` writes to a module-level registry that outlives the app, which tests creating
several apps cannot undo.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from dash import ALL, Dash, Input, NoUpdate, Output, State, callback_context, dcc, html, no_update
from dash._validate import validate_output_spec
from dash.backends._fastapi import reset_current_request, set_current_request
from dash.development.base_component import Component
from dash.exceptions import CallbackException, PreventUpdate
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse

from ctlplane.dashboard import views
from ctlplane.dashboard.source import (
    NO_ALERTS,
    AlertSource,
    AlertsResult,
    HistoryData,
    HistorySource,
    ObservationSource,
)
from ctlplane.dashboard.trail import EMPTY_TRAIL, ClusterTrail
from ctlplane.exporter.httpguard import GuardedFastAPI

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


def route(relative: str) -> tuple[str, str | None]:
    """(page key, cluster name) for a path relative to the prefix; unknown paths are ("missing", path)."""
    path = relative.strip("/")
    if path == "":
        return "fleet", None
    if path.startswith("cluster/") and len(path) > len("cluster/"):
        return "cluster", path[len("cluster/") :]
    if path in ("alerts", "history"):
        return path, None
    return "missing", path


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
        server=server if server is not None else GuardedFastAPI(title="ctlplane dashboard"),  # type: ignore[arg-type]
        routes_pathname_prefix=url_prefix,
        requests_pathname_prefix=url_prefix,
        title="ctlplane",
        # None disables the "Updating..." tab title on every refresh (documented; the annotation says str)
        update_title=None,  # type: ignore[arg-type]
        suppress_callback_exceptions=True,  # page components are created by the router callback
        serve_locally=True,  # no CDN: the dashboard works air-gapped
    )
    app.index_string = INDEX
    # Deep links (/dashboard/cluster/x) must serve the page too. Dash's FastAPI backend adds its catch-all
    # only in the ASGI lifespan, through the process-global "current app" (wrong when a process builds
    # several apps, absent when lifespan is off); this route is the app's own. Like Dash's catch-all it
    # sets the request context that index() reads, which Dash's middleware sets only for its own paths.
    fastapi_server: FastAPI = app.server

    async def deep_link(request: Request) -> HTMLResponse:
        token = set_current_request(request)  # type: ignore[no-untyped-call]  # unannotated in Dash
        try:
            return HTMLResponse(app.index())  # type: ignore[no-untyped-call]
        finally:
            reset_current_request(token)  # type: ignore[no-untyped-call]

    fastapi_server.add_api_route(f"{url_prefix}{{path:path}}", deep_link, methods=["GET"], include_in_schema=False)
    app.layout = html.Div(
        [
            dcc.Location(id="url", refresh=False),
            dcc.Interval(id="tick", interval=refresh_ms, n_intervals=0),
            html.Header([html.H1("ctlplane"), html.Nav(id="nav")]),
            html.Div(id="banner"),
            html.Main(id="page"),
            html.Div(id="status", className="status"),
        ]
    )

    def alerts_result() -> AlertsResult:
        return alerts.result() if alerts is not None else NO_ALERTS

    def render_live(key: str, name: str | None, trail: ClusterTrail = EMPTY_TRAIL) -> Component:
        """The part of a page that every refresh replaces (`trail`: the cluster page's cluster's)."""
        now = clock()
        observation = source.current()
        if key == "fleet":
            return views.fleet_view(observation, alerts_result(), now, url_prefix)
        if key == "cluster" and name is not None:
            return views.cluster_view(name, observation, trail.events, alerts_result(), now)
        if key == "alerts":
            return views.alerts_view(alerts_result(), now)
        if key == "history":
            return views.history_view(history.result() if history is not None else HistoryData(None), now)
        return html.Div([html.H2("Not found"), html.P(f"No page at {name!r}."), dcc.Link("Fleet", href=url_prefix)])

    def relative(pathname: str | None) -> str:
        return app.strip_relative_path(pathname or url_prefix) or ""

    def page_trail(key: str, name: str | None) -> ClusterTrail:
        """One copy of the cluster's trail per render, shared by its live part and its graphs."""
        return source.trail(name) if key == "cluster" and name is not None else EMPTY_TRAIL

    # The callbacks are async and build their pages in a worker thread: Dash's FastAPI backend calls a
    # sync callback on the event loop, where a large fleet's page would hold up /metrics while it renders.
    # Nothing they call waits for I/O (alerts and history are read in the background).

    @app.callback(Output("page", "children"), Input("url", "pathname"))
    async def show_page(pathname: str | None) -> Component:
        if not isinstance(pathname, str | None):
            raise PreventUpdate  # a crafted request: a browser sends the location's path
        return await asyncio.to_thread(build_page, pathname)

    def build_page(pathname: str | None) -> Component:
        """On navigation: the page's live part, keyed by its path, and its graphs."""
        path = relative(pathname)
        key, name = route(path)
        trail = page_trail(key, name)
        parts: list[Component] = [html.Div(render_live(key, name, trail), id={"type": LIVE_TYPE, "path": path})]
        if key == "cluster" and name is not None and source.current().health.cluster(name) is not None:
            parts.append(views.graphs_view(views.cluster_figures(trail)))
        return html.Div(parts)

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
            and all(_id_has(item, "path") for item in live_ids)
            and all(_id_has(item, "key") for item in graph_ids)
        ):
            raise PreventUpdate  # a crafted request: a browser sends the ids of the components on the page
        return await asyncio.to_thread(refresh_page, pathname, live_ids, graph_ids)

    def refresh_page(
        pathname: str | None, live_ids: list[dict[str, Any]], graph_ids: list[dict[str, Any]]
    ) -> tuple[list[Component | NoUpdate], list[views.Figure | NoUpdate]]:
        """On every tick: new content for the live part and new figures for the graphs, in place.

        Outputs are matched by id, so a reply that arrives after navigation finds no old-page
        component to overwrite (the live part's id carries its path).
        """
        path = relative(pathname)
        key, name = route(path)
        trail = page_trail(key, name)
        live = [render_live(key, name, trail) if item["id"]["path"] == path else no_update for item in live_ids]
        figures: list[views.Figure | NoUpdate]
        if graph_ids and key == "cluster" and name is not None:
            by_key = dict(views.cluster_figures(trail))
            figures = [by_key.get(item["id"]["key"], no_update) for item in graph_ids]
        else:
            figures = [no_update for _ in graph_ids]
        return live, figures

    @app.callback(
        Output("nav", "children"),
        Output("banner", "children"),
        Output("status", "children"),
        Input("tick", "n_intervals"),
    )
    async def frame(_: int | None) -> tuple[list[Component], Component | None, str]:
        return await asyncio.to_thread(build_frame)

    def build_frame() -> tuple[list[Component], Component | None, str]:
        observation = source.current()
        status = views.status_line(
            observation, clock(), refresh_ms, getattr(source, "last_error", None), getattr(source, "exporters", 1)
        )
        return views.nav_links(observation.health, url_prefix), views.simulation_banner(observation.snapshot), status

    fastapi_server.add_middleware(
        CallbackShapeCheck, callback_map=app.callback_map, path=f"{url_prefix}_dash-update-component"
    )
    return app


def _id_has(item: object, key: str) -> bool:
    return isinstance(item, dict) and isinstance(item.get("id"), dict) and isinstance(item["id"].get(key), str)


def _is_reference(item: object) -> bool:
    """A component property reference as Dash sends it: {"id": str or {...}, "property": str, ...}."""
    return isinstance(item, dict) and isinstance(item.get("id"), str | dict) and isinstance(item.get("property"), str)


def _references(items: object, count: int | None) -> bool:
    """A list of references, or of lists of them (pattern-matching ALL), `count` long when given."""
    if not isinstance(items, list) or (count is not None and len(items) != count):
        return False
    return all(_is_reference(i) or (isinstance(i, list) and all(_is_reference(j) for j in i)) for i in items)


def callback_problem(body: object, callback_map: dict[str, Any]) -> str | None:
    """Why `body` is not a callback request of this app, or None. Dash dispatches whatever it is given
    and answers 500 when it breaks on it; a request that is not one of ours is the client's error."""
    if not isinstance(body, dict):
        return "not a JSON object"
    output = body.get("output")
    spec = callback_map.get(output) if isinstance(output, str) else None
    if spec is None:
        return "no such callback output"
    if not _references(body.get("inputs"), len(spec.get("inputs", []))):
        return f"inputs: expected {len(spec.get('inputs', []))} component references"
    if not _references(body.get("state", []), len(spec.get("state", []))):
        return f"state: expected {len(spec.get('state', []))} component references"
    outputs, declared = body.get("outputs"), spec["output"]
    single = not isinstance(declared, list | tuple) and not isinstance(declared.component_id, dict)
    if not (_is_reference(outputs) or (not single and _references(outputs, None))):
        return "outputs: not component references"  # a list only for several or pattern-matching outputs
    try:
        # Dash's own check of the outputs against the callback's, which it runs only after dispatching
        # and answers with 500 (dash._validate: "for security and internal debugging")
        validate_output_spec(declared, outputs, Output)  # type: ignore[no-untyped-call]  # unannotated in Dash
    except (CallbackException, TypeError, ValueError, KeyError) as exc:
        return f"outputs: {exc}"
    changed = body.get("changedPropIds", [])
    if not isinstance(changed, list) or not all(isinstance(c, str) for c in changed):
        return "changedPropIds: not a list of strings"
    return None


class CallbackShapeCheck:
    """ASGI middleware before Dash's own: a POST to the callback route whose body is not a callback request
    of this app is answered 400, not dispatched (Dash would answer 500). The body is read here (the
    request guard in front has authenticated the request and capped its size) and handed on unchanged."""

    def __init__(self, app: Any, callback_map: dict[str, Any], path: str) -> None:
        self.app = app
        self.callback_map = callback_map
        self.path = path

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != self.path or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        chunks = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        try:
            problem = callback_problem(json.loads(body), self.callback_map)
        except ValueError:
            problem = "not JSON"
        if problem is not None:
            await JSONResponse({"error": "BadRequest", "message": problem}, status_code=400)(scope, receive, send)
            return
        sent = False

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return dict(await receive())

        await self.app(scope, replay, send)
