"""The node read in one Java call (ctlplane/exporter/sources/jmx/node_reader.py) answers exactly what the MBean-by-MBean
Python loop makes of the same answers: on values a hostile or odd agent may send, over real RMI, and on
a real broker's MBeans."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator

import pytest

from ctlplane.exporter.model import MBeanQuery, RawReading
from ctlplane.exporter.readings import plan_queries
from ctlplane.exporter.sources.jmx.base import Endpoint
from ctlplane.exporter.sources.jmx.jpype_client import (
    MAX_STRING_CHARS,
    JPypeJmxClient,
    _DeadlineExceeded,
    _node_reader,
    key_properties,
)
from harness.localkafka import KafkaCluster
from tests.integration.jmxserver import jmx_server
from tests.integration.watch import shared_client

Reading = tuple[str, str, tuple[tuple[str, str], ...], tuple[tuple[str, object], ...]]


def _comparable(readings: list[RawReading]) -> list[Reading]:
    """Readings as sorted plain tuples; NaN as a string, so that a NaN equals a NaN."""

    def value(v: float | str) -> object:
        return "NaN" if isinstance(v, float) and math.isnan(v) else v

    return sorted(
        (
            r.pattern,
            r.object_name,
            tuple(sorted(r.keys.items())),
            tuple(sorted((k, value(v)) for k, v in r.values.items())),
        )
        for r in readings
    )


def _both_ways(
    client: JPypeJmxClient, endpoint: Endpoint, queries: tuple[MBeanQuery, ...]
) -> tuple[list[RawReading], list[RawReading]]:
    client.read(endpoint, queries)  # connects and resolves the names once, for both reads below
    connection = client._connections[endpoint]
    deadline = time.monotonic() + 30
    return connection.read(queries, deadline), connection.read_each(queries, deadline)


@pytest.fixture
def client() -> Iterator[JPypeJmxClient]:
    shared_client()
    assert _node_reader() is not None, "the Java node reader did not compile: the test would compare Python with itself"
    reader = JPypeJmxClient(timeout_seconds=2.0)
    yield reader
    reader.close()


def test_odd_values_read_the_same_in_one_java_call_as_mbean_by_mbean(client: JPypeJmxClient) -> None:
    from jpype import JClass

    java = {
        name: JClass(f"java.lang.{name}")
        for name in ("Integer", "Long", "Double", "Float", "Short", "Byte", "Boolean", "String")
    }
    BigInteger, BigDecimal = JClass("java.math.BigInteger"), JClass("java.math.BigDecimal")
    AtomicLong, Date = JClass("java.util.concurrent.atomic.AtomicLong"), JClass("java.util.Date")
    astral = "\U0001f600" * (MAX_STRING_CHARS - 1)  # under the cap in code points, over it in UTF-16 units
    mbeans = {
        "ctlplane.test:type=Numbers": {
            "Int": lambda: java["Integer"](-7),
            "Long": lambda: java["Long"](2**63 - 1),  # rounds to a double the same way in both
            "Odd": lambda: java["Long"](2**53 + 1),
            "Double": lambda: java["Double"](1.5),
            "NaN": lambda: java["Double"](float("nan")),
            "Inf": lambda: java["Double"](float("-inf")),
            "Float": lambda: java["Float"](0.1),
            "Short": lambda: java["Short"](3),
            "Byte": lambda: java["Byte"](-1),
            "Big": lambda: BigInteger("123456789012345678901234567890"),
            "Decimal": lambda: BigDecimal("0.1"),
        },
        # a Number of a class outside SERIAL_FILTER's allow-list: the whole MBean is refused, the read goes on
        "ctlplane.test:type=Refused": {"Value": lambda: AtomicLong(42)},
        "ctlplane.test:type=Texts": {
            "Flag": lambda: java["Boolean"](True),
            "Text": lambda: java["String"]("RUNNING"),
            "Empty": lambda: java["String"](""),
            "Astral": lambda: java["String"](astral),
            "TooLong": lambda: java["String"]("x" * (MAX_STRING_CHARS + 1)),
            "Date": lambda: Date(0),
            "Null": lambda: None,
        },
        "ctlplane.test:type=Many,name=A": {"Value": lambda: java["Long"](1)},
        "ctlplane.test:type=Many,name=B": {"Value": lambda: java["Long"](2)},
    }
    queries = (
        MBeanQuery("ctlplane.test:type=Numbers", tuple(mbeans["ctlplane.test:type=Numbers"])),
        MBeanQuery("ctlplane.test:type=Texts", (*mbeans["ctlplane.test:type=Texts"], "NotThere")),
        MBeanQuery("ctlplane.test:type=Many,name=*", ("Value",)),
        MBeanQuery("ctlplane.test:type=Absent", ("Value",)),
        MBeanQuery("ctlplane.test:type=Refused", ("Value",)),
    )
    with jmx_server(mbeans) as port:
        in_java, in_python = _both_ways(client, Endpoint("127.0.0.1", port), queries)
    assert _comparable(in_java) == _comparable(in_python)
    texts = next(r for r in in_java if r.object_name == "ctlplane.test:type=Texts").values
    assert texts["Flag"] == "true" and texts["Astral"] == astral and "TooLong" not in texts and "Null" not in texts
    assert sorted(r.object_name for r in in_java) == [
        "ctlplane.test:name=A,type=Many",
        "ctlplane.test:name=B,type=Many",
        "ctlplane.test:type=Numbers",
        "ctlplane.test:type=Texts",
    ]


def test_an_mbean_gone_since_it_was_resolved_is_left_out_and_resolved_again(client: JPypeJmxClient) -> None:
    from jpype import JClass

    Long = JClass("java.lang.Long")
    queries = (MBeanQuery("ctlplane.test:type=Queue,broker=*", ("Value",)),)
    with jmx_server({"ctlplane.test:type=Queue,broker=1": {"Value": lambda: Long(1)}}) as port:
        endpoint = Endpoint("127.0.0.1", port)
        client.read(endpoint, queries)
        connection = client._connections[endpoint]
        port.register("ctlplane.test:type=Queue,broker=2", {"Value": lambda: Long(2)})
        port.unregister("ctlplane.test:type=Queue,broker=1")
        assert connection.read(queries, time.monotonic() + 30) == []  # broker=1 gone, broker=2 not resolved yet
        assert queries[0] not in connection.resolved
        (reading,) = connection.read(queries, time.monotonic() + 30)
        assert reading.object_name == "ctlplane.test:broker=2,type=Queue" and reading.values == {"Value": 2.0}


def test_a_reads_java_arrays_are_made_once_and_again_when_its_mbeans_change(
    client: JPypeJmxClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jpype import JClass

    from ctlplane.exporter.sources.jmx import jpype_client

    Long = JClass("java.lang.Long")
    queries = (MBeanQuery("ctlplane.test:type=Queue,broker=*", ("Value",)),)
    with jmx_server({"ctlplane.test:type=Queue,broker=1": {"Value": lambda: Long(1)}}) as port:
        endpoint = Endpoint("127.0.0.1", port)
        client.read(endpoint, queries)
        connection = client._connections[endpoint]
        plan = connection.plans[queries]
        assert len(connection.read(queries, time.monotonic() + 30)) == 1
        assert connection.plans[queries] is plan  # same MBeans: the same arrays
        port.register("ctlplane.test:type=Queue,broker=2", {"Value": lambda: Long(2)})
        monkeypatch.setattr(jpype_client, "RESOLVE_TTL_SECONDS", 0.0)  # the wildcard is resolved again
        readings = connection.read(queries, time.monotonic() + 30)
        assert sorted((r.object_name, r.values["Value"]) for r in readings) == [
            ("ctlplane.test:broker=1,type=Queue", 1.0),
            ("ctlplane.test:broker=2,type=Queue", 2.0),
        ]
        assert connection.plans[queries] is not plan


def test_a_read_past_its_deadline_starts_no_rpc(client: JPypeJmxClient) -> None:
    from jpype import JClass

    calls: list[str] = []
    Long = JClass("java.lang.Long")
    queries = (MBeanQuery("ctlplane.test:type=Slow,name=*", ("Value",)),)
    mbeans = {f"ctlplane.test:type=Slow,name=N{i}": {"Value": lambda: Long(1)} for i in range(5)}
    with jmx_server(mbeans, delay_seconds=0.3, calls=calls) as port:
        endpoint = Endpoint("127.0.0.1", port)
        client.read(endpoint, queries)
        calls.clear()
        with pytest.raises(_DeadlineExceeded):
            client._connections[endpoint].read(queries, time.monotonic() + 0.5)
    assert 1 <= len(calls) < 5


@pytest.mark.kafka
def test_a_real_brokers_mbeans_read_the_same_either_way(client: JPypeJmxClient, kraft_cluster: KafkaCluster) -> None:
    broker = kraft_cluster.brokers()[0]
    in_java, in_python = _both_ways(client, Endpoint("127.0.0.1", broker.jmx_port), plan_queries())

    def shape(readings: list[RawReading]) -> list[tuple[str, tuple[tuple[str, type], ...]]]:
        # the values move between two reads (counters, timestamps); which attributes, and their kinds, do not
        return sorted((r.object_name, tuple(sorted((k, type(v)) for k, v in r.values.items()))) for r in readings)

    assert shape(in_java) == shape(in_python)
    assert len(in_java) > 10
    version = [r.values for r in in_java if r.pattern == "kafka.server:type=app-info,id=*"]
    assert version == [r.values for r in in_python if r.pattern == "kafka.server:type=app-info,id=*"]


@pytest.mark.parametrize(
    "text",
    [
        "kafka.server:type=app-info,id=1",
        "kafka.network:type=RequestMetrics,name=TotalTimeMs,request=Fetch",
        "kafka.controller:type=ControllerChannelManager,name=QueueSize,broker-id=3",
        "odd domain.ü:z=last,a=first value,m=ü ☃ 😀",
        'ctlplane.test:type=Quoted,name="a,b=c:d\\"e"',
    ],
)
def test_key_properties_parsed_in_python_are_javas(text: str) -> None:
    from jpype import JClass

    shared_client()
    name = JClass("javax.management.ObjectName")(text)
    java = {str(k): str(v) for k, v in name.getKeyPropertyList().items()}
    parsed = key_properties(str(name.getCanonicalName()))
    if '"' in text:
        assert parsed is None  # Java parses quoted values
    else:
        assert parsed == java
