from __future__ import annotations

from dataclasses import replace

from ctlplane.dashboard.timeline import Event, EventKind, rolls, timeline
from ctlplane.exporter.catalog import Role
from ctlplane.exporter.health import BrokerHealth, ControllerView, Lifecycle
from ctlplane.exporter.health.model import QuorumMember, VoterSet
from ctlplane.exporter.model import ClusterSnapshot
from ctlplane.exporter.state import Observation
from tests.unit.dashboard.builders import T0, broker, cluster_health, controller, node, observation

EMPTY = ClusterSnapshot("c1", ())


def _obs(at: float, *brokers: BrokerHealth, view: ControllerView | None = None) -> Observation:
    return observation(((EMPTY, cluster_health(brokers=brokers, view=view)),), at=at)


def test_no_observations_and_one_observation_have_no_events() -> None:
    assert timeline([]) == []
    assert timeline([_obs(T0, broker("b1", Lifecycle.FENCED))]) == []  # the baseline is not an event


def test_fencing_then_unfencing() -> None:
    window = [
        _obs(T0, broker("b1")),
        _obs(T0 + 5, broker("b1", Lifecycle.FENCED)),
        _obs(T0 + 10, broker("b1", Lifecycle.FENCED)),
        _obs(T0 + 20, broker("b1")),
    ]
    assert timeline(window) == [
        Event(T0 + 20, "c1", "b1", EventKind.UNFENCED, "fenced for 15 s (controller BrokerRegistrationState=30)"),
        Event(T0 + 5, "c1", "b1", EventKind.FENCED, "controller BrokerRegistrationState=10"),
    ]


def test_unreachable_spell() -> None:
    window = [_obs(T0, broker("b1")), _obs(T0 + 5, broker("b1", Lifecycle.UNREACHABLE)), _obs(T0 + 35, broker("b1"))]
    assert timeline(window) == [
        Event(
            T0 + 35,
            "c1",
            "b1",
            EventKind.REACHABLE,
            "ACTIVE after 30 s unreachable (controller BrokerRegistrationState=30)",
        ),
        Event(T0 + 5, "c1", "b1", EventKind.UNREACHABLE, "JMX: connection refused"),
    ]


def test_an_unreachable_broker_the_controller_fences_is_fenced_not_reachable_again() -> None:
    # a hung broker: its JMX times out (UNREACHABLE), then the controller fences it while it still does not answer
    hung = replace(broker("b1", Lifecycle.FENCED), up=False, evidence="controller registration state FENCED")
    window = [_obs(T0, broker("b1")), _obs(T0 + 5, broker("b1", Lifecycle.UNREACHABLE)), _obs(T0 + 15, hung)]
    assert timeline(window) == [
        Event(T0 + 15, "c1", "b1", EventKind.FENCED, "controller registration state FENCED"),
        Event(T0 + 5, "c1", "b1", EventKind.UNREACHABLE, "JMX: connection refused"),
    ]


def test_lag_episode() -> None:
    window = [
        _obs(T0, broker("b1")),
        _obs(T0 + 5, broker("b1", stale=True, lag_records=5000.0, lag_seconds=20.0)),
        _obs(T0 + 10, broker("b1", stale=True, frozen=True)),
        _obs(T0 + 15, broker("b1")),
    ]
    assert timeline(window) == [
        Event(T0 + 15, "c1", "b1", EventKind.LAG_ENDED, "metadata caught up"),
        Event(T0 + 5, "c1", "b1", EventKind.LAG_STARTED, "metadata stale: 5000 records, 20.0 s"),
    ]


def test_election_split_brain_and_loss_of_controller() -> None:
    window = [
        _obs(T0, view=controller(("ctl-1",), epoch=5.0)),
        _obs(T0 + 5, view=controller(("ctl-2",), epoch=6.0, failovers=1, last_failover_at=T0 + 5)),
        _obs(T0 + 10, view=controller(("ctl-1", "ctl-2"), epoch=6.0, failovers=1)),
        _obs(T0 + 15, view=controller((), epoch=6.0, failovers=1)),
        _obs(T0 + 20, view=controller(("ctl-3",), epoch=7.0, failovers=2)),
    ]
    assert timeline(window) == [
        Event(T0 + 20, "c1", None, EventKind.CONTROLLER_RESTORED, "one active controller: ctl-3"),
        Event(T0 + 20, "c1", "ctl-3", EventKind.ELECTION, "none -> ctl-3 (epoch 7)"),
        Event(T0 + 15, "c1", None, EventKind.NO_CONTROLLER, "no active controller (was ctl-2)"),
        Event(T0 + 10, "c1", None, EventKind.SPLIT_BRAIN, "2 active controllers: ctl-1, ctl-2"),
        Event(T0 + 5, "c1", "ctl-2", EventKind.ELECTION, "ctl-1 -> ctl-2 (epoch 6)"),
    ]


def test_other_lifecycle_changes_and_vanishing_brokers() -> None:
    window = [
        _obs(T0, broker("b1"), broker("b2", node_id=2)),
        _obs(T0 + 5, broker("b1", Lifecycle.SHUTDOWN)),  # b2 left the config: no event
    ]
    [event] = timeline(window)
    assert (event.kind, event.node, event.detail) == (
        EventKind.STATE,
        "b1",
        "ACTIVE -> SHUTDOWN (controller BrokerRegistrationState=30)",
    )


def test_first_contact_is_not_an_event() -> None:
    """The exporter has just started: nodes are read for the first time and a controller appears."""
    window = [
        _obs(T0, broker("b1", Lifecycle.UNREACHABLE), view=controller(())),
        _obs(T0 + 5, broker("b1"), view=controller(("ctl-1",))),
        _obs(T0 + 10, broker("b1", Lifecycle.FENCED), view=controller(())),
    ]
    assert [(e.kind, e.node) for e in timeline(window)] == [
        (EventKind.NO_CONTROLLER, None),
        (EventKind.FENCED, "b1"),
    ]


def _voters(*members: tuple[int, str, bool], source: str = "quorum") -> VoterSet:
    return VoterSet(
        tuple(QuorumMember(f"controller-{i}", i, Role.CONTROLLER, d if source == "quorum" else None, v)
              for i, d, v in members),
        source,
    )  # fmt: skip


def _quorum_obs(at: float, voters: VoterSet | None) -> Observation:
    return observation(((EMPTY, replace(cluster_health(), voter_set=voters)),), at=at)


def test_a_controller_added_then_another_removed_are_voter_events_and_a_source_change_is_none() -> None:
    three = _voters((1, "d1", True), (2, "d2", True), (3, "d3", True), (4, "d4", False))
    four = _voters((1, "d1", True), (2, "d2", True), (3, "d3", True), (4, "d4", True))
    less = _voters((1, "d1", True), (2, "d2", True), (3, "d3", False), (4, "d4", True))
    window = [
        _quorum_obs(T0, three),
        _quorum_obs(T0 + 15, four),
        _quorum_obs(T0 + 30, None),  # neither the quorum nor a controller said: no event either way
        _quorum_obs(T0 + 45, four),
        _quorum_obs(T0 + 60, _voters((1, "", True), (2, "", True), (3, "", True), (4, "", True), source="jmx")),
        _quorum_obs(T0 + 75, less),
    ]
    assert timeline(window) == [
        Event(T0 + 15, "c1", "controller-4", EventKind.VOTER_ADDED, "voter added: id 4, directory d4; 4 voters now"),
    ]
    window = [_quorum_obs(T0, four), _quorum_obs(T0 + 15, less)]
    assert timeline(window) == [
        Event(
            T0 + 15, "c1", "controller-3", EventKind.VOTER_REMOVED, "voter removed: id 3, directory d3; 3 voters now"
        ),
    ]
    # a voter whose disk was replaced is a new (id, directory) pair: the old one left, the new one joined
    window = [
        _quorum_obs(T0, four),
        _quorum_obs(T0 + 15, _voters((1, "d1", True), (2, "d2", True), (3, "x3", True), (4, "d4", True))),
    ]
    assert [(e.kind, e.node) for e in timeline(window)] == [
        (EventKind.VOTER_ADDED, "controller-3"),
        (EventKind.VOTER_REMOVED, "controller-3"),
    ]


def _rolled(*steps: tuple[float, dict[str, Lifecycle], int]) -> list[Observation]:
    """Rounds of brokers b1-b3 (each ACTIVE unless `states` says) with the controller's failover count."""
    names = ("b1", "b2", "b3")
    return [
        _obs(at, *(broker(n, states.get(n, Lifecycle.ACTIVE)) for n in names), view=controller(("ctl-1",), failovers=f))
        for at, states, f in steps
    ]


STOP, GONE, START = Lifecycle.SHUTDOWN, Lifecycle.UNREACHABLE, Lifecycle.INITIAL


def test_a_rolling_restart_is_one_event_with_its_brokers_in_order_and_the_election_in_it() -> None:
    window = _rolled(
        (T0, {}, 0),
        (T0 + 15, {"b2": STOP}, 0),
        (T0 + 30, {"b2": GONE}, 1),  # the active controller moved meanwhile
        (T0 + 45, {"b2": START}, 1),
        (T0 + 60, {}, 1),
        (T0 + 75, {"b1": STOP}, 1),
        (T0 + 90, {"b1": GONE}, 1),
        (T0 + 105, {}, 1),
        (T0 + 120, {"b3": STOP}, 1),
        (T0 + 135, {}, 1),
    )
    events = rolls(timeline(window))
    assert events == [
        Event(
            T0 + 15,
            "c1",
            None,
            EventKind.ROLL,
            "b2, b1, b3: 3 brokers one at a time over 120 s (each 15-45 s out of ACTIVE); 1 controller election",
        )
    ]


def test_overlapping_stops_a_crash_or_one_restart_are_no_roll() -> None:
    overlapping = _rolled(
        (T0, {}, 0),
        (T0 + 15, {"b1": STOP}, 0),
        (T0 + 30, {"b1": STOP, "b2": STOP}, 0),
        (T0 + 45, {"b2": STOP}, 0),
        (T0 + 60, {}, 0),
    )
    crash_then_restart = _rolled(
        (T0, {}, 0), (T0 + 15, {"b1": GONE}, 0), (T0 + 30, {}, 0), (T0 + 45, {"b2": STOP}, 0), (T0 + 60, {}, 0)
    )
    one = _rolled((T0, {}, 0), (T0 + 15, {"b1": STOP}, 0), (T0 + 30, {}, 0))
    for window in (overlapping, crash_then_restart, one):
        events = timeline(window)
        assert rolls(events) == events and EventKind.ROLL not in {e.kind for e in events}


def test_restarts_far_apart_are_two_and_what_else_happened_stays_beside_the_roll() -> None:
    far = _rolled(
        (T0, {}, 0), (T0 + 15, {"b1": STOP}, 0), (T0 + 30, {}, 0), (T0 + 400, {"b2": STOP}, 0), (T0 + 415, {}, 0)
    )
    assert EventKind.ROLL not in {e.kind for e in rolls(timeline(far))}
    fenced = _rolled(
        (T0, {}, 0),
        (T0 + 15, {"b1": STOP}, 0),
        (T0 + 30, {"b3": Lifecycle.FENCED}, 0),  # another broker fenced during the roll: its own event
        (T0 + 45, {"b2": STOP, "b3": Lifecycle.FENCED}, 0),
        (T0 + 60, {"b3": Lifecycle.FENCED}, 0),
    )
    kinds = [e.kind for e in rolls(timeline(fenced))]
    assert kinds.count(EventKind.ROLL) == 1 and EventKind.FENCED in kinds


def _full_roll(*steps: tuple[float, dict[str, Lifecycle], frozenset[str], int]) -> list[Observation]:
    """Rounds of brokers b1-b2 (ACTIVE unless `states` says) and controller-only nodes ctl-1..3 (answering
    unless named in the set), with the controller's failover count."""
    observations = []
    for at, states, down, failovers in steps:
        controllers = tuple(
            node(f"ctl-{i}", Role.CONTROLLER, node_id=100 + i, up=f"ctl-{i}" not in down) for i in (1, 2, 3)
        )
        health = cluster_health(
            brokers=tuple(broker(n, states.get(n, Lifecycle.ACTIVE)) for n in ("b1", "b2")),
            view=controller(("ctl-1",), failovers=failovers),
        )
        observations.append(observation(((ClusterSnapshot("c1", controllers), health),), at=at))
    return observations


NONE: frozenset[str] = frozenset()


def test_a_roll_of_brokers_then_controllers_is_one_event_with_every_node_in_order() -> None:
    window = _full_roll(
        (T0, {}, NONE, 0),
        (T0 + 15, {"b1": STOP}, NONE, 0),
        (T0 + 30, {}, NONE, 0),
        (T0 + 45, {"b2": STOP}, NONE, 0),
        (T0 + 60, {}, NONE, 0),
        (T0 + 75, {}, frozenset({"ctl-2"}), 0),
        (T0 + 90, {}, NONE, 0),
        (T0 + 105, {}, frozenset({"ctl-1"}), 1),  # the leader went: an election, in the roll
        (T0 + 135, {}, NONE, 1),
    )
    assert rolls(timeline(window)) == [
        Event(
            T0 + 15,
            "c1",
            None,
            EventKind.ROLL,
            "b1, b2, ctl-2, ctl-1: 2 brokers and 2 controllers one at a time over 120 s "
            "(brokers 15-15 s out of ACTIVE, controllers 15-30 s not answering); 1 controller election",
        )
    ]


def test_a_controller_not_answering_is_its_own_events_and_alone_no_roll_but_two_in_turn_are() -> None:
    one = _full_roll((T0, {}, NONE, 0), (T0 + 15, {}, frozenset({"ctl-3"}), 0), (T0 + 45, {}, NONE, 0))
    events = timeline(one)
    assert [(e.kind, e.node, e.detail) for e in events] == [
        (EventKind.REACHABLE, "ctl-3", "controller answering again after 30 s"),
        (EventKind.UNREACHABLE, "ctl-3", "controller not answering: connection refused"),
    ]
    assert rolls(events) == events
    two = _full_roll(
        (T0, {}, NONE, 0),
        (T0 + 15, {}, frozenset({"ctl-3"}), 0),
        (T0 + 30, {}, NONE, 0),
        (T0 + 45, {}, frozenset({"ctl-2"}), 0),
        (T0 + 60, {}, NONE, 0),
    )
    assert [(e.kind, e.detail) for e in rolls(timeline(two))] == [
        (EventKind.ROLL, "ctl-3, ctl-2: 2 controllers one at a time over 45 s (each 15-15 s not answering)")
    ]


def test_a_controller_first_read_after_the_window_starts_is_not_answering_again() -> None:
    window = _full_roll((T0, {}, frozenset({"ctl-1"}), 0), (T0 + 15, {}, NONE, 0))
    assert timeline(window) == []


def test_a_controller_restarted_while_a_broker_starts_is_in_the_roll_but_two_controllers_at_once_are_not() -> None:
    # GET /api/v1/restart lets a controller go while a broker is still starting: the quorum does not need it
    window = _full_roll(
        (T0, {}, NONE, 0),
        (T0 + 15, {"b1": STOP}, NONE, 0),
        (T0 + 30, {}, NONE, 0),
        (T0 + 45, {"b2": STOP}, NONE, 0),
        (T0 + 60, {"b2": START}, frozenset({"ctl-1"}), 0),
        (T0 + 75, {}, NONE, 0),
    )
    assert [(e.kind, e.detail) for e in rolls(timeline(window))] == [
        (
            EventKind.ROLL,
            "b1, b2, ctl-1: 2 brokers and 1 controller in turn, never two brokers or two controllers at once, "
            "over 60 s "
            "(brokers 15-30 s out of ACTIVE, controllers 15-15 s not answering)",
        )
    ]
    together = _full_roll(
        (T0, {}, NONE, 0),
        (T0 + 15, {}, frozenset({"ctl-1"}), 0),
        (T0 + 30, {}, frozenset({"ctl-1", "ctl-2"}), 0),
        (T0 + 45, {}, NONE, 0),
    )
    assert EventKind.ROLL not in {e.kind for e in rolls(timeline(together))}
