"""`ctlplane`: the composition root. Loads the settings once and wires the parts together."""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from pathlib import Path
from typing import TYPE_CHECKING

from ctlplane.exporter.catalog import Role
from ctlplane.exporter.config import ClusterConfig, MetricsEndpointConfig, Settings
from ctlplane.exporter.config_file import ConfigError, load_settings, parse_settings
from ctlplane.exporter.discovery.answers import JmxRule, NodeDiscovery
from ctlplane.exporter.discovery.dns import DnsName, DnsResolver, DnsWatch
from ctlplane.exporter.families import Family, dashboard_family, reload_families
from ctlplane.exporter.java_runtime import java_problem
from ctlplane.exporter.memory import collect_garbage_per_round, release_free_memory
from ctlplane.exporter.model import NodeSnapshot, QuorumView
from ctlplane.exporter.releases import CLIENT_VERSION
from ctlplane.exporter.scraper import QuorumSource, Scraper, Target
from ctlplane.exporter.shards import parse_shard
from ctlplane.exporter.sources.admin import client as kafka_admin
from ctlplane.exporter.sources.base import NodeEndpoint, NodeSource
from ctlplane.exporter.sources.endpoint.client import EndpointClient, MetricsEndpoint
from ctlplane.exporter.sources.endpoint.profiles import EndpointNaming, naming_from_file, profile
from ctlplane.exporter.sources.jmx.base import Endpoint, JmxClient
from ctlplane.exporter.sources.routed import Sources
from ctlplane.exporter.state import ExporterState, Observation

if TYPE_CHECKING:
    from fastapi import FastAPI

    from ctlplane.exporter.history.writer import HistoryWriter

log = logging.getLogger("ctlplane")


def _version() -> str:
    try:
        return package_version("ctlplane")
    except PackageNotFoundError:
        return "dev"


def _client_version() -> str:
    carried = kafka_admin.packaged_client()
    return f"Kafka client {CLIENT_VERSION}" + ("" if carried else ", not packaged")


def missing_extras(needs: Sequence[tuple[str, str]]) -> str | None:
    """What a command needs that is not installed, as the line to install it; None when nothing is missing.
    `pip install ctlplane` brings the exporter; the dashboard and the Spark pipeline are extras."""
    missing = [(module, extra) for module, extra in needs if importlib.util.find_spec(module) is None]
    if not missing:
        return None
    modules = ", ".join(module for module, _ in missing)
    extras = ",".join(sorted({extra for _, extra in missing}))
    return f"this command needs {modules}, which is not installed: pip install 'ctlplane[{extras}]'"


def _endpoint(settings: Settings, cluster: ClusterConfig, address: str) -> NodeEndpoint:
    if cluster.metrics is not None:
        return _metrics_endpoint(cluster.metrics, address)
    auth = settings.jmx_for(cluster)
    password = auth.password()
    host, _, port = address.rpartition(":")
    return Endpoint(host, int(port), auth.username, password.get_secret_value() if password else None, auth.ssl)


def _metrics_endpoint(metrics: MetricsEndpointConfig, address: str) -> MetricsEndpoint:
    """A node's Prometheus endpoint (ctlplane/exporter/sources/endpoint/)."""
    naming: EndpointNaming
    if metrics.rules_file is not None:
        naming = naming_from_file(metrics.rules_file)
    else:
        naming = profile(metrics.naming or "jmx_exporter")
    password = metrics.password()
    return MetricsEndpoint(
        metrics.url(address),
        naming,
        metrics.username,
        password.get_secret_value() if password is not None else None,
        str(metrics.ca_file) if metrics.ca_file is not None else None,
    )


def build_targets(settings: Settings) -> list[Target]:
    """The listed nodes of every cluster (discovery adds the rest once the clusters answer)."""
    targets = []
    for cluster in settings.clusters:
        auth = settings.jmx_for(cluster)
        if cluster.metrics is None and auth.username is not None and not auth.ssl:
            log.warning(
                "cluster %s: JMX authentication without SSL: the password crosses the network in clear "
                "(set jmx.ssl: true, and com.sun.management.jmxremote.ssl and .registry.ssl on the nodes: "
                "docs/install.md)",
                cluster.name,
            )
        for node in cluster.nodes:
            role = Role(node.role) if node.role else Role.UNKNOWN
            targets.append(
                Target(cluster.name, node.label, _endpoint(settings, cluster, node.address), role, node.node_id)
            )
    return targets


def discovery_rules(settings: Settings) -> dict[str, JmxRule]:
    return {c.name: c.discovery.rule() for c in settings.clusters if c.discovery is not None}


class DiscoveredTargets:
    """Targets for discovered nodes with their cluster's JMX credentials, from the settings in force (a
    reload replaces them)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def __call__(self, cluster: str, node: str, address: str, role: Role, node_id: int | None) -> Target:
        config = next(c for c in self.settings.clusters if c.name == cluster)
        return Target(cluster, node, _endpoint(self.settings, config, address), role, node_id)


def build_discovery(settings: Settings, scraper: Scraper, state: ExporterState) -> NodeDiscovery:
    """Discovery for the clusters that ask for it (exporter/discovery/answers.py), fed by every round's answers and
    health; with none, it hands the scraper the listed nodes (and a reload's new list)."""
    discovery = NodeDiscovery(
        scraper.targets, discovery_rules(settings), DiscoveredTargets(settings), scraper.set_targets
    )
    state.subscribe(discovery.observe)
    return discovery


def dns_sources(settings: Settings) -> dict[str, tuple[DnsResolver, Sequence[DnsName]]]:
    """Each cluster's DNS names with a resolver of its name servers (ctlplane/exporter/discovery/dns.py)."""
    return {
        c.name: (
            DnsResolver(c.discovery.dns_nameservers, settings.scrape.timeout_seconds),
            [DnsName(n.name, n.type, n.port) for n in c.discovery.dns],
        )
        for c in settings.clusters
        if c.discovery is not None and c.discovery.dns
    }


def dns_interval(settings: Settings) -> float:
    return min(
        (c.discovery.dns_interval_seconds for c in settings.clusters if c.discovery and c.discovery.dns), default=30.0
    )


def build_dns_watch(settings: Settings, discovery: NodeDiscovery) -> DnsWatch:
    """The DNS names of every cluster that has some, resolved on their interval into `discovery`."""
    return DnsWatch(dns_sources(settings), discovery.set_dns, dns_interval(settings))


def build_client(settings: Settings, kind: str | None = None) -> NodeSource:
    """Every node source (ctlplane/exporter/sources/): remote JMX, and the nodes' Prometheus endpoints. The
    JVM starts now where the config needs it (a cluster read over JMX, a quorum's view), else on first use."""
    endpoints = EndpointClient(
        timeout_seconds=settings.scrape.timeout_seconds, read_deadline_seconds=settings.scrape.read_deadline_seconds
    )
    return Sources(lambda: build_jmx_client(settings, kind), endpoints, start_jmx=needs_java(settings))


def build_jmx_client(settings: Settings, kind: str | None = None) -> JmxClient:
    scrape = settings.scrape
    if (kind or scrape.client) == "jmxquery":
        from ctlplane.exporter.sources.jmx.jmxquery_client import JmxQueryClient

        if settings.clusters_jmxquery_cannot_read():
            # the config's scrape.client check, for `probe --client jmxquery`
            raise ConfigError(
                "jmxquery cannot read clusters with JMX auth or SSL safely (the password would be "
                "on java's command line, visible in ps): use the jpype client"
            )

        return JmxQueryClient(timeout_seconds=scrape.timeout_seconds)
    from ctlplane.exporter.sources.jmx.jpype_client import JPypeJmxClient, rmi_timeout_seconds

    truststore_password = None
    if settings.jmx.truststore_password_file is not None:
        truststore_password = settings.jmx.truststore_password_file.read_text().strip()
    # A node that answers every call just in time is abandoned after two scrape timeouts (its worker is then
    # free again after about three).
    return JPypeJmxClient(
        timeout_seconds=rmi_timeout_seconds(scrape.timeout_seconds),
        read_deadline_seconds=scrape.read_deadline_seconds,
        max_heap=scrape.jvm_max_heap,
        truststore=str(settings.jmx.truststore) if settings.jmx.truststore else None,
        truststore_password=truststore_password,
    )


def build_quorum_sources(
    settings: Settings,
    kept: Mapping[str, QuorumSource] | None = None,
    before: Settings | None = None,
) -> dict[str, QuorumSource]:
    """A QuorumReader per cluster with bootstrap_servers or bootstrap_controllers (the JVM must be up:
    build the JPype client first). On a reload, `kept` (the running sources) and `before` (their settings):
    a cluster whose addresses, security and timeout are unchanged keeps its reader and its Admin client."""
    from ctlplane.exporter.sources.admin.client import QuorumReader, security_properties

    # the Admin call's own deadline inside the round's, so its answer (or its error) lands this round
    timeout = max(0.5, settings.scrape.timeout_seconds * 0.8)
    sources: dict[str, QuorumSource] = {}
    old = {c.name: c for c in before.clusters} if before is not None else {}
    for cluster in settings.clusters:
        previous = old.get(cluster.name)
        if (
            kept is not None
            and before is not None
            and cluster.name in kept
            and previous is not None
            and _quorum_settings(previous, before) == _quorum_settings(cluster, settings)
        ):
            sources[cluster.name] = kept[cluster.name]
            continue
        if not (cluster.bootstrap_controllers or cluster.bootstrap_servers):
            continue
        security = None
        if cluster.admin is not None:
            password = cluster.admin.password()
            certificate = cluster.admin.client_certificate()
            security = security_properties(
                cluster.admin.security_protocol,
                cluster.admin.sasl_mechanism,
                cluster.admin.username,
                password.get_secret_value() if password is not None else None,
                ca_file=str(cluster.admin.ca_file) if cluster.admin.ca_file is not None else None,
                certificate=(certificate[0], certificate[1].get_secret_value()) if certificate is not None else None,
            )
        sources[cluster.name] = QuorumReader(
            cluster.name,
            cluster.bootstrap_controllers or cluster.bootstrap_servers,
            controllers=bool(cluster.bootstrap_controllers),
            timeout_seconds=timeout,
            security=security,
        )
    return sources


def admin_only(settings: Settings) -> frozenset[str]:
    """The clusters watched through the Admin API alone (ClusterConfig.admin_only)."""
    return frozenset(cluster.name for cluster in settings.clusters if cluster.admin_only)


def _quorum_settings(cluster: ClusterConfig, settings: Settings) -> tuple[object, ...]:
    return (cluster.bootstrap_servers, cluster.bootstrap_controllers, cluster.admin, settings.scrape.timeout_seconds)


def build_scraper(settings: Settings, client: NodeSource | None = None) -> Scraper:
    """The scraper of the listed nodes (build_discovery adds the discovered ones)."""
    client = client or build_client(settings)
    scraper = Scraper(
        build_targets(settings),
        client,
        interval_seconds=settings.scrape.interval_seconds,
        timeout_seconds=settings.scrape.timeout_seconds,
        workers=settings.scrape.workers,
        quorum_sources=build_quorum_sources(settings),
        slow_interval_seconds=settings.scrape.slow_interval_seconds,
        admin_only=admin_only(settings),
    )
    return scraper


def build_state(settings: Settings, scraper: Scraper) -> ExporterState:
    """Health state fed by every scrape round."""
    health = settings.health
    thresholds = health.thresholds()
    state = ExporterState(scraper.latest(), thresholds)
    scraper.subscribe(state.observe)
    # after each round, collect cyclic garbage (the young generations; all of them every 5 minutes): full
    # passes started by CPython's rule and by JPype on each JVM collection cost a third of a 1,000-node
    # round and freed nothing (ctlplane/exporter/memory.py)
    state.subscribe(collect_garbage_per_round())
    # then hand the memory its threads freed back to the system (ctlplane/exporter/memory.py); what later
    # subscribers free is handed back a round later
    state.subscribe(release_free_memory)
    return state


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

RESTART_ONLY = (
    "http",
    "history",
    "dashboard",
    "scrape.workers",
    "scrape.client",
    "scrape.jvm_max_heap",
    "scrape.slow_interval_seconds",
    "jmx.truststore",
    "jmx.truststore_password_file",
)


class ConfigReload:
    """SIGHUP and POST /-/reload: the config file read again, applied to the running exporter.

    As Prometheus: a config that fails its checks changes nothing (the running one stays) and is counted
    (`ctlplane_config_last_reload_successful 0`); one that passes replaces the clusters, their listed nodes,
    discovery rules, quorum readers (a cluster whose addresses did not change keeps its Admin client),
    intervals and health thresholds. What survives: each kept node's counters, identity and JMX connection,
    the health model's memory (failovers, lifecycle), the dashboard's trail and the history buffers.

    Where each setting it applies goes (tests/unit/cli/test_reload.py, a test each): `clusters` and `jmx`
    (but its trust store) -> the scraper's targets, discovery's rules and DiscoveredTargets, the quorum
    readers, the DNS watch; `scrape.interval_seconds` -> the scraper (its pace, the slow tier's due time),
    which /healthz reads (build_app); `scrape.timeout_seconds` -> the scraper's wait per round, the quorum
    readers' Admin deadline, the DNS resolvers' lifetime, the metrics endpoints' HTTP timeout and read deadline
    (not yet the JMX client's read deadline, which build_client sets once; its RMI timeouts are the JVM's,
    fixed at its start); `health`
    -> the state's thresholds. RESTART_ONLY lists what it does not apply."""

    def __init__(
        self,
        path: Path,
        settings: Settings,
        scraper: Scraper,
        discovery: NodeDiscovery,
        state: ExporterState,
        shard: str | None,
        clock: Callable[[], float] = time.time,
        dns: DnsWatch | None = None,
    ) -> None:
        self.path = path
        self.settings = settings
        self.scraper = scraper
        self.discovery = discovery
        self.state = state
        self.shard = shard
        self.clock = clock
        self.dns = dns
        self.successful = True
        self.last_success_at = clock()
        self.failures_total = 0
        self._lock = threading.Lock()

    def __call__(self) -> str | None:
        """Reload now: None when applied, else why not (one line, the file and each field path)."""
        with self._lock:
            try:
                new = sharded(load_settings(self.path), self.shard)
            except ConfigError as exc:
                self.successful = False
                self.failures_total += 1
                reason = "; ".join(line.strip() for line in str(exc).splitlines())
                log.error("config reload failed, the running config stays: %s", reason)
                return reason
            old, self.settings = self.settings, new
            needs_restart = [name for name in RESTART_ONLY if _setting(old, name) != _setting(new, name)]
            self.scraper.set_quorum_sources(
                build_quorum_sources(new, self.scraper.quorum_sources, old), admin_only(new)
            )
            self.scraper.interval_seconds = new.scrape.interval_seconds
            self.scraper.timeout_seconds = new.scrape.timeout_seconds
            if isinstance(self.scraper.client, Sources):
                self.scraper.client.endpoints.set_timeouts(new.scrape.timeout_seconds, new.scrape.read_deadline_seconds)
            self.state.thresholds = new.health.thresholds()
            if isinstance(self.discovery.make_target, DiscoveredTargets):
                self.discovery.make_target.settings = new
            self.discovery.update(build_targets(new), discovery_rules(new))
            if self.dns is not None:
                self.dns.sources = dns_sources(new)
                self.dns.interval_seconds = dns_interval(new)
            self.successful = True
            self.last_success_at = self.clock()
            log.info(
                "config reloaded from %s: %d cluster(s)%s",
                self.path,
                len(new.clusters),
                f"; needs a restart to apply: {', '.join(needs_restart)}" if needs_restart else "",
            )
            return None

    def families(self) -> list[Family]:
        return reload_families(self.successful, self.last_success_at, self.failures_total)


def _setting(settings: Settings, dotted: str) -> object:
    value: object = settings
    for part in dotted.split("."):
        value = getattr(value, part)
    return value


def build_app(
    settings: Settings,
    scraper: Scraper,
    state: ExporterState,
    discovery: NodeDiscovery,
    reload: ConfigReload | None = None,
    writer: HistoryWriter | None = None,
    clock: Callable[[], float] = time.time,
) -> FastAPI:
    """The exporter's HTTP app over the running parts (the dashboard is mounted on it afterwards)."""
    from ctlplane.exporter.http.app import create_app

    public_url = settings.dashboard.public_url if settings.dashboard.enabled else None
    dashboard = [dashboard_family(public_url)] if public_url is not None else []
    return create_app(
        state.current,
        # read per request: the interval a reload sets (ConfigReload sets the scraper's) is the one it judges by
        interval_seconds=lambda: scraper.interval_seconds,
        version=_version(),
        basic_auth_users=settings.http.basic_auth_users,
        clock=clock,
        per_request=lambda: [
            *dashboard,
            *(writer.families() if writer is not None else ()),
            *(reload.families() if reload is not None else ()),
            *(discovery.families() if discovery.rules else ()),
        ],
        observations=state.subscribe,
        reload=reload,
    )


def serve(settings: Settings, config_path: Path | None = None, shard: str | None = None) -> int:
    """Scrape the configured clusters and serve HTTP until interrupted; with `config_path`, SIGHUP and
    POST /-/reload read it again (ConfigReload)."""
    from ctlplane.exporter.http.app import http_server, run_until_stopped

    scraper = build_scraper(settings)
    state = build_state(settings, scraper)
    discovery = build_discovery(settings, scraper, state)
    dns = build_dns_watch(settings, discovery).start()
    reload = (
        None if config_path is None else ConfigReload(config_path, settings, scraper, discovery, state, shard, dns=dns)
    )
    writer = None
    if settings.history is not None:
        from ctlplane.exporter.history.writer import HistoryWriter

        history = settings.history
        writer = HistoryWriter(
            history.path,
            history.flush_seconds,
            history.retention_days,
            history.max_bytes,
            max_buffered_rows=history.max_buffered_rows,
            compact_after_seconds=history.compact_after_seconds,
        ).start()
        state.subscribe(writer.observe)
    scraper.start()
    try:
        http = settings.http
        app = build_app(settings, scraper, state, discovery, reload, writer)
        if reload is not None:
            # the handler only starts the work: a reload reads files and may wait for a quorum reader
            signal.signal(signal.SIGHUP, lambda signum, frame: threading.Thread(target=reload, name="reload").start())
        dashboard_served = settings.dashboard.enabled
        if dashboard_served and (missing := missing_extras((("dash", "dashboard"),))):
            # the exporter is what an operator cannot do without: serve it, and say what the dashboard needs
            log.warning("dashboard not served (set dashboard.enabled: false to silence this): %s", missing)
            dashboard_served = False
        if dashboard_served:
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
        scheme = "https" if http.tls else "http"
        base = f"{scheme}://{http.host}:{http.port}"
        sys.stdout.write(
            f"ctlplane {_version()} watching {len(scraper.targets)} nodes in "
            f"{len(settings.clusters)} cluster(s)\n"
            + (f"  dashboard: {base}/dashboard/\n" if dashboard_served else "")
            + f"  metrics:   {base}/metrics\n  snapshot:  {base}/api/v1/snapshot\n"
            f"  health:    {base}/api/v1/health\n  home:      {base}/\n"
        )
        sys.stdout.flush()
        run_until_stopped(http_server(app, http.host, http.port, http.tls))
    finally:
        # `docker stop` kills 10 s after SIGTERM; joining the scraper can take a whole scrape timeout (a
        # round waiting on a hung node). So: no new round, history flushed first, then a join bounded by
        # what is left of those 10 s (uvicorn has given an in-flight request up to 3 s), then one more
        # flush for a round that finished meanwhile.
        scraper.request_stop()
        dns.stop()
        if writer is not None:
            try:
                writer.flush()
            except Exception as exc:  # a full disk: close() below tries once more and says what is lost
                log.warning("history flush at shutdown failed: %s", exc)
        scraper.stop(join_seconds=SHUTDOWN_JOIN_SECONDS)
        if writer is not None:
            writer.close()
    if scraper.running():
        # A round still waits on a hung node's read inside the JVM, and the interpreter's exit would wait
        # for it (the read pool's threads are joined at exit), past Docker's kill on a loaded machine (a
        # fresh-clone run saw exit -9). Everything worth keeping is written: leave now, a clean stop.
        log.info("stopped; a JMX read of a hung node is still in flight and is not waited for")
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    return 0


class HostError(Exception):
    """This host lacks what reading the configured clusters needs (a JVM, a recent enough one): one line."""


def needs_java(settings: Settings | None) -> bool:
    """Whether reading these clusters needs a JVM: remote JMX (every cluster not read from its nodes' metrics
    endpoints) and Kafka's Admin client (bootstrap_servers / bootstrap_controllers) run in one. None: the
    local clusters `run` starts without a config, Java processes themselves."""
    if settings is None:
        return True
    return any(c.metrics is None or c.bootstrap_servers or c.bootstrap_controllers for c in settings.clusters)


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


def sharded(settings: Settings, shard: str | None) -> Settings:
    """The settings of this replica's share of the clusters: `shard` (--shard, CTLPLANE_SHARD) or the
    config's `shard:`; every cluster when neither is set."""
    try:
        if shard:
            parse_shard(shard)
            settings = settings.model_copy(update={"shard": shard})
        served = settings.served()
    except ValueError as exc:
        raise ConfigError(f"--shard / shard: {exc}") from None
    if settings.shard is not None:
        names = [cluster.name for cluster in served.clusters]
        log.info(
            "shard %s: serving %d of %d clusters: %s",
            settings.shard,
            len(names),
            len(settings.clusters),
            ", ".join(names) or "none",
        )
    return served


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


def format_probe(observation: Observation) -> str:
    """One scrape round as text: a node table, then each cluster's controller and broker lifecycle."""
    lines = [
        f"{'cluster':<14} {'node':<16} {'role':<10} {'mode':<10} {'id':>4} {'version':<8} "
        f"{'up':<3} {'ms':>6}  series / error"
    ]
    for node in observation.snapshot.nodes():
        detail = f"{len({s.series for s in node.samples})} series" if node.up else f"ERROR {node.error}"
        mode = node.mode.value if node.mode else "-"
        lines.append(
            f"{node.cluster:<14} {node.node:<16} {node.role.value:<10} {mode:<10} "
            f"{node.node_id if node.node_id is not None else '-':>4} {node.version or '-':<8} "
            f"{'yes' if node.up else 'NO':<3} {node.scrape_duration_seconds * 1000:>6.1f}  {detail}"
        )
    for cluster in observation.health.clusters:
        controller = cluster.controller
        lines.append("")
        lines.append(
            f"{cluster.name}: mode {cluster.mode.value if cluster.mode else 'unknown'}, "
            + (f"migration phase {cluster.migration_phase}, " if cluster.migration_phase else "")
            + f"{cluster.active_controllers} active controller(s)"
            + (f", active {controller.node} (id {controller.node_id})" if controller.node else "")
            + (f", epoch {controller.epoch:g}" if controller.epoch is not None else "")
        )
        snapshot = observation.snapshot.cluster(cluster.name)
        quorum = snapshot.quorum if snapshot is not None else None
        by_quorum: dict[str, str] = {}
        if quorum is not None:
            lines.append(f"  quorum's view: {_quorum_summary(quorum)}")
            by_quorum = _quorum_by_node(quorum, snapshot.nodes if snapshot is not None else (), quorum.read_at)
        for broker in cluster.brokers:
            lag = "" if broker.metadata_lag_records is None else f" lag {broker.metadata_lag_records:g} records"
            flags = "".join(f" {flag}" for flag, on in (("STALE", broker.stale), ("FROZEN", broker.frozen)) if on)
            beside = f"  | quorum: {by_quorum[broker.node]}" if broker.node in by_quorum else ""
            lines.append(f"  {broker.node:<16} {broker.state.value:<12}{lag}{flags}  ({broker.evidence}){beside}")
    return "\n".join(lines) + "\n"


def _quorum_summary(quorum: QuorumView) -> str:
    if not quorum.up:
        return f"NO ANSWER ({quorum.error})"
    return f"leader {quorum.leader_id}, epoch {quorum.leader_epoch}, high watermark {quorum.high_watermark}"


def _quorum_by_node(quorum: QuorumView, nodes: Sequence[NodeSnapshot], now: float) -> dict[str, str]:
    """Node name -> what the quorum's leader says of that node's replica (describeMetadataQuorum)."""
    names = {node.node_id: node.node for node in nodes if node.node_id is not None}
    described = {}
    for replica in quorum.replicas:
        if replica.replica_id not in names:
            continue
        replica_lag = quorum.lag_records(replica)
        lag = "lag unknown" if replica_lag is None else f"lag {replica_lag} records"
        caught_up = (
            f", caught up {max(0.0, now - replica.last_caught_up_at):.1f}s ago"
            if replica.last_caught_up_at is not None
            else ", never caught up"
        )
        described[names[replica.replica_id]] = lag + caught_up
    for broker_id, fenced in (quorum.fenced or {}).items():
        if broker_id in names:
            described[names[broker_id]] = described.get(names[broker_id], "not a replica") + (
                ", FENCED" if fenced else ", unfenced"
            )
    return described


def cmd_probe(args: argparse.Namespace) -> int:
    settings = load_settings(args.config)
    check_java(settings)
    scraper = build_scraper(settings, build_client(settings, args.client))
    state = build_state(settings, scraper)
    discovery = build_discovery(settings, scraper, state)
    try:
        build_dns_watch(settings, discovery).refresh()  # the DNS names once, before the first round
        # no next round serves a late answer here, so each round waits as long as a read may run (the read
        # deadline): a cold Admin client's first quorum read can take longer than a round
        deadline = settings.scrape.read_deadline_seconds
        scraper.scrape_once(wait_seconds=deadline)
        if args.discover:
            sys.stdout.write(format_watch_list(scraper.targets, state.current(), discovery))
            return 0
        if discovery.rules:
            # the nodes the first round's answers named are read from the second
            scraper.scrape_once(wait_seconds=deadline)
        sys.stdout.write(format_probe(state.current()))
    finally:
        scraper.stop()
    return 0


def format_watch_list(targets: Sequence[Target], observation: Observation, discovery: NodeDiscovery) -> str:
    """What `ctlplane run` would read (node, role, id, JMX address, where it came from) and what the
    clusters name that it would not, with why: `probe --discover`."""
    found = {(name, w.node): w for name, state in discovery.found.items() for w in state.watched.values()}
    through_dns = {(name, label) for name, nodes in discovery.dns.items() for label in nodes}
    read = {(n.cluster, n.node): n for n in observation.snapshot.nodes()}
    lines = [f"{'cluster':<16} {'node':<24} {'role':<10} {'id':>6}  {'JMX address':<32} from"]
    for target in targets:
        watched = found.get((target.cluster, target.node))
        node = read.get((target.cluster, target.node))
        role = (watched.member.role if watched else node.role if node else target.role_hint).value
        known_id = target.node_id if target.node_id is not None else node.node_id if node else None
        node_id = "" if known_id is None else str(known_id)
        source = (
            "discovered (the cluster's answers)"
            if watched
            else "discovered (DNS)"
            if (target.cluster, target.node) in through_dns
            else "listed (nodes:)"
        )
        lines.append(
            f"{target.cluster:<16} {target.node:<24} {role:<10} {node_id:>6}  {target.endpoint.address:<32} {source}"
        )
    for name, state in discovery.found.items():
        for unwatched_id, unwatched in sorted(state.unwatched.items()):
            role = unwatched.member.role.value
            lines.append(
                f"{name:<16} {'-':<24} {role:<10} {unwatched_id:>6}  {'-':<32} not watched: {unwatched.reason}"
            )
    for cluster in observation.snapshot.clusters:
        quorum = cluster.quorum
        if quorum is not None and quorum.members_error is not None and not quorum.members:
            lines.append(f"{cluster.name}: the cluster did not say who is in it: {quorum.members_error}")
    return "\n".join(lines) + "\n"


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
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()} ({_client_version()})")
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
