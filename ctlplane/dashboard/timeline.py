"""Control-plane events derived from consecutive observations: a pure function of the window."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from ctlplane.exporter.health import BrokerHealth, ClusterHealth, Lifecycle
from ctlplane.exporter.health.model import QuorumMember, VoterSet
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
    ROLL = "rolling-restart"  # brokers stopped cleanly and back ACTIVE one after another (`rolls`)


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
            self._seen_up = {(c.name, b.node) for c in clusters for b in c.brokers if b.up}
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
                if old is None or key not in self._seen_up:
                    if new.up:
                        self._seen_up.add(key)
                        self._since[key] = at
                    continue
                events.extend(_broker_events(at, after.name, old, new, self._since.get(key, self._start)))
                if old.state is not new.state:
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
    """One broker stopped cleanly and back ACTIVE: its events, the first entering SHUTDOWN, the last ACTIVE."""

    node: str
    events: tuple[Event, ...]

    @property
    def start(self) -> float:
        return self.events[0].at

    @property
    def end(self) -> float:
        return self.events[-1].at


def _restarts(events: Sequence[Event]) -> list[_Restart]:
    """Each broker's clean restarts among `events` (oldest first): from entering SHUTDOWN (a controlled
    shutdown: a stop on purpose) to being ACTIVE again, every event of it between. A broker that leaves ACTIVE
    any other way, or is not back, is no restart."""
    open_: dict[tuple[str, str], list[Event]] = {}
    done: list[_Restart] = []
    for event in events:
        if event.node is None or event.state is None:
            continue
        key = (event.cluster, event.node)
        if key in open_:
            open_[key].append(event)
            if event.state is Lifecycle.ACTIVE:
                done.append(_Restart(event.node, tuple(open_.pop(key))))
        elif event.state is Lifecycle.SHUTDOWN:
            open_[key] = [event]
    return sorted(done, key=lambda restart: restart.start)


def _roll_event(cluster: str, roll: Sequence[_Restart], absorbed: Sequence[Event]) -> Event:
    nodes = ", ".join(restart.node for restart in roll)
    downs = [restart.end - restart.start for restart in roll]
    elections = sum(1 for event in absorbed if event.kind is EventKind.ELECTION)
    detail = (
        f"{nodes}: {len(roll)} brokers one at a time over {roll[-1].end - roll[0].start:.0f} s "
        f"(each {min(downs):.0f}-{max(downs):.0f} s out of ACTIVE)"
    )
    if elections:
        detail += f"; {elections} controller election{'s' if elections > 1 else ''}"
    return Event(roll[0].start, cluster, None, EventKind.ROLL, detail)


def rolls(events: Sequence[Event]) -> list[Event]:
    """`events` (newest first, as the pages show them) with each rolling restart as one event: two or more
    brokers of a cluster restarted cleanly one at a time, each stopped after the one before was ACTIVE again
    and within ROLL_GAP_SECONDS of it. Their events, and the controller elections between the roll's first
    stop and last return, are in the one; anything else in that time (a fencing of another broker, no active
    controller) stays on its own."""
    ordered = sorted(events, key=lambda event: event.at)
    absorbed: set[int] = set()
    added: list[Event] = []
    for cluster in dict.fromkeys(event.cluster for event in ordered):
        runs: list[list[_Restart]] = []
        for restart in _restarts([e for e in ordered if e.cluster == cluster]):
            last = runs[-1][-1] if runs else None
            if last is not None and last.end <= restart.start <= last.end + ROLL_GAP_SECONDS:
                runs[-1].append(restart)
            else:
                runs.append([restart])
        for roll in (run for run in runs if len(run) >= 2):
            inside = [
                e
                for e in ordered
                if e.cluster == cluster and e.kind is EventKind.ELECTION and roll[0].start <= e.at <= roll[-1].end
            ]
            absorbed.update(id(e) for restart in roll for e in restart.events)
            absorbed.update(id(e) for e in inside)
            added.append(_roll_event(cluster, roll, inside))
    kept = [event for event in events if id(event) not in absorbed]
    return sorted([*kept, *added], key=lambda event: event.at, reverse=True)
