"""`ctlplane probe`'s text (ctlplane/probe.py): each cluster's nodes, controller, brokers and, per node, whether
it may be restarted now."""

from __future__ import annotations

from ctlplane.exporter.state import ExporterState
from ctlplane.exporter.thresholds import Thresholds
from ctlplane.probe import format_probe
from tests.unit.exporter.test_families import sample_fleet


def test_the_probe_says_which_nodes_may_restart_now_and_why_the_others_wait() -> None:
    observation = ExporterState(sample_fleet(), Thresholds()).current()
    text = format_probe(observation)
    (zk_line,) = [line for line in text.splitlines() if line.startswith("  may restart now:") and "b3" in line]
    assert "b3 wait (it is " in zk_line and "b1 wait (" in zk_line
