"""tools/page_sweep.py: the recorded fault rows replayed at candidate `for:` values (docs/alerts.md)."""

from __future__ import annotations

from pathlib import Path

import yaml

from tools.page_sweep import (
    BEGIN,
    DOCS,
    END,
    SHIPPED,
    Broker,
    all_brokers,
    fires_at,
    first_fire,
    outcome,
    table,
)

RULES = Path(__file__).resolve().parents[3] / "alerts" / "brokers.rules.yml"


def test_for_is_counted_in_evaluations_as_prometheus_does() -> None:
    assert fires_at([False, True], 0) == 15
    assert fires_at([True, True, True], 15) == 15
    assert fires_at([True, True, True], 30) == 30
    assert fires_at([True, False, True, False], 15) is None  # a gap restarts `for:`
    assert fires_at([True] * 5, 60) == 60
    assert fires_at([True] * 4, 60) is None
    # every 5 s over 15 s rounds: a round's value holds for three evaluations
    assert fires_at([False, True], 10, every=5) == 25
    assert fires_at([False, True, False], 15, every=5) is None  # one round is 10 s of evaluations, not 15
    assert fires_at([True] * 5, 60, every=5) == 60


def _broker(fenced: str, unplanned: str | None, expected: bool) -> Broker:
    flags = tuple(c == "1" for c in fenced)
    marks = tuple(c == "1" for c in unplanned) if unplanned is not None else (None,) * len(flags)
    return Broker("r", "b", flags, marks, expected)


def test_the_shipped_pair_waits_only_where_the_fencing_is_unplanned() -> None:
    crash = _broker("0111111", "0111111", expected=True)
    restart = _broker("0110000", "0000000", expected=False)
    unrecorded = _broker("0111111", None, expected=True)  # a recording from before the series: the 1m rule
    assert first_fire(crash, 15, 60) == 30 and first_fire(crash, None, 15) == 30
    assert first_fire(crash, 10, 60, every=5) == 25  # within the first unplanned round
    assert first_fire(restart, 15, 60) is None and first_fire(restart, None, 15) == 30
    assert first_fire(unrecorded, 15, 60) == 75
    result = outcome([crash, restart, unrecorded], 15, 60)
    assert (result.true_pages, result.false_pages, result.missed) == (2, 0, 0)
    assert result.seconds_to_fire == (15.0, 60.0)
    single = outcome([crash, restart], None, 15)
    assert (single.true_pages, single.false_pages, single.false_recordings) == (1, 1, ("r/b",))


def test_shipped_is_what_the_rules_say() -> None:
    rules = yaml.safe_load(RULES.read_text())["groups"][0]["rules"]
    fors = {r["labels"]["evidence"]: str(r["for"]) for r in rules if r.get("alert") == "KafkaBrokerFenced"}
    assert fors == {"unplanned": "10s", "sustained": "1m"}
    assert str(yaml.safe_load(RULES.read_text())["groups"][0]["interval"]) == "5s"
    assert SHIPPED == (10.0, 60.0, 5.0)


def test_the_shipped_rules_page_every_recorded_crash_and_no_recorded_restart() -> None:
    # the sweep's reading of each recording agrees with the recording's own promtool expectations
    result = outcome(all_brokers(), *SHIPPED)
    assert (result.false_pages, result.missed) == (0, 0), result
    assert result.true_pages > 0


def test_docs_show_the_table_the_recordings_give() -> None:
    shown = DOCS.read_text().partition(BEGIN)[2].partition(END)[0].lstrip("\n")
    assert shown == table(all_brokers()), "docs/alerts.md's sweep is stale: python -m tools.page_sweep --write"
