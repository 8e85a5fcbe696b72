"""How ctlplane's parts are built from the one typed config: the targets and their sources, discovery, the
scraper, the state and the HTTP app. The composition root's parts list (ctlplane/cli.py runs them); nothing
below the root imports it."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from typing import TYPE_CHECKING, Protocol

from ctlplane.exporter.catalog import Role
from ctlplane.exporter.config import AdminSecurity, ClusterConfig, JmxAuth, MetricsEndpointConfig, Settings
from ctlplane.exporter.config.file import ConfigError
from ctlplane.exporter.config.stores import store_type
from ctlplane.exporter.discovery.answers import JmxRule, NodeDiscovery
from ctlplane.exporter.discovery.dns import DnsName, DnsResolver, DnsWatch
from ctlplane.exporter.families import Family, dashboard_family
from ctlplane.exporter.fencing_watch import FencingWatch
from ctlplane.exporter.memory import MemoryReleaser, collect_garbage_per_round
from ctlplane.exporter.releases import CLIENT_VERSION
from ctlplane.exporter.scraper import CanarySource, QuorumSource, ScrapePlan, Scraper, Target
from ctlplane.exporter.shards import parse_shard
from ctlplane.exporter.sources.admin import client as kafka_admin
from ctlplane.exporter.sources.admin.security import ClientSecurity
from ctlplane.exporter.sources.base import NodeEndpoint, NodeSource, ReadTimeouts
from ctlplane.exporter.sources.endpoint.client import EndpointClient, MetricsEndpoint
from ctlplane.exporter.sources.endpoint.profiles import EndpointNaming, naming_from_file, profile
from ctlplane.exporter.sources.jmx.base import Endpoint, JmxClient, JmxTls
from ctlplane.exporter.sources.routed import Sources
from ctlplane.exporter.state import ExporterState

if TYPE_CHECKING:
    from fastapi import FastAPI

    from ctlplane.exporter.history.writer import HistoryWriter

log = logging.getLogger(__name__)


def ctlplane_version() -> str:
    try:
        return package_version("ctlplane")
    except PackageNotFoundError:
        return "dev"


def client_version_text() -> str:
    carried = kafka_admin.packaged_client()
    return f"Kafka client {CLIENT_VERSION}" + ("" if carried else ", not packaged")


def _endpoint(settings: Settings, cluster: ClusterConfig, address: str) -> NodeEndpoint:
    if cluster.metrics is not None:
        return _metrics_endpoint(cluster.metrics, address)
    auth = settings.jmx_for(cluster)
    password = auth.password()
    host, _, port = address.rpartition(":")
    return Endpoint(
        host,
        int(port),
        auth.username,
        password.get_secret_value() if password else None,
        auth.ssl,
        auth.lookup_over_tls,
        _jmx_tls(auth),
    )


def _jmx_tls(auth: JmxAuth) -> JmxTls | None:
    """The cluster's own JMX trust and client key (tls_routes.py); None: the JVM's default trust."""
    trust = auth.truststore or auth.ca_file
    if trust is None and auth.keystore is None:
        return None
    trust_password, key_password = auth.tls_passwords()
    return JmxTls(
        str(trust) if trust is not None else None,
        trust_password.get_secret_value() if trust_password is not None else None,
        str(auth.keystore) if auth.keystore is not None else None,
        key_password.get_secret_value() if key_password is not None else None,
    )


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
        str(metrics.cert_file) if metrics.cert_file is not None else None,
        str(metrics.key_file) if metrics.key_file is not None else None,
        str(metrics.bearer_token_file) if metrics.bearer_token_file is not None else None,
        str(metrics.key_password_file) if metrics.key_password_file is not None else None,
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
        self.settings = settings  # a reload makes a new factory (NodeDiscovery.configure), never changes this

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
        timeout_seconds=settings.scrape.timeout_seconds, page_timeout_seconds=settings.scrape.page_timeout_seconds
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

    # A node that answers every call just in time is abandoned after two scrape timeouts (its worker is then
    # free again after about three).
    return JPypeJmxClient(
        timeout_seconds=rmi_timeout_seconds(scrape.timeout_seconds),
        read_deadline_seconds=scrape.read_deadline_seconds,
        max_heap=scrape.jvm_max_heap,
    )


def build_quorum_sources(
    settings: Settings,
    kept: Mapping[str, QuorumSource] | None = None,
    before: Settings | None = None,
) -> dict[str, QuorumSource]:
    """A QuorumReader per cluster with bootstrap_servers or bootstrap_controllers (the JVM must be up:
    build the JPype client first). On a reload, `kept` (the running sources) and `before` (their settings):
    a cluster whose addresses, security and timeout are unchanged keeps its reader and its Admin client."""
    from ctlplane.exporter.sources.admin.client import QuorumReader

    install_krb5_conf(settings)
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
        sources[cluster.name] = QuorumReader(
            cluster.name,
            cluster.bootstrap_controllers or cluster.bootstrap_servers,
            controllers=bool(cluster.bootstrap_controllers),
            timeout_seconds=timeout,
            security=admin_client_security(cluster),
        )
    return sources


def install_krb5_conf(settings: Settings) -> None:
    """The JVM's one krb5.conf, merged from every GSSAPI cluster's `kerberos.krb5_conf` (kerberos.merge_krb5_confs),
    in place before any of them logs in (the JVM must be up); nothing where no cluster uses GSSAPI. Files that
    disagree on a realm are refused by check-config; here (a file changed since) the first file's wins, said."""
    from ctlplane.exporter.sources.admin.kerberos import Krb5ConfError, load_krb5_conf, merge_krb5_confs

    confs = []
    for cluster in settings.clusters:
        if cluster.admin is not None and (kerberos := cluster.admin.kerberos) is not None:
            try:
                confs.append((f"cluster {cluster.name}", load_krb5_conf(kerberos.krb5_conf)))
            except Krb5ConfError as exc:
                log.error("cluster %s: its krb5.conf is left out of the JVM's: %s", cluster.name, exc)
    if not confs:
        return
    merged = merge_krb5_confs(confs)
    for conflict in merged.conflicts:
        log.warning("krb5.conf: %s; the first is kept", conflict)
    kafka_admin.use_krb5_conf(merged.text)


def admin_client_security(cluster: ClusterConfig) -> ClientSecurity | None:
    """The Admin client's security settings for `cluster`, made again from its files when one changes (a rotated
    password, certificate, store, keytab or client secret), or None for plaintext."""
    if cluster.admin is None:
        return None
    return ClientSecurity(lambda: admin_security(cluster) or {}, cluster.admin.secret_files())


def admin_security(cluster: ClusterConfig) -> dict[str, str] | None:
    """The Admin client's security settings for `cluster` (its `admin` section), or None for plaintext."""
    from ctlplane.exporter.sources.admin.client import AwsIamLogin, KerberosLogin, OAuthLogin, security_properties

    if cluster.admin is None:
        return None
    password = cluster.admin.password()
    certificate = cluster.admin.client_certificate()
    key_password = cluster.admin.key_password()
    truststore, keystore = _admin_stores(cluster.admin)
    oauth = None
    if (credentials := cluster.admin.oauth) is not None:
        secret = credentials.client_secret()
        oauth = OAuthLogin(
            credentials.token_endpoint_url,
            credentials.client_id,
            secret.get_secret_value() if secret is not None else None,
            credentials.scope,
        )
    kerberos = None
    if (keytab := cluster.admin.kerberos) is not None:
        kerberos = KerberosLogin(keytab.principal, str(keytab.keytab_file), keytab.service_name)
    aws_iam = None
    if (iam := cluster.admin.aws_iam) is not None:
        aws_iam = AwsIamLogin(iam.profile, iam.role_arn, iam.role_session_name, iam.sts_region)
    return security_properties(
        cluster.admin.security_protocol,
        cluster.admin.sasl_mechanism,
        cluster.admin.username,
        password.get_secret_value() if password is not None else None,
        ca_file=str(cluster.admin.ca_file) if cluster.admin.ca_file is not None else None,
        certificate=(certificate[0], certificate[1].get_secret_value()) if certificate is not None else None,
        key_password=key_password.get_secret_value() if key_password is not None else None,
        truststore=truststore,
        keystore=keystore,
        oauth=oauth,
        kerberos=kerberos,
        aws_iam=aws_iam,
    )


def _admin_stores(admin: AdminSecurity) -> tuple[kafka_admin.JavaStore | None, kafka_admin.JavaStore | None]:
    """The Admin client's JKS/PKCS12 trust and key stores, their passwords read now (ValueError naming a file
    that cannot be read), each store's type told from its file."""
    trust_password, key_password = admin.tls_passwords()
    stores = []
    for path, password in ((admin.truststore, trust_password), (admin.keystore, key_password)):
        secret = password.get_secret_value() if password is not None else None
        stores.append(kafka_admin.JavaStore(str(path), store_type(path), secret) if path is not None else None)
    return stores[0], stores[1]


def build_canaries(
    settings: Settings, kept: Mapping[str, CanarySource] | None = None, before: Settings | None = None
) -> dict[str, CanarySource]:
    """A started MetadataCanary per cluster with `canary` set (the JVM must be up). On a reload, a cluster
    whose canary, addresses and security are unchanged keeps its canary (and what it measured)."""
    from ctlplane.exporter.sources.admin.canary import MetadataCanary

    install_krb5_conf(settings)
    old = {c.name: c for c in before.clusters} if before is not None else {}
    canaries: dict[str, CanarySource] = {}
    for cluster in settings.clusters:
        if cluster.canary is None:
            continue
        previous = old.get(cluster.name)
        if (
            kept is not None
            and cluster.name in kept
            and previous is not None
            and before is not None
            and _canary_settings(previous, before) == _canary_settings(cluster, settings)
        ):
            canaries[cluster.name] = kept[cluster.name]
            continue
        canaries[cluster.name] = MetadataCanary(
            cluster.name,
            tuple(cluster.bootstrap_servers),
            topic_prefix=cluster.canary.topic_prefix,
            interval_seconds=cluster.canary.interval_seconds,
            timeout_seconds=max(1.0, settings.scrape.timeout_seconds),
            security=admin_client_security(cluster),
        ).start()
    return canaries


def _canary_settings(cluster: ClusterConfig, settings: Settings) -> tuple[object, ...]:
    # everything MetadataCanary is built from: its timeout is the scrape's, as the quorum reader's is
    return (cluster.canary, cluster.bootstrap_servers, cluster.admin, settings.scrape.timeout_seconds)


def admin_only(settings: Settings) -> frozenset[str]:
    """The clusters watched through the Admin API alone (ClusterConfig.admin_only)."""
    return frozenset(cluster.name for cluster in settings.clusters if cluster.admin_only)


def _quorum_settings(cluster: ClusterConfig, settings: Settings) -> tuple[object, ...]:
    return (cluster.bootstrap_servers, cluster.bootstrap_controllers, cluster.admin, settings.scrape.timeout_seconds)


def scrape_plan(settings: Settings) -> ScrapePlan:
    """The rounds' pace and the node reads' timeouts of a config (Scraper.configure)."""
    scrape = settings.scrape
    return ScrapePlan(scrape.interval_seconds, ReadTimeouts(scrape.timeout_seconds, scrape.page_timeout_seconds))


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
        page_interval_seconds=settings.scrape.page_interval_seconds,
        page_timeout_seconds=settings.scrape.page_timeout_seconds,
        admin_only=admin_only(settings),
        canaries=build_canaries(settings),
    )
    return scraper


def build_fencing_watch(settings: Settings, scraper: Scraper) -> FencingWatch:
    """The active controllers' fencing gauges read between rounds, waking the scraper on a change."""
    return FencingWatch(
        scraper.latest,
        lambda: scraper.targets,
        scraper.client,
        scraper.wake,
        poll_seconds=settings.scrape.fencing_poll_seconds,
    )


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
    state.subscribe(MemoryReleaser())
    return state


def build_history_writer(settings: Settings) -> HistoryWriter | None:
    """The Parquet history's writer, not started, where the config keeps history."""
    if settings.history is None:
        return None
    from ctlplane.exporter.history.writer import HistoryWriter

    history = settings.history
    return HistoryWriter(
        history.path,
        history.flush_seconds,
        history.retention_days,
        history.max_bytes,
        max_buffered_rows=history.max_buffered_rows,
        compact_after_seconds=history.compact_after_seconds,
    )


class Reloader(Protocol):
    """What the app serves POST /-/reload and its self-metrics with (ctlplane/reload.py ConfigReload, which
    wires through this module: named here by what it does, so the two import in one direction)."""

    def __call__(self) -> str | None: ...

    def families(self) -> list[Family]: ...


def build_app(
    settings: Settings,
    scraper: Scraper,
    state: ExporterState,
    discovery: NodeDiscovery,
    reload: Reloader | None = None,
    writer: HistoryWriter | None = None,
    clock: Callable[[], float] = time.time,
) -> FastAPI:
    """The exporter's HTTP app over the running parts (the dashboard is mounted on it afterwards)."""
    from ctlplane.exporter.http.app import create_app

    public_url = settings.dashboard.public_url if settings.dashboard.enabled else None
    dashboard = [dashboard_family(public_url)] if public_url is not None else []
    return create_app(
        state.current,
        # read per request: the interval of the scraper's plan, which a reload configures, is the one it judges by
        interval_seconds=lambda: scraper.plan.interval_seconds,
        version=ctlplane_version(),
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


def needs_java(settings: Settings | None) -> bool:
    """Whether reading these clusters needs a JVM: remote JMX (every cluster not read from its nodes' metrics
    endpoints) and Kafka's Admin client (bootstrap_servers / bootstrap_controllers) run in one. None: the
    local clusters `run` starts without a config, Java processes themselves."""
    if settings is None:
        return True
    return any(c.metrics is None or c.bootstrap_servers or c.bootstrap_controllers for c in settings.clusters)
