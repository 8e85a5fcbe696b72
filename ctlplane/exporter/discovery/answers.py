"""Which nodes to watch, from the cluster's own answers (docs/configuration.md "Watching your own clusters").

Pure: the Admin client (ctlplane/exporter/sources/admin/client.py) puts what the cluster said in the round's QuorumView
(`members`: describeCluster's nodes, the quorum's voters and observers); this module turns the answers into
the nodes to read. Kafka advertises no JMX port, so a node's JMX address comes from the operator's rule: a
template per role over the node's `{host}` (where the answer has one) and `{id}` (`{id+N}`: the id plus N,
for one host with a JMX port per node), and per-node overrides.

A node is never dropped because it stopped appearing: before Kafka 4.0 describeCluster leaves out a fenced
broker, the quorum's leader forgets an observer silent for 5 minutes and knows none after a failover
(shared/reference/kafka-mbeans.md, "Answered since"). A node that vanished from the answers is exactly the
node that needs watching, so once seen it stays watched, and the faults it has page as a listed node's do.
It leaves only on positive evidence that it left the cluster (departures.py), held for the rule's
`forget_after_seconds`, with its JMX silent all along: each departure is logged and counted.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING

from ctlplane.exporter.catalog import Role
from ctlplane.exporter.discovery.departures import Departure, RegistrationsSeen, departures
from ctlplane.exporter.families import Family, discovery_families
from ctlplane.exporter.health import Lifecycle
from ctlplane.exporter.model import DEFAULT_NODE_NAME, ClusterSnapshot, Member, member_label, merge_roles, merged
from ctlplane.exporter.scraper import Target

if TYPE_CHECKING:
    from ctlplane.exporter.state import Observation

log = logging.getLogger(__name__)

# {host}, {id}, {id+N}, {id-N}
_PLACEHOLDER = re.compile(r"\{(host|id)(?:([+-])(\d+))?\}")


class TemplateError(ValueError):
    """A JMX address template that cannot be filled in (unknown placeholder, no port)."""


def check_template(template: str) -> str:
    """`template` if every brace is a known placeholder and it ends in a port; else TemplateError."""
    rest = _PLACEHOLDER.sub("", template)
    if "{" in rest or "}" in rest:
        raise TemplateError(f"{template!r}: the placeholders are {{host}}, {{id}} and {{id+N}}")
    if ":" not in template:
        raise TemplateError(f"{template!r}: needs a port (host:port, e.g. {{host}}:9999)")
    if "{host" in template and "{host}" not in template:
        raise TemplateError(f"{template!r}: {{host}} takes no offset")
    return template


def fill(template: str, node_id: int, host: str | None) -> str | None:
    """The address `template` gives for this node; None if it needs the host and the answer had none."""
    if host is None and "{host}" in template:
        return None

    def value(match: re.Match[str]) -> str:
        if match.group(1) == "host":
            return host or ""
        offset = int(match.group(3) or 0)
        return str(node_id - offset if match.group(2) == "-" else node_id + offset)

    return _PLACEHOLDER.sub(value, template)


@dataclass(frozen=True)
class JmxRule:
    """How to reach a discovered node's JMX: a template per role, and addresses by node id."""

    broker: str | None = None
    controller: str | None = None
    overrides: Mapping[int, str] = field(default_factory=lambda: MappingProxyType({}))
    name: str = DEFAULT_NODE_NAME  # the `node` label of a discovered node
    # how long the evidence that a node left the cluster must hold before it is no longer watched
    forget_after_seconds: float = 300.0

    def finds_as(self, other: JmxRule) -> bool:
        """Whether both rules find every node at the same address under the same name."""
        return replace(self, forget_after_seconds=other.forget_after_seconds) == other

    def template(self, member: Member) -> str | None:
        # a combined node is one JVM: the broker's template, else the controller's
        return self.controller if member.role is Role.CONTROLLER else self.broker or self.controller

    def address(self, member: Member) -> str | None:
        """The JMX address of `member`, or None if no rule gives one (a node ctlplane knows but cannot read)."""
        if member.node_id in self.overrides:
            return self.overrides[member.node_id]
        template = self.template(member)
        return None if template is None else fill(template, member.node_id, member.host)

    def why_no_address(self, member: Member) -> str:
        if self.template(member) is None:
            return f"no JMX address rule for a {member.role.value}"
        return "the cluster's answers give no host for it, and its JMX address rule needs {host}"

    def label(self, member: Member) -> str:
        return member_label(member, self.name)


@dataclass(frozen=True)
class Watched:
    """A discovered node ctlplane reads: its label, JMX address and what the cluster said of it."""

    member: Member
    node: str
    address: str
    first_seen_at: float
    last_seen_at: float  # the last answer that named it
    leaving_since: float | None = None  # the first round of the evidence that it left (`departures`)


@dataclass(frozen=True)
class DnsNode:
    """A node a DNS name answered with (ctlplane/exporter/discovery/dns.py): its `node` label and JMX address."""

    label: str
    address: str  # host:port ([v6]:port)


@dataclass(frozen=True)
class DnsFound:
    """A node found through DNS, kept while absent from the answers as a node found in Kafka's are."""

    node: DnsNode
    answered: bool  # in the names' latest answer
    leaving_since: float | None = None


@dataclass(frozen=True)
class Forgotten:
    """A discovered node no longer watched, and the evidence it left the cluster on."""

    watched: Watched
    departure: Departure
    evidence: str


def _held(since: float | None, now: float, rule: JmxRule) -> tuple[float, bool]:
    """The first round of a node's departure evidence (`since`, or now if this is it), and whether it has held
    for the rule's forget_after_seconds: then the node is no longer watched."""
    first = now if since is None else since
    return first, now - first >= rule.forget_after_seconds


@dataclass(frozen=True)
class Unwatched:
    """A node the cluster names that ctlplane does not read, and why."""

    member: Member
    reason: str


@dataclass(frozen=True)
class Discovered:
    """One cluster's discovered nodes: kept across rounds (never dropped for being absent from an answer)."""

    watched: Mapping[int, Watched] = field(default_factory=lambda: MappingProxyType({}))
    unwatched: Mapping[int, Unwatched] = field(default_factory=lambda: MappingProxyType({}))
    forgotten: tuple[Forgotten, ...] = ()  # the nodes this reconcile stopped watching (log, counter)
    # ids forgotten on evidence: a leader's memory of them as observers (Member.current False) does not
    # bring them back; a current mention does
    left: frozenset[int] = frozenset()
    # what the controllers' metrics held, round by round (set by NodeDiscovery after each reconcile)
    registrations: RegistrationsSeen = field(default_factory=RegistrationsSeen)

    def _kept(
        self, rule: JmxRule, static_ids: frozenset[int], now: float, departed: Mapping[int, tuple[Departure, str]]
    ) -> tuple[dict[int, Watched], list[Forgotten]]:
        """The nodes watched before that stay watched, and those forgotten now: gone for the rule's
        forget_after_seconds, round after round."""
        watched: dict[int, Watched] = {}
        forgotten: list[Forgotten] = []
        for node_id, found in self.watched.items():
            if node_id in static_ids:
                continue  # a listed node is read as listed: once its id is known, a discovered copy of it goes
            if node_id not in departed:
                watched[node_id] = replace(found, leaving_since=None) if found.leaving_since is not None else found
                continue
            since, held = _held(found.leaving_since, now, rule)
            leaving = replace(found, leaving_since=since)
            if held:
                forgotten.append(Forgotten(leaving, *departed[node_id]))
            else:
                watched[node_id] = leaving
        return watched, forgotten

    def reconcile(
        self,
        answer: Iterable[Member],
        rule: JmxRule,
        static_ids: frozenset[int],
        static_addresses: frozenset[str],
        static_labels: frozenset[str],
        now: float,
        departed: Mapping[int, tuple[Departure, str]] = MappingProxyType({}),
    ) -> Discovered:
        """These nodes after one answer: every node named now or before, watched where the rule gives an
        address that no listed node already has. `static_ids`/`static_addresses`: the listed nodes' ids
        (where known) and JMX addresses, which are read as listed and never twice. `departed`: this round's
        evidence that a node left (`departures`); one whose evidence held for the rule's
        forget_after_seconds, round after round, is no longer watched."""
        named = merged(answer)
        watched, forgotten = self._kept(rule, static_ids, now, departed)
        unwatched: dict[int, Unwatched] = {}
        left = set(self.left) | {gone.watched.member.node_id for gone in forgotten}
        for node_id, member in named.items():
            if node_id in left:
                if not member.current:
                    continue
                left.discard(node_id)  # back in the cluster
            before = watched.get(node_id)
            if before is not None:
                role = merge_roles(before.member.role, member.role)
                kept = replace(before.member, role=role, host=member.host or before.member.host)
                watched[node_id] = replace(before, member=kept, last_seen_at=now)
                continue
            if node_id in static_ids:
                continue
            address = rule.address(member)
            if address is None:
                unwatched[node_id] = Unwatched(member, rule.why_no_address(member))
                continue
            if address in static_addresses:
                continue
            label = rule.label(member)
            if label in static_labels:
                unwatched[node_id] = Unwatched(member, f"its name {label!r} is a listed node's (set node_name)")
                continue
            watched[node_id] = Watched(member, label, address, now, now)
        # a node unwatched before and not named now stays listed as unwatched: it was not seen to leave
        for node_id, before_unwatched in self.unwatched.items():
            if node_id not in named and node_id not in watched and node_id not in static_ids:
                unwatched.setdefault(node_id, before_unwatched)
        return Discovered(
            MappingProxyType(watched),
            MappingProxyType(unwatched),
            tuple(forgotten),
            frozenset(left),
            self.registrations,
        )


TargetFactory = Callable[[str, str, str, Role, int | None], Target]  # cluster, node label, JMX address, role, id


def _read_as(found: Discovered) -> dict[int, tuple[str, str, Role]]:
    """What the scraper reads of a cluster's discovered nodes: a change here is a change of targets."""
    return {node_id: (w.node, w.address, w.member.role) for node_id, w in found.watched.items()}


class NodeDiscovery:
    """An observation subscriber (ExporterState.subscribe): after each round, the nodes the cluster's answers
    named, given to the scraper to read from the next round on (`apply`: Scraper.set_targets). The listed
    nodes come first, as listed. The health of the round tells a controlled shutdown (`departures`)."""

    def __init__(
        self,
        listed: Sequence[Target],
        rules: Mapping[str, JmxRule],
        make_target: TargetFactory,
        apply: Callable[[Sequence[Target]], None],
    ) -> None:
        self.listed = tuple(listed)
        self.rules = dict(rules)
        self.make_target = make_target
        self.apply = apply
        self.found: dict[str, Discovered] = {name: Discovered() for name in rules}
        self.dns: dict[str, dict[str, DnsFound]] = {}  # cluster -> node label -> what DNS answered
        self.forgotten_total: dict[tuple[str, Departure], int] = {}
        self._lock = threading.Lock()  # a reload's update (its own thread) against the round's observe

    def configure(self, listed: Sequence[Target], rules: Mapping[str, JmxRule], make_target: TargetFactory) -> None:
        """A reloaded config: its listed nodes, rules and how a found node is read (its cluster's credentials
        in the new config), applied at once. A cluster whose discovery was
        turned off or removed takes its discovered nodes with it (the operator's word, not an absence); a
        cluster whose rule changed finds its nodes again with the new rule from the next answer."""
        with self._lock:
            changed = {
                name for name, rule in rules.items() if name not in self.rules or not self.rules[name].finds_as(rule)
            }
            self.listed = tuple(listed)
            self.rules = dict(rules)
            self.make_target = make_target
            self.found = {name: Discovered() if name in changed else self.found[name] for name in rules}
            self.dns = {name: found for name, found in self.dns.items() if name in rules}
            self.apply(self.targets())

    def set_dns(self, cluster: str, nodes: Sequence[DnsNode]) -> None:
        """What a cluster's DNS names answered now (dns.py's DnsWatch): each node named is watched; a
        node named before and not now is kept, read, until `_prune_dns` has evidence that it left."""
        with self._lock:
            if cluster not in self.rules:
                return  # a reload took its discovery away while the names were resolving
            before = self.dns.get(cluster, {})
            after = {label: replace(found, answered=False) for label, found in before.items()}
            for node in nodes:
                if node.label in before and before[node.label].node != node:
                    log.info("cluster %s: %s now at %s (DNS)", cluster, node.label, node.address)
                elif node.label not in before:
                    log.info("cluster %s: discovered %s through DNS, JMX at %s", cluster, node.label, node.address)
                after[node.label] = DnsFound(node, answered=True)
            self.dns[cluster] = after
            if {f.node for f in before.values()} != {f.node for f in after.values()}:
                self.apply(self.targets())

    def observe(self, observation: Observation) -> None:
        with self._lock:
            self._observe(observation)

    def _observe(self, observation: Observation) -> None:
        snapshot = observation.snapshot
        changed = False
        for name, rule in self.rules.items():
            cluster = snapshot.cluster(name)
            if cluster is None:
                continue
            health = observation.health.cluster(name)
            shut_down = frozenset(
                b.node for b in (health.brokers if health is not None else ()) if b.state is Lifecycle.SHUTDOWN
            )
            before = self.found[name]
            registrations = before.registrations.after(cluster)
            unregistered = registrations.unregistered
            changed = self._prune_dns(name, cluster, shut_down, unregistered, rule, snapshot.taken_at) or changed
            if cluster.quorum is None:
                self.found[name] = replace(before, registrations=registrations)
                continue
            listed = [t for t in self.listed if t.cluster == name]
            # nodes found through DNS are read as listed ones: Kafka's answers do not add them twice
            through_dns = [found.node for found in self.dns.get(name, {}).values()]
            labels = {t.node for t in listed} | {node.label for node in through_dns}
            ids = {t.node_id for t in listed if t.node_id is not None}
            ids |= {n.node_id for n in cluster.nodes if n.node in labels and n.node_id is not None}
            addresses = {t.endpoint.address for t in listed} | {node.address for node in through_dns}
            after = before.reconcile(
                cluster.quorum.members,
                rule,
                frozenset(ids),
                frozenset(addresses),
                frozenset(labels),
                snapshot.taken_at,
                departures(cluster, before.watched, shut_down, unregistered),
            )
            after = replace(after, registrations=registrations)
            for gone in after.forgotten:
                self._forgot(name, gone, rule)
            for node_id in after.watched.keys() - before.watched.keys():
                found = after.watched[node_id]
                log.info(
                    "cluster %s: discovered %s %d as %s, JMX at %s",
                    name,
                    found.member.role.value,
                    node_id,
                    found.node,
                    found.address,
                )
            self.found[name] = after
            changed = changed or _read_as(before) != _read_as(after)
        # the targets are rebuilt (credentials and all) only when what is read changed, not every round
        if changed:
            self.apply(self.targets())

    def _forgot(self, cluster: str, gone: Forgotten, rule: JmxRule) -> None:
        key = (cluster, gone.departure)
        self.forgotten_total[key] = self.forgotten_total.get(key, 0) + 1
        held = "" if gone.departure is Departure.MOVED else f", for {rule.forget_after_seconds:g}s"
        log.warning(
            "cluster %s: %s (%s %d, JMX at %s) left the cluster and is no longer watched: %s%s",
            cluster,
            gone.watched.node,
            gone.watched.member.role.value,
            gone.watched.member.node_id,
            gone.watched.address,
            gone.evidence,
            held,
        )

    def _prune_dns(
        self,
        name: str,
        cluster: ClusterSnapshot,
        shut_down: frozenset[str],
        unregistered: Mapping[int, str],
        rule: JmxRule,
        now: float,
    ) -> bool:
        """Drop the DNS-found nodes of `name` that left: gone from the names' answer and either their node id
        answers at another node the names still give (a pod rescheduled to a new address, named by it), or
        `departures` holds for them as for a node found in Kafka's answers. Whether any was dropped."""
        found = self.dns.get(name)
        if not found:
            return False
        read = {node.node: node for node in cluster.nodes}
        answering: dict[int, str] = {}  # node id -> the label it answers under, in the latest answer
        absent: dict[int, Watched] = {}
        for label, entry in found.items():
            node = read.get(label)
            if node is None or node.node_id is None:
                continue
            if entry.answered and node.up:
                answering[node.node_id] = label
            elif not entry.answered:
                absent[node.node_id] = Watched(Member(node.node_id, node.role), label, entry.node.address, now, now)
        evidence = departures(cluster, absent, shut_down, unregistered)
        kept = dict(found)
        for node_id, watched in absent.items():
            entry = found[watched.node]
            if node_id in answering:
                gone = Forgotten(watched, Departure.MOVED, f"node id {node_id} answers as {answering[node_id]} now")
            elif node_id in evidence:
                since, held = _held(entry.leaving_since, now, rule)
                if not held:
                    kept[watched.node] = replace(entry, leaving_since=since)
                    continue
                gone = Forgotten(watched, *evidence[node_id])
            else:
                kept[watched.node] = replace(entry, leaving_since=None)
                continue
            del kept[watched.node]
            self._forgot(name, gone, rule)
        self.dns[name] = kept
        return len(kept) != len(found)

    def _dns_targets(self, name: str) -> list[Target]:
        return [
            self.make_target(name, label, found.node.address, Role.UNKNOWN, None)
            for label, found in sorted(self.dns.get(name, {}).items())
        ]

    def families(self) -> list[Family]:
        with self._lock:
            discovered = {name: len(state.watched) + len(self.dns.get(name, ())) for name, state in self.found.items()}
            forgotten = {(name, reason.value): count for (name, reason), count in self.forgotten_total.items()}
        return discovery_families(discovered, forgotten)

    def targets(self) -> list[Target]:
        through_dns = [target for name in self.found for target in self._dns_targets(name)]
        discovered = [
            self.make_target(name, found.node, found.address, found.member.role, node_id)
            for name, state in self.found.items()
            for node_id, found in sorted(state.watched.items())
        ]
        return [*self.listed, *through_dns, *discovered]
