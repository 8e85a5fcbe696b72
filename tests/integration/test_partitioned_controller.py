"""A follower controller partitioned from the other voters while its JMX answers (#36, stuck elections): it
stops hearing from the leader and leaves follower after controller.quorum.fetch.timeout.ms (4 s here); on Kafka 4.0+ it
goes prospective, its pre-vote election times out and it follows the leader it knew again, a cycle of seconds
(KIP-996; candidate with ever higher epochs before 4.0), while the other two keep the quorum's leader, which
never sees it caught up. KafkaControllerStuckInElection warns for it, KafkaQuorumNoSpareVoter for
the quorum, nothing pages; healed, it follows again and both resolve. Then one controller hung (a warning),
and two (no leader: KafkaNoActiveController pages within two minutes). Recorded and replayed like the fault
table's rows."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from ctlplane.exporter.sources.admin.client import QuorumReader
from harness.localkafka import (
    LOOPBACK,
    KafkaCluster,
    KafkaNode,
    free_port,
    major_minor,
    quorum_bootstrap,
    start_kraft_cluster,
)
from harness.netcut import CuttableLink
from tests.integration.faults import Expectation, Timeline, healthy, replay
from tests.integration.watch import Watch
from tests.kafka_versions import KRAFT_UNDER_TEST

pytestmark = [
    pytest.mark.kraft,
    pytest.mark.skipif(
        major_minor(KRAFT_UNDER_TEST) < (3, 9),
        reason="the partition needs controllers that advertise a second listener (KIP-853, Kafka 3.9+)",
    ),
]
NAME = "partitioned"
VICTIM = 103
# The listener only the victim speaks: the other controllers advertise it at the links to them, so every byte
# the victim sends goes through a link, also after a fetch response names the leader's endpoint for the
# listener the request came in on (KIP-853's NodeEndpoints, which the raft client follows)
VICTIM_LISTENER = "VICTIM"
# The voters' fetch timeout, twice Kafka's 2 s (QuorumConfig.DEFAULT_QUORUM_FETCH_TIMEOUT_MS). With one of three
# voters hung the leader resigns when the other's fetches stop for 1.5 of it (LeaderState's check-quorum timer,
# CHECK_QUORUM_TIMEOUT_FACTOR): a loaded 2-core suite starved controller-3 (whose raft bytes cross the links)
# for 3 s and the quorum elected it, a real election the hung-follower row does not study.
FETCH_TIMEOUT_MS = 4000


def _partitionable(
    controller_ports: dict[int, int], victim_ports: dict[int, int], links: dict[int, CuttableLink]
) -> dict[str, dict[str, str]]:
    """Node overrides that route every byte between controller VICTIM and the other two through `links`:
    links[n] (n not the victim) forwards to n's VICTIM listener, links[VICTIM] to the victim's CONTROLLER
    listener, which the others' voters name for it."""
    protocols = f"CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,{VICTIM_LISTENER}:PLAINTEXT"
    others = [nid for nid in controller_ports if nid != VICTIM]
    overrides: dict[str, dict[str, str]] = {}
    for nid in others:
        overrides[f"controller-{nid - 100}"] = {
            "controller.quorum.fetch.timeout.ms": str(FETCH_TIMEOUT_MS),
            "listeners": f"CONTROLLER://{LOOPBACK}:{controller_ports[nid]},{VICTIM_LISTENER}://{LOOPBACK}:{victim_ports[nid]}",
            "advertised.listeners": f"CONTROLLER://{LOOPBACK}:{controller_ports[nid]},{VICTIM_LISTENER}://{LOOPBACK}:{links[nid].port}",
            "controller.listener.names": f"CONTROLLER,{VICTIM_LISTENER}",
            "listener.security.protocol.map": protocols,
            "controller.quorum.voters": ",".join(
                f"{n}@{LOOPBACK}:{links[VICTIM].port if n == VICTIM else controller_ports[n]}" for n in controller_ports
            ),
        }
    overrides[f"controller-{VICTIM - 100}"] = {
        "controller.quorum.fetch.timeout.ms": str(FETCH_TIMEOUT_MS),
        "listeners": f"{VICTIM_LISTENER}://{LOOPBACK}:{victim_ports[VICTIM]},CONTROLLER://{LOOPBACK}:{controller_ports[VICTIM]}",
        "advertised.listeners": f"{VICTIM_LISTENER}://{LOOPBACK}:{victim_ports[VICTIM]},CONTROLLER://{LOOPBACK}:{links[VICTIM].port}",
        "controller.listener.names": f"{VICTIM_LISTENER},CONTROLLER",
        "listener.security.protocol.map": protocols,
        "controller.quorum.voters": ",".join(
            f"{n}@{LOOPBACK}:{victim_ports[VICTIM] if n == VICTIM else links[n].port}" for n in controller_ports
        ),
    }
    return overrides


@pytest.fixture(scope="module")
def partitioned(kafka_workdir: Path) -> Iterator[tuple[KafkaCluster, Watch, dict[int, CuttableLink]]]:
    """3 controllers, one broker; controller-3 (the victim) reaches the other two, and they it, only through
    the links. If it leads once started, it is restarted first: the row partitions a follower."""
    ports = {nid: free_port() for nid in (101, 102, 103)}
    victim_ports = {nid: free_port() for nid in (101, 102, 103)}
    links = {nid: CuttableLink((LOOPBACK, ports[VICTIM] if nid == VICTIM else victim_ports[nid])) for nid in ports}
    try:
        cluster = start_kraft_cluster(
            NAME,
            kafka_workdir,
            version=KRAFT_UNDER_TEST,
            controllers=3,
            brokers=1,
            controller_ports=ports,
            node_overrides=_partitionable(ports, victim_ports, links),
        )
        # the quorum's view through the controllers' own addresses (the links carry only the victim's raft traffic)
        reader = QuorumReader(NAME, quorum_bootstrap(cluster), controllers=True, timeout_seconds=10.0)
        watch = Watch(cluster, quorum_sources={NAME: reader})
        try:
            first = watch.until(healthy(NAME), 120, "healthy KRaft cluster")
            health = first.health.cluster(NAME)
            if health is not None and health.controller.node == f"controller-{VICTIM - 100}":
                victim = cluster.node(f"controller-{VICTIM - 100}")
                victim.stop()
                victim.start()
                victim.wait_ready(120)
                watch.until(healthy(NAME), 120, "healthy again with another leader")
            yield cluster, watch, links
        finally:
            watch.close()
            cluster.stop()
    finally:
        for link in links.values():
            link.close()


def test_a_follower_controller_partitioned_from_the_quorum_warns_of_a_stuck_election_and_pages_nothing(
    partitioned: tuple[KafkaCluster, Watch, dict[int, CuttableLink]], tmp_path: Path
) -> None:
    cluster, watch, links = partitioned
    victim = f"controller-{VICTIM - 100}"
    timeline = Timeline(watch, cluster)
    before = timeline.round()
    leader = before.controller.node
    assert leader is not None and leader != victim
    timeline.sleep_into_round(0.5)
    for link in links.values():
        link.cut()
    try:
        # out of step within a round (fetch timeout 4 s); 30 s (raft_out_of_step_alert_seconds) and 1m later the
        # warning fires: 8 rounds (2 min) leave a round to spare
        during = [timeline.round() for _ in range(8)]
    finally:
        for link in links.values():
            link.heal()
    cut_until = len(timeline.observations) - 1
    states = [next((e for e in h.elections if e.node == victim), None) for h in during]
    seen = [(s.state, round(s.out_of_step_seconds)) if s is not None else None for s in states]
    # out of step from the first round after the cut (the leader has not seen it caught up for 14.5 s), the
    # clock running every round after, whatever its own raft state says in each (follower and prospective in
    # turn on 4.x, KIP-996)
    clock = [s.out_of_step_seconds if s is not None else None for s in states]
    assert all(b is not None and a is not None and b > a for a, b in itertools.pairwise(clock)), (
        seen,
        _reads(timeline, victim),
    )
    assert clock[-1] is not None and clock[-1] >= 90, seen
    # the quorum keeps its leader, and it has no spare voter while the victim is out
    assert {h.controller.node for h in during} == {leader}, [h.controller for h in during]
    assert all(h.redundancy is not None and h.redundancy.spare == 0 for h in during[1:]), [h.redundancy for h in during]
    for _ in range(6):
        health = timeline.round()
        if next(e.out_of_step_seconds for e in health.elections if e.node == victim) == 0:
            break
    for _ in range(5):  # the warnings' conditions are gone: each resolves at its next evaluation
        health = timeline.round()
        if health.redundancy is not None and health.redundancy.spare > 0:
            break
    timeline.round()
    last = len(timeline.observations) - 1
    assert next(e.state for e in health.elections if e.node == victim) in ("leader", "follower"), health.elections
    warnings = frozenset({("KafkaControllerStuckInElection", victim), ("KafkaQuorumNoSpareVoter", "")})
    replay(
        timeline,
        "controller-partitioned",
        [
            Expectation("warning", cut_until, warnings),
            Expectation("critical", last, frozenset(), ever=True),
            Expectation("warning", last, warnings, ever=True),
            Expectation("warning", last, frozenset()),
        ],
        f"{victim}'s links to the other controllers cut 0.5 s after a round for 2 minutes (its JMX answering), "
        "then healed",
        tmp_path,
    )


def _reads(timeline: Timeline, node: str) -> list[str]:
    """Each round's read of `node`: up, or why not (for assertion messages)."""
    out = []
    for observation in timeline.observations:
        snapshot = observation.snapshot.cluster(NAME)
        read = next((n for n in snapshot.nodes if n.node == node), None) if snapshot is not None else None
        out.append("-" if read is None else "up" if read.up else f"down: {read.error}")
    return out


def test_one_then_two_of_three_controllers_hung_warn_then_page_critical_within_two_minutes(
    partitioned: tuple[KafkaCluster, Watch, dict[int, CuttableLink]], tmp_path: Path
) -> None:
    """Issue #36's quorum rows on one timeline, as a quorum degrades. A follower SIGSTOPped 0.5 s after a round:
    the leader and the third keep the majority, so the quorum keeps its leader, with no spare voter
    (KafkaQuorumNoSpareVoter warns after 1m) and nothing critical. Then the leader SIGSTOPped too, 0.5 s after
    round 6: the third controller alone is no majority, so no controller is active (KafkaRaftClient: a
    candidate needs a majority's votes) and nothing can change metadata; KafkaNoActiveController (for 1m)
    pages by round 13, 1m45s after the second hang. Both resumed, the quorum elects a leader and everything
    resolves."""
    cluster, watch, _ = partitioned
    timeline = Timeline(watch, cluster)
    before = timeline.round()
    leader_name = before.controller.node
    assert leader_name is not None
    leader = cluster.node(leader_name)
    follower = next(c for c in cluster.controllers() if c.name != leader_name)  # the third controller stays up
    hung: list[KafkaNode] = []
    try:
        timeline.sleep_into_round(0.5)
        follower.pause()
        hung.append(follower)
        one_hung = [timeline.round() for _ in range(6)]
        timeline.sleep_into_round(0.5)
        leader.pause()
        hung.append(leader)
        two_hung = [timeline.round() for _ in range(8)]
    finally:
        for node in hung:
            node.resume()
    one_until, two_until = len(one_hung), len(timeline.observations) - 1
    assert {h.controller.node for h in one_hung} == {leader_name}, [h.controller for h in one_hung]
    assert all(h.redundancy is not None and h.redundancy.spare == 0 for h in one_hung[1:]), [
        h.redundancy for h in one_hung
    ]
    assert all(h.active_controllers == 0 for h in two_hung[1:]), [h.active_controllers for h in two_hung]
    assert all(h.redundancy is not None and h.redundancy.spare < 0 for h in two_hung[1:]), [
        h.redundancy for h in two_hung
    ]
    for _ in range(8):
        if timeline.round().active_controllers == 1:
            break
    for _ in range(3):  # the alerts' conditions are gone: each resolves at its next evaluation
        timeline.round()
    last = len(timeline.observations) - 1
    no_spare = frozenset({("KafkaQuorumNoSpareVoter", "")})
    no_leader = frozenset({("KafkaNoActiveController", "")})
    replay(
        timeline,
        "one-then-two-of-three-controllers-hung",
        [
            Expectation("critical", one_until, frozenset(), ever=True),
            Expectation("warning", one_until, no_spare),
            Expectation("critical", one_until + 7, no_leader),
            Expectation("critical", two_until, no_leader, ever=True),
            Expectation("critical", last, frozenset()),
            Expectation("warning", last, frozenset()),
        ],
        f"{follower.name} (a follower) SIGSTOPped 0.5 s after a round, {leader.name} (the leader) 90 s later, "
        "both SIGCONT 2 minutes after that",
        tmp_path,
    )
