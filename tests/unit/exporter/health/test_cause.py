"""Every page says why (#35): each broker state that is not ACTIVE, or not read, carries a cause decided from
the snapshot's evidence, served as its own info series (never a label on the lifecycle series, whose `for:`
a changing cause must not restart), in /api/v1/health and in the history archive."""

from __future__ import annotations

from dataclasses import replace

from ctlplane.exporter.catalog import Mode, Role
from ctlplane.exporter.families import health_families
from ctlplane.exporter.health import Cause, HealthMemory, Lifecycle, evaluate
from ctlplane.exporter.health.cause import CAUSE_TEXT, CAUSES_OF_STATE, fault_cause
from ctlplane.exporter.history.rows import observation_rows
from ctlplane.exporter.http.jsonapi import health_from_dict, health_to_dict
from ctlplane.exporter.model import Failure, Sample
from ctlplane.exporter.state import Observation
from ctlplane.exporter.thresholds import Thresholds
from tests.unit.exporter.builders import fleet, kraft_broker, kraft_controller, node
from tests.unit.exporter.health.test_admin import admin_rounds, kraft_answers, zookeeper_answers

FENCED, SHUTDOWN, ACTIVE, INITIAL = 10.0, 20.0, 30.0, -1.0  # BrokerRegistrationState values


def _broker(broker, registration: float | None = None):  # type: ignore[no-untyped-def]
    registrations = {101: registration} if registration is not None else {}
    controller = kraft_controller("c1", 1, active=True, registrations=registrations)
    health, _ = evaluate(fleet(controller, broker), HealthMemory(), Thresholds())
    return health, health.clusters[0].brokers[0]


def test_a_fenced_broker_whose_port_refuses_is_a_process_gone() -> None:
    _, broker = _broker(kraft_broker("b1", 101, up=False, failure=Failure.GONE), FENCED)
    assert (broker.state, broker.cause) == (Lifecycle.FENCED, Cause.PROCESS_GONE)


def test_a_fenced_broker_whose_port_times_out_is_hung_or_isolated_both_named() -> None:
    # a SIGSTOPped JVM and a host whose network drops ctlplane's and the controller's packets read the same
    _, broker = _broker(kraft_broker("b1", 101, up=False, failure=Failure.TIMEOUT), FENCED)
    assert (broker.state, broker.cause) == (Lifecycle.FENCED, Cause.HUNG_OR_ISOLATED)


def test_a_running_broker_the_controller_fences_is_cut_off_from_the_controller() -> None:
    _, broker = _broker(kraft_broker("b1", 101, broker_state=3), FENCED)
    assert (broker.state, broker.cause) == (Lifecycle.FENCED, Cause.CUT_OFF_FROM_CONTROLLER)


def _gc_broker(gc: dict[str, float], *, started: float = 1.0, **kwargs):  # type: ignore[no-untyped-def]
    """b1 with its collectors' CollectionTime in seconds (java.lang:type=GarbageCollector,name=<collector>)."""
    broker = kraft_broker("b1", 101, started=started, **kwargs)
    samples = tuple(Sample("kafka_jvm_gc_collection_seconds_total", (("collector", c),), v) for c, v in gc.items())
    return replace(broker, samples=(*broker.samples, *samples))


def _rounds(*reads):  # type: ignore[no-untyped-def]
    """b1 read round by round as (snapshot, the controller's registration state for it); its health each round."""
    memory, seen = HealthMemory(), []
    for at, (broker, registration) in enumerate(reads):
        controller = kraft_controller("c1", 1, active=True, registrations={101: registration})
        health, memory = evaluate(fleet(controller, broker, at=float(at)), memory, Thresholds())
        seen.append(health.clusters[0].brokers[0])
    return seen


def test_a_broker_fenced_by_its_own_long_gc_pause_names_the_pause_until_it_is_unfenced() -> None:
    # A stop-the-world pause stops its heartbeats and its JMX alike; once it ends the broker reads RUNNING while
    # the controller has fenced it, and its collectors' time jumped since the last read of the same JVM.
    young, old = "G1 Young Generation", "G1 Old Generation"
    seen = _rounds(
        (_gc_broker({young: 1.0, old: 0.0}), ACTIVE),
        (kraft_broker("b1", 101, up=False, failure=Failure.TIMEOUT), FENCED),  # in the pause: JMX times out
        (_gc_broker({young: 1.2, old: 11.0}), FENCED),  # the pause is over, the controller not yet convinced
        (_gc_broker({young: 1.3, old: 11.0}), FENCED),  # the pause stays the evidence while fenced
        (_gc_broker({young: 1.4, old: 11.0}), ACTIVE),
    )
    assert [b.cause for b in seen] == [
        None, Cause.HUNG_OR_ISOLATED, Cause.LONG_GC_PAUSE, Cause.LONG_GC_PAUSE, None,
    ]  # fmt: skip
    assert "11.2 s in GC pauses" in seen[2].evidence, seen[2].evidence
    # a little GC, or a concurrent collector's cycles (ZGC, Shenandoah: no pause): cut off
    for first, then in (({young: 1.0}, {young: 2.0}), ({"ZGC Cycles": 1.0}, {"ZGC Cycles": 40.0})):
        seen = _rounds((_gc_broker(first), ACTIVE), (_gc_broker(then), FENCED))
        assert seen[1].cause is Cause.CUT_OFF_FROM_CONTROLLER, (then, seen[1].evidence)
    # a new JVM's counters start again: no pause is read from them (a restart, read as one)
    seen = _rounds((_gc_broker({young: 1.0}), ACTIVE), (_gc_broker({young: 30.0}, started=2.0), FENCED))
    assert seen[1].cause is Cause.STARTING, seen[1].evidence


def test_a_zookeeper_mode_broker_whose_session_is_not_connected_lost_zookeeper() -> None:
    # whatever state the controller's word gives it yet: the session is the cause of what follows (its
    # /brokers/ids/N is ephemeral, KafkaZkClient.registerBroker)
    def zk_broker(state: str):  # type: ignore[no-untyped-def]
        values = {
            ("kafka_zookeeper_session_state", (("state", s),)): float(s == state) for s in ("CONNECTED", "EXPIRED")
        }
        return node("b1", {"kafka_broker_state": 3.0, **values}, mode=Mode.ZOOKEEPER, node_id=1)

    zk_controller = node("z0", {"kafka_controller_active": 1.0}, mode=Mode.ZOOKEEPER, node_id=0)
    lost, _ = evaluate(fleet(zk_controller, zk_broker("EXPIRED")), HealthMemory(), Thresholds())
    kept, _ = evaluate(fleet(zk_controller, zk_broker("CONNECTED")), HealthMemory(), Thresholds())
    assert lost.clusters[0].broker("b1").cause is Cause.ZOOKEEPER_SESSION_LOST  # type: ignore[union-attr]
    assert kept.clusters[0].broker("b1").cause is None  # type: ignore[union-attr]


def test_a_controlled_shutdown_and_a_start_up_name_themselves_and_an_active_broker_has_no_cause() -> None:
    assert _broker(kraft_broker("b1", 101, broker_state=6), SHUTDOWN)[1].cause is Cause.CONTROLLED_SHUTDOWN
    assert _broker(kraft_broker("b1", 101, broker_state=1), FENCED)[1].cause is Cause.STARTING
    assert _broker(kraft_broker("b1", 101), ACTIVE)[1].cause is None


def test_an_unreachable_broker_names_how_its_jmx_failed() -> None:
    # the controller still counts it active: a JMX-only problem, or a ZooKeeper-mode crash
    assert _broker(kraft_broker("b1", 101, up=False, failure=Failure.GONE), ACTIVE)[1].cause is Cause.PROCESS_GONE
    auth = kraft_broker("b1", 101, up=False, failure=Failure.AUTH)
    assert _broker(auth, ACTIVE)[1].cause is Cause.JMX_AUTH_FAILED


def test_the_cause_is_an_info_series_beside_the_lifecycle_in_the_api_and_in_the_archive() -> None:
    health, broker = _broker(kraft_broker("b1", 101, up=False, failure=Failure.TIMEOUT), FENCED)
    families = {f.name: f for f in health_families(health)}
    rows = [(values, value) for _, _, values, value in families["kafka_broker_fault_cause"].rows]
    assert rows == [(("c1", "b1", Role.BROKER.value, "hung_or_isolated"), 1.0)]
    lifecycle = {values[3]: value for _, _, values, value in families["kafka_broker_lifecycle_state"].rows}
    assert lifecycle["FENCED"] == 1.0  # no cause label there: its series stays the same while the cause moves
    controller = kraft_controller("c1", 1, active=True, registrations={101: FENCED})
    snapshot = fleet(controller, kraft_broker("b1", 101, up=False, failure=Failure.TIMEOUT))
    assert health_from_dict(health_to_dict(health, snapshot)).clusters[0].brokers[0].cause is Cause.HUNG_OR_ISOLATED
    archived = observation_rows(Observation(snapshot, health))
    causes = [
        labels
        for series, labels in zip(archived.series, archived.labels, strict=True)
        if series == "kafka_broker_fault_cause"
    ]
    assert causes == ["cause=hung_or_isolated"]
    assert broker.cause is Cause.HUNG_OR_ISOLATED


def test_the_cluster_pages_broker_row_names_the_cause_before_its_evidence() -> None:
    from ctlplane.dashboard import views

    controller = kraft_controller("c1", 1, active=True, registrations={101: FENCED})
    snapshot = fleet(controller, kraft_broker("b1", 101, up=False, failure=Failure.GONE))
    health, _ = evaluate(snapshot, HealthMemory(), Thresholds())
    table = views.node_table(snapshot.clusters[0], health.clusters[0])
    rows = [r for r in table._traverse() if getattr(r, "data-node", None) == "b1"]  # type: ignore[attr-defined]
    assert [getattr(r, "data-cause") for r in rows] == ["process_gone"]
    (evidence,) = [c for c in rows[0].children if getattr(c, "className", None) == "evidence"]
    strong, separator, text = evidence.children
    assert (strong.children, separator) == ("process gone", ": ") and text.startswith("controller registration state")


def test_every_cause_a_state_can_carry_is_listed_for_it_and_has_its_words() -> None:
    # the rules and runbooks name, per lifecycle state, the causes CAUSES_OF_STATE lists: every evidence
    # a snapshot can hold must land in that list, or a page would carry a cause its runbook does not explain
    _, template = _broker(kraft_broker("b1", 101), ACTIVE)
    seen: set[tuple[Lifecycle, Cause]] = set()
    for state in Lifecycle:
        for up, failure in ((True, Failure.GONE), *((False, f) for f in Failure)):
            for broker_state in (None, 1.0, 3.0, 6.0):
                for mode, session in ((Mode.KRAFT, None), (Mode.ZOOKEEPER, "CONNECTED"), (Mode.ZOOKEEPER, "EXPIRED")):
                    values: dict[str | tuple[str, tuple[tuple[str, str], ...]], float] = {}
                    if broker_state is not None:
                        values["kafka_broker_state"] = broker_state
                    if session is not None:
                        values[("kafka_zookeeper_session_state", (("state", session),))] = 1.0
                    snapshot = node("b1", values, mode=mode, node_id=101, up=up, failure=failure)
                    for timed_out, gc_paused in ((False, None), (True, None), (False, 9.0), (True, 9.0)):
                        cause = fault_cause(replace(template, state=state, up=up), snapshot, mode, timed_out, gc_paused)
                        if cause is None:  # read, or read at its own pace (NodeSnapshot.held)
                            assert state is Lifecycle.ACTIVE and (up or failure is Failure.PACED)
                            continue
                        assert cause in CAUSES_OF_STATE[state], (state, up, failure, broker_state, mode, session)
                        seen.add((state, cause))
    # and what the Admin API alone gives (health/admin.py): fenced, gone from describeCluster, not fetching
    for answers in (
        admin_rounds(kraft_answers({1: True}, {1: 40}, observers=(1,))),
        admin_rounds(zookeeper_answers((1, 2), 1), zookeeper_answers((1,), 1)),
        admin_rounds(kraft_answers(None, {1: 20}, observers=(1,))),
    ):
        for broker in answers[-1].brokers:
            if broker.state is Lifecycle.ACTIVE:
                assert broker.cause is None, broker
                continue
            assert broker.cause is not None and broker.cause in CAUSES_OF_STATE[broker.state], broker
            seen.add((broker.state, broker.cause))
    assert seen == {(state, cause) for state, causes in CAUSES_OF_STATE.items() for cause in causes}
    assert set(CAUSE_TEXT) == set(Cause)


def test_a_running_broker_fenced_while_the_controllers_heartbeat_timeouts_rise_names_an_overloaded_controller() -> None:
    # QuorumController.processBrokerHeartbeat: a heartbeat that waited past its deadline on the event queue
    # is expired and counted (TimedOutBrokerHeartbeatCount); one that never arrived is not counted
    def rounds(counts: tuple[float, float]) -> Cause | None:
        memory = HealthMemory()
        broker = None
        for at, count in zip((1000.0, 1015.0), counts, strict=True):
            controller = kraft_controller("c1", 1, active=True, registrations={101: FENCED}, heartbeat_timeouts=count)
            health, memory = evaluate(
                fleet(controller, kraft_broker("b1", 101, broker_state=3, at=at), at=at), memory, Thresholds()
            )
            broker = health.clusters[0].brokers[0]
        assert broker is not None and broker.state is Lifecycle.FENCED
        return broker.cause

    assert rounds((4.0, 7.0)) is Cause.CONTROLLER_OVERLOADED
    assert rounds((4.0, 4.0)) is Cause.CUT_OFF_FROM_CONTROLLER  # its heartbeats never reached the controller
