"""The direct /metrics renderer against prometheus_client's own encoders, byte for byte."""

from __future__ import annotations

import dataclasses
import math
import shutil
import subprocess

import pytest
from prometheus_client.exposition import choose_encoder, generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics

from ctlplane.exporter.catalog import Mode, Role
from ctlplane.exporter.families import Family, collect_families, render_families, snapshot_age_family
from ctlplane.exporter.health import HealthMemory, evaluate
from ctlplane.exporter.http import encoding as encoding
from ctlplane.exporter.http.encoding import _Families, encode
from ctlplane.exporter.http.page import MetricsPage
from ctlplane.exporter.model import FleetSnapshot, NodeSnapshot, Sample
from ctlplane.exporter.thresholds import Thresholds
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


def _slow(request: str, value: float, read_at: float) -> Sample:
    """A slow-tier summary sample whose every number is `value` plus an offset no other sample has."""
    parts = (("count", value), ("sum", value + 0.25), ("0.5", value + 0.5), ("0.99", value + 0.75))
    return Sample("kafka_request_total_time_seconds", (("request", request),), value, parts, read_at)


def _with(snapshot_node: NodeSnapshot, **changes: object) -> NodeSnapshot:
    return dataclasses.replace(snapshot_node, **changes)  # type: ignore[arg-type]


def test_pages_that_reuse_the_last_pages_slow_tier_lines_have_the_bytes_of_fresh_ones() -> None:
    # The scraper serves a node's slow tier from the same Sample objects until its next slow read; the
    # page keeps their lines (RenderMemo). Every change must still show: a new read, a node whose role
    # became known, a node gone down and back, every content type.
    carried = [_slow("Fetch", 1001.0, 955.5), _slow("Produce", 1002.0, 955.5)]
    base = node("b1", {"kafka_broker_state": 3.0}, cluster="zk", mode=Mode.ZOOKEEPER, node_id=1)
    other = node("b2", {"kafka_broker_state": 3.0}, cluster="zk", mode=Mode.ZOOKEEPER, node_id=2)
    first = _with(base, samples=(*base.samples, *carried))
    second_samples = (*base.samples, *carried, _slow("Metadata", 1003.0, 956.0))
    rounds = [
        fleet(first, _with(other, samples=(*other.samples, _slow("Fetch", 2001.0, 950.0))), sequence=1),
        # b1's carried samples again; b2 read anew (a new object with other values)
        fleet(_with(first, samples=second_samples), _with(other, samples=(_slow("Fetch", 2002.0, 965.0),))),
        # b1's role changes (same Sample objects, other labels); b2 down
        fleet(_with(first, role=Role.CONTROLLER, samples=second_samples), node("b2", cluster="zk", up=False)),
        fleet(_with(first, samples=second_samples), _with(other, samples=(_slow("Fetch", 2002.0, 965.0),))),
    ]
    page = MetricsPage('te"st')
    for sequence, snapshot in enumerate(rounds, start=1):
        snapshot = dataclasses.replace(snapshot, sequence=sequence)
        health, _ = evaluate(snapshot, HealthMemory(), Thresholds())
        for accept in ACCEPT_HEADERS:
            encoder, _ = choose_encoder(accept or "")
            age = encoder(_Families([snapshot_age_family(4.5).to_metric()]))
            body, _ = page.render(snapshot, health, accept, now=snapshot.taken_at + 4.5)
            expected = encoder(_Families(render_families(snapshot, health, version='te"st')))
            assert body == expected.removesuffix(b"# EOF\n") + age, (sequence, accept)
            # the case each round is there for did happen
            assert (b"Metadata" in body, b"2002" in body) == (sequence > 1, sequence in (2, 4)), (sequence, accept)


def test_a_page_does_not_format_again_the_slow_tier_lines_it_made_for_the_last_snapshot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    carried = [_slow(f"Request{i}", 5000.0 + i, 955.5) for i in range(20)]
    base = node("b1", {"kafka_broker_state": 3.0}, cluster="zk", mode=Mode.ZOOKEEPER, node_id=1)
    page = MetricsPage()
    formatted: list[float] = []
    go_float = encoding._go_float
    monkeypatch.setattr(encoding, "_go_float", lambda value: formatted.append(value) or go_float(value))
    summaries: list[tuple[str, ...]] = []
    add_summary = Family.add_summary
    monkeypatch.setattr(
        Family, "add_summary", lambda self, values, *a: summaries.append(values) or add_summary(self, values, *a)
    )
    for sequence in (1, 2):
        snapshot = fleet(_with(base, samples=(*base.samples, *carried)), sequence=sequence, at=1000.0 + sequence)
        formatted.clear()
        summaries.clear()
        page.prepare(snapshot, None)  # nothing asked yet: nothing made
        page.render(snapshot, None, None, now=1010.0)
        slow_numbers = [value for value in formatted if value >= 5000.0]
        if sequence == 1:
            assert len(summaries) == 20 and len(slow_numbers) == 20 * 4
        else:  # the same Sample objects: their rows and lines come from the last page
            assert summaries == [] and slow_numbers == []


def test_the_pages_kept_formatting_stays_about_one_page_as_label_values_come_and_go() -> None:
    # a fleet whose request names are new every round (a broken or hostile node): the kept label sets
    # must not grow with every page ever made
    page = MetricsPage()
    sizes = []
    for sequence in range(1, 41):
        samples = tuple(Sample("kafka_requests_total", (("request", f"R{sequence}-{i}"),), 1.0) for i in range(50))
        snapshot = fleet(node("b1", cluster="zk", mode=Mode.ZOOKEEPER, node_id=1), sequence=sequence)
        snapshot = dataclasses.replace(
            snapshot,
            clusters=tuple(
                dataclasses.replace(c, nodes=tuple(_with(n, samples=samples) for n in c.nodes))
                for c in snapshot.clusters
            ),
        )
        body, _ = page.render(snapshot, None, None, now=1010.0)
        assert f'request="R{sequence}-49"'.encode() in body
        sizes.append(sum(f.size() for f in page._memo.formatting.values()))
    assert max(sizes) <= 2 * 60 + 1000 + 60, sizes  # the bound in _encode: 2 x lines + 1000, plus one page
