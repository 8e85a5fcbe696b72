from __future__ import annotations

from dataclasses import replace

import pytest

from ctlplane.exporter.catalog import Mode, Role
from ctlplane.exporter.families import health_families
from ctlplane.exporter.health import (
    BrokerHealth,
    FleetHealth,
    HealthMemory,
    Lifecycle,
    evaluate,
    find_active_controller,
)
from ctlplane.exporter.model import Failure, NodeSnapshot, Sample
from ctlplane.exporter.thresholds import Thresholds
from tests.unit.exporter.builders import fleet, kraft_broker, kraft_controller, node

T = Thresholds()


def _health(*nodes, memory=None, at=1000.0):  # type: ignore[no-untyped-def]
    health, memory = evaluate(fleet(*nodes, at=at), memory or HealthMemory(), T)
    return health.clusters[0], memory


def _lifecycle_steps(steps: list[tuple[NodeSnapshot, float, Lifecycle]]) -> BrokerHealth:
    """Feed broker b1 (id 101) round by round, with the controller's registration state for it, and check
    its lifecycle each round; return its last health."""
    memory = HealthMemory()
    for at, (broker, registration, expected) in enumerate(steps):
        controller = kraft_controller("c1", 1, active=True, registrations={101: registration})
        cluster, memory = _health(controller, broker, memory=memory, at=float(at))
        assert cluster.brokers[0].state is expected, f"step {at}: {cluster.brokers[0].evidence}"
    return cluster.brokers[0]


def test_single_kraft_controller_is_identified_by_active_flag_not_by_lowest_id() -> None:
    cluster, _ = _health(
        kraft_controller("c1", 1, active=False),
        kraft_controller("c2", 2, active=True),
        kraft_controller("c3", 3, active=False),
    )
    assert cluster.active_controllers == 1
    assert (cluster.controller.node, cluster.controller.node_id, cluster.controller.epoch) == ("c2", 2, 5)


def test_split_brain_counts_both_claimants_and_picks_the_higher_epoch() -> None:
    cluster, _ = _health(
        kraft_controller("c1", 1, active=True, epoch=4),  # a paused old leader that has not learnt epoch 5
        kraft_controller("c2", 2, active=True, epoch=5),
    )
    assert cluster.active_controllers == 2
    assert cluster.controller.claimants == ("c1", "c2")
    assert cluster.controller.node == "c2"


def test_no_reachable_controller_reports_zero_and_no_identity() -> None:
    cluster, _ = _health(
        kraft_controller("c1", 1, active=True, up=False),
        kraft_broker("b1", 101),
    )
    assert cluster.active_controllers == 0
    assert cluster.controller.node is None
    assert cluster.controller.reachable_controllers == 0


def test_failover_counts_once_per_new_leader_and_not_when_the_old_one_resumes() -> None:
    memory = HealthMemory()
    steps = [
        # (controllers (name, id, active, epoch, up), expected failovers)
        ([("c1", 1, True, 5, True), ("c2", 2, False, 5, True)], 0),
        ([("c1", 1, True, 5, False), ("c2", 2, False, 6, True)], 0),  # election under way: no leader known
        ([("c1", 1, True, 5, False), ("c2", 2, True, 7, True)], 1),  # c2 won in epoch 7 (a vote failed in 6)
        ([("c1", 1, True, 5, True), ("c2", 2, True, 7, True)], 1),  # c1 resumes, still claims: stale epoch
        ([("c1", 1, False, 7, True), ("c2", 2, True, 7, True)], 1),
    ]
    for at, (controllers, expected) in enumerate(steps, start=1):
        nodes = [kraft_controller(n, i, active=a, epoch=e, up=u) for n, i, a, e, u in controllers]
        cluster, memory = _health(*nodes, memory=memory, at=float(at))
        assert cluster.controller.failovers_total == expected, f"step {at}"
    assert cluster.controller.last_failover_at == 3.0
    assert cluster.controller.node == "c2"


def test_same_node_reelected_in_a_later_epoch_is_a_failover() -> None:
    memory = HealthMemory()
    _, memory = _health(kraft_controller("c1", 1, active=True, epoch=5), memory=memory)
    cluster, _ = _health(kraft_controller("c1", 1, active=True, epoch=8), memory=memory)
    assert cluster.controller.failovers_total == 1


def test_zookeeper_failover_is_an_identity_change() -> None:
    def zk(name: str, node_id: int, active: bool):  # type: ignore[no-untyped-def]
        return node(
            name,
            {"kafka_broker_state": 3, "kafka_controller_active": float(active)},
            mode=Mode.ZOOKEEPER,
            node_id=node_id,
        )

    memory = HealthMemory()
    cluster, memory = _health(zk("b1", 1, True), zk("b2", 2, False), memory=memory)
    assert cluster.controller.node == "b1" and cluster.controller.epoch is None
    cluster, memory = _health(zk("b1", 1, False), zk("b2", 2, True), memory=memory)
    assert cluster.controller.failovers_total == 1


def test_registration_state_of_the_active_controller_decides_lifecycle() -> None:
    controller = kraft_controller("c1", 1, active=True, registrations={101: 30, 102: 10, 103: 20, 104: -1})
    cluster, _ = _health(
        controller,
        kraft_broker("b1", 101),
        kraft_broker("b2", 102),
        kraft_broker("b3", 103),
        kraft_broker("b4", 104, broker_state=1),
    )
    states = {b.node: b.state for b in cluster.brokers}
    assert states == {"b1": Lifecycle.ACTIVE, "b2": Lifecycle.FENCED, "b3": Lifecycle.SHUTDOWN, "b4": Lifecycle.INITIAL}
    assert "BrokerRegistrationState=10" in cluster.broker("b2").evidence  # type: ignore[union-attr]


def test_running_broker_fenced_by_the_controller_is_fenced_despite_broker_state_running() -> None:
    controller = kraft_controller("c1", 1, active=True, registrations={101: 10})
    cluster, _ = _health(controller, kraft_broker("b1", 101, broker_state=3))
    assert cluster.brokers[0].state is Lifecycle.FENCED


def test_unreachable_broker_that_the_controller_fenced_is_fenced_with_both_pieces_of_evidence() -> None:
    controller = kraft_controller("c1", 1, active=True, registrations={101: 10})
    cluster, _ = _health(controller, kraft_broker("b1", 101, up=False))
    broker = cluster.brokers[0]
    assert broker.state is Lifecycle.FENCED
    assert "registration state FENCED" in broker.evidence and "connection refused" in broker.evidence


def test_unreachable_broker_the_controller_still_counts_active_is_unreachable() -> None:
    controller = kraft_controller("c1", 1, active=True, registrations={101: 30})
    cluster, _ = _health(controller, kraft_broker("b1", 101, up=False))
    assert cluster.brokers[0].state is Lifecycle.UNREACHABLE


def test_without_per_broker_registration_a_fenced_count_matching_the_stale_brokers_fences_them() -> None:
    controller = kraft_controller("c1", 1, active=True, committed=5000, fenced=1)
    cluster, _ = _health(
        controller, kraft_broker("b1", 101, applied=5000), kraft_broker("b2", 102, applied=100, lag_seconds=60)
    )
    assert {b.node: b.state for b in cluster.brokers} == {"b1": Lifecycle.ACTIVE, "b2": Lifecycle.FENCED}


@pytest.mark.parametrize("names_shutdowns", [False, True], ids=["kafka-4.0", "kafka-4.1"])
def test_a_gone_broker_fenced_by_count_says_when_the_controller_cannot_name_a_controlled_shutdown(
    names_shutdowns: bool,
) -> None:
    # Kafka < 4.1: no ControlledShutdownBrokerCount, so a clean stop and a crash read the same (FENCED)
    controller = kraft_controller("c1", 1, active=True, committed=5000, fenced=1)
    if names_shutdowns:
        controller = node(
            "c1",
            {**{s.series: s.value for s in controller.samples}, "kafka_controller_controlled_shutdown_brokers": 0},
            role=Role.CONTROLLER,
            node_id=1,
        )
    cluster, _ = _health(controller, kraft_broker("b1", 101, applied=5000), kraft_broker("b2", 102, up=False))
    gone = cluster.broker("b2")
    assert gone is not None and gone.state is Lifecycle.FENCED
    assert ("cannot name a controlled shutdown" in gone.evidence) is not names_shutdowns, gone.evidence


def test_broker_state_mapping_without_controller_evidence() -> None:
    cluster, _ = _health(*(kraft_broker(f"b{s}", 100 + s, broker_state=s) for s in (0, 1, 2, 3, 6, 7)))
    assert [b.state for b in cluster.brokers] == [
        Lifecycle.INITIAL,  # NOT_RUNNING on first sight: start-up (after RUNNING it means shut down)
        Lifecycle.INITIAL,
        Lifecycle.INITIAL,  # RECOVERY happens only during start-up: never a fencing page
        Lifecycle.ACTIVE,
        Lifecycle.SHUTDOWN,
        Lifecycle.SHUTDOWN,
    ]


def test_metadata_lag_in_records_is_measured_against_the_active_controller() -> None:
    cluster, _ = _health(
        kraft_controller("c1", 1, active=True, committed=5000),
        kraft_controller("c2", 2, active=False, committed=10),  # a lagging standby is not the reference
        kraft_broker("b1", 101, applied=4990),
    )
    broker = cluster.broker("b1")
    assert broker is not None and broker.metadata_lag_records == 10 and not broker.stale


def test_stale_by_seconds_or_by_records() -> None:
    cluster, _ = _health(
        kraft_controller("c1", 1, active=True, committed=5000),
        kraft_broker("b1", 101, applied=5000, lag_seconds=T.metadata_stale_seconds + 1),
        kraft_broker("b2", 102, applied=5000 - T.metadata_stale_records, lag_seconds=0.1),
        kraft_broker("b3", 103, applied=4999, lag_seconds=0.1),
    )
    assert [b.stale for b in cluster.brokers] == [True, True, False]


def test_frozen_when_applied_offset_stops_while_the_quorum_commits() -> None:
    memory = HealthMemory()
    flags = []
    for step in range(6):
        committed = 1000 + 10 * step
        applied = 1000 + 10 * min(step, 1)  # moves once, then stops at 1010
        cluster, memory = _health(
            kraft_controller("c1", 1, active=True, committed=committed),
            kraft_broker("b1", 101, applied=applied),
            memory=memory,
            at=float(step),
        )
        flags.append(cluster.brokers[0].frozen)
    # frozen once the offset has been still for metadata_frozen_scrapes (3) reads after it last moved
    assert flags == [False, False, False, False, True, True]


def test_not_frozen_on_an_idle_quorum() -> None:
    memory = HealthMemory()
    for step in range(6):
        cluster, memory = _health(
            kraft_controller("c1", 1, active=True, committed=1000),
            kraft_broker("b1", 101, applied=1000),
            memory=memory,
            at=float(step),
        )
    assert not cluster.brokers[0].frozen


def test_zookeeper_staleness_is_the_controllers_queue_for_that_broker() -> None:
    def zk(name: str, node_id: int, values: dict) -> object:  # type: ignore[type-arg]
        return node(name, {"kafka_broker_state": 3, **values}, mode=Mode.ZOOKEEPER, node_id=node_id)

    queue = "kafka_controller_channel_queue_size"
    controller = zk(
        "b1", 1, {"kafka_controller_active": 1, (queue, (("broker", "2"),)): 50, (queue, (("broker", "3"),)): 0}
    )
    cluster, _ = _health(
        controller, zk("b2", 2, {"kafka_controller_active": 0}), zk("b3", 3, {"kafka_controller_active": 0})
    )
    lag = {b.node: (b.metadata_lag_records, b.stale) for b in cluster.brokers}
    assert lag == {"b1": (None, False), "b2": (50, True), "b3": (0, False)}


def test_control_plane_saturation_by_queue_fill_or_idle() -> None:
    def zk(name: str, queue: float, idle: float) -> object:
        return node(
            name,
            {
                "kafka_broker_state": 3,
                "kafka_control_plane_request_queue_size": queue,
                "kafka_control_plane_request_handler_idle_ratio": idle,
                "kafka_control_plane_network_processor_idle_ratio": 0.9,
            },
            mode=Mode.ZOOKEEPER,
        )

    cluster, _ = _health(zk("b1", 18, 0.5), zk("b2", 0, 0.01), zk("b3", 2, 0.9))
    assert [(b.control_plane_saturated, b.control_plane_queue_ratio) for b in cluster.brokers] == [
        (True, 0.9),
        (True, 0.0),
        (False, 0.1),
    ]
    assert all(b.control_plane_listener for b in cluster.brokers)


def test_zookeeper_broker_without_the_listener_is_reported_as_such() -> None:
    cluster, _ = _health(node("b1", {"kafka_broker_state": 3}, mode=Mode.ZOOKEEPER))
    assert cluster.brokers[0].control_plane_listener is False
    assert not cluster.brokers[0].control_plane_saturated


def test_controllers_are_not_listed_as_brokers_but_combined_nodes_are() -> None:
    combined = node("n1", {"kafka_broker_state": 3, "kafka_controller_active": 1}, role=Role.COMBINED, node_id=1)
    cluster, _ = _health(kraft_controller("c9", 9, active=False), combined)
    assert [b.node for b in cluster.brokers] == ["n1"]
    assert find_active_controller(fleet(combined).clusters[0]) is not None


def test_controlled_shutdown_stays_shutdown_when_the_controller_then_fences_the_departed_broker() -> None:
    steps = [
        (kraft_broker("b1", 101), 30, Lifecycle.ACTIVE),
        (kraft_broker("b1", 101, broker_state=6), 30, Lifecycle.SHUTDOWN),  # broker knows first
        (kraft_broker("b1", 101, broker_state=7), 20, Lifecycle.SHUTDOWN),
        (kraft_broker("b1", 101, broker_state=0), 10, Lifecycle.SHUTDOWN),  # lifecycle manager stopped
        (node("b1", {"kafka_raft_current_epoch": 5}, node_id=101), 10, Lifecycle.SHUTDOWN),  # BrokerState gone
        (kraft_broker("b1", 101, up=False), 10, Lifecycle.SHUTDOWN),  # gone: fenced, but no FENCED page
        (kraft_broker("b1", 101, broker_state=1), 10, Lifecycle.INITIAL),  # back: registering, fenced
        (kraft_broker("b1", 101, broker_state=3), 30, Lifecycle.ACTIVE),
    ]
    _lifecycle_steps(steps)


def test_a_crash_between_two_scrapes_is_fenced_never_shutdown() -> None:
    # kill -9 early in a 15 s interval: the controller fences the broker (9 s session timeout) before the
    # next scrape, so ctlplane first sees it gone and fenced, with no sign of a controlled shutdown.
    steps = [
        (kraft_broker("b1", 101), 30, Lifecycle.ACTIVE),
        (kraft_broker("b1", 101, up=False, failure=Failure.GONE), 10, Lifecycle.FENCED),
        (kraft_broker("b1", 101, up=False, failure=Failure.GONE), 10, Lifecycle.FENCED),  # stays paged
        (kraft_broker("b1", 101, broker_state=1), 10, Lifecycle.INITIAL),  # restarted: log recovery
        (kraft_broker("b1", 101, broker_state=2), 10, Lifecycle.INITIAL),  # caught up, not yet unfenced
        (kraft_broker("b1", 101), 30, Lifecycle.ACTIVE),
        (kraft_broker("b1", 101, up=False, failure=Failure.TIMEOUT), 30, Lifecycle.UNREACHABLE),  # hangs
        (kraft_broker("b1", 101, up=False, failure=Failure.TIMEOUT), 10, Lifecycle.FENCED),  # session expired
        (kraft_broker("b1", 101, up=False, failure=Failure.GONE), 10, Lifecycle.FENCED),  # then killed: still
    ]
    last = _lifecycle_steps(steps)
    assert "without a controlled shutdown" in last.evidence


def test_a_fenced_broker_stays_fenced_through_a_round_without_the_controllers_word() -> None:
    """A round whose controller read failed (timed out on a loaded controller) has no registration to read:
    the broker, still gone, must not turn UNREACHABLE for that round, which would restart the `for:` of its
    KafkaBrokerFenced page (and switch its rule: the unplanned flag is kept too). Seen on a loaded CI run."""

    def controller(state: float) -> NodeSnapshot:  # a 4.1+ controller: it names controlled shutdowns
        c = kraft_controller("c1", 1, active=True, registrations={101: state}, fenced=float(state == 10))
        named = Sample("kafka_controller_controlled_shutdown_brokers", (), 0.0)
        return replace(c, samples=(*c.samples, named))

    memory = HealthMemory()
    _, memory = _health(controller(30), kraft_broker("b1", 101, leaders=3), memory=memory, at=1.0)
    gone = kraft_broker("b1", 101, up=False, failure=Failure.GONE)
    fenced = controller(10)
    cluster, memory = _health(fenced, gone, memory=memory, at=2.0)
    assert (cluster.brokers[0].state, cluster.brokers[0].fenced_unplanned) == (Lifecycle.FENCED, True)
    unread = kraft_controller("c1", 1, active=True, up=False)
    for at in (3.0, 4.0):  # round after round while no controller answers
        cluster, memory = _health(unread, gone, memory=memory, at=at)
        broker = cluster.brokers[0]
        assert (broker.state, broker.fenced_unplanned) == (Lifecycle.FENCED, True), broker.evidence
        assert "no controller was read this round" in broker.evidence
    # the controllers' word decides again as soon as there is one
    cluster, _ = _health(controller(20), gone, memory=memory, at=5.0)
    assert cluster.brokers[0].state is Lifecycle.SHUTDOWN
    # a broker never seen fenced is UNREACHABLE while nothing says more
    cluster, _ = _health(unread, gone, at=1.0)
    assert cluster.brokers[0].state is Lifecycle.UNREACHABLE


def test_a_stop_seen_under_way_stays_shutdown_after_the_process_is_gone() -> None:
    steps = [
        (kraft_broker("b1", 101), 30, Lifecycle.ACTIVE),
        (node("b1", {"kafka_raft_current_epoch": 5}, node_id=101), 30, Lifecycle.SHUTDOWN),  # BrokerState gone
        (kraft_broker("b1", 101, up=False, failure=Failure.GONE), 10, Lifecycle.SHUTDOWN),
        (kraft_broker("b1", 101, up=False, failure=Failure.GONE), 10, Lifecycle.SHUTDOWN),  # sticky
    ]
    _lifecycle_steps(steps)


def test_the_controller_in_controlled_shutdown_is_evidence_enough_when_the_broker_is_already_gone() -> None:
    memory = HealthMemory()
    _, memory = _health(
        kraft_controller("c1", 1, active=True, registrations={101: 30}), kraft_broker("b1", 101), memory=memory
    )
    cluster, _ = _health(
        kraft_controller("c1", 1, active=True, registrations={101: 20}),
        kraft_broker("b1", 101, up=False),
        memory=memory,
        at=2.0,
    )
    assert cluster.brokers[0].state is Lifecycle.SHUTDOWN


def test_a_restarting_broker_is_initial_even_while_the_controller_has_it_fenced() -> None:
    for broker_state in (1, 2):
        controller = kraft_controller("c1", 1, active=True, registrations={101: 10}, fenced=1)
        cluster, _ = _health(controller, kraft_broker("b1", 101, broker_state=broker_state))
        assert cluster.brokers[0].state is Lifecycle.INITIAL, broker_state
    # before 4.1 only the count: the starting broker explains it, nobody else is fenced by inference
    cluster, _ = _health(
        kraft_controller("c1", 1, active=True, fenced=1, committed=5000),
        kraft_broker("b1", 101, broker_state=2, applied=10, lag_seconds=60),
        kraft_broker("b2", 102, up=False, failure=Failure.TIMEOUT),
    )
    assert {b.node: b.state for b in cluster.brokers} == {"b1": Lifecycle.INITIAL, "b2": Lifecycle.UNREACHABLE}


def test_fenced_count_inference_subtracts_brokers_known_to_be_starting_or_shut_down() -> None:
    memory = HealthMemory()
    _, memory = _health(
        kraft_controller("c1", 1, active=True, fenced=0, committed=5000),
        kraft_broker("b1", 101, applied=5000),
        kraft_broker("b2", 102, applied=5000, broker_state=6),  # seen in controlled shutdown
        kraft_broker("b3", 103, applied=5000),
        memory=memory,
    )
    cluster, _ = _health(
        kraft_controller("c1", 1, active=True, fenced=2, committed=5000),
        kraft_broker("b1", 101, applied=5000),
        kraft_broker("b2", 102, up=False),  # gone after its controlled shutdown: one of the 2 fenced
        kraft_broker("b3", 103, up=False, failure=Failure.TIMEOUT),  # the other
        memory=memory,
        at=2.0,
    )
    assert {b.node: b.state for b in cluster.brokers} == {
        "b1": Lifecycle.ACTIVE,
        "b2": Lifecycle.SHUTDOWN,
        "b3": Lifecycle.FENCED,
    }


def test_fenced_brokers_nobody_watches_are_counted_and_the_named_ones_are_not() -> None:
    memory = HealthMemory()
    _, memory = _health(
        kraft_controller("c1", 1, active=True, fenced=0, committed=5000),
        kraft_broker("b1", 101, applied=5000),
        kraft_broker("b2", 102, applied=5000, broker_state=6),  # seen in controlled shutdown
        memory=memory,
    )
    # 3 fenced: b2 gone after its controlled shutdown, b1 fenced by its registration, and one more that no
    # node of ctlplane's is: a broker nobody listed
    cluster, _ = _health(
        kraft_controller("c1", 1, active=True, fenced=3, committed=5000, registrations={101: 10}),
        kraft_broker("b1", 101, up=False, failure=Failure.TIMEOUT),
        kraft_broker("b2", 102, up=False),
        memory=memory,
        at=2.0,
    )
    assert {b.node: b.state for b in cluster.brokers} == {"b1": Lifecycle.FENCED, "b2": Lifecycle.SHUTDOWN}
    assert cluster.fenced_unnamed == 1
    served = [f for f in health_families(FleetHealth((cluster,))) if f.name == "kafka_cluster_fenced_brokers_unnamed"]
    assert [row[2:] for row in served[0].rows] == [(("c1",), 1.0)]
    healthy, _ = _health(kraft_controller("c1", 1, active=True, fenced=0), kraft_broker("b1", 101))
    assert healthy.fenced_unnamed == 0
    # no active controller read, or ZooKeeper mode: nobody counts, so nothing is said
    unread, _ = _health(kraft_controller("c1", 1, active=True, up=False, fenced=2), kraft_broker("b1", 101))
    assert unread.fenced_unnamed is None


def test_registration_state_missing_on_the_active_controller_is_read_from_another_controller() -> None:
    # After a controller restart (4.1+) the new active controller has no gauge for brokers registered before.
    cluster, _ = _health(
        kraft_controller("c1", 1, active=True, epoch=6, registrations={102: 30}, fenced=1),
        kraft_controller("c2", 2, active=False, epoch=6, registrations={101: 10, 102: 30}),
        kraft_broker("b1", 101, broker_state=3),  # fenced while running: BrokerState stays RUNNING
        kraft_broker("b2", 102, broker_state=3),
    )
    assert {b.node: b.state for b in cluster.brokers} == {"b1": Lifecycle.FENCED, "b2": Lifecycle.ACTIVE}


def test_registration_gauges_for_some_brokers_do_not_switch_off_the_count_for_the_others() -> None:
    cluster, _ = _health(
        kraft_controller("c1", 1, active=True, registrations={102: 30}, fenced=1, committed=5000),
        kraft_broker("b1", 101, up=False, failure=Failure.TIMEOUT),  # no gauge anywhere for b1
        kraft_broker("b2", 102),
    )
    assert {b.node: b.state for b in cluster.brokers} == {"b1": Lifecycle.FENCED, "b2": Lifecycle.ACTIVE}


def test_metadata_placeholders_before_the_first_image_are_not_lag() -> None:
    placeholder = node(
        "b1",
        {
            "kafka_broker_state": 1,
            "kafka_broker_last_applied_record_offset": -1,
            "kafka_broker_last_applied_record_timestamp_seconds": 0,
            "kafka_broker_last_applied_record_lag_seconds": 1.7e9,
        },
        node_id=101,
    )
    cluster, _ = _health(kraft_controller("c1", 1, active=True, committed=5000), placeholder)
    broker = cluster.brokers[0]
    assert (broker.metadata_lag_records, broker.metadata_lag_seconds, broker.stale) == (None, None, False)


def test_a_deposed_leader_never_becomes_the_controller_again_while_the_new_one_is_unreadable() -> None:
    memory = HealthMemory()
    steps = [
        # (c1 active, c1 epoch, c1 up), (c2 active, c2 epoch, c2 up), expected identity, failovers
        ((True, 5, True), (False, 5, True), "c1", 0),
        ((True, 5, False), (True, 6, True), "c2", 1),  # c1 paused, c2 elected in epoch 6
        ((True, 5, True), (True, 6, False), None, 1),  # c1 resumes still claiming; c2 unreadable
        ((True, 5, True), (True, 6, False), None, 1),
        ((False, 6, True), (True, 6, True), "c2", 1),
    ]
    for at, (a, b, identity, failovers) in enumerate(steps, start=1):
        cluster, memory = _health(
            kraft_controller("c1", 1, active=a[0], epoch=a[1], up=a[2]),
            kraft_controller("c2", 2, active=b[0], epoch=b[1], up=b[2]),
            memory=memory,
            at=float(at),
        )
        assert (cluster.controller.node, cluster.controller.failovers_total) == (identity, failovers), f"step {at}"


def test_a_claimant_whose_raft_already_names_another_leader_is_not_the_controller_nor_a_failover() -> None:
    # Seen on real KRaft 3.9.2: the resumed old leader learns the new epoch in its raft thread (current-epoch
    # and current-leader move at once) while its controller still claims until its event queue runs
    # handleLeaderChange -> renounce(); with the same epoch as the real leader and a lower id it was picked,
    # and the flip there and back counted two failovers more.
    memory = HealthMemory()
    steps = [
        # (c1 active, c1 epoch, c1 raft leader, c2 active, c2 epoch, c2 raft leader): expected (node, failovers)
        ((True, 3, 1, False, 3, 1), ("c1", 0)),
        ((True, 3, 1, True, 4, 2), ("c2", 1)),  # c1 paused: c2 elected in 4; c1's read is an old one
        ((True, 4, 2, True, 4, 2), ("c2", 1)),  # c1 resumed, raft follows c2, renounce not yet run
        ((True, 4, -1, True, 4, 2), ("c2", 1)),  # (or has no leader yet): still not a claimant
        ((False, 4, 2, True, 4, 2), ("c2", 1)),
    ]
    for at, (values, expected) in enumerate(steps, start=1):
        a1, e1, l1, a2, e2, l2 = values
        cluster, memory = _health(
            kraft_controller("c1", 1, active=a1, epoch=e1, leader=l1),
            kraft_controller("c2", 2, active=a2, epoch=e2, leader=l2),
            memory=memory,
            at=float(at),
        )
        assert (cluster.controller.node, cluster.controller.failovers_total) == expected, f"step {at}"


def test_a_claimant_below_the_epoch_the_brokers_report_is_not_the_controller() -> None:
    cluster, _ = _health(
        kraft_controller("c1", 1, active=True, epoch=5),  # resumed after a pause, first sight
        kraft_broker("b1", 101),  # kraft_broker reports epoch 5
        node("b2", {"kafka_broker_state": 3, "kafka_raft_current_epoch": 7}, node_id=102),
    )
    assert cluster.controller.node is None


def test_zookeeper_staleness_in_seconds_from_the_controllers_queue_time_for_that_broker() -> None:
    from ctlplane.exporter.model import Sample

    def controller(count: float, total: float, queued: float, at: float):  # type: ignore[no-untyped-def]
        n = node(
            "b1",
            {
                "kafka_broker_state": 3,
                "kafka_controller_active": 1,
                ("kafka_controller_channel_queue_size", (("broker", "2"),)): queued,
            },
            mode=Mode.ZOOKEEPER,
            node_id=1,
            at=at,
        )
        wait = Sample(
            "kafka_controller_channel_queue_time_seconds",
            (("broker", "2"),),
            count,
            (("count", count), ("sum", total)),
        )
        return replace(n, samples=(*n.samples, wait))

    follower = node("b2", {"kafka_broker_state": 3, "kafka_controller_active": 0}, mode=Mode.ZOOKEEPER, node_id=2)
    memory = HealthMemory()
    seen = []
    # (count, sum seconds, queued, time)
    for count, total, queued, at in [
        (10, 0.1, 0, 0.0),  # first sight: no delta yet
        (20, 0.2, 0, 15.0),  # 10 requests, 10 ms each
        (22, 20.2, 0, 30.0),  # 2 requests that waited 10 s each
        (22, 20.2, 3, 45.0),  # 3 queued, none sent: stuck since the last progress at 30 s
        (22, 20.2, 5, 90.0),
        (30, 20.3, 0, 105.0),
    ]:
        cluster, memory = _health(controller(count, total, queued, at), follower, memory=memory, at=at)
        b2 = cluster.broker("b2")
        assert b2 is not None
        seen.append((b2.metadata_lag_seconds, b2.stale))
    assert seen == [
        (None, False),
        (pytest.approx(0.01), False),
        (pytest.approx(10.0), False),
        (15.0, True),
        (60.0, True),
        (pytest.approx(0.1 / 8), False),
    ]


def _gone_after_running(controlled_shutdown: float, *brokers: str, gauges: bool = True) -> dict[str, Lifecycle]:
    """Each broker ran, then its process is gone and the controller has fenced it. Without `gauges` the
    controller has no BrokerRegistrationState per broker (a restarted 4.1+ controller), only the counts."""
    ids = {name: 101 + i for i, name in enumerate(brokers)}
    memory = HealthMemory()
    _, memory = _health(
        kraft_controller("c1", 1, active=True, registrations=dict.fromkeys(ids.values(), 30) if gauges else None),
        *(kraft_broker(name, i) for name, i in ids.items()),
        memory=memory,
    )
    controller = kraft_controller(
        "c1",
        1,
        active=True,
        registrations=dict.fromkeys(ids.values(), 10) if gauges else None,
        fenced=len(ids),
    )
    controller = replace(
        controller,
        samples=(
            *controller.samples,
            Sample("kafka_controller_controlled_shutdown_brokers", (), controlled_shutdown),
        ),
    )
    cluster, _ = _health(controller, *(kraft_broker(name, i, up=False) for name, i in ids.items()), memory=memory)
    return {b.node: b.state for b in cluster.brokers}


def test_a_vanished_broker_the_controller_counts_in_controlled_shutdown_is_shut_down_not_crashed() -> None:
    # 4.1+: fencing keeps inControlledShutdown, so ControlledShutdownBrokerCount still counts the broker
    assert _gone_after_running(1, "b1") == {"b1": Lifecycle.SHUTDOWN}
    assert _gone_after_running(0, "b1") == {"b1": Lifecycle.FENCED}
    # two vanished, one counted: either could be the crash, so both page
    assert _gone_after_running(1, "b1", "b2") == {"b1": Lifecycle.FENCED, "b2": Lifecycle.FENCED}


def test_a_leaders_controlled_shutdown_is_named_by_a_follower_controller_when_the_active_one_was_not_read() -> None:
    # A round whose read of the active controller failed (a timeout on a loaded machine) found a leader gone
    # that had stopped cleanly: the follower's registration said FENCED ("fenced wins") and, with no count
    # read, it was a crash, paged after 1m, so a restart slower than that paged. Every controller publishes
    # the counts from its own metadata image (ControllerServer adds a ControllerMetadataMetricsPublisher on
    # each), so the follower's ControlledShutdownBrokerCount says what the active one's would.
    def count(controller: NodeSnapshot, value: float) -> NodeSnapshot:
        sample = Sample("kafka_controller_controlled_shutdown_brokers", (), value)
        return replace(controller, samples=(*controller.samples, sample))

    _, memory = _health(
        count(kraft_controller("c1", 1, active=True, registrations={101: 30}), 0),
        count(kraft_controller("c2", 2, active=False, registrations={101: 30}), 0),
        kraft_broker("b1", 101, leaders=4),
        memory=HealthMemory(),
    )

    def gone_with_the_active_controller_unread(follower_count: float) -> BrokerHealth:
        cluster, _ = _health(
            kraft_controller("c1", 1, active=True, up=False),
            count(kraft_controller("c2", 2, active=False, registrations={101: 10}, fenced=1), follower_count),
            kraft_broker("b1", 101, up=False),
            memory=memory,
        )
        b1 = cluster.broker("b1")
        assert b1 is not None
        return b1

    shut_down = gone_with_the_active_controller_unread(1)
    assert shut_down.state is Lifecycle.SHUTDOWN and not shut_down.fenced_unplanned, shut_down
    # the follower counting no controlled shutdown: a leader gone without one, a crash, paged at once
    crashed = gone_with_the_active_controller_unread(0)
    assert crashed.state is Lifecycle.FENCED and crashed.fenced_unplanned, crashed


def test_a_controlled_shutdown_is_told_from_a_crash_by_the_counts_when_the_controller_has_no_per_broker_gauge() -> None:
    # A 4.1+ controller restarted since the brokers registered has no BrokerRegistrationState for them
    # (ControllerMetadataMetricsPublisher.publishSnapshot adds none); its counts still tell the two apart.
    assert _gone_after_running(1, "b1", gauges=False) == {"b1": Lifecycle.SHUTDOWN}
    assert _gone_after_running(0, "b1", gauges=False) == {"b1": Lifecycle.FENCED}
    assert _gone_after_running(1, "b1", "b2", gauges=False) == {"b1": Lifecycle.FENCED, "b2": Lifecycle.FENCED}


def test_not_running_at_start_up_after_a_crash_is_initial_not_a_shutdown() -> None:
    steps = [
        (kraft_broker("b1", 101), 30, Lifecycle.ACTIVE),
        (kraft_broker("b1", 101, up=False), 10, Lifecycle.FENCED),  # killed
        (kraft_broker("b1", 101, broker_state=0), 10, Lifecycle.INITIAL),  # JMX up before the lifecycle starts
        (kraft_broker("b1", 101, broker_state=1), 10, Lifecycle.INITIAL),
        (kraft_broker("b1", 101), 30, Lifecycle.ACTIVE),
    ]
    _lifecycle_steps(steps)


def test_brokerstate_not_yet_read_after_a_restart_is_no_shutdown_and_a_kill_then_pages() -> None:
    # A restarted broker can be ACTIVE by the controller's registration before ctlplane has read its
    # BrokerState (MBeans appear during start-up); a missing MBean then is no sign of a shutdown.
    no_broker_state = node("b1", {"kafka_raft_current_epoch": 5}, node_id=101)
    steps = [
        (kraft_broker("b1", 101, up=False), 10, Lifecycle.FENCED),  # crashed
        (no_broker_state, 30, Lifecycle.ACTIVE),  # back, unfenced; BrokerState not read yet
        (no_broker_state, 30, Lifecycle.ACTIVE),
        (kraft_broker("b1", 101, up=False), 30, Lifecycle.UNREACHABLE),  # killed again
        (kraft_broker("b1", 101, up=False), 10, Lifecycle.FENCED),
    ]
    _lifecycle_steps(steps)


def test_a_zookeeper_mode_broker_whose_session_expired_and_whom_the_controller_dropped_is_fenced() -> None:
    # alive only while it holds its ZooKeeper session (KafkaZkClient.registerBroker: an ephemeral znode); on
    # expiry the controller removes it and
    # its request queue (ControllerChannelManager.removeBroker), while its own BrokerState stays RUNNING.
    queue = "kafka_controller_channel_queue_size"
    session = "kafka_zookeeper_session_state"

    def zk(name: str, node_id: int, state: str, *queues: int) -> object:
        values = {
            "kafka_broker_state": 3,
            "kafka_controller_active": 1 if queues else 0,
            (session, (("state", state),)): 1,
        }
        values.update({(queue, (("broker", str(q)),)): 0 for q in queues})
        return node(name, values, mode=Mode.ZOOKEEPER, node_id=node_id)

    def states(*nodes: object) -> dict[str, Lifecycle]:
        cluster, _ = _health(*nodes)
        return {b.node: b.state for b in cluster.brokers}

    dropped = states(zk("b1", 1, "CONNECTED", 1, 3), zk("b2", 2, "CONNECTING"), zk("b3", 3, "CONNECTED"))
    assert dropped == {"b1": Lifecycle.ACTIVE, "b2": Lifecycle.FENCED, "b3": Lifecycle.ACTIVE}
    # disconnected, but the session has not expired yet: still registered, the controller still sends to it
    assert states(zk("b1", 1, "CONNECTED", 1, 2), zk("b2", 2, "CONNECTING"))["b2"] is Lifecycle.ACTIVE
    # connected, the controller not (yet) sending to it (it has just registered): no guess
    assert states(zk("b1", 1, "CONNECTED", 1), zk("b2", 2, "CONNECTED"))["b2"] is Lifecycle.ACTIVE
    cluster, _ = _health(zk("b1", 1, "CONNECTED", 1, 3), zk("b2", 2, "CONNECTING"), zk("b3", 3, "CONNECTED"))
    b2 = cluster.broker("b2")
    assert b2 is not None and "ZooKeeper session CONNECTING" in b2.evidence


def test_an_unreachable_zookeeper_mode_broker_that_the_controller_dropped_is_fenced() -> None:
    """A crashed or hung ZooKeeper-mode broker: its session expires, the controller drops its request queue
    (KafkaController.onBrokerFailure -> ControllerChannelManager.removeBroker): FENCED, the controller's
    word, not merely UNREACHABLE. While the controller still has its queue, only ctlplane cannot read it."""
    queue = "kafka_controller_channel_queue_size"

    def controller(*queues: int) -> object:
        values = {"kafka_broker_state": 3, "kafka_controller_active": 1}
        values.update({(queue, (("broker", str(q)),)): 0 for q in queues})
        return node("b1", values, mode=Mode.ZOOKEEPER, node_id=1)

    def gone(timeout: bool = False) -> object:
        return node(
            "b2", mode=Mode.ZOOKEEPER, node_id=2, up=False, failure=Failure.TIMEOUT if timeout else Failure.GONE
        )

    for victim in (gone(), gone(timeout=True)):  # kill -9 (refused) or SIGSTOP (hangs)
        cluster, _ = _health(controller(1), victim)
        b2 = cluster.broker("b2")
        assert b2 is not None and b2.state is Lifecycle.FENCED, b2
        assert "no request queue for broker 2" in b2.evidence
    cluster, _ = _health(controller(1, 2), gone())
    assert cluster.broker("b2").state is Lifecycle.UNREACHABLE  # type: ignore[union-attr]
    # a controller without any queue gauge read yet (just elected, names not resolved): no guess
    cluster, _ = _health(
        node("b1", {"kafka_broker_state": 3, "kafka_controller_active": 1}, mode=Mode.ZOOKEEPER, node_id=1), gone()
    )
    assert cluster.broker("b2").state is Lifecycle.UNREACHABLE  # type: ignore[union-attr]


def _zk_rounds(*rounds: tuple[float | None, dict[str, float | None]]) -> list[dict[str, Lifecycle]]:
    """ZooKeeper-mode rounds of controller b1 (its ControlledShutdown requests served, None: not read) and
    brokers b2, b3 by BrokerState (None: gone, connection refused; -1: its read timed out); each round's
    lifecycles."""
    memory, seen = HealthMemory(), []
    for at, (requests, brokers) in enumerate(rounds):
        values: dict[str | tuple[str, tuple[tuple[str, str], ...]], float] = {
            "kafka_broker_state": 3,
            "kafka_controller_active": 1,
        }
        if requests is not None:
            values["kafka_controller_controlled_shutdowns_total"] = requests
        nodes = [node("b1", values, mode=Mode.ZOOKEEPER, node_id=1, at=float(at))]
        for name, state in brokers.items():
            number = int(name[1:])
            if state is None or state < 0:
                failure = Failure.GONE if state is None else Failure.TIMEOUT
                nodes.append(node(name, mode=Mode.ZOOKEEPER, node_id=number, up=False, failure=failure, at=float(at)))
            else:
                nodes.append(node(name, {"kafka_broker_state": state}, mode=Mode.ZOOKEEPER, node_id=number))
        cluster, memory = _health(*nodes, memory=memory, at=float(at))
        seen.append({b.node: b.state for b in cluster.brokers if b.node != "b1"})
    return seen


def test_a_zookeeper_mode_broker_gone_between_rounds_with_its_controlled_shutdown_request_is_shut_down() -> None:
    """A clean stop quicker than a round leaves no BrokerState to read; the controller handled one
    ControlledShutdown request for it (KafkaServer.controlledShutdown -> KafkaController.doControlledShutdown):
    SHUTDOWN, and it stays so. A crash asks nothing: no SHUTDOWN."""
    stopped = _zk_rounds((0, {"b2": 3, "b3": 3}), (1, {"b2": None, "b3": 3}), (1, {"b2": None, "b3": 3}))
    assert [r["b2"] for r in stopped] == [Lifecycle.ACTIVE, Lifecycle.SHUTDOWN, Lifecycle.SHUTDOWN]
    # a round between that read its dying JVM failing otherwise (UNREACHABLE): the count since it was ACTIVE
    dying = _zk_rounds((0, {"b2": 3, "b3": 3}), (0, {"b2": -1, "b3": 3}), (1, {"b2": None, "b3": 3}))
    assert [r["b2"] for r in dying] == [Lifecycle.ACTIVE, Lifecycle.UNREACHABLE, Lifecycle.SHUTDOWN]
    crashed = _zk_rounds((0, {"b2": 3, "b3": 3}), (0, {"b2": None, "b3": 3}), (0, {"b2": None, "b3": 3}))
    assert [r["b2"] for r in crashed] == [Lifecycle.ACTIVE, Lifecycle.UNREACHABLE, Lifecycle.UNREACHABLE]
    # b3 then stopped cleanly while b2's crash is still undecided: one request for two gone, neither credited
    both = _zk_rounds((0, {"b2": 3, "b3": 3}), (0, {"b2": None, "b3": 3}), (1, {"b2": None, "b3": None}))
    assert both[-1] == {"b2": Lifecycle.UNREACHABLE, "b3": Lifecycle.UNREACHABLE}


def test_controlled_shutdown_requests_that_do_not_account_exactly_for_who_left_decide_nothing() -> None:
    """A crash must page: one request while two brokers vanished, two requests for one (a retry, or a broker
    that also asked), a round without the count, or a broker seen shutting down that may have asked."""
    one_for_two = _zk_rounds((0, {"b2": 3, "b3": 3}), (1, {"b2": None, "b3": None}))
    assert one_for_two[-1] == {"b2": Lifecycle.UNREACHABLE, "b3": Lifecycle.UNREACHABLE}
    two_for_one = _zk_rounds((0, {"b2": 3, "b3": 3}), (2, {"b2": None, "b3": 3}))
    assert two_for_one[-1]["b2"] is Lifecycle.UNREACHABLE
    unread = _zk_rounds((None, {"b2": 3, "b3": 3}), (1, {"b2": None, "b3": 3}))
    assert unread[-1]["b2"] is Lifecycle.UNREACHABLE
    # b3 is in its own controlled shutdown: the request may be b3's
    asked = _zk_rounds((0, {"b2": 3, "b3": 3}), (1, {"b2": None, "b3": 6}))
    assert asked[-1] == {"b2": Lifecycle.UNREACHABLE, "b3": Lifecycle.SHUTDOWN}
    both = _zk_rounds((0, {"b2": 3, "b3": 3}), (2, {"b2": None, "b3": None}))
    assert both[-1] == {"b2": Lifecycle.SHUTDOWN, "b3": Lifecycle.SHUTDOWN}


def _zk_broker(name: str, node_id: int, *, active: bool = False, migrating: bool = True) -> NodeSnapshot:
    """A ZooKeeper-mode broker; with `migrating` (KIP-866) it also runs a raft observer."""
    values: dict[str | tuple[str, tuple[tuple[str, str], ...]], float] = {
        "kafka_broker_state": 3,
        "kafka_controller_active": 1.0 if active else 0.0,
        "kafka_controller_zk_migration_state": 4,
    }
    if migrating:
        values["kafka_raft_current_epoch"] = 5
    return node(name, values, node_id=node_id, mode=Mode.ZOOKEEPER)


def _migrating_controller(phase: float, queues: dict[int, float] | None = None) -> NodeSnapshot:
    values: dict[str | tuple[str, tuple[tuple[str, str], ...]], float] = {
        "kafka_controller_active": 1.0,
        "kafka_raft_current_epoch": 5,
        "kafka_controller_zk_migration_state": phase,
        "kafka_controller_last_committed_record_offset": 100,
    }
    for broker, size in (queues or {}).items():
        values[("kafka_controller_channel_queue_size", (("broker", str(broker)),))] = size
    return node("controller-1", values, role=Role.CONTROLLER, node_id=3001, mode=Mode.MIGRATION)


def test_pre_migration_the_zookeeper_controller_is_not_a_second_active_controller() -> None:
    # seen on real 3.9.2: before the brokers are rolled, the ZooKeeper controller broker and the KRaft leader
    # both say ActiveControllerCount=1; they lead different quorums, the KRaft one drives the migration
    cluster, _ = _health(_migrating_controller(2), _zk_broker("broker-1", 1, active=True), _zk_broker("broker-2", 2))
    assert cluster.mode is Mode.MIGRATION
    assert cluster.active_controllers == 1 and cluster.controller.node == "controller-1"
    assert cluster.migration_phase == "PRE_MIGRATION"


def test_in_dual_write_a_zookeeper_brokers_lag_is_the_kraft_controllers_queue_for_it() -> None:
    # MigrationPropagator: the active KRaft controller sends the ZooKeeper brokers their LeaderAndIsr and
    # UpdateMetadata through a ControllerChannelManager of its own (QueueSize,broker-id=N)
    cluster, _ = _health(_migrating_controller(1, {1: 0, 2: 25}), _zk_broker("broker-1", 1), _zk_broker("broker-2", 2))
    assert cluster.migration_phase == "MIGRATION"
    lags = {b.node: (b.metadata_lag_records, b.stale) for b in cluster.brokers}
    assert lags == {"broker-1": (0.0, False), "broker-2": (25.0, True)}


def test_in_dual_write_a_gone_zookeeper_broker_the_kraft_controller_dropped_is_fenced() -> None:
    gone = node("broker-2", None, node_id=2, mode=Mode.ZOOKEEPER, up=False)  # its last read said ZooKeeper
    cluster, _ = _health(_migrating_controller(1, {1: 0}), _zk_broker("broker-1", 1), gone)
    assert cluster.broker("broker-2").state is Lifecycle.FENCED  # type: ignore[union-attr]


def test_a_finished_migration_says_post_migration_and_a_cluster_born_kraft_has_no_phase() -> None:
    post = node(
        "controller-1",
        {"kafka_controller_active": 1.0, "kafka_raft_current_epoch": 5, "kafka_controller_zk_migration_state": 3},
        role=Role.CONTROLLER,
        node_id=3001,
    )
    cluster, _ = _health(post, kraft_broker("broker-1", 1))
    assert cluster.mode is Mode.KRAFT and cluster.migration_phase == "POST_MIGRATION"
    cluster, _ = _health(kraft_controller("c1", 1, active=True), kraft_broker("b1", 101))
    assert cluster.migration_phase is None


def _unplanned_after(
    last_read: NodeSnapshot, now: NodeSnapshot, *, names_shutdown: bool, registration: float = 10
) -> BrokerHealth:
    """b1 read as `last_read` while ACTIVE, then as `now` with the controller's registration state for it;
    `names_shutdown`: the controller has ControlledShutdownBrokerCount (Kafka 4.1+), here 0."""

    def controller(state: float) -> NodeSnapshot:
        c = kraft_controller("c1", 1, active=True, registrations={101: state})
        if not names_shutdown:
            return c
        return replace(c, samples=(*c.samples, Sample("kafka_controller_controlled_shutdown_brokers", (), 0.0)))

    _, memory = _health(controller(30), last_read)
    cluster, _ = _health(controller(registration), now, memory=memory)
    return cluster.brokers[0]


def test_a_leader_gone_and_fenced_where_kafka_names_controlled_shutdowns_is_an_unplanned_fencing() -> None:
    # 4.1+: a clean stop of a leader would have left inControlledShutdown (SHUTDOWN); fenced without it is a crash
    gone = kraft_broker("b1", 101, up=False)
    broker = _unplanned_after(kraft_broker("b1", 101, leaders=3), gone, names_shutdown=True)
    assert broker.state is Lifecycle.FENCED and broker.fenced_unplanned
    # the same with a hang (JMX times out): the process is there, fenced by its missed heartbeats
    hung = kraft_broker("b1", 101, up=False, failure=Failure.TIMEOUT)
    assert _unplanned_after(kraft_broker("b1", 101, leaders=3), hung, names_shutdown=True).fenced_unplanned


def test_a_fencing_a_clean_stop_could_explain_is_not_unplanned() -> None:
    gone = kraft_broker("b1", 101, up=False)
    # it led nothing: Kafka grants such a broker SHUTDOWN_NOW and fences it like a crash
    # (BrokerHeartbeatManager.calculateNextBrokerState), with no inControlledShutdown to tell them apart
    led_nothing = _unplanned_after(kraft_broker("b1", 101, leaders=0), gone, names_shutdown=True)
    assert led_nothing.state is Lifecycle.FENCED and not led_nothing.fenced_unplanned
    # its leader count never read: nothing says a clean stop would have been flagged
    unknown = _unplanned_after(kraft_broker("b1", 101), gone, names_shutdown=True)
    assert unknown.state is Lifecycle.FENCED and not unknown.fenced_unplanned
    # before Kafka 4.1 no controller names a controlled shutdown at all
    old = _unplanned_after(kraft_broker("b1", 101, leaders=3), gone, names_shutdown=False)
    assert old.state is Lifecycle.FENCED and not old.fenced_unplanned
    # not fenced at all
    active = _unplanned_after(kraft_broker("b1", 101, leaders=3), gone, names_shutdown=True, registration=30)
    assert active.state is Lifecycle.UNREACHABLE and not active.fenced_unplanned


def test_a_running_broker_the_controller_fenced_is_unplanned_on_every_kraft_release() -> None:
    # BrokerState RUNNING while fenced: its heartbeats stopped reaching the controller (cut off); a stop or a
    # start shows its own BrokerState instead, so no planned operation reads like this
    running = kraft_broker("b1", 101)
    for names_shutdown in (False, True):
        broker = _unplanned_after(running, running, names_shutdown=names_shutdown)
        assert broker.state is Lifecycle.FENCED and broker.fenced_unplanned, broker.evidence
    # JMX up before BrokerState is registered (a restarting JVM) while the old registration is still fenced
    no_broker_state = node("b1", {"kafka_raft_current_epoch": 5}, node_id=101)
    early = _unplanned_after(kraft_broker("b1", 101, up=False), no_broker_state, names_shutdown=True)
    assert not early.fenced_unplanned, early.evidence


def test_a_restarted_broker_read_running_before_the_controllers_gauge_says_unfenced_is_starting() -> None:
    # A KRaft broker turns RUNNING only on a heartbeat answer that unfences it (BrokerLifecycleManager: "The
    # broker has been unfenced. Transitioning from RECOVERY to RUNNING"), and the controller's
    # BrokerRegistrationState gauge follows its metadata publisher, later, and read at another instant of the
    # round: the first round a restarted broker reads RUNNING the controller may still say FENCED (seen on a
    # loaded fresh-clone run of the rolling-restart row). A start-up, never an unplanned fencing.
    def broker(started: float, **kwargs: object) -> NodeSnapshot:
        return kraft_broker("b1", 101, started=started, **kwargs)  # type: ignore[arg-type]

    steps = [
        (broker(1.0), 30, Lifecycle.ACTIVE),
        (broker(1.0, up=False), 10, Lifecycle.FENCED),  # stopped
        (broker(2.0), 10, Lifecycle.INITIAL),  # a new JVM, RUNNING: the gauge behind its unfencing
        (broker(2.0), 30, Lifecycle.ACTIVE),
    ]
    assert not _lifecycle_steps(steps).fenced_unplanned
    # also through RECOVERY; and once only: RUNNING and fenced the next round, its heartbeats do not arrive
    memory = HealthMemory()
    rounds = [
        (broker(1.0), 30),
        (broker(1.0, up=False), 10),
        (broker(2.0, broker_state=2), 10),
        (broker(2.0), 10),
        (broker(2.0), 10),
    ]
    for at, (snapshot, registration) in enumerate(rounds):
        controller = kraft_controller("c1", 1, active=True, registrations={101: registration})
        cluster, memory = _health(controller, snapshot, memory=memory, at=float(at))
        if at == 3:
            assert cluster.brokers[0].state is Lifecycle.INITIAL, cluster.brokers[0].evidence
    last = cluster.brokers[0]
    assert last.state is Lifecycle.FENCED and last.fenced_unplanned, last.evidence
    # the same JVM resumed after a hang is still fenced until the controller says otherwise: no grace
    steps = [
        (broker(1.0), 30, Lifecycle.ACTIVE),
        (broker(1.0, up=False, failure=Failure.TIMEOUT), 10, Lifecycle.FENCED),  # hung
        (broker(1.0), 10, Lifecycle.FENCED),  # resumed, RUNNING all along
    ]
    assert _lifecycle_steps(steps).fenced_unplanned


def _zk_fenced_rounds(*rounds: tuple[float | None, str, dict[str, float | None]]) -> list[BrokerHealth]:
    """ZooKeeper-mode rounds: (controller b1's ControlledShutdown requests served, None: unread; the active
    controller's name, b1 or b3; brokers b2, b3 by BrokerState, None: gone, -1: timed out). A gone broker is
    deregistered (the controller has no request queue for it). Each round's b2."""
    memory, seen = HealthMemory(), []
    queue = "kafka_controller_channel_queue_size"
    for at, (requests, active, brokers) in enumerate(rounds):
        nodes = []
        for name, state in {"b1": 3.0, **brokers}.items():
            number = int(name[1:])
            if state is None or state < 0:
                failure = Failure.GONE if state is None else Failure.TIMEOUT
                nodes.append(node(name, mode=Mode.ZOOKEEPER, node_id=number, up=False, failure=failure, at=float(at)))
                continue
            values: dict[str | tuple[str, tuple[tuple[str, str], ...]], float] = {
                "kafka_broker_state": state,
                "kafka_controller_active": 1.0 if name == active else 0.0,
            }
            if name == active:
                registered = [n for n, s in {"b1": 3.0, **brokers}.items() if s is not None and s >= 0]
                values.update({(queue, (("broker", n[1:]),)): 0 for n in registered})
                if requests is not None:
                    values["kafka_controller_controlled_shutdowns_total"] = requests
            nodes.append(node(name, values, mode=Mode.ZOOKEEPER, node_id=number, at=float(at)))
        cluster, memory = _health(*nodes, memory=memory, at=float(at))
        b2 = cluster.broker("b2")
        assert b2 is not None
        seen.append(b2)
    return seen


def test_a_zookeeper_mode_broker_gone_without_asking_for_a_controlled_shutdown_is_an_unplanned_fencing() -> None:
    """A crash or a hang never asks the controller to shut down; a clean stop always does first
    (KafkaServer.controlledShutdown, before the ZooKeeper session is closed). Deregistered with no request
    served since it was last ACTIVE, by the same controller: unplanned, and it stays so while fenced."""
    for failed in (None, -1.0):  # kill -9 (refused), SIGSTOP (its reads time out)
        seen = _zk_fenced_rounds((0, "b1", {"b2": 3, "b3": 3}), (0, "b1", {"b2": failed, "b3": 3}))
        assert seen[-1].state is Lifecycle.FENCED and seen[-1].fenced_unplanned, seen[-1].evidence
    # b3 restarted cleanly meanwhile (its request counted): b2, unplanned already, stays so
    later = _zk_fenced_rounds(
        (0, "b1", {"b2": 3, "b3": 3}), (0, "b1", {"b2": None, "b3": 3}), (1, "b1", {"b2": None, "b3": 6})
    )
    assert [b.fenced_unplanned for b in later] == [False, True, True]


def test_a_zookeeper_mode_fencing_a_clean_stop_could_explain_is_not_unplanned() -> None:
    """Any request since (b2's own, or a second broker's beside it), a controller change, or a round without
    the count: the sustained rule's minute, as before."""
    cases = {
        "one request for two gone": ((0, "b1", {"b2": 3, "b3": 3}), (1, "b1", {"b2": None, "b3": None})),
        "another controller": ((0, "b1", {"b2": 3, "b3": 3}), (0, "b3", {"b2": None, "b3": 3})),
        "no count last time": ((None, "b1", {"b2": 3, "b3": 3}), (0, "b1", {"b2": None, "b3": 3})),
        "no count now": ((0, "b1", {"b2": 3, "b3": 3}), (None, "b1", {"b2": None, "b3": 3})),
    }
    for case, rounds in cases.items():
        b2 = _zk_fenced_rounds(*rounds)[-1]
        assert b2.state is Lifecycle.FENCED and not b2.fenced_unplanned, (case, b2.evidence)
    # b2's own request: SHUTDOWN, never FENCED
    stopped = _zk_fenced_rounds((0, "b1", {"b2": 3, "b3": 3}), (1, "b1", {"b2": None, "b3": 3}))
    assert stopped[-1].state is Lifecycle.SHUTDOWN and not stopped[-1].fenced_unplanned


def test_a_running_zookeeper_mode_broker_that_lost_its_session_is_not_unplanned() -> None:
    # its ZooKeeper session alerts name a lost registration (alerts/alertmanager.yml inhibits the fencing page)
    queue = "kafka_controller_channel_queue_size"
    controller = node(
        "b1",
        {"kafka_broker_state": 3, "kafka_controller_active": 1, (queue, (("broker", "1"),)): 0},
        mode=Mode.ZOOKEEPER,
        node_id=1,
    )
    lost = node(
        "b2",
        {"kafka_broker_state": 3, ("kafka_zookeeper_session_state", (("state", "CONNECTING"),)): 1},
        mode=Mode.ZOOKEEPER,
        node_id=2,
    )
    cluster, _ = _health(controller, lost)
    b2 = cluster.broker("b2")
    assert b2 is not None and b2.state is Lifecycle.FENCED and not b2.fenced_unplanned
