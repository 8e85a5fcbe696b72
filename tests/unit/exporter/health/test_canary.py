"""The metadata canary's word in the health model (health/canary.py) and its series (families.canary_families)."""

from __future__ import annotations

from dataclasses import replace

from ctlplane.exporter.families import canary_families, render_families
from ctlplane.exporter.health import HealthMemory, evaluate
from ctlplane.exporter.model import CanaryBroker, CanaryView, FleetSnapshot
from ctlplane.exporter.sources.admin.canary import error_reason
from ctlplane.exporter.thresholds import Thresholds
from tests.unit.exporter.builders import fleet, kraft_broker, kraft_controller

T = Thresholds()
NOW = 1000.0


def _with_canary(snapshot: FleetSnapshot, view: CanaryView) -> FleetSnapshot:
    return replace(snapshot, clusters=tuple(replace(c, canary=view) for c in snapshot.clusters))


def _cluster(view: CanaryView) -> FleetSnapshot:
    return _with_canary(
        fleet(
            kraft_controller("controller-101", 101, active=True, registrations={1: 3, 2: 3}),
            kraft_broker("broker-1", 1),
            kraft_broker("broker-2", 2),
        ),
        view,
    )


def _view(*brokers: CanaryBroker) -> CanaryView:
    return CanaryView(read_at=NOW, topic="canary-1", changed_at=NOW - 40, brokers=brokers, changes_total=3)


def test_a_broker_answering_without_the_change_past_the_threshold_is_stale_with_the_canary_as_evidence() -> None:
    late = NOW - T.metadata_stale_seconds - 1
    health, _ = evaluate(
        _cluster(_view(CanaryBroker(1, True), CanaryBroker(2, True, unserved_since=late))), HealthMemory(), T
    )
    served, behind = health.clusters[0].brokers
    assert not served.stale and served.canary_unserved_seconds == 0.0
    assert behind.stale and behind.canary_unserved_seconds == T.metadata_stale_seconds + 1
    assert f"metadata canary: answers without a change made {T.metadata_stale_seconds + 1:.0f}s ago" in behind.evidence
    # its own figures say nothing is wrong: the canary alone made it stale
    assert behind.metadata_lag_seconds is not None and behind.metadata_lag_seconds < T.metadata_stale_seconds


def test_a_change_not_yet_served_within_the_threshold_is_not_stale() -> None:
    soon = NOW - T.metadata_stale_seconds + 1
    health, _ = evaluate(_cluster(_view(CanaryBroker(1, True, unserved_since=soon))), HealthMemory(), T)
    broker = health.clusters[0].brokers[0]
    assert not broker.stale and broker.canary_unserved_seconds == T.metadata_stale_seconds - 1


def test_a_broker_that_did_not_answer_the_canary_says_nothing_through_it() -> None:
    long_ago = NOW - 10 * T.metadata_stale_seconds
    view = _view(CanaryBroker(1, False, unserved_since=long_ago, error="no answer"))
    health, _ = evaluate(_cluster(view), HealthMemory(), T)
    broker = health.clusters[0].brokers[0]
    assert not broker.stale and broker.canary_unserved_seconds is None


def test_without_a_canary_nothing_changes() -> None:
    health, _ = evaluate(
        fleet(kraft_controller("controller-101", 101, active=True, registrations={1: 3}), kraft_broker("broker-1", 1)),
        HealthMemory(),
        T,
    )
    assert health.clusters[0].brokers[0].canary_unserved_seconds is None
    assert not [f for f in render_families(fleet(kraft_broker("broker-1", 1))) if "canary" in f.name]


def test_the_series_a_histogram_per_broker_the_unserved_age_and_the_errors_by_reason() -> None:
    buckets = (0, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3)  # 0.025 .. 60, +Inf
    view = replace(
        _view(
            CanaryBroker(1, True, buckets=buckets, seconds_total=0.09 + 120),
            CanaryBroker(2, True, unserved_since=NOW - 20),
            CanaryBroker(3, False, error="no answer"),
        ),
        errors_total={"not_authorized": 2},
    )
    families = {f.name: f for f in canary_families(_cluster(view))}
    rows = {
        (name, values): value
        for name, _, values, value in families["kafka_broker_metadata_canary_propagation_seconds"].rows
    }
    assert rows[("kafka_broker_metadata_canary_propagation_seconds_bucket", ("c1", "broker-1", "broker", "0.05"))] == 1
    assert rows[("kafka_broker_metadata_canary_propagation_seconds_bucket", ("c1", "broker-1", "broker", "+Inf"))] == 3
    assert rows[("kafka_broker_metadata_canary_propagation_seconds_count", ("c1", "broker-1", "broker"))] == 3
    unserved = {
        values[1]: value for _, _, values, value in families["kafka_broker_metadata_canary_unserved_seconds"].rows
    }
    assert unserved == {"broker-1": 0.0, "broker-2": 20.0}  # broker-3 did not answer: no figure
    assert families["ctlplane_canary_errors"].rows[0][2:] == (("c1", "not_authorized"), 2.0)
    assert families["ctlplane_canary_changes"].rows[0][3] == 3.0
    assert families["ctlplane_canary_last_change_timestamp_seconds"].rows[0][3] == NOW - 40


def test_errors_are_named_by_what_kafka_said() -> None:
    assert error_reason("TopicAuthorizationException: Authorization failed.") == "not_authorized"
    assert error_reason("SaslAuthenticationException: Authentication failed") == "authentication"
    assert error_reason("TimeoutException: Timed out waiting for a node assignment") == "timeout"
    assert error_reason("PolicyViolationException: replication factor 1 below 3") == "rejected"
    assert error_reason("KafkaException: something else") == "failed"
