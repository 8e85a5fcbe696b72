"""The simulator over real JMX: every scenario drives ctlplane's health (read through the real Scraper,
JPype client and ExporterState) to the expected state, and back to healthy."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from ctlplane.demo.launch import SimulatorProcess, start_simulator
from ctlplane.exporter.health import ClusterHealth, Lifecycle
from ctlplane.exporter.model import ClusterSnapshot
from ctlplane.exporter.scraper import Scraper, Target
from ctlplane.exporter.sources.jmx.base import Endpoint
from ctlplane.exporter.sources.jmx.jpype_client import JPypeJmxClient
from ctlplane.exporter.state import ExporterState, Observation
from ctlplane.exporter.thresholds import Thresholds

ZK, KRAFT = "zk-3.9", "kraft-4.3"
DEADLINE_SECONDS = 40.0


@dataclass
class Watch:
    simulator: SimulatorProcess
    scraper: Scraper
    state: ExporterState

    def observe(self) -> Observation:
        self.scraper.scrape_once()
        return self.state.current()

    def until(self, cluster: str, check: Callable[[ClusterHealth, ClusterSnapshot], bool], what: str) -> None:
        """Scrape about once a second until `check` holds for the cluster, or fail at the deadline."""
        deadline = time.monotonic() + DEADLINE_SECONDS
        while True:
            started = time.monotonic()
            observation = self.observe()
            health = observation.health.cluster(cluster)
            snapshot = observation.snapshot.cluster(cluster)
            assert health is not None and snapshot is not None
            if check(health, snapshot):
                return
            assert time.monotonic() < deadline, f"{cluster}: never saw {what}; last health: {health}"
            time.sleep(max(0.0, 1.0 - (time.monotonic() - started)))  # pacing between scrapes only

    def value(self, cluster: str, node: str, series: str) -> float | None:
        snapshot = self.state.current().snapshot.cluster(cluster)
        assert snapshot is not None
        read = snapshot.node(node)
        assert read is not None, node
        return read.value(series)


def healthy(health: ClusterHealth, snapshot: ClusterSnapshot) -> bool:
    return (
        all(node.up for node in snapshot.nodes)
        and health.active_controllers == 1
        and all(b.state is Lifecycle.ACTIVE and not b.stale and not b.control_plane_saturated for b in health.brokers)
    )


@pytest.fixture(scope="module")
def watch() -> Iterator[Watch]:
    started = time.monotonic()
    simulator = start_simulator(seed=7)
    startup = time.monotonic() - started
    assert startup < 60, f"simulator took {startup:.1f} s to start"
    client = JPypeJmxClient(timeout_seconds=2.0, max_heap="128m")
    targets = [Target(node.cluster, node.name, Endpoint("127.0.0.1", node.port)) for node in simulator.nodes]
    scraper = Scraper(targets, client, interval_seconds=1.0, timeout_seconds=5.0, workers=4)
    state = ExporterState(scraper.latest(), Thresholds())
    scraper.subscribe(state.observe)
    yield Watch(simulator, scraper, state)
    scraper.stop()
    pid = simulator.pid
    stopping = time.monotonic()
    simulator.stop()
    assert time.monotonic() - stopping < 15, "simulator took too long to stop"
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def _switch(watch: Watch, scenario: str, cluster: str, node: str | None = None) -> None:
    watch.simulator.set_scenario(scenario, cluster, node)


def _back_to_healthy(watch: Watch, cluster: str) -> None:
    _switch(watch, "healthy", cluster)
    watch.until(cluster, healthy, "healthy again")


def test_both_clusters_start_healthy_with_the_right_identity(watch: Watch) -> None:
    for cluster in (ZK, KRAFT):
        watch.until(cluster, healthy, "healthy")
    snapshot = watch.state.current().snapshot
    roles = {(n.cluster, n.node): (n.mode and n.mode.value, n.role.value) for n in snapshot.nodes()}
    assert roles[(ZK, "broker-1")] == ("zookeeper", "broker")
    assert roles[(KRAFT, "controller-1")] == ("kraft", "controller")
    assert roles[(KRAFT, "broker-101")] == ("kraft", "broker")
    zk = watch.state.current().health.cluster(ZK)
    assert zk is not None and all(b.control_plane_listener for b in zk.brokers)


def test_fenced_broker(watch: Watch) -> None:
    _switch(watch, "fenced-broker", KRAFT, "broker-102")
    watch.until(KRAFT, lambda h, _: (b := h.broker("broker-102")) is not None and b.state is Lifecycle.FENCED, "FENCED")
    _back_to_healthy(watch, KRAFT)


@pytest.mark.parametrize(("cluster", "node"), [(ZK, "broker-2"), (KRAFT, "broker-101")])
def test_unreachable_broker(watch: Watch, cluster: str, node: str) -> None:
    _switch(watch, "unreachable-broker", cluster, node)
    watch.until(
        cluster, lambda h, _: (b := h.broker(node)) is not None and b.state is Lifecycle.UNREACHABLE, "UNREACHABLE"
    )
    _back_to_healthy(watch, cluster)


def test_stale_metadata_kraft_lags_then_freezes(watch: Watch) -> None:
    _switch(watch, "stale-metadata", KRAFT, "broker-103")
    watch.until(KRAFT, lambda h, _: (b := h.broker("broker-103")) is not None and b.stale and b.frozen, "stale+frozen")
    other = watch.state.current().health.cluster(KRAFT)
    assert other is not None
    # which, and on what evidence (CI, 69aec84 and e210c39: another broker read stale here twice in ~28 suite
    # runs, its evidence naming only its registration): its lag and whether it read frozen, to find why
    assert not [
        (b.node, b.evidence, b.metadata_lag_records, b.metadata_lag_seconds, b.frozen)
        for b in other.brokers
        if b.node != "broker-103" and b.stale
    ]
    _back_to_healthy(watch, KRAFT)


def test_stale_metadata_zookeeper_queues_requests(watch: Watch) -> None:
    _switch(watch, "stale-metadata", ZK, "broker-3")
    watch.until(ZK, lambda h, _: (b := h.broker("broker-3")) is not None and b.stale, "stale")
    _back_to_healthy(watch, ZK)


@pytest.mark.parametrize("cluster", [ZK, KRAFT])
def test_controller_failover(watch: Watch, cluster: str) -> None:
    watch.until(cluster, healthy, "healthy")
    before = watch.state.current().health.cluster(cluster)
    assert before is not None
    _switch(watch, "controller-failover", cluster)
    watch.until(
        cluster,
        lambda h, _: (
            h.controller.failovers_total == before.controller.failovers_total + 1
            and h.controller.node != before.controller.node
            and h.active_controllers == 1
        ),
        "one failover to another node",
    )
    after = watch.state.current().health.cluster(cluster)
    assert after is not None
    if cluster == KRAFT:
        assert before.controller.epoch is not None and after.controller.epoch == before.controller.epoch + 1
        assert after.controller.node is not None
        elected = watch.value(cluster, after.controller.node, "kafka_controller_new_active_controllers_total")
        assert elected is not None and elected >= 2
    _back_to_healthy(watch, cluster)


@pytest.mark.parametrize("cluster", [ZK, KRAFT])
def test_no_active_controller(watch: Watch, cluster: str) -> None:
    _switch(watch, "no-active-controller", cluster)
    watch.until(cluster, lambda h, _: h.active_controllers == 0 and h.controller.node is None, "no controller")
    _back_to_healthy(watch, cluster)


@pytest.mark.parametrize("cluster", [ZK, KRAFT])
def test_two_active_controllers(watch: Watch, cluster: str) -> None:
    _switch(watch, "two-active-controllers", cluster)
    watch.until(cluster, lambda h, _: h.active_controllers == 2, "split brain")
    _back_to_healthy(watch, cluster)


def test_control_plane_backlog(watch: Watch) -> None:
    _switch(watch, "control-plane-backlog", ZK, "broker-1")
    watch.until(
        ZK,
        lambda h, _: (
            (b := h.broker("broker-1")) is not None
            and b.control_plane_saturated
            and (b.control_plane_queue_ratio or 0) >= 0.8
        ),
        "saturated control plane",
    )
    _back_to_healthy(watch, ZK)


def _rises(watch: Watch, cluster: str, node: Callable[[ClusterHealth], str | None], series: str) -> None:
    watch.until(
        cluster, lambda h, _: node(h) is not None and watch.value(cluster, node(h) or "", series) is not None, series
    )
    health = watch.state.current().health.cluster(cluster)
    assert health is not None
    name = node(health) or ""
    first = watch.value(cluster, name, series)
    assert first is not None
    watch.until(cluster, lambda *_: (watch.value(cluster, name, series) or 0) >= first + 2, f"{series} rising")


def test_expired_control_plane_connections(watch: Watch) -> None:
    _switch(watch, "expired-control-plane-connections", ZK, "broker-2")
    _rises(watch, ZK, lambda _: "broker-2", "kafka_control_plane_expired_connections_killed_total")
    _back_to_healthy(watch, ZK)


def test_heartbeat_timeouts(watch: Watch) -> None:
    _switch(watch, "heartbeat-timeouts", KRAFT)
    _rises(watch, KRAFT, lambda h: h.controller.node, "kafka_controller_timed_out_broker_heartbeats_total")
    _back_to_healthy(watch, KRAFT)


def test_controller_event_queue_backlog(watch: Watch) -> None:
    _switch(watch, "controller-event-queue-backlog", ZK)
    watch.until(
        ZK,
        lambda h, _: (
            h.controller.node is not None
            and (watch.value(ZK, h.controller.node, "kafka_controller_event_queue_size") or 0) >= 40
        ),
        "event queue backlog",
    )
    _back_to_healthy(watch, ZK)
    _switch(watch, "controller-event-queue-backlog", KRAFT)
    _rises(watch, KRAFT, lambda h: h.controller.node, "kafka_controller_event_queue_operations_timed_out_total")
    _back_to_healthy(watch, KRAFT)
