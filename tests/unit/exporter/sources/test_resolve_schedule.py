"""When a connection looks its wildcard MBean names up again (jpype_client.resolve_due)."""

from __future__ import annotations

import itertools
import math
from collections import Counter

from ctlplane.exporter.sources.jmx.jpype_client import RESOLVE_TTL_SECONDS, resolve_due, resolve_phase

TTL = RESOLVE_TTL_SECONDS
INTERVAL = 15.0  # the default scrape interval


def first_due(address: str, resolved_at: float, step: float = INTERVAL) -> float:
    """When a name resolved at `resolved_at` is first due, polled every `step` seconds (one read a round)."""
    now = resolved_at
    while not resolve_due(now, resolved_at, TTL, resolve_phase(address)):
        now += step
    return now - resolved_at


def test_names_resolved_in_the_same_round_are_looked_up_again_in_different_rounds() -> None:
    # 1,000 nodes connected in one round re-resolved all together, in one round of four: that round's read
    # cost doubled (3.6 -> 5-10 ms CPU per node, measured against the simulator). Each connection keeps its
    # own phase, so about a quarter of the fleet re-resolves per round.
    addresses = [f"10.0.{i // 250}.{i % 250}:9999" for i in range(1000)]
    rounds = Counter(first_due(address, 1_000_000.0) for address in addresses)
    assert set(rounds) <= {15.0, 30.0, 45.0, 60.0}
    assert all(150 <= rounds[age] <= 350 for age in (15.0, 30.0, 45.0, 60.0)), rounds


def test_a_name_is_never_looked_up_again_before_a_quarter_of_the_ttl_nor_kept_past_it() -> None:
    for i in range(200):
        phase = resolve_phase(f"127.0.0.1:{20000 + i}")
        for resolved_at in (0.0, 7.3, 1_000_000.0 + i):
            assert not resolve_due(resolved_at + TTL / 4 - 0.01, resolved_at, TTL, phase)
            assert resolve_due(resolved_at + TTL, resolved_at, TTL, phase)
            assert first_due(f"127.0.0.1:{20000 + i}", resolved_at, step=0.5) <= TTL


def test_once_on_its_phase_a_connection_looks_names_up_one_ttl_apart() -> None:
    # the first lookup again may come early (at a quarter of the ttl, when the phase's boundary fell sooner
    # than that after the connection's first read); from then on the lookups keep the phase
    phase = resolve_phase("127.0.0.1:9999")
    at, times = 123.4, []
    now = at
    while len(times) < 5:
        now += 0.25
        if resolve_due(now, at, TTL, phase):
            times.append(now)
            at = now
    gaps = [round(b - a, 2) for a, b in itertools.pairwise(times)]
    assert TTL / 4 <= gaps[0] <= TTL and gaps[1:] == [TTL] * 3, gaps


def test_a_zero_ttl_is_always_due_and_an_infinite_one_never() -> None:
    assert resolve_due(10.0, 10.0, 0.0, 0.5)
    assert not resolve_due(1e12, 0.0, math.inf, 0.5)
