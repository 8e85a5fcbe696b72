"""ExporterState: the current observation, and the faces that subscribe to each new one."""

from __future__ import annotations

import pytest

from ctlplane.exporter.model import FleetSnapshot
from ctlplane.exporter.state import ExporterState, Observation
from ctlplane.exporter.thresholds import Thresholds


def test_a_failing_subscriber_is_logged_and_neither_the_round_nor_the_others_stop(
    caplog: pytest.LogCaptureFixture,
) -> None:
    state = ExporterState(FleetSnapshot(0, 0.0, 0.0, ()), Thresholds())
    seen: list[int] = []

    def broken(_: Observation) -> None:
        raise RuntimeError("a dashboard bug")

    state.subscribe(broken)
    state.subscribe(lambda observation: seen.append(observation.snapshot.sequence))
    observation = state.observe(FleetSnapshot(1, 15.0, 0.1, ()))
    assert state.current() is observation and seen == [1]
    assert "a dashboard bug" in caplog.text
