"""Discovery (ctlplane/exporter/discovery/answers.py): JMX addresses from the operator's rule, and a watched set
that the cluster's answers only ever add to (a node absent from an answer is the node that needs watching)."""

from __future__ import annotations

from types import MappingProxyType

import pytest

from ctlplane.exporter.catalog import Mode, Role
from ctlplane.exporter.config import Settings
from ctlplane.exporter.config.file import ConfigError, parse_settings
from ctlplane.exporter.discovery.answers import (
    Discovered,
    JmxRule,
    NodeDiscovery,
    TemplateError,
    Watched,
    check_template,
    fill,
)
from ctlplane.exporter.discovery.departures import Departure, departures
from ctlplane.exporter.model import ClusterSnapshot, FleetSnapshot, Member, NodeSnapshot, QuorumReplica, QuorumView
from ctlplane.exporter.scraper import Target
from ctlplane.exporter.sources.jmx.base import Endpoint
from ctlplane.exporter.state import ExporterState, Observation
from ctlplane.exporter.thresholds import Thresholds
from ctlplane.wiring import admin_only
from tests.unit.exporter.builders import node

RULE = JmxRule(broker="{host}:9999", controller="ctl-{id}.kafka:9998")
NONE: frozenset[int] = frozenset()


def _reconcile(
    state: Discovered, *members: Member, rule: JmxRule = RULE, ids: frozenset[int] = NONE, at: float = 1.0
) -> Discovered:
    return state.reconcile(members, rule, ids, frozenset(), frozenset(), at)


@pytest.mark.parametrize(
    ("template", "node_id", "host", "address"),
    [
        ("{host}:9999", 3, "kafka-3.example", "kafka-3.example:9999"),
        ("kafka-{id}.kafka-brokers.svc:9999", 3, None, "kafka-3.kafka-brokers.svc:9999"),
        ("127.0.0.1:{id+40000}", 101, None, "127.0.0.1:40101"),
        ("127.0.0.1:{id-1}", 9001, None, "127.0.0.1:9000"),
        ("{host}:9999", 3, None, None),  # the answer gave no host: no address, never a wrong one
    ],
)
def test_a_template_fills_in_the_host_and_the_id(
    template: str, node_id: int, host: str | None, address: str | None
) -> None:
    assert fill(check_template(template), node_id, host) == address


@pytest.mark.parametrize("template", ["{host}", "{hostname}:9999", "{host+1}:9999", "{id*2}:1", "x:{port}"])
def test_a_template_ctlplane_cannot_fill_is_refused_at_load_time(template: str) -> None:
    with pytest.raises(TemplateError):
        check_template(template)


def test_every_node_an_answer_names_is_watched_with_its_role_and_a_node_that_vanishes_stays() -> None:
    state = _reconcile(
        Discovered(),
        Member(1, Role.BROKER, "b1.example"),
        Member(2, Role.BROKER, "b2.example"),
        Member(101, Role.CONTROLLER),
    )
    assert {i: (w.node, w.address, w.member.role) for i, w in state.watched.items()} == {
        1: ("broker-1", "b1.example:9999", Role.BROKER),
        2: ("broker-2", "b2.example:9999", Role.BROKER),
        101: ("controller-101", "ctl-101.kafka:9998", Role.CONTROLLER),
    }
    # broker 2 fenced before Kafka 4.0 (describeCluster leaves it out), or an observer the leader forgot:
    # it stays, and so does when it was last named
    later = _reconcile(state, Member(1, Role.BROKER, "b1.example"), Member(101, Role.CONTROLLER), at=2.0)
    assert set(later.watched) == {1, 2, 101}
    assert later.watched[2].last_seen_at == 1.0 and later.watched[1].last_seen_at == 2.0
    # an answer that names nobody (the quorum failed over and knows no observer yet) drops nobody
    assert set(_reconcile(later, at=3.0).watched) == {1, 2, 101}


def test_answers_that_name_a_node_in_both_roles_make_it_combined() -> None:
    state = _reconcile(Discovered(), Member(1, Role.BROKER, "n1"), Member(1, Role.CONTROLLER))
    assert state.watched[1].member.role is Role.COMBINED and state.watched[1].address == "n1:9999"
    assert state.watched[1].node == "combined-1"


def test_a_node_the_rule_gives_no_address_is_known_and_unwatched_with_the_reason() -> None:
    brokers_only = JmxRule(broker="{host}:9999")
    state = _reconcile(Discovered(), Member(5, Role.BROKER), Member(101, Role.CONTROLLER, "c1"), rule=brokers_only)
    assert not state.watched
    assert "needs {host}" in state.unwatched[5].reason
    assert state.unwatched[101].reason == "no JMX address rule for a controller"
    # an override by id gives it one
    override = JmxRule(broker="{host}:9999", overrides={5: "10.0.0.5:9999"})
    assert _reconcile(state, Member(5, Role.BROKER), rule=override).watched[5].address == "10.0.0.5:9999"


def test_a_listed_node_is_never_discovered_twice() -> None:
    by_id = _reconcile(Discovered(), Member(1, Role.BROKER, "b1"), ids=frozenset({1}))
    assert not by_id.watched
    by_address = Discovered().reconcile(
        [Member(1, Role.BROKER, "b1")], RULE, NONE, frozenset({"b1:9999"}), frozenset(), 1.0
    )
    assert not by_address.watched
    # discovered before the listed node's id was known: the copy goes once it is
    copy = _reconcile(Discovered(), Member(1, Role.BROKER, "b1"))
    assert 1 in copy.watched and not _reconcile(copy, Member(1, Role.BROKER, "b1"), ids=frozenset({1})).watched
    clash = Discovered().reconcile(
        [Member(1, Role.BROKER, "b1")], RULE, NONE, frozenset(), frozenset({"broker-1"}), 1.0
    )
    assert not clash.watched and "broker-1" in clash.unwatched[1].reason


def _snapshot(members: tuple[Member, ...]) -> Observation:
    view = QuorumView(read_at=1.0, members=members)
    return ExporterState(FleetSnapshot(1, 1.0, 0.1, (ClusterSnapshot("prod", (), view),)), Thresholds()).current()


def test_the_scraper_is_given_the_listed_nodes_then_the_discovered_ones_each_round() -> None:
    listed = Target("prod", "static-1", Endpoint("b1", 9999), Role.BROKER, 1)
    applied: list[list[Target]] = []

    def make(cluster: str, node: str, address: str, role: Role, node_id: int) -> Target:
        host, _, port = address.rpartition(":")
        return Target(cluster, node, Endpoint(host, int(port)), role, node_id)

    discovery = NodeDiscovery([listed], {"prod": RULE}, make, lambda targets: applied.append(list(targets)))
    discovery.observe(_snapshot((Member(1, Role.BROKER, "b1"), Member(2, Role.BROKER, "b2"))))
    assert [(t.node, t.endpoint.address, t.node_id) for t in applied[-1]] == [
        ("static-1", "b1:9999", 1),
        ("broker-2", "b2:9999", 2),
    ]
    discovery.observe(_snapshot(()))  # an answer naming nobody
    assert [t.node for t in applied[-1]] == ["static-1", "broker-2"]


def test_discovery_in_the_config_needs_a_bootstrap_address_and_a_jmx_rule() -> None:
    def settings(cluster: dict[str, object]) -> Settings:
        return parse_settings({"clusters": [{"name": "prod", **cluster}]})

    with pytest.raises(ConfigError, match="list its nodes, set discovery, or give a bootstrap address alone"):
        settings({})
    # a bootstrap address alone: the Admin API's view only (health/admin.py)
    alone = settings({"bootstrap_servers": ["k:9092"]})
    assert alone.clusters[0].admin_only and admin_only(alone) == {"prod"}
    assert not settings({"bootstrap_servers": ["k:9092"], "discovery": {"jmx_port": 9999}}).clusters[0].admin_only
    with pytest.raises(ConfigError, match="metrics says how to read its nodes' endpoints"):
        settings({"bootstrap_servers": ["k:9092"], "metrics": {"naming": "jmx_exporter"}})
    with pytest.raises(ConfigError, match="bootstrap_servers or bootstrap_controllers"):
        settings({"discovery": {"jmx_port": 9999}})
    with pytest.raises(ConfigError, match="say how to reach a node's JMX"):
        settings({"bootstrap_servers": ["k:9092"], "discovery": {}})
    with pytest.raises(ConfigError, match="placeholders"):
        settings({"bootstrap_servers": ["k:9092"], "discovery": {"broker_jmx": "{hostname}:9999"}})
    ok = settings({"bootstrap_controllers": ["c:9093"], "discovery": {"jmx_port": 9999, "overrides": {3: "x:1"}}})
    discovery = ok.clusters[0].discovery
    assert discovery is not None
    rule = discovery.rule()
    assert rule.address(Member(7, Role.BROKER, "h7")) == "h7:9999" and rule.address(Member(3, Role.BROKER)) == "x:1"


def _watched(node_id: int, role: Role, name: str) -> Watched:
    return Watched(Member(node_id, role), name, f"h{node_id}:9999", 1.0, 1.0)


def _cluster(view: QuorumView, *nodes: NodeSnapshot) -> ClusterSnapshot:
    return ClusterSnapshot("prod", nodes, view)


BROKER_3 = {3: _watched(3, Role.BROKER, "broker-3")}
DOWN_3 = node("broker-3", node_id=3, up=False, cluster="prod")


def test_a_kraft_broker_left_when_the_registrations_including_fenced_ones_lack_it_and_its_jmx_is_silent() -> None:
    listed = QuorumView(read_at=1.0, fenced=MappingProxyType({1: False}), members=(Member(1, Role.BROKER),))
    assert departures(_cluster(listed, DOWN_3), BROKER_3, frozenset()) == {
        3: (Departure.UNREGISTERED, "describeCluster with fenced brokers no longer lists it")
    }
    # its JMX answers: it runs, whatever the answers say
    up = node("broker-3", node_id=3, cluster="prod")
    assert departures(_cluster(listed, up), BROKER_3, frozenset()) == {}
    # still registered (listed fenced): no evidence
    fenced = replace_fenced(listed, {1: False, 3: True}, (Member(1, Role.BROKER), Member(3, Role.BROKER)))
    assert departures(_cluster(fenced, DOWN_3), BROKER_3, frozenset()) == {}
    # brokers before 4.0 (or only the controllers asked): describeCluster leaves fenced brokers out, so its
    # silence proves nothing, also after a controlled shutdown
    unlisted = QuorumView(read_at=1.0, members=(Member(1, Role.BROKER),))
    assert departures(_cluster(unlisted, DOWN_3), BROKER_3, frozenset({"broker-3"})) == {}


def replace_fenced(view: QuorumView, fenced: dict[int, bool], members: tuple[Member, ...]) -> QuorumView:
    return QuorumView(read_at=view.read_at, fenced=MappingProxyType(fenced), members=members)


def test_a_controller_left_when_the_quorum_answers_and_it_is_no_voter() -> None:
    watched = {102: _watched(102, Role.CONTROLLER, "controller-102")}
    down = node("controller-102", node_id=102, role=Role.CONTROLLER, up=False, cluster="prod")
    voters = (QuorumReplica(101, True, 10, None, None),)
    removed = QuorumView(read_at=1.0, leader_id=101, replicas=voters, members=(Member(101, Role.CONTROLLER),))
    assert departures(_cluster(removed, down), watched, frozenset())[102][0] is Departure.VOTER_REMOVED
    # the quorum did not answer: nothing is known of the voter set
    failed = QuorumView(read_at=1.0, error="timed out")
    assert departures(_cluster(failed, down), watched, frozenset()) == {}


def test_a_zookeeper_mode_broker_left_only_after_a_controlled_shutdown_and_gone_from_describe_cluster() -> None:
    down = node("broker-3", node_id=3, up=False, cluster="prod", mode=Mode.ZOOKEEPER)
    answer = QuorumView(read_at=1.0, error="no quorum in ZooKeeper mode", members=(Member(1, Role.BROKER),))
    assert departures(_cluster(answer, down), BROKER_3, frozenset({"broker-3"})) == {
        3: (Departure.CLEAN_SHUTDOWN, "it shut down cleanly and describeCluster no longer lists it")
    }
    # a crash (no controlled shutdown seen): its ZooKeeper session expired, and it must page, not leave
    assert departures(_cluster(answer, down), BROKER_3, frozenset()) == {}
    # describeCluster did not answer: an absence from no answer is no evidence
    silent = QuorumView(read_at=1.0, error="no quorum", members_error="timed out")
    assert departures(_cluster(silent, down), BROKER_3, frozenset({"broker-3"})) == {}


def test_a_node_is_forgotten_only_when_the_evidence_held_for_the_delay_round_after_round() -> None:
    rule = JmxRule(broker="{host}:9999", forget_after_seconds=60)
    state = Discovered().reconcile([Member(3, Role.BROKER, "h3")], rule, NONE, frozenset(), frozenset(), 0.0)
    gone = {3: (Departure.UNREGISTERED, "describeCluster with fenced brokers no longer lists it")}

    def step(state: Discovered, at: float, departed: dict[int, tuple[Departure, str]]) -> Discovered:
        return state.reconcile([], rule, NONE, frozenset(), frozenset(), at, departed)

    state = step(state, 10.0, gone)
    assert state.watched[3].leaving_since == 10.0 and not state.forgotten
    state = step(state, 40.0, {})  # the evidence broke (an answer that did not say): the clock starts again
    assert state.watched[3].leaving_since is None
    state = step(step(state, 50.0, gone), 100.0, gone)
    assert 3 in state.watched  # 50 s of 60
    state = step(state, 110.0, gone)
    assert 3 not in state.watched
    assert [(f.watched.node, f.departure) for f in state.forgotten] == [("broker-3", Departure.UNREGISTERED)]
    assert not step(state, 120.0, {}).forgotten  # reported once
    # the quorum's leader still remembers it as an observer (for 5 minutes after its last fetch): that
    # memory does not bring it back; a current mention (it registered again) does
    remembered = Member(3, Role.BROKER, current=False)
    state = state.reconcile([remembered], rule, NONE, frozenset(), frozenset(), 130.0)
    assert 3 not in state.watched
    back = state.reconcile([Member(3, Role.BROKER, "h3")], rule, NONE, frozenset(), frozenset(), 140.0)
    assert back.watched[3].first_seen_at == 140.0 and not back.left


def test_a_node_only_remembered_as_an_observer_gives_no_presence_against_the_evidence() -> None:
    listed = QuorumView(
        read_at=1.0,
        fenced=MappingProxyType({1: False}),
        members=(Member(1, Role.BROKER), Member(3, Role.BROKER, current=False)),
    )
    assert set(departures(_cluster(listed, DOWN_3), BROKER_3, frozenset())) == {3}


def test_discovery_counts_what_it_watches_and_what_it_forgot_and_why() -> None:
    applied: list[list[Target]] = []

    def make(cluster: str, node: str, address: str, role: Role, node_id: int) -> Target:
        host, _, port = address.rpartition(":")
        return Target(cluster, node, Endpoint(host, int(port)), role, node_id)

    rule = JmxRule(broker="{host}:9999", forget_after_seconds=0)
    discovery = NodeDiscovery([], {"prod": rule}, make, lambda targets: applied.append(list(targets)))
    two = (Member(1, Role.BROKER, "h1"), Member(3, Role.BROKER, "h3"))
    discovery.observe(_snapshot(two))
    assert [t.node for t in applied[-1]] == ["broker-1", "broker-3"]
    view = QuorumView(read_at=2.0, fenced=MappingProxyType({1: False}), members=two[:1])
    up_1 = node("broker-1", node_id=1, cluster="prod")
    snapshot = FleetSnapshot(2, 2.0, 0.1, (ClusterSnapshot("prod", (up_1, DOWN_3), view),))
    discovery.observe(ExporterState(snapshot, Thresholds()).current())
    assert [t.node for t in applied[-1]] == ["broker-1"]
    rows = {row[0]: (row[2], row[3]) for family in discovery.families() for row in family.rows}
    assert rows == {
        "ctlplane_discovered_nodes": (("prod",), 1.0),
        "ctlplane_discovery_forgotten_nodes_total": (("prod", "unregistered"), 1.0),
    }


def test_a_node_read_whose_id_the_cluster_does_not_name_is_unknown_to_it() -> None:
    from ctlplane.exporter.families import quorum_families

    def unknown(view: QuorumView, *nodes: NodeSnapshot) -> list[tuple[str, ...]]:
        snapshot = FleetSnapshot(1, 1.0, 0.1, (ClusterSnapshot("prod", nodes, view),))
        return [row[2] for f in quorum_families(snapshot) if f.name == "kafka_cluster_node_unknown" for row in f.rows]

    ours = node("b1", node_id=1, cluster="prod")
    theirs = node("b9", node_id=9, cluster="prod")  # listed here, answers as another cluster's broker 9
    answers = QuorumView(read_at=1.0, leader_id=100, members=(Member(1, Role.BROKER), Member(100, Role.CONTROLLER)))
    assert unknown(answers, ours, theirs) == [("prod", "b9", "broker")]
    # answers that are not whole say nothing: describeCluster failed, or (KRaft) the quorum did
    assert unknown(replace_fenced_error(answers, members_error="timed out"), ours, theirs) == []
    assert unknown(QuorumView(read_at=1.0, error="timed out", members=answers.members), ours, theirs) == []
    # ZooKeeper mode has no quorum to describe: describeCluster's brokers are the whole cluster
    zk = QuorumView(read_at=1.0, error="UnsupportedVersionException", no_quorum=True, members=answers.members[:1])
    assert unknown(zk, ours, theirs) == [("prod", "b9", "broker")]
    # a node down or never read reports no id of its own: it is not judged
    assert unknown(answers, ours, node("b9", node_id=9, cluster="prod", up=False)) == []


def replace_fenced_error(view: QuorumView, members_error: str) -> QuorumView:
    return QuorumView(read_at=view.read_at, leader_id=view.leader_id, members=view.members, members_error=members_error)
