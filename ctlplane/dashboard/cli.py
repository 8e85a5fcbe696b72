"""`ctlplane dashboard --exporter URL [--exporter URL ...]`: the dashboard alone, reading remote exporters'
JSON APIs (several: the replicas of a sharded fleet, shown as one fleet).

`ctlplane/cli.py` adds the subcommand with `add_dashboard_arguments` and dispatches to `cmd_dashboard`;
`ctlplane run` mounts the dashboard on its own exporter app with `mount_dashboard`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ctlplane.dashboard.source import ExportersSource, InProcessSource, RemoteSource

if TYPE_CHECKING:
    from dash import Dash
    from fastapi import FastAPI

    from ctlplane.exporter.state import ExporterState

# The default prefix, repeated here so building the CLI parser does not import Dash (about a second).
PREFIX = "/dashboard/"


def mount_dashboard(
    app: FastAPI,
    state: ExporterState,
    *,
    refresh_ms: int = 5000,
    alerts_url: str | None = None,
    history_dir: Path | None = None,
    url_prefix: str = PREFIX,
    window_seconds: float = 3600.0,
) -> Dash:
    """Serve the dashboard from the exporter's own app and process (reads its state in memory)."""
    from ctlplane.dashboard.app import create_dashboard

    return create_dashboard(
        InProcessSource(state, window_seconds=window_seconds),
        server=app,
        refresh_ms=refresh_ms,
        alerts_url=alerts_url,
        history_dir=history_dir,
        url_prefix=url_prefix,
    )


def add_dashboard_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--exporter",
        required=True,
        action="append",
        help="base URL of a running exporter, e.g. http://host:18309; repeat it for each replica of a sharded fleet",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8050, help="port to listen on (default 8050)")
    parser.add_argument("--refresh-seconds", type=float, default=5.0, help="page refresh and exporter poll interval")
    parser.add_argument(
        "--window-seconds", type=float, default=3600.0, help="how far back the graphs and timeline reach"
    )
    parser.add_argument("--alerts-url", help="Alertmanager or Prometheus base URL for the Alerts page")
    parser.add_argument("--history-dir", type=Path, help="the Spark pipeline's output directory for the History page")
    parser.add_argument("--exporter-user", help="basic-auth user for the exporter")
    parser.add_argument("--exporter-password-file", type=Path, help="file holding the exporter's basic-auth password")
    parser.add_argument(
        "--web-config-file",
        type=Path,
        help="a Prometheus web config (tls_server_config, basic_auth_users) for the dashboard's own HTTPS and auth",
    )


def cmd_dashboard(args: argparse.Namespace) -> int:
    from fastapi.responses import RedirectResponse

    from ctlplane.dashboard.app import create_dashboard
    from ctlplane.exporter.config import HttpConfig
    from ctlplane.exporter.config.file import ConfigError, tls_problems, with_web_config
    from ctlplane.exporter.http.app import http_server, run_until_stopped
    from ctlplane.exporter.http.guard import GuardedFastAPI

    auth = None
    if args.exporter_user:
        if args.exporter_password_file is None:
            sys.stderr.write("error: --exporter-user needs --exporter-password-file\n")
            return 2
        auth = (args.exporter_user, args.exporter_password_file.read_text().strip())
    # The same TLS and basic auth as the exporter's, from the same kind of file (ConfigError: exit 2).
    http = HttpConfig(host=args.host, port=args.port, web_config_file=args.web_config_file)
    if args.web_config_file is not None:
        http = with_web_config(http, Path("--web-config-file"))
        problems = tls_problems(http.tls) if http.tls is not None else []
        if problems:
            raise ConfigError(f"--web-config-file {args.web_config_file}:\n  " + "\n  ".join(problems))
    remotes = [RemoteSource(url, window_seconds=args.window_seconds, auth=auth) for url in args.exporter]
    source = remotes[0] if len(remotes) == 1 else ExportersSource(remotes)
    source.start(args.refresh_seconds)
    # auth and the body cap before Dash reads a body
    server = GuardedFastAPI(users=http.basic_auth_users, title="ctlplane dashboard")

    @server.get("/", include_in_schema=False)
    def home() -> RedirectResponse:
        return RedirectResponse(PREFIX)

    try:
        create_dashboard(  # mounts itself on `server`
            source,
            server=server,
            refresh_ms=int(args.refresh_seconds * 1000),
            alerts_url=args.alerts_url,
            history_dir=args.history_dir,
        )
        scheme = "https" if http.tls else "http"
        sys.stdout.write(f"ctlplane dashboard for {source.base_url}: {scheme}://{args.host}:{args.port}{PREFIX}\n")
        sys.stdout.flush()
        run_until_stopped(http_server(server, args.host, args.port, http.tls))
    finally:
        source.close()
    return 0
