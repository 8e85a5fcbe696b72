"""`ctlplane probe`: the rounds it reads until discovery has named and read the nodes, and its text (one
round's nodes, controllers and brokers, and what `--discover` would read)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Protocol

from ctlplane.exporter.discovery.answers import NodeDiscovery
from ctlplane.exporter.model import NodeSnapshot, QuorumView
from ctlplane.exporter.scraper import Target
from ctlplane.exporter.state import Observation

# At most this many rounds after the first: each names what the last one's answers named, or waits for an
# answer still due.
MAX_DISCOVERY_ROUNDS = 6


class ProbeRounds(Protocol):
    """What the probe's rounds need of the scraper."""

    @property
    def targets(self) -> Sequence[object]: ...

    @property
    def targets_pending(self) -> bool: ...

    def scrape_once(self, wait_seconds: float | None = None) -> object: ...


def read_until_named(
    scraper: ProbeRounds,
    *,
    discovering: bool,
    wait_seconds: float,
    answer_seconds: float,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """The probe's rounds: no next round serves a late answer here, so after the first, rounds go on while
    discovery has named nodes not read yet (always read: a listed node never read would say nothing), or,
    while no node is named at all, for up to three more `answer_seconds` (the read deadline, two quorum
    reads' time): a cold Admin client's first quorum answer on a loaded host can fail or come late several
    rounds running (a failed read ends its round at once), where a count of two rounds once ended before
    the answer came."""
    scraper.scrape_once(wait_seconds=wait_seconds)
    if not discovering:
        return
    give_up_at = clock() + 3 * answer_seconds
    for _ in range(MAX_DISCOVERY_ROUNDS):
        if scraper.targets_pending or (not scraper.targets and clock() < give_up_at):
            scraper.scrape_once(wait_seconds=wait_seconds)
        else:
            return


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
        if cluster.restart:
            answers = (f"{r.node} {'yes' if r.safe else f'wait ({r.reason})'}" for r in cluster.restart)
            lines.append(f"  may restart now: {'; '.join(answers)}")
    return "\n".join(lines) + "\n"


def _quorum_summary(quorum: QuorumView) -> str:
    if quorum.refused:
        return f"REFUSED ({quorum.error})"
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
