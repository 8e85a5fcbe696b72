"""The value model: deterministic for a seed, moving over time, and scenarios change the right values."""

from __future__ import annotations

import math

import pytest

from ctlplane.demo.scenarios import Scenario, ScenarioChange, ScenarioError, parse_script, resolve_change, segments
from ctlplane.demo.shapes import kraft_cluster, zk_cluster
from ctlplane.demo.values import cluster_values

KRAFT = kraft_cluster()


def num(value: object) -> float:
    assert isinstance(value, int | float), value
    return float(value)


ZK = zk_cluster()
COMMITTED = "kafka.controller:type=KafkaController,name=LastCommittedRecordOffset"
APPLIED = "kafka.server:type=broker-metadata-metrics"
ACTIVE = "kafka.controller:type=KafkaController,name=ActiveControllerCount"
RAFT = "kafka.server:type=raft-metrics"


def test_same_seed_same_values_other_seed_other_values() -> None:
    script = (ScenarioChange(10.0, Scenario.FENCED_BROKER, "broker-102"),)
    first = cluster_values(KRAFT, script, seed=3, origin=0.0, t=42.0)
    assert first == cluster_values(KRAFT, script, seed=3, origin=0.0, t=42.0)
    assert first != cluster_values(KRAFT, script, seed=4, origin=0.0, t=42.0)


def test_offsets_advance_and_idle_ratios_wobble() -> None:
    idle = "kafka.network:type=SocketServer,name=NetworkProcessorAvgIdlePercent"
    earlier = cluster_values(KRAFT, (), seed=1, origin=0.0, t=100.0)
    later = cluster_values(KRAFT, (), seed=1, origin=0.0, t=110.0)
    assert num(later["controller-1"][COMMITTED]["Value"]) > num(earlier["controller-1"][COMMITTED]["Value"])
    broker = "broker-101"
    assert num(later[broker][APPLIED]["last-applied-record-offset"]) > num(
        earlier[broker][APPLIED]["last-applied-record-offset"]
    )
    ratios = {
        num(cluster_values(KRAFT, (), seed=1, origin=0.0, t=float(t))[broker][idle]["Value"]) for t in range(0, 60, 5)
    }
    assert len(ratios) > 3 and all(0.0 <= r <= 1.0 for r in ratios)


def test_stale_metadata_lags_then_freezes_while_the_quorum_commits() -> None:
    script = (ScenarioChange(100.0, Scenario.STALE_METADATA, "broker-103"),)
    at = {t: cluster_values(KRAFT, script, seed=1, origin=0.0, t=t) for t in (100.0, 103.0, 110.0, 120.0)}
    applied = {t: num(v["broker-103"][APPLIED]["last-applied-record-offset"]) for t, v in at.items()}
    lag_ms = {t: num(v["broker-103"][APPLIED]["last-applied-record-lag-ms"]) for t, v in at.items()}
    committed = {t: num(v["controller-1"][COMMITTED]["Value"]) for t, v in at.items()}
    assert applied[103.0] > applied[100.0]  # still applying, at half speed
    assert applied[110.0] == applied[120.0]  # frozen
    assert committed[120.0] > committed[110.0]
    assert lag_ms[120.0] > 15_000 > lag_ms[100.0]


def test_failover_moves_the_leader_and_raises_the_epoch() -> None:
    script = (ScenarioChange(50.0, Scenario.CONTROLLER_FAILOVER),)
    before = cluster_values(KRAFT, script, seed=0, origin=0.0, t=49.0)
    after = cluster_values(KRAFT, script, seed=0, origin=0.0, t=51.0)
    leader_before = [n for n, v in before.items() if v.get(ACTIVE, {}).get("Value") == 1]
    leader_after = [n for n, v in after.items() if v.get(ACTIVE, {}).get("Value") == 1]
    assert len(leader_before) == len(leader_after) == 1 and leader_before != leader_after
    assert num(after["broker-101"][RAFT]["current-epoch"]) == num(before["broker-101"][RAFT]["current-epoch"]) + 1
    assert after["broker-101"][RAFT]["current-state"] == "observer"


def test_split_brain_and_leaderless_quorum() -> None:
    split = cluster_values(KRAFT, (ScenarioChange(5.0, Scenario.TWO_ACTIVE_CONTROLLERS),), seed=0, origin=0.0, t=9.0)
    claimants = [n for n, v in split.items() if v.get(ACTIVE, {}).get("Value") == 1]
    assert len(claimants) == 2
    epochs = sorted(num(split[n][RAFT]["current-epoch"]) for n in claimants)
    assert epochs[1] == epochs[0] + 1
    none = cluster_values(ZK, (ScenarioChange(5.0, Scenario.NO_ACTIVE_CONTROLLER),), seed=0, origin=0.0, t=9.0)
    assert all(v[ACTIVE]["Value"] == 0 for v in none.values())


def test_counters_rise_during_their_scenario_and_never_fall() -> None:
    counter = "kafka.network:type=SocketServer,name=ControlPlaneExpiredConnectionsKilledCount"
    script = (
        ScenarioChange(10.0, Scenario.EXPIRED_CONTROL_PLANE_CONNECTIONS, "broker-2"),
        ScenarioChange(30.0, Scenario.HEALTHY),
    )
    series = [
        cluster_values(ZK, script, seed=0, origin=0.0, t=float(t))["broker-2"][counter]["Value"]
        for t in range(0, 60, 5)
    ]
    assert series == sorted(series) and series[0] == 0 and series[-1] == 20


def test_control_plane_backlog_fills_the_queue_and_starves_the_handler() -> None:
    queue = "kafka.network:type=RequestChannel,name=ControlPlaneRequestQueueSize"
    idle = "kafka.server:type=KafkaRequestHandlerPool,name=ControlPlaneRequestHandlerAvgIdlePercent"
    values = cluster_values(
        ZK, (ScenarioChange(0.0, Scenario.CONTROL_PLANE_BACKLOG, "broker-1"),), seed=0, origin=0.0, t=20.0
    )
    assert 16 <= num(values["broker-1"][queue]["Value"]) <= 20
    assert num(values["broker-1"][idle]["OneMinuteRate"]) < 0.1
    assert values["broker-2"][queue]["Value"] == 0


def test_scenarios_are_checked_against_the_cluster_mode() -> None:
    with pytest.raises(ScenarioError):
        resolve_change(ZK, "fenced-broker", None, 0.0)
    with pytest.raises(ScenarioError):
        resolve_change(KRAFT, "control-plane-backlog", None, 0.0)
    with pytest.raises(ScenarioError):
        resolve_change(KRAFT, "nonsense", None, 0.0)
    assert resolve_change(KRAFT, "fenced-broker", None, 0.0).node == "broker-103"


def test_script_parsing_and_segments() -> None:
    assert parse_script("30:healthy,0:fenced-broker@kraft-4.3/broker-101") == [
        (0.0, "fenced-broker", "kraft-4.3", "broker-101"),
        (30.0, "healthy", None, None),
    ]
    script = (ScenarioChange(10.0, Scenario.NO_ACTIVE_CONTROLLER), ScenarioChange(20.0, Scenario.HEALTHY))
    parts = list(segments(KRAFT, script, 0, 0.0, 30.0))
    assert [p.scenario for p in parts] == [Scenario.HEALTHY, Scenario.NO_ACTIVE_CONTROLLER, Scenario.HEALTHY]
    assert parts[1].leader is None and parts[2].elections == parts[0].elections + 1
    assert not math.isclose(parts[2].epoch, parts[0].epoch)
