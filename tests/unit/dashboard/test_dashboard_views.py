from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from ctlplane.dashboard import views
from ctlplane.dashboard.source import Alert, AlertsResult, HistoryData, Table
from ctlplane.dashboard.timeline import Event, EventKind
from ctlplane.dashboard.trail import EMPTY_TRAIL
from ctlplane.dashboard.views import LEVEL_COLOURS, Level
from ctlplane.dashboard.views.cluster import LEGEND_ROW, PLOT_HEIGHT
from ctlplane.exporter.catalog import Mode, Role
from ctlplane.exporter.health import ClusterHealth, Lifecycle
from ctlplane.exporter.health.model import QuorumMember, Redundancy, RestartSafety, VoterSet
from ctlplane.exporter.model import ClusterSnapshot, Failure, Member, QuorumView, Sample
from tests.unit.dashboard.builders import (
    T0,
    as_dict,
    broker,
    cluster_health,
    controller,
    find,
    node,
    observation,
    texts,
    trail_of,
)

NO_ALERTS = AlertsResult(url=None)


def _one_node() -> tuple[ClusterSnapshot, ClusterHealth]:
    snapshot = ClusterSnapshot("c1", (node("b1", Role.COMBINED, node_id=1, kafka_controller_active=1.0),))
    health = cluster_health(brokers=(broker("b1"),), view=controller(("b1",), node_id=1))
    return snapshot, health


class TestFleetView:
    def test_empty_fleet_says_how_to_add_clusters(self) -> None:
        tree = as_dict(views.fleet_view(observation(()), NO_ALERTS, T0))
        assert tree == {
            "type": "Div",
            "namespace": "dash_html_components",
            "props": {
                "className": "fleet",
                "children": [
                    {"type": "H2", "namespace": "dash_html_components", "props": {"children": "Fleet"}},
                    {
                        "type": "P",
                        "namespace": "dash_html_components",
                        "props": {
                            "children": "No clusters configured: add clusters to the exporter's config.",
                            "className": "empty",
                        },
                    },
                ],
            },
        }

    def test_one_node_cluster_row(self) -> None:
        snapshot, health = _one_node()
        tree = as_dict(views.fleet_view(observation(((snapshot, health),)), NO_ALERTS, T0 + 30, "/dashboard/"))
        [row] = find(tree, className="cluster-row level-ok")
        assert row["props"]["data-cluster"] == "c1"
        assert row["props"]["style"] == {"backgroundColor": LEVEL_COLOURS[Level.OK]}
        cells = [list(texts(td)) for td in row["props"]["children"]]
        assert cells == [
            ["OK"],
            ["c1"],
            ["KRaft"],
            ["b1 (id 1)", "no failover seen"],
            ["ACTIVE 1"],
            ["0 rec / 0.1 s (b1)"],
            ["n/a (KRaft)"],
            ["—"],  # no alerts URL configured
        ]
        assert find(tree, href="/dashboard/cluster/c1")
        assert row["props"]["children"][0]["props"]["title"] == ""  # no reasons when healthy
        assert not find(tree, className="reasons-row")

    def test_time_since_last_failover(self) -> None:
        snapshot, _ = _one_node()
        health = cluster_health(brokers=(broker("b1"),), view=controller(("b1",), failovers=2, last_failover_at=T0))
        tree = as_dict(views.fleet_view(observation(((snapshot, health),)), NO_ALERTS, T0 + 600))
        assert "last failover 10 min ago" in list(texts(tree))

    def test_split_brain_is_critical_with_its_reason(self) -> None:
        snapshot = ClusterSnapshot("c1", (node("ctl-1", Role.CONTROLLER), node("ctl-2", Role.CONTROLLER)))
        health = cluster_health(brokers=(broker("b1"),), view=controller(("ctl-1", "ctl-2"), reachable=2))
        tree = as_dict(views.fleet_view(observation(((snapshot, health),)), NO_ALERTS, T0))
        [row] = find(tree, className="cluster-row level-critical")
        assert row["props"]["style"]["backgroundColor"] == LEVEL_COLOURS[Level.CRITICAL]
        [reasons] = find(tree, className="reasons")
        assert reasons["props"]["children"] == "split brain: ctl-1, ctl-2 claim control"

    def test_all_unreachable_cluster(self) -> None:
        snapshot = ClusterSnapshot("c1", (node("b1", up=False), node("b2", node_id=2, up=False)))
        health = cluster_health(
            brokers=(broker("b1", Lifecycle.UNREACHABLE), broker("b2", Lifecycle.UNREACHABLE, node_id=2)),
            view=controller((), reachable=0),
        )
        tree = as_dict(views.fleet_view(observation(((snapshot, health),)), NO_ALERTS, T0))
        [row] = find(tree, className="cluster-row level-critical")
        assert "none" in list(texts(row))  # no active controller
        assert "UNREACHABLE 2" in list(texts(row))
        assert find(tree, className="reasons")[0]["props"]["children"] == "all nodes unreachable"

    def test_firing_alerts_are_counted_per_cluster(self) -> None:
        snapshot, health = _one_node()
        alert = Alert("KafkaBrokerFenced", "firing", "critical", {"cluster": "c1"}, "fenced", None, T0)
        other = Alert("KafkaBrokerFenced", "firing", "critical", {"cluster": "c2"}, "fenced", None, T0)
        alerts = AlertsResult("http://am:9093", "alertmanager", (alert, other))
        tree = as_dict(views.fleet_view(observation(((snapshot, health),)), alerts, T0))
        [row] = find(tree, className="cluster-row level-critical")
        assert list(texts(row["props"]["children"][-1])) == ["1"]

    def test_before_the_first_scrape_the_level_is_unknown(self) -> None:
        snapshot, health = _one_node()
        tree = as_dict(views.fleet_view(observation(((snapshot, health),), sequence=0), NO_ALERTS, T0))
        assert find(tree, className="cluster-row level-unknown")


class TestAssessCluster:
    def test_healthy(self) -> None:
        _, health = _one_node()
        assert views.assess_cluster(health) == views.Assessment(Level.OK, ())

    def test_fenced_and_stale_worst_first(self) -> None:
        health = cluster_health(brokers=(broker("b1", stale=True), broker("b2", Lifecycle.FENCED, node_id=2)))
        assert views.assess_cluster(health) == views.Assessment(Level.CRITICAL, ("1 fenced", "stale metadata: b1"))

    def test_no_active_controller(self) -> None:
        health = cluster_health(brokers=(broker("b1"),), view=controller(()))
        assert views.assess_cluster(health).reasons == ("no active controller",)


class TestNodeTable:
    def test_every_node_with_role_state_and_active_controller(self) -> None:
        snapshot = ClusterSnapshot(
            "c1",
            (
                node("ctl-1", Role.CONTROLLER, node_id=100, kafka_request_queue_size=3.0),
                node("b1", Role.BROKER, node_id=1),
                node("b2", Role.BROKER, node_id=2),
            ),
        )
        health = cluster_health(
            brokers=(broker("b1"), broker("b2", Lifecycle.FENCED, node_id=2)), view=controller(("ctl-1",))
        )
        tree = as_dict(views.node_table(snapshot, health))
        rows = find(tree, className="node-row level-ok") + find(tree, className="node-row level-critical")
        by_node = {r["props"]["data-node"]: r["props"] for r in rows}
        assert {n: (p["data-role"], p["data-state"]) for n, p in by_node.items()} == {
            "ctl-1": ("controller", "CONTROLLER"),
            "b1": ("broker", "ACTIVE"),
            "b2": ("broker", "FENCED"),
        }
        assert [r["props"]["data-node"] for r in rows if find(r, **{"data-active-controller": "true"})] == ["ctl-1"]
        fenced = by_node["b2"]
        assert fenced["style"] == {"backgroundColor": LEVEL_COLOURS[Level.CRITICAL]}
        assert "controller BrokerRegistrationState=10" in list(texts(fenced["children"]))
        # a KRaft controller's own request queue is its control-plane queue
        assert list(texts(by_node["ctl-1"]["children"][7])) == ["3"]
        assert list(texts(by_node["b1"]["children"][7])) == ["—"]

    def test_whether_a_node_may_restart_now_and_why_not(self) -> None:
        snapshot = ClusterSnapshot("c1", (node("b1"), node("b2")))
        waiting = RestartSafety("b1", Role.BROKER, False, "at_min_isr", "3 partition(s) at min.insync.replicas")
        safe = RestartSafety("b2", Role.BROKER, True, None, "safe: nothing depends on it alone")
        health = replace(
            cluster_health(
                brokers=(broker("b1", Lifecycle.ACTIVE), broker("b2", Lifecycle.ACTIVE)), view=controller(())
            ),
            restart=(waiting, safe),
        )
        tree = as_dict(views.node_table(snapshot, health))
        [b1] = find(tree, **{"data-node": "b1"})
        [b2] = find(tree, **{"data-node": "b2"})
        assert b1["props"]["data-restart"] == "at_min_isr" and b2["props"]["data-restart"] == "safe"
        restart_column = list(views.NODE_COLUMNS).index("restart now")
        assert list(texts(b1["props"]["children"][restart_column])) == ["wait", ": at min isr"]
        assert not find(b1["props"]["children"][restart_column], className="badge")  # the state's is the row's badge
        assert b1["props"]["children"][restart_column]["props"]["title"] == waiting.reason
        assert list(texts(b2["props"]["children"][restart_column])) == ["yes"]

    def test_unreachable_node_shows_the_error(self) -> None:
        snapshot = ClusterSnapshot("c1", (node("b1", up=False),))
        health = cluster_health(brokers=(broker("b1", Lifecycle.UNREACHABLE),), view=controller(()))
        tree = as_dict(views.node_table(snapshot, health))
        [row] = find(tree, **{"data-node": "b1"})
        cells = [list(texts(td)) for td in row["props"]["children"]]
        assert cells[2] == ["UNREACHABLE"]
        assert find(row, className="badge level-critical", style={"backgroundColor": LEVEL_COLOURS[Level.CRITICAL]})
        assert cells[3] == ["JMX: connection refused"]
        assert cells[-1] == ["NO"]

    def test_stale_and_frozen_flags_and_zk_control_plane_queues(self) -> None:
        snapshot = ClusterSnapshot(
            "c1",
            (
                node(
                    "b1",
                    mode=Mode.ZOOKEEPER,
                    kafka_control_plane_request_queue_size=4.0,
                    kafka_control_plane_response_queue_size=1.0,
                    kafka_control_plane_request_handler_idle_ratio=0.25,
                    kafka_control_plane_network_processor_idle_ratio=0.5,
                    kafka_request_queue_size=99.0,
                ),
            ),
        )
        health = cluster_health(
            brokers=(broker("b1", stale=True, frozen=True, listener=True, lag_records=12.0, lag_seconds=None),),
            mode=Mode.ZOOKEEPER,
        )
        [row] = find(as_dict(views.node_table(snapshot, health)), **{"data-node": "b1"})
        cells = [list(texts(td)) for td in row["props"]["children"]]
        assert cells[4:] == [["12"], ["—"], ["STALE", "FROZEN"], ["4"], ["1"], ["25%"], ["50%"], ["—"], ["yes"]]

    def test_a_broker_stale_by_the_metadata_canary_says_how_long_it_has_lacked_the_change(self) -> None:
        behind = replace(broker("b1", stale=True), canary_unserved_seconds=21.4)
        fresh = replace(broker("b2"), canary_unserved_seconds=0.0)
        health = cluster_health(brokers=(behind, fresh))
        table = as_dict(views.node_table(ClusterSnapshot("c1", (node("b1"), node("b2"))), health))
        flags = {n: list(texts(find(table, **{"data-node": n})[0]["props"]["children"][6])) for n in ("b1", "b2")}
        assert flags == {"b1": ["STALE (canary 21 s)"], "b2": ["—"]}

    def test_a_node_read_at_its_own_pace_shows_its_last_page_and_its_age(self) -> None:
        """A large broker's page takes longer than a round: its row shows its last page's values, "paced" and
        how old the page is; a node not read at all says NO and how long since its last read."""
        page = node("b1", kafka_control_plane_request_queue_size=4.0)
        held = replace(page, up=False, failure=Failure.PACED, error="read at its own pace", last_read_at=960.0)
        down = replace(node("b2"), up=False, failure=Failure.TIMEOUT, error="no answer", samples=(), last_read_at=700.0)
        health = cluster_health(brokers=(broker("b1", listener=True), broker("b2")))
        table = as_dict(views.node_table(ClusterSnapshot("c1", (held, down)), health, taken_at=1000.0))
        cells = {
            n: [list(texts(td)) for td in find(table, **{"data-node": n})[0]["props"]["children"]] for n in ("b1", "b2")
        }
        assert cells["b1"][7] == ["4"] and cells["b1"][-1] == ["paced, read 40 s ago"]
        assert cells["b2"][-1] == ["NO, read 5 min ago"]

    def test_a_node_that_refuses_ctlplanes_credentials_says_refused_not_down(self) -> None:
        refused = replace(node("b1"), up=False, failure=Failure.AUTH, error="JMX authentication failed", samples=())
        health = cluster_health(brokers=(broker("b1"),))
        table = as_dict(views.node_table(ClusterSnapshot("c1", (refused,)), health, taken_at=1000.0))
        cells = [list(texts(td)) for td in find(table, **{"data-node": "b1"})[0]["props"]["children"]]
        assert cells[-1] == ["REFUSED"]


class TestFigures:
    def test_queue_figure_compares_control_plane_with_its_twin(self) -> None:
        window = []
        for i, (cp, dp) in enumerate(((0.0, 5.0), (3.0, 6.0))):
            snap = ClusterSnapshot(
                "c1",
                (
                    node(
                        "b1",
                        mode=Mode.ZOOKEEPER,
                        at=T0 + i * 10,
                        kafka_control_plane_request_queue_size=cp,
                        kafka_request_queue_size=dp,
                    ),
                ),
            )
            window.append(observation(((snap, cluster_health(mode=Mode.ZOOKEEPER)),), at=T0 + i * 10))
        figure = views.queue_figure(trail_of(window))
        x = ["2023-11-14 22:13:20", "2023-11-14 22:13:30"]
        assert figure["data"] == [
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": "b1 control-plane request",
                "x": x,
                "y": [0.0, 3.0],
                "line": {"dash": "solid"},
                "yaxis": "y",
            },
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": "b1 data-plane request",
                "x": x,
                "y": [5.0, 6.0],
                "line": {"dash": "dot"},
                "yaxis": "y",
            },
        ]
        layout = figure["layout"]
        assert layout["xaxis"]["type"] == "date" and layout["xaxis"]["automargin"] is True
        assert [stop["value"] for stop in layout["xaxis"]["tickformatstops"]] == ["%H:%M:%S.%L", "%H:%M:%S"]
        # the legend in a band of its own below the time axis, as tall as its rows (two entries a row)
        assert layout["legend"]["yanchor"] == "top" and layout["legend"]["y"] < 0
        assert layout["margin"]["b"] == 40 + LEGEND_ROW * 1 and layout["height"] == PLOT_HEIGHT + 80 + 20

    def test_empty_window_says_so(self) -> None:
        for figure in (
            views.queue_figure(EMPTY_TRAIL),
            views.idle_figure(EMPTY_TRAIL),
            views.lag_figure(EMPTY_TRAIL),
            views.event_queue_figure(EMPTY_TRAIL),
        ):
            assert figure["data"] == []
            assert figure["layout"]["annotations"][0]["text"] == "no samples in the window"

    def test_lag_figure_per_broker_records_and_seconds(self) -> None:
        window = [
            observation(
                ((ClusterSnapshot("c1", ()), cluster_health(brokers=(broker("b1", lag_records=r),))),), at=T0 + 15 * i
            )
            for i, r in enumerate((0.0, 40.0))
        ]
        figure = views.lag_figure(trail_of(window))
        assert [(t["name"], t["y"], t["yaxis"]) for t in figure["data"]] == [
            ("b1 records", [0.0, 40.0], "y"),
            ("b1 seconds", [0.1, 0.1], "y2"),
        ]

    def test_unreachable_points_are_gaps(self) -> None:
        window = [
            observation(
                (
                    (
                        ClusterSnapshot("c1", (node("b1", at=T0 + 15 * i, up=up, kafka_request_queue_size=2.0),)),
                        cluster_health(),
                    ),
                ),
                at=T0 + 15 * i,
            )
            for i, up in enumerate((True, False, True))
        ]
        [trace] = views.queue_figure(trail_of(window))["data"]
        assert trace["y"] == [2.0, None, 2.0]


class TestClusterView:
    def test_split_brain_controller_card(self) -> None:
        health = cluster_health(brokers=(broker("b1"),), view=controller(("ctl-1", "ctl-2"), epoch=7.0, reachable=3))
        events = [Event(T0, "c1", None, EventKind.SPLIT_BRAIN, "2 active controllers: ctl-1, ctl-2")]
        tree = as_dict(views.controller_card(health, events, T0))
        [identity] = find(tree, className="controller-identity level-critical")
        assert identity["props"]["children"] == "ctl-2 (id 100)"
        strings = list(texts(tree))
        assert "ctl-1, ctl-2" in strings
        assert "7" in strings
        assert "22:13:20 2 active controllers: ctl-1, ctl-2" in strings

    def test_the_quorums_leader_and_a_disagreement_of_the_views_are_on_the_card_and_the_row(self) -> None:
        decided = replace(
            broker("b1", node_id=101),
            evidence="quorum: unfenced (describeCluster), caught up 1s ago; its own JMX says UNREACHABLE",
            up=False,
            decided_by="quorum",
            views_disagree=True,
        )
        health = replace(cluster_health(brokers=(decided,)), quorum_leader_id=2, controller_views_disagree=True)
        card = list(texts(as_dict(views.controller_card(health, [], T0))))
        assert "quorum's leader" in card and "id 2 (the nodes' JMX says otherwise)" in card
        snapshot = ClusterSnapshot("c1", (node("b1", node_id=101, up=False),))
        [row] = find(as_dict(views.node_table(snapshot, health)), **{"data-node": "b1"})
        assert find(row, **{"data-views-disagree": "true"})
        assert "VIEWS DISAGREE" in list(texts(row))
        without = replace(health, quorum_leader_id=None, controller_views_disagree=False)
        assert "quorum's leader" not in list(texts(as_dict(views.controller_card(without, [], T0))))

    def test_lag_the_quorum_gave_says_so_on_its_cells(self) -> None:
        snapshot = ClusterSnapshot("c1", (node("b1", node_id=101, up=False),))
        for source, titled in (("quorum", True), ("jmx", False)):
            lagging = replace(broker("b1", node_id=101), metadata_lag_seconds=45.0, metadata_lag_source=source)
            health = cluster_health(brokers=(lagging,))
            [row] = find(as_dict(views.node_table(snapshot, health)), **{"data-node": "b1"})
            cells = find(row, **{"data-lag-source": source})
            assert len(cells) == 2 and "45.0" in list(texts(row))
            assert all(("quorum's view" in cell["props"].get("title", "")) is titled for cell in cells)

    def test_unknown_cluster(self) -> None:
        tree = as_dict(views.cluster_view("nope", observation(()), [], NO_ALERTS, T0))
        assert "No cluster named 'nope' in the exporter's config." in list(texts(tree))

    def test_cluster_view_has_verdict_card_table_and_timeline(self) -> None:
        snapshot, health = _one_node()
        tree = as_dict(views.cluster_view("c1", observation(((snapshot, health),)), [], NO_ALERTS, T0))
        assert list(texts(tree["props"]["children"][:2])) == ["c1 ", "OK", "healthy"]
        assert find(tree, className="controller-card")
        assert find(tree, className="node-table")
        assert "no control-plane events in the window" in list(texts(tree))

    def test_nodes_the_cluster_has_and_ctlplane_does_not_read_are_named_on_the_cluster_page(self) -> None:
        snapshot, health = _one_node()
        assert not find(as_dict(views.cluster_view("c1", observation(((snapshot, health),)), [], NO_ALERTS, T0)),
                        className="watch-gaps")  # fmt: skip
        # the quorum names broker 3 (an observer) that no node read is; b1 reports an id it does not name
        quorum = QuorumView(read_at=T0, leader_id=100, members=(Member(100, Role.CONTROLLER, "h100"),
                                                                Member(3, Role.BROKER)))  # fmt: skip
        gapped = replace(
            snapshot, nodes=(node("c100", Role.CONTROLLER, node_id=100), node("b1", node_id=7)), quorum=quorum
        )
        counted = replace(health, fenced_unnamed=1)
        tree = as_dict(views.cluster_view("c1", observation(((gapped, counted),)), [], NO_ALERTS, T0))
        [unwatched] = find(tree, **{"data-gap": "unwatched"})
        assert "node id 3 (broker)" in "".join(texts(unwatched))
        [unknown] = find(tree, **{"data-gap": "unknown"})
        assert "b1 (id 7" in "".join(texts(unknown))
        assert find(tree, **{"data-gap": "fenced-unnamed"})
        assert "1 fenced broker(s) ctlplane cannot name" in "".join(texts(tree["props"]["children"][1]))

    def test_graphs_have_pattern_ids_for_in_place_refresh(self) -> None:
        tree = as_dict(views.graphs_view(views.cluster_figures(EMPTY_TRAIL)))
        assert [g["props"]["id"] for g in find(tree, config={"displaylogo": False})] == [
            {"type": "live-graph", "key": key} for key in ("queues", "idle", "lag", "event-queue")
        ]


class TestTimelineView:
    def test_events_newest_first_with_severity_colours(self) -> None:
        events = [
            Event(T0 + 10, "c1", "b1", EventKind.UNFENCED, "fenced for 10 s"),
            Event(T0, "c1", "b1", EventKind.FENCED, "controller BrokerRegistrationState=10"),
        ]
        tree = as_dict(views.timeline_view(events))
        items = find(tree, className="event event-unfenced") + find(tree, className="event event-fenced")
        assert [list(texts(i)) for i in items] == [
            ["22:13:30", "unfenced", "b1", "fenced for 10 s"],
            ["22:13:20", "fenced", "b1", "controller BrokerRegistrationState=10"],
        ]
        assert [b["props"]["className"] for b in find(tree, style={"backgroundColor": LEVEL_COLOURS[Level.OK]})] == [
            "badge level-ok"
        ]


class TestAlertsView:
    def test_without_url_says_how_to_connect(self) -> None:
        tree = as_dict(views.alerts_view(NO_ALERTS, T0))
        assert find(tree, className="connect")[0]["props"]["children"] == views.CONNECT_ALERTS
        assert "dashboard.alerts_url" in views.CONNECT_ALERTS

    def test_alerts_link_their_runbooks(self) -> None:
        firing = Alert(
            "KafkaBrokerFenced",
            "firing",
            "critical",
            {"cluster": "c1", "broker": "2"},
            "broker 2 fenced",
            "https://runbooks/KafkaBrokerFenced.md",
            T0 - 120,
        )
        resolved = Alert("KafkaMetadataStale", "resolved", "warning", {"cluster": "c1"}, "stale", None, T0 - 600, T0)
        tree = as_dict(views.alerts_view(AlertsResult("http://am", "alertmanager", (firing,), (resolved,)), T0))
        [row] = find(tree, className="alert-row level-critical")
        assert [list(texts(td)) for td in row["props"]["children"]][1:] == [
            ["KafkaBrokerFenced"],
            ["critical"],
            ["cluster=c1, broker=2"],
            ["broker 2 fenced"],
            ["2 min ago"],
            ["runbook"],
        ]
        assert find(row, href="https://runbooks/KafkaBrokerFenced.md")
        [old] = find(tree, className="alert-row level-ok")
        assert "no runbook" in list(texts(old))
        assert "Recently resolved (1)" in list(texts(tree))

    def test_fetch_error_is_shown(self) -> None:
        tree = as_dict(views.alerts_view(AlertsResult("http://am", error="ConnectError: refused"), T0))
        assert "Could not read alerts: ConnectError: refused" in list(texts(tree))


class TestHistoryView:
    def test_without_outputs_points_at_the_pipeline(self) -> None:
        strings = list(texts(as_dict(views.history_view(HistoryData(None), T0))))
        assert "\n".join(views.PIPELINE_COMMANDS) in strings
        assert any("No history directory configured" in s for s in strings)

    def test_episodes_and_sweep_tables(self) -> None:
        episodes = Table(
            ("cluster", "node", "kind", "start", "end", "duration_seconds", "peak"),
            (("c1", "b1", "fenced", datetime(2026, 1, 1, tzinfo=UTC), "2026-01-01 00:01:00", 60.0, 1.0),),
        )
        sweep = Table(("threshold", "for", "pages"), (("10", "1m", "3"),))
        tree = as_dict(views.history_view(HistoryData("/h", episodes, sweep), T0))
        strings = list(texts(tree))
        assert "Episodes (1)" in strings
        assert "Threshold sweep (1 rows)" in strings
        assert ["c1", "b1", "fenced", "2026-01-01 00:00:00", "2026-01-01 00:01:00", "60", "1"] == [
            s for s in texts(find(tree, className="history-table")[0]["props"]["children"][1]) if s
        ]
        assert not any("ctlplane pipeline" in s for s in strings)


def test_status_line() -> None:
    snapshot, health = _one_node()
    assert views.status_line(observation(((snapshot, health),), sequence=7), T0 + 3, 5000) == (
        "scrape round #7, 3 s old · refreshing every 5 s"
    )
    assert views.status_line(observation((), sequence=0), T0, 2000, "ConnectError") == (
        "waiting for the first scrape round · refreshing every 2 s · exporter unreachable: ConnectError"
    )
    # several exporters (a sharded fleet): their summed round numbers mean nothing; the error names its exporter
    assert views.status_line(observation(((snapshot, health),), sequence=9), T0 + 4, 5000, None, exporters=3) == (
        "scrape rounds of 3 exporters, the oldest 4 s old · refreshing every 5 s"
    )
    line = views.status_line(observation(((snapshot, health),), sequence=9), T0 + 4, 5000, "http://b unreachable: X", 2)
    assert line == ("scrape rounds of 2 exporters, the oldest 4 s old · refreshing every 5 s · http://b unreachable: X")


def test_nav_links_every_cluster() -> None:
    _, health = _one_node()
    links = [
        as_dict(link)["props"]["href"]
        for link in views.nav_links(observation(((ClusterSnapshot("c1", ()), health),)).health, "/d/")
    ]
    assert links == ["/d/", "/d/cluster/c1", "/d/alerts", "/d/history"]


def test_simulated_clusters_are_labelled() -> None:
    simulated = ClusterSnapshot("sim", (node("b1", cluster="sim"),))
    sample = Sample("ctlplane_simulated_info", (("scenario", "fenced-broker"),), 1.0)
    simulated = ClusterSnapshot("sim", (replace(simulated.nodes[0], samples=(sample,)),))
    real, health = _one_node()
    obs = observation(((simulated, cluster_health("sim", (broker("b1", cluster="sim"),))), (real, health)))
    banner = as_dict(views.simulation_banner(obs.snapshot))
    assert banner["props"]["children"] == "SIMULATED, not real Kafka: sim (scenario fenced-broker)"
    assert views.simulation_banner(observation(((real, health),)).snapshot) is None
    tree = as_dict(views.fleet_view(obs, NO_ALERTS, T0))
    assert "SIMULATED" in list(texts(find(tree, **{"data-cluster": "sim"})))
    assert "SIMULATED" not in list(texts(find(tree, **{"data-cluster": "c1"})))


def test_the_controller_card_shows_the_quorums_redundancy_and_no_spare_voter_is_a_reason() -> None:
    for redundancy, words in (
        (Redundancy(3, 3, "quorum"), "3 voters, 3 caught up: survives 1 more voter failure"),
        (Redundancy(5, 5, "quorum"), "5 voters, 5 caught up: survives 2 more voter failures"),
        (Redundancy(3, 2, "quorum"), "3 voters, 2 caught up: no spare voter"),
        (Redundancy(3, 1, "jmx"), "3 voters, 1 caught up: no majority caught up (from the controllers' JMX)"),
    ):
        health = replace(cluster_health(), redundancy=redundancy)
        card = as_dict(views.controller_card(health, (), T0))
        assert words in list(texts(card)), list(texts(card))
        reasons = views.assess_cluster(health, (), True).reasons
        assert ("the metadata quorum has no spare voter" in reasons) is (redundancy.spare <= 0), reasons


def test_the_controller_card_lists_the_voters_the_observer_controllers_and_the_voter_changes() -> None:
    voters = VoterSet(
        (
            QuorumMember("controller-101", 101, Role.CONTROLLER, "mvAHqnKgdO7WvX6ijBF6-A", True),
            QuorumMember("controller-102", 102, Role.CONTROLLER, None, True, caught_up=False),
            QuorumMember("controller-104", 104, Role.CONTROLLER, "CH97FjpaQSzYUeeg8s1prA", False, 750.0),
        ),
        "quorum",
    )
    added = Event(T0 - 30, "c1", "controller-103", EventKind.VOTER_ADDED, "voter added: id 103; 3 voters now")
    card = list(texts(as_dict(views.controller_card(replace(cluster_health(), voter_set=voters), (added,), T0))))
    assert "controller-101 (id 101, dir mvAHqnKg…), controller-102 (id 102) behind" in card, card
    assert any(
        text.startswith("controller-104 (id 104, dir CH97Fjpa…) outside the voter set for 12 min")
        and "add-controller" in text
        for text in card
    ), card
    assert any("voter added: id 103; 3 voters now" in text for text in card), card
