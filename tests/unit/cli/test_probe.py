"""`ctlplane probe`'s text (ctlplane/probe.py): each cluster's nodes, controller, brokers and, per node, whether
it may be restarted now."""

from __future__ import annotations

from ctlplane.exporter.state import ExporterState
from ctlplane.exporter.thresholds import Thresholds
from ctlplane.probe import format_probe, read_until_named
from tests.unit.exporter.test_families import sample_fleet


def test_the_probe_says_which_nodes_may_restart_now_and_why_the_others_wait() -> None:
    observation = ExporterState(sample_fleet(), Thresholds()).current()
    text = format_probe(observation)
    (zk_line,) = [line for line in text.splitlines() if line.startswith("  may restart now:") and "b3" in line]
    assert "b3 wait (it is " in zk_line and "b1 wait (" in zk_line


class _Quorum:
    """A scraper whose quorum names its nodes only at `answers_at` (a round counted from 1), the nodes read
    from the round after; `seconds_per_round` on the clock each round."""

    def __init__(self, answers_at: int, seconds_per_round: float = 0.5) -> None:
        self.answers_at = answers_at
        self.seconds_per_round = seconds_per_round
        self.rounds = 0
        self.now = 0.0
        self.targets: tuple[str, ...] = ()
        self.targets_pending = False
        self.read: list[tuple[str, ...]] = []

    def clock(self) -> float:
        return self.now

    def scrape_once(self, wait_seconds: float | None = None) -> object:
        self.rounds += 1
        self.now += self.seconds_per_round
        if self.targets_pending:
            self.targets, self.targets_pending = ("broker-1", "broker-2"), False
        self.read.append(self.targets)
        if self.rounds == self.answers_at:
            self.targets_pending = True
        return None


def test_the_probe_reads_the_nodes_a_quorum_names_four_rounds_late() -> None:
    """A cold Admin client on a loaded host: its first three quorum reads fail at once, the fourth names the
    nodes; the probe reads them the round after, where two extra rounds once ended with none named."""
    scraper = _Quorum(answers_at=4)
    read_until_named(scraper, discovering=True, wait_seconds=4, answer_seconds=4, clock=scraper.clock)
    assert scraper.read[-1] == ("broker-1", "broker-2")
    assert scraper.rounds == 5


def test_the_probe_gives_up_on_an_unanswering_quorum_after_three_read_deadlines() -> None:
    """No answer ever, each round waiting its whole deadline: the first round and three deadlines' more."""
    scraper = _Quorum(answers_at=10**6, seconds_per_round=4)
    read_until_named(scraper, discovering=True, wait_seconds=4, answer_seconds=4, clock=scraper.clock)
    assert scraper.read[-1] == ()
    assert scraper.rounds == 4


def test_a_probe_without_discovery_reads_one_round() -> None:
    scraper = _Quorum(answers_at=1)
    read_until_named(scraper, discovering=False, wait_seconds=4, answer_seconds=4, clock=scraper.clock)
    assert scraper.rounds == 1
