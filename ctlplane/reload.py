"""SIGHUP and POST /-/reload: the config file read again and applied to the running exporter's parts."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ctlplane.exporter.config import Settings
from ctlplane.exporter.config.file import ConfigError, load_settings
from ctlplane.exporter.discovery.answers import NodeDiscovery
from ctlplane.exporter.discovery.dns import DnsWatch
from ctlplane.exporter.families import Family, reload_families
from ctlplane.exporter.fencing_watch import FencingWatch
from ctlplane.exporter.scraper import Scraper
from ctlplane.exporter.state import ExporterState
from ctlplane.wiring import (
    DiscoveredTargets,
    admin_only,
    build_canaries,
    build_quorum_sources,
    build_targets,
    discovery_rules,
    dns_interval,
    dns_sources,
    scrape_plan,
    sharded,
)

log = logging.getLogger(__name__)


RESTART_ONLY = (
    "http",
    "history",
    "dashboard",
    "scrape.workers",
    "scrape.client",
    "scrape.jvm_max_heap",
    "scrape.slow_interval_seconds",
    "scrape.page_interval_seconds",
)


class ConfigReload:
    """SIGHUP and POST /-/reload: the config file read again, applied to the running exporter.

    As Prometheus: a config that fails its checks changes nothing (the running one stays) and is counted
    (`ctlplane_config_last_reload_successful 0`); one that passes replaces the clusters, their listed nodes,
    discovery rules, quorum readers (a cluster whose addresses did not change keeps its Admin client),
    intervals and health thresholds. What survives: each kept node's counters, identity and JMX connection,
    the health model's memory (failovers, lifecycle), the dashboard's trail and the history buffers.

    Where each setting it applies goes, each part changed only through its own `configure` or `set_*`
    (tests/unit/cli/test_reload.py, a test each): `clusters` and `jmx` (its TLS material too: each endpoint's
    own) -> the scraper's targets, discovery's rules and targets (NodeDiscovery.configure with a
    DiscoveredTargets of the new config), the quorum readers, the DNS watch; `scrape.interval_seconds` -> the
    scraper's plan (its pace, the slow tier's due time), which /healthz reads (build_app);
    `scrape.fencing_poll_seconds` -> the fencing watch; `scrape.timeout_seconds` and `page_timeout_seconds` ->
    the scraper's plan (its wait per round, and its node sources' timeouts: the metrics endpoints' HTTP timeout
    and page deadline; not the JPype JMX client's, whose RMI timeouts are the JVM's, fixed at its start), the
    quorum readers' Admin deadline, the DNS resolvers' lifetime; `health` -> the state's thresholds.
    RESTART_ONLY lists what it does not apply."""

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
        fencing: FencingWatch | None = None,
    ) -> None:
        self.path = path
        self.settings = settings
        self.scraper = scraper
        self.discovery = discovery
        self.state = state
        self.shard = shard
        self.clock = clock
        self.dns = dns
        self.fencing = fencing
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
            self.scraper.set_canaries(build_canaries(new, self.scraper.canaries, old))
            # each part changed through its own configure (tests/unit/cli/test_reload.py holds that nothing
            # here assigns another object's attribute)
            if (plan := scrape_plan(new)) != self.scraper.plan:
                self.scraper.configure(plan)
            self.state.configure(new.health.thresholds())
            self.discovery.configure(build_targets(new), discovery_rules(new), DiscoveredTargets(new))
            if self.dns is not None:
                self.dns.configure(dns_sources(new), dns_interval(new))
            if self.fencing is not None:
                self.fencing.configure(new.scrape.fencing_poll_seconds)
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
