"""The quorum's own view (Admin API describeMetadataQuorum) in a round, on /metrics, and in the config; the
Admin client itself is tested against real KRaft clusters (tests/integration/test_quorum_view.py)."""

from __future__ import annotations

import threading
from pathlib import Path
from xml.etree import ElementTree

import pytest

from exporter import kafka_admin
from exporter.config import ConfigError, parse_settings
from exporter.families import quorum_families
from exporter.jmx.base import Endpoint
from exporter.jsonapi import snapshot_from_dict, snapshot_to_dict
from exporter.model import ClusterSnapshot, FleetSnapshot, QuorumReplica, QuorumView
from exporter.scraper import Scraper, Target
from tests.unit.exporter.test_scraper import ScriptedClient

READ_AT = 1_000.0
VIEW = QuorumView(
    read_at=READ_AT,
    leader_id=101,
    leader_epoch=7,
    high_watermark=500,
    replicas=(
        QuorumReplica(101, True, 510, READ_AT, READ_AT),
        QuorumReplica(102, True, 505, READ_AT - 0.5, READ_AT - 0.5),
        QuorumReplica(1, False, 400, READ_AT - 12.0, READ_AT - 30.0),
        QuorumReplica(9, False, 510, None, None),  # an observer the leader has not heard from
    ),
)


class Quorum:
    """A QuorumSource double: answers VIEW, or blocks until released."""

    def __init__(self, *, hang: bool = False) -> None:
        self.hang = hang
        self.release = threading.Event()
        self.reads = 0
        self.closed = False

    def read(self) -> QuorumView:
        self.reads += 1
        if self.hang:
            self.release.wait(10)
        return VIEW

    def close(self) -> None:
        self.closed = True
        self.release.set()


def _scraper(quorum: Quorum, client: ScriptedClient) -> Scraper:
    targets = [Target(cluster, f"b{port}", Endpoint("127.0.0.1", port)) for cluster, port in (("c1", 1), ("c2", 2))]
    return Scraper(targets, client, interval_seconds=1, timeout_seconds=0.3, workers=4, quorum_sources={"c1": quorum})


def test_the_quorum_view_is_in_the_round_of_its_cluster_only() -> None:
    quorum = Quorum()
    scraper = _scraper(quorum, ScriptedClient())
    snapshot = scraper.scrape_once()
    assert snapshot.cluster("c1").quorum == VIEW  # type: ignore[union-attr]
    assert snapshot.cluster("c2").quorum is None  # type: ignore[union-attr]
    scraper.stop()
    assert quorum.closed


def test_a_quorum_that_does_not_answer_is_an_error_value_read_once_and_the_nodes_are_served() -> None:
    quorum, client = Quorum(hang=True), ScriptedClient()
    scraper = _scraper(quorum, client)
    first, second = scraper.scrape_once(), scraper.scrape_once()
    for snapshot, when in ((first, "this round"), (second, "since round 1")):
        view = snapshot.cluster("c1").quorum  # type: ignore[union-attr]
        assert view is not None and not view.up and "did not answer within 0.3s" in (view.error or "")
        assert when in (view.error or "")
        assert all(node.up for node in snapshot.nodes())
    assert quorum.reads == 1  # not doubled while the first read hangs
    quorum.hang = False
    quorum.release.set()
    for _ in range(20):
        if scraper.scrape_once().cluster("c1").quorum == VIEW:  # type: ignore[union-attr]
            break
    assert scraper.latest().cluster("c1").quorum == VIEW  # type: ignore[union-attr]
    scraper.stop()


def _rows(view: QuorumView | None) -> dict[str, dict[tuple[str, ...], float]]:
    cluster = ClusterSnapshot("c1", (), view)
    families = quorum_families(FleetSnapshot(1, READ_AT, 0.1, (cluster,)))
    return {family.name: {values: value for _, _, values, value in family.rows} for family in families}


def test_quorum_series_say_what_kafka_metadata_quorum_describe_says() -> None:
    rows = _rows(VIEW)
    assert rows["ctlplane_quorum_up"] == {("c1",): 1.0}
    assert rows["kafka_quorum_leader_id"] == {("c1",): 101.0}
    assert rows["kafka_quorum_leader_epoch"] == {("c1",): 7.0}
    assert rows["kafka_quorum_high_watermark"] == {("c1",): 500.0}
    # Lag as the tool prints it: the leader's log end offset minus the replica's
    assert rows["kafka_quorum_replica_lag_records"] == {
        ("c1", "101", "controller"): 0.0,
        ("c1", "102", "controller"): 5.0,
        ("c1", "1", "broker"): 110.0,
        ("c1", "9", "broker"): 0.0,
    }
    assert rows["kafka_quorum_replica_last_caught_up_age_seconds"][("c1", "1", "broker")] == 30.0
    assert rows["kafka_quorum_replica_last_fetch_age_seconds"][("c1", "1", "broker")] == 12.0
    assert ("c1", "9", "broker") not in rows["kafka_quorum_replica_last_fetch_age_seconds"]  # never fetched


def test_a_quorum_without_an_answer_is_only_its_up_series() -> None:
    assert _rows(QuorumView(read_at=READ_AT, error="TimeoutException: no answer")) == {
        "ctlplane_quorum_up": {("c1",): 0.0}
    }
    assert _rows(None) == {}


CLUSTER = {"name": "c1", "nodes": [{"address": "127.0.0.1:9999"}]}


def test_bootstrap_addresses_are_checked_and_only_one_kind_is_allowed() -> None:
    ok = parse_settings({"clusters": [{**CLUSTER, "bootstrap_controllers": ["127.0.0.1:9093"]}]}, "t")
    assert ok.clusters[0].bootstrap_controllers == ["127.0.0.1:9093"]
    with pytest.raises(ConfigError, match="not both"):
        parse_settings(
            {"clusters": [{**CLUSTER, "bootstrap_servers": ["a:9092"], "bootstrap_controllers": ["a:9093"]}]}, "t"
        )
    with pytest.raises(ConfigError, match="host:port"):
        parse_settings({"clusters": [{**CLUSTER, "bootstrap_servers": ["a"]}]}, "t")
    with pytest.raises(ConfigError, match=r"use scrape\.client: jpype"):
        parse_settings(
            {"clusters": [{**CLUSTER, "bootstrap_servers": ["a:9092"]}], "scrape": {"client": "jmxquery"}}, "t"
        )


def test_the_quorum_view_round_trips_through_the_snapshot_json() -> None:
    for view in (VIEW, QuorumView(read_at=READ_AT, error="TimeoutException: no answer"), None):
        snapshot = FleetSnapshot(1, READ_AT, 0.1, (ClusterSnapshot("c1", (), view),))
        document = snapshot_to_dict(snapshot)
        assert ("quorum" in document["clusters"][0]) is (view is not None)
        assert snapshot_from_dict(document) == snapshot


def test_the_client_pom_fetches_the_client_version_the_code_loads() -> None:
    pom = ElementTree.parse(kafka_admin.POM_FILE).getroot()
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    versions = {
        dep.findtext("m:artifactId", namespaces=ns): dep.findtext("m:version", namespaces=ns)
        for dep in pom.iterfind("m:dependencies/m:dependency", ns)
    }
    assert versions["kafka-clients"] == kafka_admin.CLIENT_VERSION


def test_baked_in_client_jars_are_used_and_a_wrong_directory_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(kafka_admin.JARS_ENV, str(tmp_path))
    with pytest.raises(kafka_admin.AdminClientError, match=f"has no {kafka_admin.MAIN_JAR}"):
        kafka_admin.client_jars()
    for name in (kafka_admin.MAIN_JAR, "slf4j-api-1.7.36.jar"):
        (tmp_path / name).write_bytes(b"")
    assert [p.name for p in kafka_admin.client_jars()] == sorted([kafka_admin.MAIN_JAR, "slf4j-api-1.7.36.jar"])
