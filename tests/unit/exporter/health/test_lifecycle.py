"""A broker's first reading (health/lifecycle.py `broker_lifecycle`) and the order the decision's rules apply in
(health/decision.py), each case by the Kafka behaviour it rests on."""

from __future__ import annotations

import pytest

from ctlplane.exporter.health.decision import decide_brokers
from ctlplane.exporter.health.lifecycle import broker_lifecycle
from ctlplane.exporter.health.model import BROKER_STATE_NAMES, BrokerHealth, BrokerState, ClusterMemory, Lifecycle
from ctlplane.exporter.model import ClusterSnapshot, Failure
from ctlplane.exporter.thresholds import Thresholds
from tests.unit.exporter.builders import kraft_broker, kraft_controller

FENCED, ACTIVE = 10.0, 30.0  # BrokerRegistrationState (Kafka 4.1+)


def test_broker_states_are_named_as_kafka_names_them() -> None:
    """org.apache.kafka.metadata.BrokerState; the same numbers before 2.8 (KafkaServer.scala's BrokerStates)."""
    assert BROKER_STATE_NAMES[3.0] == "RUNNING" == BrokerState(3).name
    assert BrokerState.PENDING_CONTROLLED_SHUTDOWN == 6.0  # a gauge's float compares equal to its name
    assert set(BROKER_STATE_NAMES) == {0.0, 1.0, 2.0, 3.0, 6.0, 7.0, 127.0}


@pytest.mark.parametrize(
    ("broker_state", "registration", "previous", "state"),
    [
        # its own word first while it stops or starts: the controller's registration lags behind it
        (BrokerState.PENDING_CONTROLLED_SHUTDOWN, ACTIVE, Lifecycle.ACTIVE, Lifecycle.SHUTDOWN),
        (BrokerState.SHUTTING_DOWN, FENCED, Lifecycle.ACTIVE, Lifecycle.SHUTDOWN),
        (BrokerState.STARTING, FENCED, None, Lifecycle.INITIAL),
        (BrokerState.RECOVERY, FENCED, Lifecycle.FENCED, Lifecycle.INITIAL),
        # NOT_RUNNING after running is the end of a stop; before, a start
        (BrokerState.NOT_RUNNING, None, Lifecycle.ACTIVE, Lifecycle.SHUTDOWN),
        (BrokerState.NOT_RUNNING, None, None, Lifecycle.INITIAL),
        # RUNNING: the controller's registration decides; without one, RUNNING is ACTIVE
        (BrokerState.RUNNING, FENCED, Lifecycle.FENCED, Lifecycle.FENCED),
        (BrokerState.RUNNING, ACTIVE, Lifecycle.ACTIVE, Lifecycle.ACTIVE),
        (BrokerState.RUNNING, None, None, Lifecycle.ACTIVE),
    ],
)
def test_a_read_broker_is_first_its_own_word_then_the_controllers(
    broker_state: BrokerState, registration: float | None, previous: Lifecycle | None, state: Lifecycle
) -> None:
    node = kraft_broker("b1", 1, broker_state=float(broker_state))
    assert broker_lifecycle(node, registration, previous)[0] is state


def test_the_first_running_read_of_a_new_jvm_is_the_end_of_its_start_not_a_fencing() -> None:
    """BrokerLifecycleManager turns RUNNING on the heartbeat answer that unfences it; the controller's gauge
    follows later: once, FENCED beside a JVM just RUNNING is the gauge behind."""
    node = kraft_broker("b1", 1)
    assert broker_lifecycle(node, FENCED, Lifecycle.INITIAL, just_running=True)[0] is Lifecycle.INITIAL
    assert broker_lifecycle(node, FENCED, Lifecycle.INITIAL, just_running=False)[0] is Lifecycle.FENCED


def test_a_broker_not_read_is_what_the_controller_says_or_unreachable() -> None:
    gone = kraft_broker("b1", 1, up=False, failure=Failure.GONE)
    state, evidence = broker_lifecycle(gone, FENCED, Lifecycle.ACTIVE)
    assert state is Lifecycle.FENCED and "process gone without a controlled shutdown" in evidence
    assert broker_lifecycle(gone, FENCED, Lifecycle.SHUTDOWN)[0] is Lifecycle.SHUTDOWN  # the end of a stop
    hung = kraft_broker("b1", 1, up=False, failure=Failure.TIMEOUT)
    assert broker_lifecycle(hung, None, Lifecycle.ACTIVE)[0] is Lifecycle.UNREACHABLE


def _first(name: str, node_id: int, state: Lifecycle, up: bool = True) -> BrokerHealth:
    return BrokerHealth(
        cluster="c1",
        node=name,
        role=kraft_broker(name, node_id).role,
        node_id=node_id,
        up=up,
        state=state,
        evidence="first reading",
        metadata_lag_records=None,
        metadata_lag_seconds=None,
        stale=False,
        frozen=False,
        control_plane_listener=False,
        control_plane_queue_ratio=None,
        control_plane_saturated=False,
    )


def test_the_decision_infers_fenced_from_the_count_then_names_the_cause() -> None:
    """No per-broker registration (a controller restarted since the brokers registered): FencedBrokerCount=1
    and one broker unreachable is that broker (infer_fenced), and its cause comes last (with_cause)."""
    controller = kraft_controller("c", 100, active=True, fenced=1)
    hung = kraft_broker("b1", 1, up=False, failure=Failure.TIMEOUT)
    cluster = ClusterSnapshot("c1", (controller, hung, kraft_broker("b2", 2)))
    first = [_first("b1", 1, Lifecycle.UNREACHABLE, up=False), _first("b2", 2, Lifecycle.ACTIVE)]
    decided = decide_brokers(cluster, controller, first, frozenset(), ClusterMemory(), Thresholds())
    b1, b2 = decided.brokers
    assert (b1.state, b2.state) == (Lifecycle.FENCED, Lifecycle.ACTIVE)
    assert b1.cause is not None and b2.cause is None


def test_a_round_with_no_word_on_fencing_holds_a_fenced_broker_fenced() -> None:
    """Every controller read timed out: a broker FENCED last round and gone still stays FENCED (held_fenced),
    so its page's `for:` is not restarted by an UNREACHABLE round."""
    gone = kraft_broker("b1", 1, up=False, failure=Failure.GONE)
    silent = kraft_controller("c", 100, active=True, up=False)
    cluster = ClusterSnapshot("c1", (silent, gone))
    memory = ClusterMemory(states={"b1": Lifecycle.FENCED}, unplanned=frozenset({"b1"}))
    first = [_first("b1", 1, Lifecycle.UNREACHABLE, up=False)]
    (held,) = decide_brokers(cluster, None, first, frozenset(), memory, Thresholds()).brokers
    assert held.state is Lifecycle.FENCED and held.fenced_unplanned
