"""The evidence a controller's own metrics give that a broker was unregistered
(ctlplane/exporter/discovery/departures.py)."""

from __future__ import annotations

from ctlplane.exporter.catalog import Role
from ctlplane.exporter.discovery.answers import Watched
from ctlplane.exporter.discovery.departures import Departure, RegistrationsSeen, departures
from ctlplane.exporter.model import ClusterSnapshot, Member, NodeSnapshot, QuorumView
from tests.unit.exporter.builders import node

STATE = "kafka_controller_broker_registration_state"
ACTIVE, UNREGISTERED = 30.0, -1.0


def controller(started_at: float | None, registered: dict[int, float], *, up: bool = True) -> NodeSnapshot:
    values: dict[str | tuple[str, tuple[tuple[str, str], ...]], float] = {
        (STATE, (("broker", str(broker)),)): value for broker, value in registered.items()
    }
    if started_at is not None:
        values["kafka_node_start_time_seconds"] = started_at
    return node("controller-101", values, cluster="prod", role=Role.CONTROLLER, node_id=101, up=up)


def cluster(*nodes: NodeSnapshot) -> ClusterSnapshot:
    return ClusterSnapshot("prod", nodes, QuorumView(read_at=1.0, members=(Member(1, Role.BROKER),)))


def seen(*rounds: ClusterSnapshot) -> RegistrationsSeen:
    state = RegistrationsSeen()
    for round_ in rounds:
        state = state.after(round_)
    return state


def test_a_gauge_the_same_controller_jvm_dropped_is_an_unregistration() -> None:
    state = seen(cluster(controller(100.0, {1: ACTIVE, 3: ACTIVE})), cluster(controller(100.0, {1: ACTIVE})))
    assert set(state.unregistered) == {3}
    assert "controller-101 dropped its registration" in state.unregistered[3]
    # the gauge read while Kafka removes it says UNREGISTERED (getOrDefault): the same
    assert set(
        seen(cluster(controller(100.0, {3: ACTIVE})), cluster(controller(100.0, {3: UNREGISTERED}))).unregistered
    ) == {3}
    # and the evidence stays, round after round, while no controller holds a registration for it
    assert set(state.after(cluster(controller(100.0, {1: ACTIVE}))).unregistered) == {3}


def test_a_gauge_missing_after_a_controller_restart_is_no_evidence() -> None:
    # a controller that loaded its image from a snapshot lacks the gauges of brokers registered before
    # (KAFKA-20370): its new JVM (another start time) says nothing of who left
    assert not seen(cluster(controller(100.0, {3: ACTIVE})), cluster(controller(200.0, {}))).unregistered
    # nor does a controller whose start time was not read, or that was not read at all this round
    assert not seen(cluster(controller(100.0, {3: ACTIVE})), cluster(controller(None, {}))).unregistered
    blip = seen(cluster(controller(100.0, {3: ACTIVE})), cluster(controller(100.0, {}, up=False)))
    assert not blip.unregistered
    # after the blip the same JVM is compared with what it held before it
    assert set(blip.after(cluster(controller(100.0, {}))).unregistered) == {3}


def test_a_broker_registered_again_is_no_longer_unregistered() -> None:
    state = seen(cluster(controller(100.0, {3: ACTIVE})), cluster(controller(100.0, {})))
    assert not state.after(cluster(controller(100.0, {3: 10.0}))).unregistered


def test_departures_take_the_controllers_word_where_describe_cluster_cannot_list_fenced_brokers() -> None:
    watched = {3: Watched(Member(3, Role.BROKER), "broker-3", "h3:9999", 1.0, 1.0)}
    down = node("broker-3", node_id=3, up=False, cluster="prod")
    state = seen(cluster(controller(100.0, {3: ACTIVE})), cluster(controller(100.0, {})))
    assert departures(cluster(down), watched, frozenset(), state.unregistered) == {
        3: (Departure.UNREGISTERED, state.unregistered[3])
    }
    # its JMX answers: it runs, whatever a controller says
    up = node("broker-3", node_id=3, cluster="prod")
    assert departures(cluster(up), watched, frozenset(), state.unregistered) == {}
