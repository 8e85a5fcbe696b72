"""Callbacks that each new value is handed to: the scraper's snapshots, the state's observations."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


class Subscribers(Generic[T]):
    """Subscribers called in subscription order, in the notifying thread (keep them quick). One that raises
    is logged and the others still run: a face's bug must not stop the rounds that /metrics serves."""

    def __init__(self, what: str) -> None:
        self._what = what
        self._subscribers: list[Callable[[T], object]] = []

    def add(self, subscriber: Callable[[T], object]) -> None:
        self._subscribers.append(subscriber)

    def notify(self, value: T) -> None:
        for subscriber in self._subscribers:
            try:
                subscriber(value)
            except Exception:
                log.exception("%s subscriber %r failed; the round goes on", self._what, subscriber)
