"""May this node be restarted now? (health/restart.py): brokers by the partitions' ISR counts, one at a time;
KRaft voters by the quorum's caught-up majority."""

from __future__ import annotations

from dataclasses import replace

from ctlplane.exporter.catalog import Role
from ctlplane.exporter.health.model import BrokerHealth, Lifecycle, QuorumMember, Redundancy, VoterSet
from ctlplane.exporter.health.restart import AT_MIN_ISR, OFFLINE, UNDER_MIN_ISR, restart_safety
from ctlplane.exporter.model import ClusterSnapshot, Failure, NodeSnapshot
from tests.unit.exporter.builders import node

NOW = 1000.0
MAX_AGE = 60.0


def _broker(name: str, under: float | None = 0, at: float | None = 0, up: bool = True) -> NodeSnapshot:
    values = {"kafka_broker_state": 3.0}
    values.update({series: v for series, v in ((UNDER_MIN_ISR, under), (AT_MIN_ISR, at)) if v is not None})
    return node(name, values, up=up)


def _paced(name: str, age: float, at: float = 0) -> NodeSnapshot:
    """A large broker read at its own pace: its last page, `age` seconds old, served this round (held)."""
    values = {"kafka_broker_state": 3.0, UNDER_MIN_ISR: 0.0, AT_MIN_ISR: at}
    read = node(name, values, at=NOW - age)
    return replace(read, up=False, failure=Failure.PACED, error="read at its own pace", scrape_duration_seconds=30.0)


def _controller(name: str, offline: float = 0) -> NodeSnapshot:
    return node(name, {"kafka_controller_active": 1.0, OFFLINE: offline}, role=Role.CONTROLLER)


def _health(name: str, state: Lifecycle = Lifecycle.ACTIVE) -> BrokerHealth:
    return BrokerHealth("c1", name, Role.BROKER, None, True, state, "read", None, None, False, False, None, None,
                        False)  # fmt: skip


def _answers(
    brokers: list[NodeSnapshot], states: dict[str, Lifecycle] | None = None, offline: float = 0
) -> dict[str, tuple[bool, str | None]]:
    active = _controller("c", offline)
    cluster = ClusterSnapshot("c1", (active, *brokers))
    health = [_health(b.node, (states or {}).get(b.node, Lifecycle.ACTIVE)) for b in brokers]
    voters = VoterSet((QuorumMember("c", 100, Role.CONTROLLER, None, True, 0.0, True),), "quorum")
    answers = restart_safety(
        cluster, health, active, Redundancy(3, 3, "quorum"), voters, now=NOW, counts_max_age_seconds=MAX_AGE
    )
    return {a.node: (a.safe, a.blocker) for a in answers}


def test_every_partition_with_a_replica_to_spare_lets_any_one_broker_go() -> None:
    answers = _answers([_broker("b1"), _broker("b2"), _broker("b3")])
    assert answers == {"c": (True, None), "b1": (True, None), "b2": (True, None), "b3": (True, None)}


def test_a_partition_at_min_isr_anywhere_makes_every_broker_wait() -> None:
    """The counts do not say whose ISR it is: every broker waits, never one whose loss takes it under."""
    answers = _answers([_broker("b1"), _broker("b2", at=1), _broker("b3")])
    assert {answers[b] for b in ("b1", "b2", "b3")} == {(False, "at_min_isr")}


def test_a_partition_below_min_isr_or_offline_blocks_too() -> None:
    assert _answers([_broker("b1", under=2), _broker("b2")])["b2"] == (False, "under_min_isr")
    assert _answers([_broker("b1"), _broker("b2")], offline=1)["b1"] == (False, "offline_partitions")


def test_one_broker_at_a_time() -> None:
    answers = _answers([_broker("b1"), _broker("b2", up=False), _broker("b3")], {"b2": Lifecycle.FENCED})
    assert answers["b2"] == (False, "not_active")
    assert answers["b1"] == answers["b3"] == (False, "another_broker_not_active")
    # the partitions it left at their minimum are the more telling reason (it leads none: its counts unread)
    at_min = _answers([_broker("b1", at=3), _broker("b2", up=False), _broker("b3")], {"b2": Lifecycle.FENCED})
    assert at_min["b1"] == at_min["b3"] == (False, "at_min_isr")


def test_a_broker_whose_counts_are_not_served_makes_the_answer_wait() -> None:
    """A release or a naming without AtMinIsrPartitionCount: unknown is never safe."""
    assert _answers([_broker("b1"), _broker("b2", at=None)])["b1"] == (False, "isr_counts_unread")


def test_a_paced_brokers_last_page_counts_while_young_enough_and_the_answer_says_so() -> None:
    """A large broker behind jmx_exporter is read at its own pace: its last page's counts (here 40 s old)
    count, and the answer names them and their age; older than health.restart_counts_max_age_seconds, every
    broker waits, as for counts not read."""
    assert _answers([_broker("b1"), _paced("b2", age=40), _broker("b3")]) == {
        "c": (True, None), "b1": (True, None), "b2": (True, None), "b3": (True, None)
    }  # fmt: skip
    active = _controller("c")
    brokers = (_broker("b1"), _paced("b2", age=40))
    cluster = ClusterSnapshot("c1", (active, *brokers))
    said = restart_safety(
        cluster, [_health("b1"), _health("b2")], active, None, None, now=NOW, counts_max_age_seconds=MAX_AGE
    )
    assert {a.node: a.reason for a in said}["b1"] == (
        "safe: nothing depends on it alone "
        "(ISR counts: b2's from its page of 40s ago, held while its next page is read)"
    )
    assert _answers([_broker("b1"), _paced("b2", age=40, at=2)])["b1"] == (False, "at_min_isr")
    assert _answers([_broker("b1"), _paced("b2", age=61)])["b1"] == (False, "isr_counts_unread")


def _voter(name: str, caught_up: bool | None, voter: bool = True) -> QuorumMember:
    return QuorumMember(name, None, Role.CONTROLLER, None, voter, 0.0, caught_up)


def test_a_voter_may_go_only_where_a_caught_up_majority_stays() -> None:
    controllers = [node(n, {"kafka_controller_active": 0.0}, role=Role.CONTROLLER) for n in ("c1", "c2", "c3", "o4")]
    cluster = ClusterSnapshot("c1", tuple(controllers))
    members = (_voter("c1", True), _voter("c2", True), _voter("c3", False), _voter("o4", None, voter=False))
    answers = {
        a.node: (a.safe, a.blocker)
        for a in restart_safety(
            cluster,
            [],
            None,
            Redundancy(3, 2, "quorum"),
            VoterSet(members, "quorum"),
            now=NOW,
            counts_max_age_seconds=MAX_AGE,
        )
    }
    # 2 of 3 caught up: a caught-up voter's restart leaves 1 of the 2 a majority needs; the one behind leaves 2
    assert answers == {
        "c1": (False, "quorum_majority"),
        "c2": (False, "quorum_majority"),
        "c3": (True, None),
        "o4": (True, None),  # an observer: the quorum does not count it
    }
    all_caught_up = restart_safety(
        cluster,
        [],
        None,
        Redundancy(3, 3, "quorum"),
        VoterSet(members, "quorum"),
        now=NOW,
        counts_max_age_seconds=MAX_AGE,
    )
    assert all(a.safe for a in all_caught_up)
    unread = restart_safety(cluster, [], None, None, None, now=NOW, counts_max_age_seconds=MAX_AGE)
    assert {a.blocker for a in unread} == {"quorum_unread"}
    lone = replace(cluster, nodes=(controllers[0],))
    (answer,) = restart_safety(
        lone,
        [],
        None,
        Redundancy(1, 1, "quorum"),
        VoterSet(members[:1], "quorum"),
        now=NOW,
        counts_max_age_seconds=MAX_AGE,
    )
    assert (answer.safe, answer.blocker) == (False, "quorum_majority")  # the only voter
