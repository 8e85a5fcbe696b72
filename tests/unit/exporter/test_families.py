from __future__ import annotations

import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from prometheus_client.exposition import generate_latest

from ctlplane.exporter.catalog import Mode, Role
from ctlplane.exporter.families import render_families
from ctlplane.exporter.health import HealthMemory, Lifecycle, evaluate
from ctlplane.exporter.http.page import MetricsPage
from ctlplane.exporter.model import Failure, FleetSnapshot
from ctlplane.exporter.thresholds import Thresholds
from tests.golden import UPDATE, assert_matches_golden
from tests.unit.exporter.builders import fleet, kraft_broker, kraft_controller, node

GOLDEN = Path(__file__).parent / "golden" / "metrics.txt"


def sample_fleet() -> FleetSnapshot:
    """Two clusters: ZooKeeper mode (one broker with the KIP-291 listener, one without, one down), KRaft."""
    zk_values = {
        "kafka_broker_state": 3.0,
        "kafka_controller_active": 1.0,
        "kafka_control_plane_request_queue_size": 2.0,
        "kafka_control_plane_network_processor_idle_ratio": 0.97,
        "kafka_control_plane_request_handler_idle_ratio": 0.95,
        "kafka_request_queue_size": 0.0,
        ("kafka_controller_channel_queue_size", (("broker", "2"),)): 1.0,
        # b3 is down for ctlplane only: the controller still has it registered (a dropped one is FENCED)
        ("kafka_controller_channel_queue_size", (("broker", "3"),)): 0.0,
    }
    return fleet(
        node("b1", zk_values, cluster="zk", mode=Mode.ZOOKEEPER, node_id=1),
        node(
            "b2",
            {
                "kafka_broker_state": 3.0,
                "kafka_controller_active": 0.0,
            },
            cluster="zk",
            mode=Mode.ZOOKEEPER,
            node_id=2,
        ),
        node("b3", cluster="zk", mode=Mode.ZOOKEEPER, node_id=3, up=False, error="timed out"),
        kraft_controller("c1", 1, active=True, registrations={101: 30}, cluster="kr"),
        kraft_broker("k1", 101, cluster="kr"),
    )


def render_text(snapshot: FleetSnapshot) -> bytes:
    health, _ = evaluate(snapshot, HealthMemory(), Thresholds())

    class Registry:
        def collect(self):  # type: ignore[no-untyped-def]
            return render_families(snapshot, health, version="test")

    return generate_latest(Registry())  # type: ignore[arg-type]


def test_exposition_matches_golden_text() -> None:
    assert_matches_golden(render_text(sample_fleet()).decode(), GOLDEN)


def test_listener_off_broker_has_no_control_plane_series_and_says_so() -> None:
    text = render_text(sample_fleet()).decode()
    assert 'kafka_control_plane_listener_enabled{cluster="zk",node="b1",role="broker"} 1.0' in text
    assert 'kafka_control_plane_listener_enabled{cluster="zk",node="b2",role="broker"} 0.0' in text
    assert not [
        line
        for line in text.splitlines()
        if line.startswith("kafka_control_plane_") and 'node="b2"' in line and "listener_enabled" not in line
    ]


def test_a_node_that_refuses_ctlplanes_credentials_says_so_beside_its_up() -> None:
    fleet = sample_fleet()
    zk = fleet.clusters[0]
    refused = replace(zk.nodes[2], failure=Failure.AUTH, error="127.0.0.1:9999: JMX authentication failed")
    fleet = replace(fleet, clusters=(replace(zk, nodes=(*zk.nodes[:2], refused)), *fleet.clusters[1:]))
    lines = render_text(fleet).decode().splitlines()
    assert 'ctlplane_up{cluster="zk",node="b3",role="broker"} 0.0' in lines
    assert 'ctlplane_credentials_refused{cluster="zk",node="b3",role="broker"} 1.0' in lines
    assert 'ctlplane_credentials_refused{cluster="zk",node="b2",role="broker"} 0.0' in lines


def test_down_node_is_reported_by_up_only() -> None:
    lines = [line for line in render_text(sample_fleet()).decode().splitlines() if 'node="b3"' in line]
    assert 'ctlplane_up{cluster="zk",node="b3",role="broker"} 0.0' in lines
    # no reading of it, only ctlplane's judgement of its lifecycle (whether a fencing is unplanned, and why) and
    # whether it may be restarted now
    judgements = (
        "kafka_broker_lifecycle_state{",
        "kafka_broker_fenced_unplanned{",
        "kafka_broker_fault_cause{",
        "kafka_node_safe_to_restart{",
        "kafka_node_restart_blocked{",
    )
    assert not [line for line in lines if line.startswith("kafka_") and not line.startswith(judgements)]
    assert 'kafka_broker_lifecycle_state{cluster="zk",node="b3",role="broker",state="UNREACHABLE"} 1.0' in lines
    assert 'kafka_broker_fenced_unplanned{cluster="zk",node="b3",role="broker"} 0.0' in lines
    assert 'kafka_broker_fault_cause{cause="process_gone",cluster="zk",node="b3",role="broker"} 1.0' in lines


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is installed by `make test`")
def test_promtool_accepts_the_exposition() -> None:
    result = subprocess.run(
        ["promtool", "check", "metrics"], input=render_text(sample_fleet()), capture_output=True, check=False
    )
    assert result.returncode == 0, result.stdout.decode() + result.stderr.decode()


def test_page_is_rendered_once_per_snapshot_and_content_type_with_a_fresh_age() -> None:
    page = MetricsPage("test")
    snapshot = sample_fleet()
    first, content_type = page.render(snapshot, None, None, now=1010.0)
    second, _ = page.render(snapshot, None, None, now=1012.5)
    assert content_type.startswith("text/plain")
    assert b"ctlplane_snapshot_age_seconds 10.0" in first
    assert b"ctlplane_snapshot_age_seconds 12.5" in second
    age_at = first.index(b"# HELP ctlplane_snapshot_age_seconds")
    assert first[:age_at] == second[:age_at]  # the cached page, then the age made per request
    openmetrics, om_type = page.render(snapshot, None, "application/openmetrics-text; version=1.0.0", now=1010.0)
    assert om_type.startswith("application/openmetrics-text")
    assert openmetrics.endswith(b"# EOF\n") and openmetrics.count(b"# EOF") == 1


def test_the_migration_phase_is_one_series_per_phase_with_the_current_one_at_1() -> None:
    controller = node(
        "controller-1",
        {"kafka_controller_active": 1.0, "kafka_raft_current_epoch": 3, "kafka_controller_zk_migration_state": 2},
        role=Role.CONTROLLER,
        node_id=3001,
        mode=Mode.MIGRATION,
    )
    snapshot = fleet(controller)
    health, _ = evaluate(snapshot, HealthMemory(), Thresholds())
    phases = {
        s.labels["phase"]: s.value
        for metric in render_families(snapshot, health)
        for s in metric.samples
        if s.name == "kafka_cluster_migration_phase"
    }
    assert phases == {"PRE_MIGRATION": 1.0, "MIGRATION": 0.0, "POST_MIGRATION": 0.0}


def test_a_missing_golden_file_fails_and_is_not_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A deleted golden file must turn the test red, not write itself from the output under test."""
    missing = tmp_path / "metrics.txt"
    monkeypatch.setitem(globals(), "GOLDEN", missing)
    monkeypatch.delenv(UPDATE, raising=False)
    with pytest.raises(pytest.fail.Exception, match=f"{UPDATE}=1"):
        test_exposition_matches_golden_text()
    assert not missing.exists()
    monkeypatch.setenv(UPDATE, "1")  # on purpose: written, then the same output matches it
    test_exposition_matches_golden_text()
    assert missing.read_text() == render_text(sample_fleet()).decode()


def test_build_info_names_the_kafka_client_ctlplane_carries() -> None:
    """#50: which Kafka client the quorum's view and discovery speak with, as a self-metric."""
    from ctlplane.exporter.releases import CLIENT_VERSION

    (build,) = [
        m for m in render_families(FleetSnapshot(1, 0.0, 0.0, ()), version="9.9") if m.name == "ctlplane_build_info"
    ]
    assert [s.labels for s in build.samples] == [{"version": "9.9", "kafka_client": CLIENT_VERSION}]


def test_a_node_read_at_its_own_pace_is_up_with_its_last_page_stamped_and_its_age() -> None:
    """A large broker's page takes longer than a round (NodeSnapshot.held): between its pages each snapshot
    serves the last one, each value with the time it was taken, ctlplane_up 1 and the read's age beside it."""
    read_at = 970.0
    page = node("k2", {"kafka_broker_state": 3.0}, cluster="kr", node_id=102, at=read_at)
    held = replace(
        page,
        up=False,
        failure=Failure.PACED,
        error="read at its own pace",
        samples=tuple(replace(s, read_at=read_at) for s in page.samples),
        last_read_at=read_at,
    )
    controller = kraft_controller("c1", 1, active=True, registrations={102: 30}, cluster="kr")
    snapshot = fleet(controller, held)
    lines = render_text(snapshot).decode().splitlines()
    assert 'ctlplane_up{cluster="kr",node="k2",role="broker"} 1.0' in lines
    assert 'kafka_broker_state{cluster="kr",node="k2",role="broker"} 3.0 970000' in lines
    age = snapshot.taken_at - read_at
    assert f'ctlplane_last_read_age_seconds{{cluster="kr",node="k2",role="broker"}} {age:.1f}' in lines
    # ACTIVE while its pages say so and the controller says nothing fresher, and nothing wrong to name
    _, memory = evaluate(fleet(controller, page), HealthMemory(), Thresholds())
    health, _ = evaluate(snapshot, memory, Thresholds())
    broker = health.clusters[0].brokers[0]
    assert broker.state is Lifecycle.ACTIVE and broker.cause is None, broker
