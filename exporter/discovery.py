"""Which nodes to watch, from the cluster's own answers (README "Watching your own clusters").

Pure: the Admin client (exporter/kafka_admin.py) puts what the cluster said in the round's QuorumView
(`members`: describeCluster's nodes, the quorum's voters and observers); this module turns the answers into
the nodes to read. Kafka advertises no JMX port, so a node's JMX address comes from the operator's rule: a
template per role over the node's `{host}` (where the answer has one) and `{id}` (`{id+N}`: the id plus N,
for one host with a JMX port per node), and per-node overrides.

A node is never dropped because it stopped appearing: before Kafka 4.0 describeCluster leaves out a fenced
broker, the quorum's leader forgets an observer silent for 5 minutes and knows none after a failover
(shared/reference/kafka-mbeans.md, "Answered since"). A node that vanished from the answers is exactly the
node that needs watching, so once seen it stays watched, and the faults it has page as a listed node's do.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from exporter.catalog import Role
from exporter.model import FleetSnapshot, Member, merge_roles, merged
from exporter.scraper import Target

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
    name: str = "{role}-{id}"  # the `node` label of a discovered node

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
        role = member.role.value if member.role is not Role.UNKNOWN else "node"
        return self.name.replace("{role}", role).replace("{id}", str(member.node_id))


@dataclass(frozen=True)
class Watched:
    """A discovered node ctlplane reads: its label, JMX address and what the cluster said of it."""

    member: Member
    node: str
    address: str
    first_seen_at: float
    last_seen_at: float  # the last answer that named it


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

    def reconcile(
        self,
        answer: Iterable[Member],
        rule: JmxRule,
        static_ids: frozenset[int],
        static_addresses: frozenset[str],
        static_labels: frozenset[str],
        now: float,
    ) -> Discovered:
        """These nodes after one answer: every node named now or before, watched where the rule gives an
        address that no listed node already has. `static_ids`/`static_addresses`: the listed nodes' ids
        (where known) and JMX addresses, which are read as listed and never twice."""
        named = merged(answer)
        # a listed node is read as listed: once its id is known, a discovered copy of it goes
        watched = {node_id: found for node_id, found in self.watched.items() if node_id not in static_ids}
        unwatched: dict[int, Unwatched] = {}
        for node_id, member in named.items():
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
        return Discovered(MappingProxyType(watched), MappingProxyType(unwatched))


TargetFactory = Callable[[str, str, str, Role, int], Target]  # cluster, node label, JMX address, role, id


def _read_as(found: Discovered) -> dict[int, tuple[str, str, Role]]:
    """What the scraper reads of a cluster's discovered nodes: a change here is a change of targets."""
    return {node_id: (w.node, w.address, w.member.role) for node_id, w in found.watched.items()}


class NodeDiscovery:
    """A snapshot listener: after each round, the nodes the cluster's answers named, given to the scraper
    to read from the next round on (`apply`: Scraper.set_targets). The listed nodes come first, as listed."""

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
        self._lock = threading.Lock()  # a reload's update (its own thread) against the round's observe

    def update(self, listed: Sequence[Target], rules: Mapping[str, JmxRule]) -> None:
        """A reloaded config: its listed nodes and rules, applied at once. A cluster whose discovery was
        turned off or removed takes its discovered nodes with it (the operator's word, not an absence); a
        cluster whose rule changed finds its nodes again with the new rule from the next answer."""
        with self._lock:
            changed = {name for name, rule in rules.items() if self.rules.get(name) != rule}
            self.listed = tuple(listed)
            self.rules = dict(rules)
            self.found = {name: Discovered() if name in changed else self.found[name] for name in rules}
            self.apply(self.targets())

    def observe(self, snapshot: FleetSnapshot) -> None:
        with self._lock:
            self._observe(snapshot)

    def _observe(self, snapshot: FleetSnapshot) -> None:
        changed = False
        for name, rule in self.rules.items():
            cluster = snapshot.cluster(name)
            if cluster is None or cluster.quorum is None:
                continue
            listed = [t for t in self.listed if t.cluster == name]
            labels = {t.node for t in listed}
            ids = {t.node_id for t in listed if t.node_id is not None}
            ids |= {n.node_id for n in cluster.nodes if n.node in labels and n.node_id is not None}
            before = self.found[name]
            after = before.reconcile(
                cluster.quorum.members,
                rule,
                frozenset(ids),
                frozenset(t.endpoint.address for t in listed),
                frozenset(labels),
                snapshot.taken_at,
            )
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

    def targets(self) -> list[Target]:
        discovered = [
            self.make_target(name, found.node, found.address, found.member.role, node_id)
            for name, state in self.found.items()
            for node_id, found in sorted(state.watched.items())
        ]
        return [*self.listed, *discovered]
