"""The Strimzi Metrics Reporter's naming, back from real pages (ctlplane/exporter/sources/endpoint/reporter.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctlplane.exporter.model import RawReading
from ctlplane.exporter.readings import plan_queries, samples_from_readings
from ctlplane.exporter.sources.endpoint.client import inversion_for
from ctlplane.exporter.sources.endpoint.profiles import STRIMZI_OPERATOR_ALLOWLIST, profile
from ctlplane.exporter.sources.endpoint.readings import lookup, readings_from_samples
from ctlplane.exporter.sources.endpoint.reporter import ReporterNaming, metric_name, unserved
from ctlplane.exporter.sources.endpoint.text import page_samples, samples

PAGES = Path(__file__).parents[3] / "data" / "endpoints"
REPORTER = profile("strimzi_reporter")


def _read(page: str) -> dict[str, dict[str, float | str]]:
    queries = plan_queries()
    found = lookup(inversion_for(REPORTER, queries))
    text = (PAGES / page).read_bytes()
    readings: list[RawReading] = readings_from_samples(page_samples([text], found.wanted), found, queries)
    assert samples_from_readings(readings)  # the catalogue makes series of them
    return {reading.object_name: reading.values for reading in readings}


def test_a_real_controller_page_reads_back_as_its_mbeans() -> None:
    read = _read("strimzi-reporter-0.2.0-kraft-4.3.1-active-controller.txt")
    assert read["kafka.controller:type=KafkaController,name=ActiveControllerCount"] == {"Value": 1.0}
    # a Yammer metric's tag is a label under its own name
    assert read["kafka.controller:type=KafkaController,name=BrokerRegistrationState,broker=1"] == {"Value": 30.0}
    # a Kafka metric's String is an _info series, its value in a label named after the metric
    assert read["kafka.server:type=raft-metrics"]["current-state"] == "leader"
    assert read["kafka.server:type=raft-metrics"]["current-leader"] == 101.0
    # a Timer is a summary: Count from _count, Mean = _sum / _count (Yammer's own Mean), percentiles by quantile
    queue = read["kafka.controller:type=ControllerEventManager,name=EventQueueTimeMs"]
    assert queue == {"Count": 17.0, "Mean": 1.0 / 17, "50thPercentile": 0.0, "99thPercentile": 1.0}
    # a Meter is a counter: its Count from _total
    beats = "kafka.network:type=RequestMetrics,name=RequestsPerSec,request=BrokerHeartbeat,version=2"
    assert read[beats] == {"Count": 5.0}
    # the JVM's own series, in the Prometheus client's names (profiles.AGENT_ALIASES), in the MBeans' units
    assert read["java.lang:type=Runtime"] == {"StartTime": pytest.approx(1795843382800.0)}


def test_a_real_broker_page_reads_its_state_and_its_metadata_lag() -> None:
    read = _read("strimzi-reporter-0.2.0-kraft-4.3.1-broker.txt")
    assert read["kafka.server:type=KafkaServer,name=BrokerState"] == {"Value": 3.0}
    assert read["kafka.server:type=raft-metrics"]["current-state"] == "observer"
    assert read["kafka.server:type=broker-metadata-metrics"]["last-applied-record-offset"] == 16.0
    assert read["kafka.server:type=MetadataLoader,name=CurrentControllerId"] == {"Value": 101.0}
    # app-info's MBean is Kafka's own, not a metric: its metrics twin has no id, nothing reads back as it
    assert not any(name.startswith("kafka.server:type=app-info") for name in read)


def test_a_summary_before_its_first_event_has_mean_zero_and_without_a_count_no_mean() -> None:
    queries = plan_queries()
    found = lookup(inversion_for(REPORTER, queries))
    name = "kafka_controller_controllereventmanager_eventqueuetimems"
    empty = readings_from_samples(samples([f"{name}_count 0", f"{name}_sum 0.0"], found.wanted), found, queries)
    assert [r.values for r in empty] == [{"Count": 0.0, "Mean": 0.0}]
    alone = readings_from_samples(samples([f"{name}_sum 4.0"], found.wanted), found, queries)
    assert [r.values for r in alone] == [{}]


@pytest.mark.parametrize(
    ("text", "name"),
    [
        (
            "kafka.controller_KafkaController_ActiveControllerCount",
            "kafka_controller_kafkacontroller_activecontrollercount",
        ),
        ("kafka.server_raft-metrics_current-state", "kafka_server_raft_metrics_current_state"),
        # PrometheusNaming.prometheusName: a reserved suffix is not part of the name (served added back)
        ("kafka.server_app-info_commit_id_info", "kafka_server_app_info_commit_id"),
    ],
)
def test_names_are_sanitised_lowercased_and_without_a_reserved_suffix(text: str, name: str) -> None:
    assert metric_name(text) == name


def test_what_the_operators_allowlist_leaves_out_is_said_with_its_reason() -> None:
    naming = ReporterNaming(STRIMZI_OPERATOR_ALLOWLIST)
    loader = "kafka.server:type=MetadataLoader,name=CurrentControllerId"
    assert (
        unserved(naming, loader, "Value", False)
        == "`kafka_server_metadataloader_currentcontrollerid` is not in the allowlist"
    )
    assert unserved(ReporterNaming(), loader, "Value", False) is None
    idle = "kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent"
    assert (
        unserved(ReporterNaming(), idle, "OneMinuteRate", False)
        == "a rate: the reporter serves a Meter's count, not its rates"
    )
    assert unserved(naming, "kafka.controller:type=KafkaController,name=ActiveControllerCount", "Value", False) is None
    assert unserved(naming, "kafka.server:type=raft-metrics", "current-state", True) is None
