"""What counts as an episode: the health model's thresholds (ctlplane/exporter/thresholds.py, or a config's
`health:` section), minimum durations, gap rule."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from types import MappingProxyType

from ctlplane.exporter.thresholds import CONTROL_PLANE_QUEUE_CAPACITY, HEALTH, Thresholds


class Kind(StrEnum):
    STALE_METADATA = "stale_metadata"
    FENCED = "fenced"
    UNREACHABLE = "unreachable"
    NO_ACTIVE_CONTROLLER = "no_active_controller"
    SEVERAL_ACTIVE_CONTROLLERS = "several_active_controllers"
    CONTROL_PLANE_SATURATED = "control_plane_saturated"
    CONTROLLER_CHURN = "controller_churn"


# A condition must hold this long (last sample - first sample) to be an episode; like an alert's `for:`.
DEFAULT_MIN_SECONDS: Mapping[Kind, float] = MappingProxyType(
    {
        Kind.STALE_METADATA: 30.0,
        Kind.FENCED: 30.0,
        Kind.UNREACHABLE: 30.0,
        Kind.NO_ACTIVE_CONTROLLER: 30.0,
        Kind.SEVERAL_ACTIVE_CONTROLLERS: 30.0,
        Kind.CONTROL_PLANE_SATURATED: 60.0,
        Kind.CONTROLLER_CHURN: 0.0,
    }
)


@dataclass(frozen=True)
class EpisodeRules:
    interval_seconds: float = 15.0  # the exporter's scrape interval
    # A gap of more than this many intervals between samples ends an episode. Below 2 intervals the
    # filter-first island detection is exact; one missed scrape therefore splits an episode.
    gap_intervals: float = 1.5
    metadata_stale_records: float = HEALTH.metadata_stale_records
    metadata_stale_seconds: float = HEALTH.metadata_stale_seconds
    queue_saturation_ratio: float = HEALTH.control_plane_queue_saturation_ratio
    idle_saturation_ratio: float = HEALTH.control_plane_idle_saturation_ratio
    churn_failovers: int = 3  # this many failovers ...
    churn_window_seconds: float = 600.0  # ... each within this long of the previous one
    min_seconds: Mapping[Kind, float] = field(default_factory=lambda: DEFAULT_MIN_SECONDS)

    @property
    def gap_seconds(self) -> float:
        return self.gap_intervals * self.interval_seconds

    @property
    def queue_saturation_size(self) -> float:
        return self.queue_saturation_ratio * CONTROL_PLANE_QUEUE_CAPACITY

    def min_for(self, kind: Kind) -> float:
        return self.min_seconds.get(kind, 0.0)

    def with_min_seconds(self, overrides: Mapping[Kind, float]) -> EpisodeRules:
        return replace(self, min_seconds=MappingProxyType({**self.min_seconds, **overrides}))


def rules_from_health(health: Thresholds, interval_seconds: float = 15.0) -> EpisodeRules:
    """The episode rules with the exporter's thresholds (a config's `health:` section, or the defaults)."""
    return EpisodeRules(
        interval_seconds=interval_seconds,
        metadata_stale_records=health.metadata_stale_records,
        metadata_stale_seconds=health.metadata_stale_seconds,
        queue_saturation_ratio=health.control_plane_queue_saturation_ratio,
        idle_saturation_ratio=health.control_plane_idle_saturation_ratio,
    )
