"""What the exporter currently knows: the latest snapshot, its health, and a bounded recent window.

The scraper thread replaces it once per round (`observe`); HTTP handlers and the dashboard read it.
Readers get immutable values, so no lock is held while they render.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass

from exporter.health import FleetHealth, HealthMemory, Thresholds, evaluate
from exporter.model import FleetSnapshot


@dataclass(frozen=True)
class Observation:
    snapshot: FleetSnapshot
    health: FleetHealth


class ExporterState:
    def __init__(self, initial: FleetSnapshot, thresholds: Thresholds, window_seconds: float = 3600.0) -> None:
        self.thresholds = thresholds
        self.window_seconds = window_seconds
        self._memory = HealthMemory()
        health, self._memory = evaluate(initial, self._memory, thresholds)
        self._current = Observation(initial, health)
        self._window: deque[Observation] = deque()
        self._lock = threading.Lock()

    def observe(self, snapshot: FleetSnapshot) -> Observation:
        with self._lock:
            health, self._memory = evaluate(snapshot, self._memory, self.thresholds)
            observation = Observation(snapshot, health)
            self._current = observation
            self._window.append(observation)
            while self._window and snapshot.taken_at - self._window[0].snapshot.taken_at > self.window_seconds:
                self._window.popleft()
        return observation

    def current(self) -> Observation:
        return self._current

    def window(self) -> tuple[Observation, ...]:
        with self._lock:
            return tuple(self._window)
