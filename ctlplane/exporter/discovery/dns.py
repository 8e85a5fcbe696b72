"""DNS discovery's I/O edge: the nodes behind a name, as Kubernetes publishes a headless Service.

A headless Service gets one A/AAAA record per pod address, and per named port an SRV record
`_<port>._tcp.<service>.<namespace>.svc.<zone>` per pod whose target is the pod's own name (when the pod
sets `hostname` and `subdomain`, as Strimzi's and StatefulSet pods do). SRV is the form to use: the target's
first label (the pod name) names the node across reschedules, and the record carries the JMX port. A/AAAA
records give addresses only: each node is named by its address, and the port comes from the config.

What the names answered is handed to NodeDiscovery (answers.py), which keeps a node that stops
appearing (a crashed pod can leave the Service's endpoints) until there is evidence it left.
"""

from __future__ import annotations

import ipaddress
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import dns.exception
import dns.rdatatype
import dns.resolver

from ctlplane.exporter.discovery.answers import DnsNode

log = logging.getLogger(__name__)


class DnsError(Exception):
    """A name that did not resolve: one line, the name and what the resolver said."""


@dataclass(frozen=True)
class DnsName:
    """A name to resolve: SRV (nodes named by their targets, ports from the records) or A (every IPv4 and
    IPv6 address of the name, at `port`)."""

    name: str
    type: str  # "SRV" | "A"
    port: int | None = None  # A only


def _host_port(ip: str, port: int) -> str:
    return f"[{ip}]:{port}" if ipaddress.ip_address(ip).version == 6 else f"{ip}:{port}"


class DnsResolver:
    """Resolves DnsNames through the system's resolver (/etc/resolv.conf: the cluster's DNS in a pod) or
    the given name servers (`host` or `host:port`)."""

    def __init__(self, nameservers: Sequence[str] = (), timeout_seconds: float = 5.0) -> None:
        self._resolver = dns.resolver.Resolver(configure=not nameservers)
        if nameservers:
            ports = {host_port.rpartition(":")[0] or host_port: host_port for host_port in nameservers}
            self._resolver.nameservers = list(ports)
            self._resolver.nameserver_ports = {
                host: int(value.rpartition(":")[2]) for host, value in ports.items() if ":" in value
            }
        self._resolver.lifetime = timeout_seconds

    def _query(self, name: str, rdtype: str) -> dns.resolver.Answer | None:
        """The answer, None where the name exists with no record of that type; DnsError otherwise."""
        try:
            # a relative name takes the resolv.conf search list, as in a pod (`<ns>.svc.cluster.local` ...)
            return self._resolver.resolve(name, rdtype, search=True)
        except dns.resolver.NoAnswer:
            return None
        except dns.resolver.NXDOMAIN:
            raise DnsError(f"{name} {rdtype}: no such name") from None
        except (dns.exception.Timeout, dns.resolver.NoNameservers) as exc:
            raise DnsError(f"{name} {rdtype}: {exc}") from None
        except dns.exception.DNSException as exc:
            raise DnsError(f"{name} {rdtype}: {type(exc).__name__}: {exc}") from None

    def addresses(self, name: str) -> list[str]:
        found: list[str] = []
        for rdtype in ("A", "AAAA"):
            answer = self._query(name, rdtype)
            found += [record.address for record in answer or ()]
        if not found:
            raise DnsError(f"{name}: no A or AAAA record")
        return found

    def resolve(self, name: DnsName) -> list[DnsNode]:
        if name.type == "A":
            assert name.port is not None  # the config requires it
            return [DnsNode(ip, _host_port(ip, name.port)) for ip in sorted(self.addresses(name.name))]
        answer = self._query(name.name, "SRV")
        nodes = []
        for record in answer or ():
            target = record.target.to_text(omit_final_dot=True)
            # the first address: the pod's; the JMX client connects to it, as the target's name would
            nodes.append(DnsNode(target.split(".")[0], _host_port(self.addresses(target)[0], record.port)))
        return sorted(nodes, key=lambda node: node.label)


class DnsWatch:
    """Resolves each cluster's names (with its own resolver) every `interval_seconds`, in a thread of its
    own, and hands what they answered to `found(cluster, nodes)`. A name that fails keeps what it last
    answered (logged once per new error): a DNS outage must not make nodes look gone. A reload replaces
    `sources` and `interval_seconds` whole (`configure`)."""

    def __init__(
        self,
        sources: Mapping[str, tuple[DnsResolver, Sequence[DnsName]]],
        found: Callable[[str, Sequence[DnsNode]], None],
        interval_seconds: float = 30.0,
    ) -> None:
        self.sources = dict(sources)
        self.found = found
        self.interval_seconds = interval_seconds
        self.errors: dict[str, str] = {}  # name -> its last error, while it fails
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def refresh(self) -> None:
        """Resolve every name now: each cluster whose names all answered gets its nodes."""
        for cluster, (resolver, names) in self.sources.items():
            nodes: list[DnsNode] = []
            failed = False
            for name in names:
                try:
                    nodes += resolver.resolve(name)
                except DnsError as exc:
                    failed = True
                    if self.errors.get(name.name) != str(exc):
                        log.warning("cluster %s: DNS discovery keeps the nodes it had: %s", cluster, exc)
                    self.errors[name.name] = str(exc)
                    continue
                if self.errors.pop(name.name, None) is not None:
                    log.info("cluster %s: %s resolves again", cluster, name.name)
            if not failed:
                self.found(cluster, nodes)

    def configure(self, sources: Mapping[str, tuple[DnsResolver, Sequence[DnsName]]], interval_seconds: float) -> None:
        """A reload's names and interval, from the next resolution on."""
        self.sources, self.interval_seconds = dict(sources), interval_seconds

    def start(self) -> DnsWatch:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="dns-discovery", daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.refresh()
            except Exception:  # a bug here must not end discovery for good
                log.exception("DNS discovery round failed")
            self._stop.wait(self.interval_seconds)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
