"""`ctlplane`: the commands of the composition root. Each loads the settings once and runs the parts
ctlplane/wiring.py builds from them (reload.py applies a reloaded config, probe.py writes the probe's text)."""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

from ctlplane.exporter.config import Settings
from ctlplane.exporter.config.file import ConfigError, load_settings, parse_settings
from ctlplane.exporter.jvm.runtime import java_problem

if TYPE_CHECKING:
    from fastapi import FastAPI

    from ctlplane.exporter.discovery.dns import DnsWatch
    from ctlplane.exporter.fencing_watch import FencingWatch
    from ctlplane.exporter.history.writer import HistoryWriter
    from ctlplane.exporter.scraper import Scraper
    from ctlplane.exporter.state import ExporterState

from ctlplane.probe import format_probe, format_watch_list, read_until_named
from ctlplane.reload import ConfigReload
from ctlplane.wiring import (
    build_app,
    build_client,
    build_discovery,
    build_dns_watch,
    build_fencing_watch,
    build_history_writer,
    build_scraper,
    build_state,
    client_version_text,
    ctlplane_version,
    needs_java,
    sharded,
)

log = logging.getLogger("ctlplane")


def missing_extras(needs: Sequence[tuple[str, str]]) -> str | None:
    """What a command needs that is not installed, as the line to install it; None when nothing is missing.
    `pip install ctlplane` brings the exporter; the dashboard and the Spark pipeline are extras."""
    missing = [(module, extra) for module, extra in needs if importlib.util.find_spec(module) is None]
    if not missing:
        return None
    modules = ", ".join(module for module, _ in missing)
    extras = ",".join(sorted({extra for _, extra in missing}))
    return f"this command needs {modules}, which is not installed: pip install 'ctlplane[{extras}]'"


def _local_settings(stack: ExitStack, workdir: Path | None) -> Settings:
    """Start the local real-Kafka fleet (ZooKeeper 3.9 with KIP-291 + KRaft 4.x) and watch it: the
    checkout's harness (harness/localkafka), which an installed ctlplane does not have."""
    try:
        from harness import localkafka
    except ImportError:
        raise ConfigError(
            "no --config given, and the local Kafka clusters it would start come with a checkout of ctlplane "
            "(`make run` there): give --config FILE"
        ) from None

    root = workdir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ctlplane-kafka-")))
    sys.stdout.write(f"No --config: starting local Kafka clusters from cached jars under {root} ...\n")
    sys.stdout.flush()
    clusters = localkafka.start_default_fleet(root)
    for cluster in clusters:
        stack.callback(cluster.stop)
    return parse_settings(
        {
            "clusters": localkafka.clusters_config(clusters),
            "scrape": {"interval_seconds": 5, "timeout_seconds": 4},
            # `make run` keeps history so `ctlplane pipeline ...` and the History page have data
            "history": {"path": str(Path.cwd() / ".data" / "history"), "flush_seconds": 60},
            "dashboard": {"history_dir": str(Path.cwd() / ".data" / "pipeline")},
        },
        "local fleet",
    )


# Settings a running ctlplane cannot change: the HTTP server, the history writer, the dashboard, the JMX
# client's JVM and pool. A reload applies the rest and names these in its log line.
# After SIGTERM: how long the exporter waits for a round still under way once the history is flushed.
# uvicorn's graceful stop (up to 3 s) + this + two flushes stay inside `docker stop`'s 10 s.
SHUTDOWN_JOIN_SECONDS = 4.0


def serve(settings: Settings, config_path: Path | None = None, shard: str | None = None) -> int:
    """Scrape the configured clusters and serve HTTP until interrupted; with `config_path`, SIGHUP and
    POST /-/reload read it again (ConfigReload)."""
    from ctlplane.exporter.http.app import http_server, run_until_stopped

    scraper = build_scraper(settings)
    state = build_state(settings, scraper)
    discovery = build_discovery(settings, scraper, state)
    dns = build_dns_watch(settings, discovery).start()
    fencing = build_fencing_watch(settings, scraper)
    reload = (
        None
        if config_path is None
        else ConfigReload(config_path, settings, scraper, discovery, state, shard, dns=dns, fencing=fencing)
    )
    writer = build_history_writer(settings)
    if writer is not None:
        state.subscribe(writer.start().observe)
    scraper.start()
    fencing.start()
    try:
        http = settings.http
        app = build_app(settings, scraper, state, discovery, reload, writer)
        if reload is not None:
            # the handler only starts the work: a reload reads files and may wait for a quorum reader
            signal.signal(signal.SIGHUP, lambda signum, frame: threading.Thread(target=reload, name="reload").start())
        dashboard_served = _mount_dashboard(settings, app, state)
        sys.stdout.write(_banner(settings, len(scraper.targets), dashboard_served))
        sys.stdout.flush()
        run_until_stopped(http_server(app, http.host, http.port, http.tls))
    finally:
        _stop(scraper, dns, fencing, writer)
    if scraper.running():
        _exit_now()
    return 0


def _mount_dashboard(settings: Settings, app: FastAPI, state: ExporterState) -> bool:
    """Mount the dashboard on the exporter's app where it is enabled and its extra installed; whether it is."""
    if not settings.dashboard.enabled:
        return False
    if missing := missing_extras((("dash", "dashboard"),)):
        # the exporter is what an operator cannot do without: serve it, and say what the dashboard needs
        log.warning("dashboard not served (set dashboard.enabled: false to silence this): %s", missing)
        return False
    from ctlplane.dashboard.cli import mount_dashboard

    board = settings.dashboard
    mount_dashboard(
        app,
        state,
        refresh_ms=int(board.refresh_seconds * 1000),
        alerts_url=board.alerts_url,
        history_dir=board.history_dir,
        window_seconds=board.window_seconds,
    )
    return True


def _banner(settings: Settings, nodes: int, dashboard_served: bool) -> str:
    http = settings.http
    base = f"{'https' if http.tls else 'http'}://{http.host}:{http.port}"
    return (
        f"ctlplane {ctlplane_version()} watching {nodes} nodes in {len(settings.clusters)} cluster(s)\n"
        + (f"  dashboard: {base}/dashboard/\n" if dashboard_served else "")
        + f"  metrics:   {base}/metrics\n  snapshot:  {base}/api/v1/snapshot\n"
        f"  health:    {base}/api/v1/health\n  home:      {base}/\n"
    )


def _stop(scraper: Scraper, dns: DnsWatch, fencing: FencingWatch, writer: HistoryWriter | None) -> None:
    # `docker stop` kills 10 s after SIGTERM; joining the scraper can take a whole scrape timeout (a
    # round waiting on a hung node). So: no new round, history flushed first, then a join bounded by
    # what is left of those 10 s (uvicorn has given an in-flight request up to 3 s), then one more
    # flush for a round that finished meanwhile.
    scraper.request_stop()
    dns.stop()
    fencing.stop()
    if writer is not None:
        try:
            writer.flush()
        except Exception as exc:  # a full disk: close() below tries once more and says what is lost
            log.warning("history flush at shutdown failed: %s", exc)
    scraper.stop(join_seconds=SHUTDOWN_JOIN_SECONDS)
    if writer is not None:
        writer.close()


def _exit_now() -> None:
    # A round still waits on a hung node's read inside the JVM, and the interpreter's exit would wait
    # for it (the read pool's threads are joined at exit), past Docker's kill on a loaded machine (a
    # fresh-clone run saw exit -9). Everything worth keeping is written: leave now, a clean stop.
    log.info("stopped; a JMX read of a hung node is still in flight and is not waited for")
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


class HostError(Exception):
    """This host lacks what reading the configured clusters needs (a JVM, a recent enough one): one line."""


def check_java(settings: Settings | None) -> None:
    """Raise HostError, saying what to install, where the clusters need a JVM this host lacks; before any
    cluster is read (`check-config`, `run`, `probe`)."""
    if needs_java(settings) and (problem := java_problem()):
        raise HostError(problem)


def cmd_run(args: argparse.Namespace) -> int:
    with ExitStack() as stack:
        configured = load_settings(args.config) if args.config else None
        check_java(configured)
        settings = configured if configured is not None else _local_settings(stack, args.workdir)
        return serve(sharded(settings, args.shard), args.config, args.shard)


def cmd_demo(args: argparse.Namespace) -> int:
    from ctlplane.demo.launch import cmd_demo as run_demo

    return run_demo(args, lambda document: serve(parse_settings(document, "demo")))


def cmd_dashboard(args: argparse.Namespace) -> int:
    from ctlplane.dashboard.cli import cmd_dashboard as run_dashboard

    return run_dashboard(args)


def cmd_check_config(args: argparse.Namespace) -> int:
    settings = load_settings(args.config)
    check_java(settings)  # the config, and whether this host can read its clusters
    nodes = sum(len(cluster.nodes) for cluster in settings.clusters)
    discovering = sum(cluster.discovery is not None for cluster in settings.clusters)
    alone = sum(cluster.admin_only for cluster in settings.clusters)
    found = f", {discovering} with discovery" if discovering else ""
    found += f", {alone} through the Admin API alone" if alone else ""
    sys.stdout.write(f"{args.config}: OK ({len(settings.clusters)} cluster(s), {nodes} listed node(s){found})\n")
    return 0


def cmd_probe(args: argparse.Namespace) -> int:
    settings = load_settings(args.config)
    check_java(settings)
    scraper = build_scraper(settings, build_client(settings, args.client))
    state = build_state(settings, scraper)
    discovery = build_discovery(settings, scraper, state)
    try:
        build_dns_watch(settings, discovery).refresh()  # the DNS names once, before the first round
        # no next round serves a late answer here, so each round waits as long as a read may run (the read
        # deadline): a cold Admin client's first quorum read can take longer than a round; and a metrics page
        # as long as a page may take (a large broker's jmx_exporter collects every MBean before its first byte)
        deadline = settings.scrape.read_deadline_seconds
        if any(cluster.metrics is not None for cluster in settings.clusters):
            deadline = max(deadline, settings.scrape.page_timeout_seconds)
            sys.stderr.write(f"waiting up to {deadline:g}s for each metrics page (scrape.page_timeout_seconds)\n")
        # `--discover` too: one round was its whole listing, and a cold Admin client's first answer on a loaded
        # host fails or comes late (a CI run listed no node of a quorum the table probe had read)
        read_until_named(
            scraper,
            discovering=bool(discovery.rules),
            wait_seconds=deadline,
            answer_seconds=settings.scrape.read_deadline_seconds,
        )
        if args.discover:
            sys.stdout.write(format_watch_list(scraper.targets, state.current(), discovery))
        else:
            sys.stdout.write(format_probe(state.current()))
    finally:
        scraper.stop()
    return 0


def cmd_healthcheck(args: argparse.Namespace) -> int:
    """Exit 0 if the exporter of this config answers /healthz with 200 (rounds keep coming): the
    container's HEALTHCHECK, with the config's port, scheme and client certificate, so auth, TLS or
    another port never leave a healthy container marked unhealthy (/healthz needs no password)."""
    import ssl

    import httpx

    http = load_settings(args.config).http
    wildcard = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}
    host = wildcard.get(http.host, http.host)
    host = f"[{host}]" if ":" in host else host
    verify: ssl.SSLContext | bool = False
    if http.tls is not None:
        # our own server on loopback: its certificate names the service, not this address
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        if http.tls.client_auth_type == "RequireAndVerifyClientCert":
            # the server's own pair as the client's: accepted where the client CA also signed it
            context.load_cert_chain(http.tls.cert_file, http.tls.key_file)
        verify = context
    url = f"{'https' if http.tls else 'http'}://{host}:{http.port}/healthz"
    try:
        response = httpx.get(url, verify=verify, timeout=4)
    except httpx.HTTPError as exc:
        sys.stdout.write(f"{url}: {type(exc).__name__}: {exc}\n")
        return 1
    sys.stdout.write(f"{url}: {response.status_code} {response.text.strip()}\n")
    return 0 if response.status_code == 200 else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ctlplane", description="Kafka control-plane monitoring")
    # the installed distribution's version, i.e. pyproject.toml's (the one place it is written), and the Kafka
    # client release the package carries (which broker releases it speaks to: docs/configuration.md)
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {ctlplane_version()} ({client_version_text()})"
    )
    parser.add_argument("--log-level", default="INFO")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="serve /metrics (and the API) for the configured clusters")
    run.add_argument("--config", type=Path, help="YAML config; without it, local Kafka clusters are started")
    run.add_argument("--workdir", type=Path, help="data directory for the local clusters (default: temporary)")
    run.add_argument(
        "--shard",
        default=os.environ.get("CTLPLANE_SHARD"),
        help="serve this replica's share of the clusters: INDEX/COUNT, or auto/COUNT in a StatefulSet "
        "(index from the hostname); default $CTLPLANE_SHARD, else the config's `shard:`",
    )
    run.set_defaults(func=cmd_run)
    from ctlplane.demo.launch import add_demo_arguments

    demo = sub.add_parser("demo", help="simulated Kafka clusters with fault scenarios, served by the exporter")
    add_demo_arguments(demo)
    demo.set_defaults(func=cmd_demo, needs=(("dash", "dashboard"),))  # what the demo is for: the dashboard
    from ctlplane.dashboard.cli import add_dashboard_arguments

    dashboard = sub.add_parser("dashboard", help="the web dashboard alone, reading remote exporters' JSON APIs")
    add_dashboard_arguments(dashboard)
    dashboard.set_defaults(func=cmd_dashboard, needs=(("dash", "dashboard"),))
    from ctlplane.pipeline.cli import add_subcommands as add_pipeline_subcommands

    add_pipeline_subcommands(sub)
    healthcheck = sub.add_parser("healthcheck", help="exit 0 if the exporter of this config is healthy")
    healthcheck.add_argument("--config", type=Path, required=True)
    healthcheck.set_defaults(func=cmd_healthcheck)
    check = sub.add_parser("check-config", help="validate a config file")
    check.add_argument("config", type=Path)
    check.set_defaults(func=cmd_check_config)
    probe = sub.add_parser("probe", help="scrape every node once and print a table")
    probe.add_argument("--config", type=Path, required=True)
    probe.add_argument("--client", choices=["jpype", "jmxquery"], help="override scrape.client")
    probe.add_argument(
        "--discover",
        action="store_true",
        help="print what would be watched (node, role, id, JMX address, listed or discovered) and what not, and why",
    )
    probe.set_defaults(func=cmd_probe)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    missing = missing_extras(getattr(args, "needs", ()))
    if missing:
        sys.stderr.write(f"error: {missing}\n")
        return 2
    try:
        if getattr(args, "wants_settings", False):
            # pipeline jobs take their thresholds and interval from the config when one is given
            settings = load_settings(args.config) if args.config else None
            result: int = args.func(
                args,
                settings.health.thresholds() if settings else None,
                settings.scrape.interval_seconds if settings else None,
            )
        else:
            result = args.func(args)
        return result
    except (ConfigError, HostError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
