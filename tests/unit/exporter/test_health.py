from __future__ import annotations

from exporter.catalog import Mode, Role
from exporter.health import HealthMemory, Lifecycle, Thresholds, evaluate, find_active_controller
from exporter.model import Failure
from tests.unit.exporter.builders import fleet, kraft_broker, kraft_controller, node

T = Thresholds()


def _health(*nodes, memory=None, at=1000.0):  # type: ignore[no-untyped-def]
    health, memory = evaluate(fleet(*nodes, at=at), memory or HealthMemory(), T)
    return health.clusters[0], memory


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


def test_broker_state_mapping_without_controller_evidence() -> None:
    cluster, _ = _health(*(kraft_broker(f"b{s}", 100 + s, broker_state=s) for s in (0, 1, 2, 3, 6, 7)))
    assert [b.state for b in cluster.brokers] == [
        Lifecycle.INITIAL,  # NOT_RUNNING on first sight: start-up (after RUNNING it means shut down)
        Lifecycle.INITIAL,
        Lifecycle.FENCED,
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
    memory = HealthMemory()
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
    for at, (broker, registration, expected) in enumerate(steps):
        controller = kraft_controller("c1", 1, active=True, registrations={101: registration})
        cluster, memory = _health(controller, broker, memory=memory, at=float(at))
        assert cluster.brokers[0].state is expected, f"step {at}: {cluster.brokers[0].evidence}"


def test_a_stopped_process_that_the_controller_fenced_is_shut_down_a_hung_one_is_fenced() -> None:
    # The shutdown itself fell between two scrapes: ACTIVE, then no process and fenced.
    memory = HealthMemory()
    steps = [
        (kraft_broker("b1", 101), 30, Lifecycle.ACTIVE),
        (node("b1", {"kafka_raft_current_epoch": 5}, node_id=101), 30, Lifecycle.SHUTDOWN),  # stopping
        (kraft_broker("b1", 101), 30, Lifecycle.ACTIVE),  # (not a real sequence: resets the memory)
        (kraft_broker("b1", 101, up=False, failure=Failure.GONE), 10, Lifecycle.SHUTDOWN),
        (kraft_broker("b1", 101, up=False, failure=Failure.GONE), 10, Lifecycle.SHUTDOWN),  # sticky
        (kraft_broker("b1", 101), 30, Lifecycle.ACTIVE),  # restarted
        (kraft_broker("b1", 101, up=False, failure=Failure.TIMEOUT), 30, Lifecycle.UNREACHABLE),  # hangs
        (kraft_broker("b1", 101, up=False, failure=Failure.TIMEOUT), 10, Lifecycle.FENCED),  # session expired
        (kraft_broker("b1", 101, up=False, failure=Failure.GONE), 10, Lifecycle.FENCED),  # then killed: still
    ]
    for at, (broker, registration, expected) in enumerate(steps):
        controller = kraft_controller("c1", 1, active=True, registrations={101: registration})
        cluster, memory = _health(controller, broker, memory=memory, at=float(at))
        assert cluster.brokers[0].state is expected, f"step {at}: {cluster.brokers[0].evidence}"
