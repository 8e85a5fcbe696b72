"""Where every served attribute's value lives in the flat arrays the simulator publishes to Java.

The Java MBeans (ctlplane/demo/javaside.py) hold, per attribute, a type code and a slot index into one
`double[]` (numbers) or one `String[]` (strings) shared by all nodes. The layout is fixed at start from
the value model's first answer; `flatten` then turns the model's values at a moment into those two
arrays, in slot order, without any Java call (pure Python, so it is tested without a JVM).
"""

from __future__ import annotations

from dataclasses import dataclass

from ctlplane.demo.simulation import Simulation
from ctlplane.demo.values import BYTE_SERIES, Value

NUMBER_TYPES = frozenset("JBD")  # Long, Byte, Double: slots of the numbers array; S: the strings array


@dataclass(frozen=True)
class MBeanSlots:
    object_name: str
    names: tuple[str, ...]  # attribute names, in the order the value model yields them
    types: str  # one type code per attribute: J Long, B Byte, D Double, S String
    slots: tuple[int, ...]  # index into the numbers or the strings array, by type


@dataclass(frozen=True)
class _NodeKeys:
    cluster: str
    node: str
    numbers: tuple[tuple[str, str], ...]  # (object name, attribute) in numbers-slot order
    strings: tuple[tuple[str, str], ...]


def type_code(value: Value, as_byte: bool) -> str:
    if isinstance(value, str):
        return "S"
    if isinstance(value, int):
        return "B" if as_byte else "J"
    return "D"


class ValueLayout:
    """Slot assignment for every (node, MBean, attribute) of a simulation."""

    def __init__(self, simulation: Simulation, t: float) -> None:
        self.mbeans: dict[tuple[str, str], tuple[MBeanSlots, ...]] = {}
        self._nodes: list[_NodeKeys] = []
        numbers = strings = 0
        for node in simulation.nodes():
            key = (node.cluster, node.name)
            values = simulation.values(node.cluster, node.name, t)
            node_numbers: list[tuple[str, str]] = []
            node_strings: list[tuple[str, str]] = []
            mbeans = []
            for mbean in simulation.served[key]:
                as_byte = any(spec.series in BYTE_SERIES for spec in mbean.specs)
                attributes = values[mbean.object_name]
                types = "".join(type_code(value, as_byte) for value in attributes.values())
                slots = []
                for name, code in zip(attributes, types, strict=True):
                    if code in NUMBER_TYPES:
                        slots.append(numbers + len(node_numbers))
                        node_numbers.append((mbean.object_name, name))
                    else:
                        slots.append(strings + len(node_strings))
                        node_strings.append((mbean.object_name, name))
                mbeans.append(MBeanSlots(mbean.object_name, tuple(attributes), types, tuple(slots)))
            self.mbeans[key] = tuple(mbeans)
            self._nodes.append(_NodeKeys(node.cluster, node.name, tuple(node_numbers), tuple(node_strings)))
            numbers += len(node_numbers)
            strings += len(node_strings)
        self.size = (numbers, strings)

    def flatten(self, simulation: Simulation, t: float) -> tuple[list[float], list[str]]:
        """Every node's values at `t`, as (numbers, strings) in slot order."""
        numbers: list[float] = []
        strings: list[str] = []
        for keys in self._nodes:
            values = simulation.values(keys.cluster, keys.node, t)
            # float(): ints are exact in a double up to 2**53 (counters and millisecond timestamps are far below)
            numbers.extend([float(values[mbean][name]) for mbean, name in keys.numbers])
            strings.extend([str(values[mbean][name]) for mbean, name in keys.strings])
        return numbers, strings
