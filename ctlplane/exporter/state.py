"""What the exporter currently knows: the latest snapshot and its health.

The scraper thread replaces it once per round (`observe`); HTTP handlers and the dashboard read it.
Readers get immutable values, so no lock is held while they render. Nothing of past rounds is kept here
but the health model's memory: a face that wants history (the dashboard's graphs, the Parquet archive)
subscribes and keeps what it needs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from ctlplane.exporter.health import FleetHealth, HealthMemory, evaluate
from ctlplane.exporter.model import FleetSnapshot
from ctlplane.exporter.subscribers import Subscribers
from ctlplane.exporter.thresholds import Thresholds


@dataclass(frozen=True)
class Observation:
    snapshot: FleetSnapshot
    health: FleetHealth


class ExporterState:
    def __init__(self, initial: FleetSnapshot, thresholds: Thresholds) -> None:
        self.thresholds = thresholds
        self._memory = HealthMemory()
        health, self._memory = evaluate(initial, self._memory, thresholds)
        self._current = Observation(initial, health)
        self._lock = threading.Lock()
        self._subscribers: Subscribers[Observation] = Subscribers("observation")

    def configure(self, thresholds: Thresholds) -> None:
        """Judge the next round by these thresholds (a reload's `health`)."""
        self.thresholds = thresholds

    def subscribe(self, subscriber: Callable[[Observation], None]) -> None:
        """Call `subscriber` with every later observation, in the observing (scraper) thread."""
        self._subscribers.add(subscriber)

    def observe(self, snapshot: FleetSnapshot) -> Observation:
        with self._lock:
            health, self._memory = evaluate(snapshot, self._memory, self.thresholds)
            observation = Observation(snapshot, health)
            self._current = observation
        self._subscribers.notify(observation)
        return observation

    def current(self) -> Observation:
        return self._current
