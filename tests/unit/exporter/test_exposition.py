"""The direct /metrics renderer against prometheus_client's own encoders, byte for byte."""

from __future__ import annotations

import math
import shutil
import subprocess

import pytest
from prometheus_client.exposition import choose_encoder, generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics

from exporter.catalog import Mode, Role
from exporter.families import (
    Family,
    MetricsPage,
    _Families,
    collect_families,
    encode,
    render_families,
    snapshot_age_family,
)
from exporter.health import HealthMemory, Thresholds, evaluate
from exporter.model import FleetSnapshot, NodeSnapshot, Sample
from tests.unit.exporter.builders import fleet, kraft_broker, kraft_controller, node

TRICKY = 'a "quoted" \\back\\slash\nnew line ünï'

ACCEPT_HEADERS = [
    None,  # text 0.0.4
    "text/plain; version=0.0.4",
    "text/plain; version=1.0.0",
    "text/plain; version=1.0.0; escaping=allow-utf-8",
    "text/plain; version=1.0.0; escaping=dots",
    "text/plain; version=1.0.0; escaping=values",
    "application/openmetrics-text",
    "application/openmetrics-text; version=1.0.0",
    # what Prometheus 2.x sends
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
    "text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
    "application/openmetrics-text; version=1.0.0; escaping=allow-utf-8",
    "application/openmetrics-text; version=1.0.0; escaping=dots",
    "application/openmetrics-text; version=1.0.0; escaping=values",
    "application/openmetrics-text; version=2.0.0",
]


def every_kind_fleet() -> FleetSnapshot:
    """Gauges, counters, summaries with quantiles, info and state series, odd floats and odd label values."""
    samples = [
        Sample("kafka_broker_state", (), 3.0),
        Sample("kafka_controller_active", (), 0.0),
        Sample("kafka_request_queue_size", (), -0.0),
        Sample("kafka_controller_last_applied_record_offset", (), 1.2345678901234e15),
        Sample("kafka_controller_last_committed_record_offset", (), 123456789.0),
        Sample("kafka_broker_last_applied_record_lag_seconds", (), math.nan),
        Sample("kafka_controller_fenced_brokers", (), math.inf),
        Sample("kafka_raft_current_epoch", (), -math.inf),
        Sample("kafka_controller_channel_queue_size", (("broker", "2"),), 1e-7),
        Sample("kafka_controller_channel_queue_size", (("broker", TRICKY),), 4.0),
        Sample("kafka_requests_total", (("request", "LeaderAndIsr"),), 17.0),
        Sample("kafka_requests_total", (("request", TRICKY),), 1e22),
        Sample("kafka_node_info", (("node_id", "1"), ("version", TRICKY)), 1.0),
        Sample("kafka_raft_state", (("state", "leader"),), 1.0),
        Sample(
            "kafka_request_total_time_seconds",
            (("request", "UpdateMetadata"),),
            4.0,
            (("count", 4.0), ("sum", 0.01), ("0.5", 0.002), ("0.99", math.nan)),
            read_at=955.123456,  # the slow tier: served with the time it was read
        ),
        Sample(
            "kafka_controller_event_queue_time_seconds",
            (),
            0.0,
            (("count", 0.0), ("sum", 0.0), ("0.5", 0.0), ("0.99", 2.5)),
        ),
    ]
    odd = NodeSnapshot(
        cluster="zk",
        node=TRICKY,
        address="127.0.0.1:9001",
        role=Role.BROKER,
        mode=Mode.ZOOKEEPER,
        node_id=1,
        version="3.9.2",
        up=True,
        scrape_duration_seconds=0.0123,
        error=None,
        errors_total=3,
        scraped_at=1000.0,
        samples=tuple(sorted(samples, key=lambda s: (s.series, s.labels))),
    )
    return fleet(
        odd,
        node("b2", {"kafka_broker_state": 3.0, "kafka_controller_active": 1.0}, cluster="zk", mode=Mode.ZOOKEEPER),
        node("b3", cluster="zk", mode=Mode.ZOOKEEPER, node_id=3, up=False, error='refused "x"\n'),
        kraft_controller("c1", 1, active=True, registrations={101: 30, 102: 10}, fenced=1, cluster="kr"),
        kraft_broker("k1", 101, cluster="kr", lag_seconds=math.nan),
    )


def reference(snapshot: FleetSnapshot, accept: str | None) -> bytes:
    """prometheus_client's own encoder over prometheus_client Metric objects."""
    health, _ = evaluate(snapshot, HealthMemory(), Thresholds())
    encoder, _ = choose_encoder(accept or "")
    return encoder(_Families(render_families(snapshot, health, version='te"st')))


@pytest.mark.parametrize("accept", ACCEPT_HEADERS)
def test_direct_renderer_matches_prometheus_client_byte_for_byte(accept: str | None) -> None:
    snapshot = every_kind_fleet()
    health, _ = evaluate(snapshot, HealthMemory(), Thresholds())
    encoder, _ = choose_encoder(accept or "")
    direct = encode(collect_families(snapshot, health, version='te"st'), encoder)
    assert direct == reference(snapshot, accept)


def test_reference_covers_every_kind_of_sample() -> None:
    text = reference(every_kind_fleet(), None).decode()
    for needle in (
        "# TYPE kafka_requests_total counter",
        "# TYPE kafka_request_total_time_seconds summary",
        'quantile="0.99",request="UpdateMetadata",role="broker"} NaN',
        "kafka_node_info{",
        'state="leader"',
        "+Inf",
        "-Inf",
        "-0.0",
        "1e+22",
        r"\"quoted\" \\back\\slash\nnew line",
    ):
        assert needle in text, needle
    om = reference(every_kind_fleet(), "application/openmetrics-text").decode()
    assert "# TYPE kafka_requests counter" in om
    stamped = [line for line in text.splitlines() if line.startswith("kafka_request_total_time_seconds")]
    assert len(stamped) == 4 and all(line.endswith(" 955123") for line in stamped)  # ms in the text format
    assert sum(line.endswith(" 955.123456") for line in om.splitlines()) == 4  # seconds in OpenMetrics
    assert not any(line.endswith(" 955123") for line in text.splitlines() if "total_time" not in line)


def test_the_two_default_encoders_are_the_ones_choose_encoder_gives() -> None:
    # the renderer recognises exactly these; a change in prometheus_client would fall back, not break
    assert choose_encoder("")[0] is generate_latest
    om = choose_encoder("application/openmetrics-text; version=1.0.0")[0]
    assert getattr(om, "func", None) is generate_openmetrics


def test_names_outside_the_legacy_charset_fall_back_to_prometheus_client() -> None:
    family = Family("kafka.odd_total", "dotted", "counter", ["cluster", "node.name"])
    family.add(("c", TRICKY), 2.0)
    for accept in ACCEPT_HEADERS:
        encoder, _ = choose_encoder(accept or "")
        assert encode([family], encoder) == encoder(_Families([family.to_metric()])), accept


def test_page_appends_the_age_and_matches_prometheus_client() -> None:
    snapshot = every_kind_fleet()
    health, _ = evaluate(snapshot, HealthMemory(), Thresholds())
    page = MetricsPage('te"st')
    for accept in ACCEPT_HEADERS:
        encoder, _ = choose_encoder(accept or "")
        age = encoder(_Families([snapshot_age_family(4.5).to_metric()]))  # OpenMetrics: with its # EOF
        body, _ = page.render(snapshot, health, accept, now=1004.5)
        assert body == reference(snapshot, accept).removesuffix(b"# EOF\n") + age, accept


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is installed by `make test`")
def test_promtool_accepts_the_direct_text_exposition() -> None:
    snapshot = every_kind_fleet()
    health, _ = evaluate(snapshot, HealthMemory(), Thresholds())
    body, _ = MetricsPage("test").render(snapshot, health, None, now=1010.0)
    result = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True, check=False)
    assert result.returncode == 0, result.stdout.decode() + result.stderr.decode()
