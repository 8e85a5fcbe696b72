"""The flat value layout the Java MBeans read: every attribute has one slot, and its type never changes
(the Java side fixes each attribute's type in its MBeanInfo at start)."""

from __future__ import annotations

import pytest

from ctlplane.demo.layout import NUMBER_TYPES, ValueLayout, type_code
from ctlplane.demo.scenarios import SCENARIO_MODES, Scenario
from ctlplane.demo.shapes import standard_shape
from ctlplane.demo.simulation import Simulation
from ctlplane.demo.values import BYTE_SERIES


def _simulation() -> Simulation:
    return Simulation(standard_shape(), seed=5, origin=1_000.0, clock=lambda: 1_000.0)


def test_slots_cover_every_value_once() -> None:
    simulation = _simulation()
    layout = ValueLayout(simulation, 1_000.0)
    numbers, strings = layout.flatten(simulation, 1_000.0)
    assert (len(numbers), len(strings)) == layout.size
    seen: dict[str, set[int]] = {"numbers": set(), "strings": set()}
    for node in simulation.nodes():
        values = simulation.values(node.cluster, node.name, 1_000.0)
        mbeans = layout.mbeans[(node.cluster, node.name)]
        assert [m.object_name for m in mbeans] == list(values)
        for mbean in mbeans:
            assert mbean.names == tuple(values[mbean.object_name])
            for name, code, slot in zip(mbean.names, mbean.types, mbean.slots, strict=True):
                kind = "numbers" if code in NUMBER_TYPES else "strings"
                assert slot not in seen[kind]
                seen[kind].add(slot)
                published = numbers[slot] if kind == "numbers" else strings[slot]
                expected = values[mbean.object_name][name]
                assert published == expected or (published != published and expected != expected)  # NaN
    assert seen["numbers"] == set(range(len(numbers))) and seen["strings"] == set(range(len(strings)))


@pytest.mark.parametrize("scenario", list(Scenario))
def test_attribute_types_are_stable_across_scenarios_and_time(scenario: Scenario) -> None:
    simulation = _simulation()
    layout = ValueLayout(simulation, 1_000.0)
    for cluster in simulation.clusters.values():
        if cluster.mode in SCENARIO_MODES[scenario]:
            simulation.schedule(scenario.value, cluster.name, None, 1_010.0)
    for t in (1_010.0, 1_013.0, 1_030.0, 1_200.0):
        for node in simulation.nodes():
            values = simulation.values(node.cluster, node.name, t)
            for mbean in layout.mbeans[(node.cluster, node.name)]:
                as_byte = any(
                    spec.series in BYTE_SERIES
                    for served in simulation.served[(node.cluster, node.name)]
                    if served.object_name == mbean.object_name
                    for spec in served.specs
                )
                now = "".join(type_code(values[mbean.object_name][name], as_byte) for name in mbean.names)
                assert now == mbean.types, f"{node.name} {mbean.object_name} at {t} under {scenario}"
