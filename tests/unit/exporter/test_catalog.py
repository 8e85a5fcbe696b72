"""The naming rules of the series ctlplane emits, and the docs' tables that list them (docs/series.md,
docs/kafka-versions.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ctlplane.exporter.catalog import (
    CANARY_SERIES,
    CATALOG,
    DERIVED_SERIES,
    HEALTH_SERIES,
    QUORUM_SERIES,
    Kind,
    SeriesType,
    all_series_names,
)
from ctlplane.exporter.readings import parse_object_name
from ctlplane.exporter.releases import RELEASES
from tools.support_table import BEGIN, END, table

SERIES_PAGE = Path(__file__).parents[3] / "docs" / "series.md"
VERSIONS_PAGE = Path(__file__).parents[3] / "docs" / "kafka-versions.md"
NAME = re.compile(r"^(kafka|ctlplane)_[a-z0-9]+(_[a-z0-9]+)*$")
# Abbreviated or non-base units that Prometheus naming forbids.
FORBIDDEN_PARTS = {"ms", "millis", "milliseconds", "percent", "pct", "us", "count", "persec"}


@pytest.mark.parametrize(
    "name",
    sorted(
        {spec.series for spec in CATALOG}
        | set(DERIVED_SERIES)
        | set(HEALTH_SERIES)
        | set(QUORUM_SERIES)
        | set(CANARY_SERIES)
    ),
)
def test_series_name_follows_prometheus_conventions(name: str) -> None:
    assert NAME.match(name), name
    assert not FORBIDDEN_PARTS & set(name.split("_")), f"{name}: use base units, _total and _ratio"
    assert name.startswith("ctlplane_") or name.startswith("kafka_")


@pytest.mark.parametrize("spec", CATALOG, ids=lambda spec: spec.series)
def test_spec_is_consistent(spec) -> None:  # type: ignore[no-untyped-def]
    assert (spec.type is SeriesType.COUNTER) == spec.series.endswith("_total")
    if spec.series.endswith("_ratio"):
        # Kafka's idle "Percent" metrics and its "*Ratio" gauges are both fractions in 0..1
        assert spec.type is SeriesType.GAUGE and spec.scale == 1.0
        assert "Percent" in spec.mbean or spec.mbean.endswith("Ratio")
    if spec.series.endswith("_seconds"):
        assert spec.scale == 0.001, "every Kafka time is in milliseconds"
    if spec.type is SeriesType.SUMMARY:
        assert spec.kind is Kind.HISTOGRAM
    if spec.kind is Kind.KAFKA_METRIC:
        assert "name" not in parse_object_name(spec.mbean)[1], "Kafka-metrics groups have no name= key"
    assert spec.mbean in spec.help_text, "HELP names the MBean"
    assert spec.modes and spec.roles and spec.since
    domain, keys = parse_object_name(spec.mbean)
    # Kafka's MBeans, the JVM's own platform MBeans (java.lang), and the simulator's marker
    assert domain.startswith("kafka.") or domain == "java.lang" or spec.series == "ctlplane_simulated_info"
    assert "type" in keys
    assert set(spec.labels) <= set(keys), "labels come from ObjectName keys"
    assert not {"cluster", "node", "role"} & set(spec.labels.values())


def test_series_names_are_unique() -> None:
    names = [spec.series for spec in CATALOG]
    assert len(names) == len(set(names))
    assert not set(names) & set(DERIVED_SERIES) and not set(names) & set(HEALTH_SERIES)


def test_kip291_metrics_and_their_data_plane_twins_are_all_there() -> None:
    mbeans = {parse_object_name(spec.mbean)[1].get("name") for spec in CATALOG}
    for name in (
        "RequestQueueSize",
        "ResponseQueueSize",
        "NetworkProcessorAvgIdlePercent",
        "RequestHandlerAvgIdlePercent",
        "ExpiredConnectionsKilledCount",
    ):
        assert name in mbeans and f"ControlPlane{name}" in mbeans


def test_idle_meters_read_the_one_minute_rate_not_the_lifetime_mean() -> None:
    for spec in CATALOG:
        if spec.mbean.endswith("RequestHandlerAvgIdlePercent"):
            assert spec.kind is Kind.METER and spec.attribute == "OneMinuteRate"


def test_the_series_page_lists_every_series_with_its_mbean() -> None:
    text = SERIES_PAGE.read_text()
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `((?:kafka|ctlplane)_[a-z0-9_]+)` \|(.*)$", text, re.M)}
    for spec in CATALOG:
        assert f"| `{spec.mbean}` |" in rows.get(spec.series, ""), f"docs/series.md row for {spec.series}"
    for name in (*DERIVED_SERIES, *HEALTH_SERIES, *QUORUM_SERIES, *CANARY_SERIES):
        assert name in rows, f"docs/series.md row for {name}"
    assert set(rows) <= all_series_names(), f"docs/series.md lists unknown series: {set(rows) - all_series_names()}"


def test_the_support_table_is_the_one_the_release_table_gives() -> None:
    text = VERSIONS_PAGE.read_text()
    assert BEGIN in text and END in text, "docs/kafka-versions.md has no generated support table"
    shown = text[text.index(BEGIN) : text.index(END) + len(END)] + "\n"
    assert shown == table(), "docs/kafka-versions.md's support table is stale: python -m tools.support_table --write"


def test_the_raft_state_help_names_every_state_a_claimed_release_sets() -> None:
    (raft_state,) = (spec for spec in CATALOG if spec.series == "kafka_raft_state")
    named = set(re.findall(r"[a-z]+(?:-[a-z]+)*", raft_state.help))
    for release in RELEASES:
        assert set(release.raft_states) <= named, f"Kafka {release.line}: {set(release.raft_states) - named}"


def test_mbeans_registered_as_the_controller_moves_are_asked_again_within_a_round() -> None:
    """Per-broker MBeans that appear on a node when it wins an election or a broker registers: a minute-old
    "not here" hid them after a failover (ZooKeeper mode on 2.8.2, KRaft's heartbeat ages on 4.1.1)."""
    moving = {"ControllerChannelManager", "BrokerRegistrationState", "TimeSinceLastHeartbeatReceivedMs"}
    for spec in CATALOG:
        if any(part in spec.mbean for part in moving) and "*" in spec.mbean:
            assert spec.follows_controller, spec.series
