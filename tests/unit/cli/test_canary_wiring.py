"""A reload keeps a cluster's metadata canary only where everything it is built from is unchanged."""

from __future__ import annotations

from ctlplane.exporter.config.file import parse_settings
from ctlplane.wiring import build_canaries


def _settings(timeout: float, prefix: str = "c-") -> object:
    return parse_settings(
        {
            "clusters": [{"name": "eu1", "bootstrap_servers": ["k1:9092"], "canary": {"topic_prefix": prefix}}],
            "scrape": {"interval_seconds": 15, "timeout_seconds": timeout},
        }
    )


def test_a_reload_keeps_the_canary_unless_its_prefix_or_its_timeout_changed() -> None:
    before = _settings(5.0)
    first = build_canaries(before)  # type: ignore[arg-type]
    made = [first]
    try:
        same = build_canaries(_settings(5.0), first, before)  # type: ignore[arg-type]
        made.append(same)
        assert same["eu1"] is first["eu1"]
        for changed in (_settings(6.0), _settings(5.0, prefix="d-")):
            again = build_canaries(changed, first, before)  # type: ignore[arg-type]
            made.append(again)
            assert again["eu1"] is not first["eu1"]
    finally:
        for canaries in made:
            for canary in canaries.values():
                canary.close()
