"""Control-plane events derived from consecutive observations: a pure function of the window."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from ctlplane.exporter.catalog import Role
from ctlplane.exporter.health import BrokerHealth, ClusterHealth, Lifecycle
from ctlplane.exporter.health.model import QuorumMember, VoterSet
from ctlplane.exporter.model import ClusterSnapshot, NodeSnapshot
from ctlplane.exporter.state import Observation


class EventKind(StrEnum):
    ELECTION = "election"  # the active controller changed identity or epoch
    NO_CONTROLLER = "no-controller"  # no node claims to be the active controller
    SPLIT_BRAIN = "split-brain"  # several nodes claim it at once
    CONTROLLER_RESTORED = "controller-restored"  # exactly one claimant again
    FENCED = "fenced"
    UNFENCED = "unfenced"
    STATE = "state"  # any other lifecycle change (INITIAL, SHUTDOWN, ...)
    UNREACHABLE = "unreachable"
    REACHABLE = "reachable"
    LAG_STARTED = "lag-started"  # metadata turned stale
    LAG_ENDED = "lag-ended"
    VOTER_ADDED = "voter-added"  # the quorum's voter set gained a voter (KIP-853 add-controller)
    VOTER_REMOVED = "voter-removed"  # and lost one (remove-controller)
    ROLL = "rolling-restart"  # nodes restarted one after another (`rolls`)


# How bad an event is, for its colour: the start of trouble is bad, its end is good.
EVENT_SEVERITY = {
    EventKind.ELECTION: "warn",
    EventKind.NO_CONTROLLER: "critical",
    EventKind.SPLIT_BRAIN: "critical",
    EventKind.CONTROLLER_RESTORED: "ok",
    EventKind.FENCED: "critical",
    EventKind.UNFENCED: "ok",
    EventKind.STATE: "warn",
    EventKind.UNREACHABLE: "critical",
    EventKind.REACHABLE: "ok",
    EventKind.LAG_STARTED: "warn",
    EventKind.LAG_ENDED: "ok",
    EventKind.VOTER_ADDED: "ok",
    EventKind.VOTER_REMOVED: "warn",
    EventKind.ROLL: "ok",
}


@dataclass(frozen=True)
class Event:
    at: float  # taken_at of the first observation that showed it
    cluster: str
    node: str | None  # None for cluster-wide events
    kind: EventKind
    detail: str
    # a broker's event: the state it entered (what `rolls` reads), not part of what the event says
    state: Lifecycle | None = field(default=None, compare=False)
    # a controller-only node's UNREACHABLE or REACHABLE: its read went away or came back (controllers have no
    # lifecycle of their own to say more); what `rolls` reads as a controller's restart
    controller: bool = field(default=False, compare=False)


def _epoch(value: float | None) -> str:
    return "" if value is None else f" (epoch {value:g})"


def _controller_events(at: float, before: ClusterHealth, after: ClusterHealth) -> list[Event]:
    events = []
    old, new = before.controller, after.controller
    if len(new.claimants) > 1 and len(old.claimants) <= 1:
        events.append(
            Event(at, after.name, None, EventKind.SPLIT_BRAIN, f"{len(new.claimants)} active controllers: "
                  + ", ".join(new.claimants))
        )  # fmt: skip
    elif not new.claimants and old.claimants:
        events.append(Event(at, after.name, None, EventKind.NO_CONTROLLER, f"no active controller (was {old.node})"))
    elif len(new.claimants) == 1 and len(old.claimants) != 1:
        events.append(Event(at, after.name, None, EventKind.CONTROLLER_RESTORED, f"one active controller: {new.node}"))
    if new.node is not None and new.failovers_total > old.failovers_total:
        events.append(
            Event(
                at, after.name, new.node, EventKind.ELECTION, f"{old.node or 'none'} -> {new.node}{_epoch(new.epoch)}"
            )
        )
    return events


def _voter_events(at: float, before: ClusterHealth, after: ClusterHealth) -> list[Event]:
    """The voters that joined or left the voter set between two rounds that read it the same way (a round
    read from the controllers' JMX, between two read from the quorum, names no directories: no event)."""
    old, new = before.voter_set, after.voter_set
    if old is None or new is None or old.source != new.source:
        return []

    def keyed(members: tuple[QuorumMember, ...]) -> dict[tuple[object, ...], QuorumMember]:
        # a voter is its (id, directory id) pair (KIP-853): a label that changes (found by discovery) is none
        return {(m.node_id, m.directory_id) if m.node_id is not None else (m.node,): m for m in members}

    was, now = keyed(old.voters), keyed(new.voters)
    events = []
    for key in sorted(now.keys() - was.keys(), key=str):
        member = now[key]
        events.append(
            Event(at, after.name, member.node, EventKind.VOTER_ADDED, _voter_detail("voter added", member, new))
        )
    for key in sorted(was.keys() - now.keys(), key=str):
        member = was[key]
        events.append(
            Event(at, after.name, member.node, EventKind.VOTER_REMOVED, _voter_detail("voter removed", member, new))
        )
    return events


def _voter_detail(what: str, member: QuorumMember, voters: VoterSet) -> str:
    directory = f", directory {member.directory_id}" if member.directory_id else ""
    return f"{what}: id {member.node_id}{directory}; {len(voters.voters)} voters now"


def _broker_events(at: float, cluster: str, old: BrokerHealth, new: BrokerHealth, since: float) -> list[Event]:
    events = []
    if old.state is not new.state:
        # reachable again only when its JMX answers: an unreachable broker the controller then fences is
        # fenced, not back
        back = old.state is Lifecycle.UNREACHABLE and new.up
        if new.state is Lifecycle.UNREACHABLE:
            events.append(Event(at, cluster, new.node, EventKind.UNREACHABLE, new.evidence, new.state))
        elif back:
            events.append(
                Event(at, cluster, new.node, EventKind.REACHABLE,
                      f"{new.state} after {at - since:.0f} s unreachable ({new.evidence})", new.state)
            )  # fmt: skip
        if new.state is Lifecycle.FENCED:
            events.append(Event(at, cluster, new.node, EventKind.FENCED, new.evidence, new.state))
        elif old.state is Lifecycle.FENCED and new.state is Lifecycle.ACTIVE:
            events.append(
                Event(
                    at,
                    cluster,
                    new.node,
                    EventKind.UNFENCED,
                    f"fenced for {at - since:.0f} s ({new.evidence})",
                    new.state,
                )
            )
        elif new.state is not Lifecycle.UNREACHABLE and not back:
            events.append(
                Event(at, cluster, new.node, EventKind.STATE, f"{old.state} -> {new.state} ({new.evidence})", new.state)
            )
    if new.stale and not old.stale:
        lag = "" if new.metadata_lag_records is None else f"{new.metadata_lag_records:g} records"
        if new.metadata_lag_seconds is not None:
            lag += f"{', ' if lag else ''}{new.metadata_lag_seconds:.1f} s"
        events.append(
            Event(at, cluster, new.node, EventKind.LAG_STARTED,
                  ("metadata frozen" if new.frozen else "metadata stale") + (f": {lag}" if lag else ""))
        )  # fmt: skip
    elif old.stale and not new.stale:
        events.append(Event(at, cluster, new.node, EventKind.LAG_ENDED, "metadata caught up"))
    return events


def _controller_node_event(at: float, cluster: str, old: NodeSnapshot, new: NodeSnapshot, since: float) -> list[Event]:
    """A controller-only node whose read went away or came back (a broker's own state says this for it)."""
    if old.up and not new.up:
        detail = f"controller not answering: {new.error}" if new.error else "controller not answering"
        return [Event(at, cluster, new.node, EventKind.UNREACHABLE, detail, controller=True)]
    if new.up and not old.up:
        detail = f"controller answering again after {at - since:.0f} s"
        return [Event(at, cluster, new.node, EventKind.REACHABLE, detail, controller=True)]
    return []


def _controllers(snapshot: ClusterSnapshot | None) -> list[NodeSnapshot]:
    return [] if snapshot is None else [n for n in snapshot.nodes if n.role is Role.CONTROLLER]


class TimelineFold:
    """Events from observations fed one at a time, oldest first: `timeline` over a window, or a `Trail`
    folding each round as it comes without keeping the rounds.

    The first observation is the baseline: a state already in place when the window starts is shown by
    the tables, not as an event. So is first contact: a node read for the first time (the exporter has
    just started) is not "reachable again", and the first controller seen is not "restored". Clusters or
    brokers that appear or vanish between observations produce no events.
    """

    def __init__(self) -> None:
        self._previous: Observation | None = None
        # (cluster, node) -> when the broker entered its current state, for durations in the detail text
        self._since: dict[tuple[str, str], float] = {}
        self._seen_up: set[tuple[str, str]] = set()
        self._seen_controller: set[str] = set()
        self._start = 0.0

    def accepts(self, observation: Observation) -> bool:
        """False for the empty pre-scrape observation, a round already folded, or one older than the last."""
        previous = self._previous
        snapshot = observation.snapshot
        return snapshot.sequence > 0 and (
            previous is None
            or (snapshot.sequence != previous.snapshot.sequence and snapshot.taken_at >= previous.snapshot.taken_at)
        )

    def add(self, observation: Observation) -> list[Event]:
        """The events between the previous observation and this one, oldest first."""
        previous, self._previous = self._previous, observation
        if previous is None:
            clusters = observation.health.clusters
            self._seen_up = {(c.name, b.node) for c in clusters for b in c.brokers if b.up} | {
                (n.cluster, n.node) for c in observation.snapshot.clusters for n in _controllers(c) if n.up
            }
            self._seen_controller = {c.name for c in clusters if c.controller.node}
            self._start = observation.snapshot.taken_at
            return []
        events: list[Event] = []
        at = observation.snapshot.taken_at
        for after in observation.health.clusters:
            before = previous.health.cluster(after.name)
            if before is None:
                continue
            if after.name in self._seen_controller:
                events.extend(_controller_events(at, before, after))
            elif after.controller.node is not None:
                self._seen_controller.add(after.name)
            events.extend(_voter_events(at, before, after))
            for new in after.brokers:
                old = before.broker(new.node)
                key = (after.name, new.node)
                if self._first_contact(key, old is not None, new.up, at) or old is None:
                    continue
                events.extend(_broker_events(at, after.name, old, new, self._since.get(key, self._start)))
                if old.state is not new.state:
                    self._since[key] = at
            events.extend(self._controller_node_events(at, previous, observation, after.name))
        return events

    def _first_contact(self, key: tuple[str, str], read_before: bool, up: bool, at: float) -> bool:
        """Whether this round is ctlplane's first contact with a node (not read the round before, or never
        seen up): no event then, and once it is up it is known from `at` on."""
        if read_before and key in self._seen_up:
            return False
        if up:
            self._seen_up.add(key)
            self._since[key] = at
        return True

    def _controller_node_events(
        self, at: float, previous: Observation, observation: Observation, cluster: str
    ) -> list[Event]:
        was = previous.snapshot.cluster(cluster)
        events: list[Event] = []
        for new in _controllers(observation.snapshot.cluster(cluster)):
            old = was.node(new.node) if was is not None else None
            key = (cluster, new.node)
            if self._first_contact(key, old is not None, new.up, at) or old is None:
                continue
            events.extend(_controller_node_event(at, cluster, old, new, self._since.get(key, self._start)))
            if old.up is not new.up:
                self._since[key] = at
        return events


def timeline(observations: Sequence[Observation]) -> list[Event]:
    """Every control-plane event in the window (see `TimelineFold`), newest first."""
    fold = TimelineFold()
    events = [event for observation in observations for event in fold.add(observation)]
    events.sort(key=lambda e: e.at, reverse=True)
    return events


# A rolling restart's nodes follow each other within this long (the next node stopped after the last is back)
ROLL_GAP_SECONDS = 300.0


@dataclass(frozen=True)
class _Restart:
    """One broker stopped cleanly and back ACTIVE (its events, the first entering SHUTDOWN, the last ACTIVE), or
    one controller not answering and back (its two events)."""

    node: str
    events: tuple[Event, ...]
    controller: bool = False

    @property
    def start(self) -> float:
        return self.events[0].at

    @property
    def end(self) -> float:
        return self.events[-1].at


def _restarts(events: Sequence[Event]) -> list[_Restart]:
    """Each node's restarts among `events` (oldest first). A broker's: from entering SHUTDOWN (a controlled
    shutdown: a stop on purpose) to being ACTIVE again, every event of it between; a broker that leaves ACTIVE
    any other way, or is not back, is no restart. A controller's: from its read going away to its coming back;
    a controller shows nothing that tells a clean stop from a crash (a leader resigning on shutdown and one
    dying both read as an election), so its time away is what the roll's detail says of it."""
    open_: dict[tuple[str, str], list[Event]] = {}
    done: list[_Restart] = []
    for event in events:
        if event.node is None:
            continue
        key = (event.cluster, event.node)
        if event.controller:
            if event.kind is EventKind.UNREACHABLE:
                open_[key] = [event]
            elif event.kind is EventKind.REACHABLE and key in open_:
                done.append(_Restart(event.node, (*open_.pop(key), event), controller=True))
            continue
        if event.state is None:
            continue
        if key in open_:
            open_[key].append(event)
            if event.state is Lifecycle.ACTIVE:
                done.append(_Restart(event.node, tuple(open_.pop(key))))
        elif event.state is Lifecycle.SHUTDOWN:
            open_[key] = [event]
    return sorted(done, key=lambda restart: restart.start)


def _roll_event(cluster: str, roll: Sequence[_Restart], absorbed: Sequence[Event]) -> Event:
    nodes = ", ".join(restart.node for restart in roll)
    brokers = [restart.end - restart.start for restart in roll if not restart.controller]
    controllers = [restart.end - restart.start for restart in roll if restart.controller]
    elections = sum(1 for event in absorbed if event.kind is EventKind.ELECTION)

    def spread(downs: list[float]) -> str:
        return f"{min(downs):.0f}-{max(downs):.0f} s"

    counted = " and ".join(
        f"{len(downs)} {what}{'s' if len(downs) > 1 else ''}"
        for what, downs in (("broker", brokers), ("controller", controllers))
        if downs
    )
    if not controllers:
        how = f"each {spread(brokers)} out of ACTIVE"
    elif not brokers:
        how = f"each {spread(controllers)} not answering"
    else:
        how = f"brokers {spread(brokers)} out of ACTIVE, controllers {spread(controllers)} not answering"
    overlapping = any(later.start < earlier.end for earlier, later in itertools.combinations(roll, 2))
    pace = "in turn, never two brokers or two controllers at once," if overlapping else "one at a time"
    detail = f"{nodes}: {counted} {pace} over {_end(roll) - roll[0].start:.0f} s ({how})"
    if elections:
        detail += f"; {elections} controller election{'s' if elections > 1 else ''}"
    return Event(roll[0].start, cluster, None, EventKind.ROLL, detail)


def _end(roll: Sequence[_Restart]) -> float:
    return max(restart.end for restart in roll)


def _joins(roll: Sequence[_Restart], restart: _Restart) -> bool:
    """`restart` goes on `roll`: it began within ROLL_GAP_SECONDS of the roll's last return, and after every
    node of its own role in the roll was back. A controller may go while a broker starts (the quorum does not
    wait for brokers, nor `GET /api/v1/restart`), never two brokers or two controllers at once."""
    same_role = [earlier for earlier in roll if earlier.controller is restart.controller]
    return all(earlier.end <= restart.start for earlier in same_role) and restart.start <= _end(roll) + ROLL_GAP_SECONDS


def rolls(events: Sequence[Event]) -> list[Event]:
    """`events` (newest first, as the pages show them) with each rolling restart as one event: two or more
    nodes of a cluster restarted in turn (`_restarts`: brokers cleanly; `_joins`). Their events, and the
    controller elections between the roll's first stop and last return, are in the one; anything else in
    that time (a fencing of another broker, no active controller) stays on its own."""
    ordered = sorted(events, key=lambda event: event.at)
    absorbed: set[int] = set()
    added: list[Event] = []
    for cluster in dict.fromkeys(event.cluster for event in ordered):
        runs: list[list[_Restart]] = []
        for restart in _restarts([e for e in ordered if e.cluster == cluster]):
            if runs and _joins(runs[-1], restart):
                runs[-1].append(restart)
            else:
                runs.append([restart])
        for roll in (run for run in runs if len(run) >= 2):
            inside = [
                e
                for e in ordered
                if e.cluster == cluster and e.kind is EventKind.ELECTION and roll[0].start <= e.at <= _end(roll)
            ]
            absorbed.update(id(e) for restart in roll for e in restart.events)
            absorbed.update(id(e) for e in inside)
            added.append(_roll_event(cluster, roll, inside))
    kept = [event for event in events if id(event) not in absorbed]
    return sorted([*kept, *added], key=lambda event: event.at, reverse=True)
