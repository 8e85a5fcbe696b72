"""A broker's page (#35): round by round for the dashboard's window, what its JMX, the controller and the
quorum said, folded into runs of rounds that read alike - the evidence a paged person reads to believe it."""

from __future__ import annotations

from dataclasses import replace

from ctlplane.dashboard import views
from ctlplane.dashboard.source import NO_ALERTS
from ctlplane.dashboard.trail import Trail
from ctlplane.exporter.health import Cause, Lifecycle
from ctlplane.exporter.health.cause import CAUSE_TEXT
from ctlplane.exporter.model import CanaryBroker, CanaryView, ClusterSnapshot, Failure, QuorumView
from ctlplane.exporter.state import Observation
from tests.unit.dashboard.builders import T0, as_dict, broker, cluster_health, find, node, observation, texts

# (state, cause, how its JMX failed or None, evidence) per round, 15 s apart: a hang, then the process killed
ROUNDS = (
    (Lifecycle.ACTIVE, None, None, "controller BrokerRegistrationState=30"),
    (Lifecycle.ACTIVE, None, None, "controller BrokerRegistrationState=30"),
    (Lifecycle.FENCED, Cause.HUNG_OR_ISOLATED, Failure.TIMEOUT, "hung; JMX read timed out (1)"),
    (Lifecycle.FENCED, Cause.HUNG_OR_ISOLATED, Failure.TIMEOUT, "hung; JMX read timed out (2)"),
    (Lifecycle.FENCED, Cause.PROCESS_GONE, Failure.GONE, "process gone; JMX connection refused"),
    (Lifecycle.ACTIVE, None, None, "controller BrokerRegistrationState=30"),
)


def _round(sequence: int, state: Lifecycle, cause: Cause | None, failure: Failure | None, evidence: str) -> Observation:
    at = T0 + 15 * sequence
    read = replace(node("b1", at=at, up=failure is None), failure=failure)
    health = replace(broker("b1", state), up=failure is None, cause=cause, evidence=evidence)
    snapshot = ClusterSnapshot("c1", (read, node("b2", at=at, node_id=2)))
    return observation(
        ((snapshot, cluster_health(brokers=(health, broker("b2", node_id=2)))),), at=at, sequence=sequence
    )


def _trail(trail: Trail) -> Trail:
    for sequence, reading in enumerate(ROUNDS, start=1):
        trail.add(_round(sequence, *reading))
    return trail


def test_a_brokers_rounds_fold_into_runs_that_read_alike_with_the_last_rounds_words() -> None:
    runs = _trail(Trail()).cluster("c1").runs["b1"]
    assert [(r.state, r.cause, r.jmx_failure, r.rounds) for r in runs] == [
        (Lifecycle.ACTIVE, None, None, 2),
        (Lifecycle.FENCED, Cause.HUNG_OR_ISOLATED, Failure.TIMEOUT, 2),
        (Lifecycle.FENCED, Cause.PROCESS_GONE, Failure.GONE, 1),
        (Lifecycle.ACTIVE, None, None, 1),
    ]
    hang = runs[1]
    assert (hang.first, hang.last, hang.evidence) == (T0 + 45, T0 + 60, "hung; JMX read timed out (2)")
    # a steady broker costs one run, whatever the number of rounds
    assert len(_trail(Trail()).cluster("c1").runs["b2"]) == 1


def test_runs_leave_with_the_window_and_a_flapping_broker_keeps_its_latest() -> None:
    trail = _trail(Trail(window_seconds=40))  # the last round at T0 + 90: rounds from T0 + 50 on
    assert [r.first for r in trail.cluster("c1").runs["b1"]] == [T0 + 45, T0 + 75, T0 + 90]
    capped = _trail(Trail(max_runs=2)).cluster("c1").runs["b1"]
    assert [(r.state, r.cause) for r in capped] == [(Lifecycle.FENCED, Cause.PROCESS_GONE), (Lifecycle.ACTIVE, None)]


def test_the_brokers_page_shows_each_run_newest_first_with_its_cause_and_what_jmx_did() -> None:
    trail = Trail()
    for sequence, reading in enumerate(ROUNDS[:5], start=1):  # still fenced: the process gone
        trail.add(_round(sequence, *reading))
    current = _round(5, *ROUNDS[4])
    runs = trail.cluster("c1").runs["b1"]
    page = as_dict(views.broker_view("c1", "b1", current, runs, (), T0 + 80, "/dashboard/"))
    rows = find(page, className="evidence-run")
    assert [(r["props"]["data-state"], r["props"]["data-cause"]) for r in rows] == [
        ("FENCED", "process_gone"),
        ("FENCED", "hung_or_isolated"),
        ("ACTIVE", ""),
    ]
    words = list(texts(rows[1]))
    assert CAUSE_TEXT[Cause.HUNG_OR_ISOLATED].phrase in words and "timed out" in words, words
    assert "refused" in list(texts(rows[0]))
    assert "FENCED" in list(texts(page)) and " for 5 s" in list(texts(page))  # since the current run began
    # its row, and a link back to its cluster
    assert [r["props"]["data-node"] for r in find(page, className="node-row level-critical")] == ["b1"]
    assert find(page, href="/dashboard/cluster/c1")


def test_a_broker_not_in_the_round_says_so_and_the_cluster_table_links_each_broker_to_its_page() -> None:
    current = _round(1, *ROUNDS[0])
    missing = list(texts(as_dict(views.broker_view("c1", "nope", current, (), (), T0, "/dashboard/"))))
    assert any("No broker 'nope' in cluster 'c1'" in text for text in missing), missing
    table = as_dict(views.cluster_view("c1", current, (), NO_ALERTS, T0, "/dashboard/"))
    assert find(table, href="/dashboard/cluster/c1/broker/b1") and find(table, href="/dashboard/cluster/c1/broker/b2")


def test_a_cluster_watched_through_the_admin_api_alone_lists_its_brokers_unread_with_their_evidence() -> None:
    """No node read (health/admin.py): the cluster's table and each broker's page come from its health."""
    fenced = replace(
        broker("broker-2", Lifecycle.FENCED, node_id=2),
        up=False,
        cause=Cause.NO_NODE_METRICS,
        evidence="fenced (describeCluster); no node metrics (the Admin API alone)",
    )
    health = cluster_health(brokers=(replace(broker("broker-1", node_id=1), up=False), fenced))
    snapshot = ClusterSnapshot("c1", (), QuorumView(read_at=T0, leader_id=101), admin_only=True)
    current = observation(((snapshot, health),))
    table = as_dict(views.cluster_view("c1", current, (), NO_ALERTS, T0, "/dashboard/"))
    words = " ".join(texts(table))
    assert "broker-1 (id 1)" in words and "broker-2 (id 2)" in words and "the Admin API alone" in words
    page = " ".join(texts(as_dict(views.broker_view("c1", "broker-2", current, (), (), T0, "/dashboard/"))))
    assert "No broker" not in page and "FENCED" in page and "fenced (describeCluster)" in page


def test_the_brokers_page_shows_the_canarys_word_and_how_long_each_change_took_to_reach_it() -> None:
    # b1 served 13 changes (10 within 0.025 s, 2 in 0.1-0.25 s, 1 in 1-2.5 s) and has the latest; b2 answers
    # without the latest for 20 s; a cluster without a canary shows no section
    b1 = CanaryBroker(1, True, buckets=(10, 10, 10, 12, 12, 12, 13, 13, 13, 13, 13, 13), seconds_total=2.6)
    b2 = CanaryBroker(
        2,
        True,
        unserved_since=T0 - 5,  # the round is taken at T0 + 15
        buckets=(3,) * 12,
        seconds_total=0.03,
    )
    canary = CanaryView(T0, "ctlplane-canary-1", T0 - 20, (b1, b2), changes_total=14)
    current = _round(1, *ROUNDS[0])
    with_canary = replace(current, snapshot=replace(current.snapshot, clusters=(
        replace(current.snapshot.clusters[0], canary=canary),
    )))  # fmt: skip
    page = as_dict(views.broker_view("c1", "b1", with_canary, (), (), T0, "/dashboard/"))
    (section,) = find(page, className="canary")
    assert section["props"]["data-canary"] == "served"
    words = list(texts(section))
    assert "serves the latest change (ctlplane-canary-1)" in words, words
    assert words[-8:] == [
        "served within", "≤ 0.025 s", "0.1-0.25 s", "1-2.5 s", "13 changes, mean 0.20 s", "10", "2", "1"
    ], words  # fmt: skip
    behind = as_dict(views.broker_view("c1", "b2", with_canary, (), (), T0, "/dashboard/"))
    (section,) = find(behind, className="canary")
    assert section["props"]["data-canary"] == "behind"
    assert "answers without the latest change (ctlplane-canary-1) for 20 s" in list(texts(section))
    assert not find(as_dict(views.broker_view("c1", "b1", current, (), (), T0, "/dashboard/")), className="canary")
