"""A node is a server ctlplane reads, not one it trusts: what a broken or compromised JMX server answers
must not exhaust the exporter's memory nor run code in its JVM (ctlplane/exporter/sources/jmx/jpype_client.py caps and
SERIAL_FILTER), and a hostile MBean costs only itself, never the rest of the node's read."""

from __future__ import annotations

import logging
import time
from dataclasses import replace

import pytest

from ctlplane.exporter.model import MBeanQuery
from ctlplane.exporter.sources.jmx import jpype_client
from ctlplane.exporter.sources.jmx.base import Endpoint
from ctlplane.exporter.sources.jmx.jpype_client import MAX_STRING_CHARS, JPypeJmxClient
from tests.integration.jmxserver import jmx_server
from tests.integration.watch import shared_client


def test_a_hostile_node_costs_only_its_hostile_values(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jpype import JClass

    cap = 100  # the cap as a real node would meet it, scaled down: 10,000 RPCs would outlast the read deadline
    monkeypatch.setattr(jpype_client, "MAX_MBEANS_PER_QUERY", cap)
    shared_client()
    Long, String = JClass("java.lang.Long"), JClass("java.lang.String")
    HashMap, URL = JClass("java.util.HashMap"), JClass("java.net.URL")

    def gadget() -> object:
        # the shape of the JDK's URLDNS gadget: a java.net.URL inside a HashMap (deserialising it resolves
        # the host); any class outside the filter's allow-list must be refused before it is built
        payload = HashMap()
        payload.put(URL("http://ctlplane-gadget.invalid/"), Long(1))
        return payload

    big = String("x" * (MAX_STRING_CHARS * 100))
    mbeans = {f"ctlplane.test:type=Many,name=N{i}": {"Value": lambda: Long(1)} for i in range(cap + 50)}
    mbeans["ctlplane.test:type=Big"] = {"Value": lambda: big, "Count": lambda: Long(7)}
    mbeans["ctlplane.test:type=Gadget"] = {"Value": gadget}
    mbeans["ctlplane.test:type=Fine"] = {"Value": lambda: String("RUNNING"), "Count": lambda: Long(3)}
    queries = (
        MBeanQuery("ctlplane.test:type=Many,name=*", ("Value",)),
        MBeanQuery("ctlplane.test:type=Big", ("Value", "Count")),
        MBeanQuery("ctlplane.test:type=Gadget", ("Value",)),
        MBeanQuery("ctlplane.test:type=Fine", ("Value", "Count")),
    )
    client = JPypeJmxClient(timeout_seconds=2.0)
    with jmx_server(mbeans) as port, caplog.at_level(logging.WARNING):
        readings = client.read(Endpoint("127.0.0.1", port), queries)
    by_pattern: dict[str, list[dict[str, float | str]]] = {}
    for reading in readings:
        by_pattern.setdefault(reading.pattern, []).append(dict(reading.values))
    assert len(by_pattern["ctlplane.test:type=Many,name=*"]) == cap
    assert by_pattern["ctlplane.test:type=Big"] == [{"Count": 7.0}]  # the long string left out, the rest kept
    assert "ctlplane.test:type=Gadget" not in by_pattern  # refused, never built
    assert by_pattern["ctlplane.test:type=Fine"] == [{"Value": "RUNNING", "Count": 3.0}]
    assert any("refused by the deserialisation filter" in r.message and "REJECTED" in r.message for r in caplog.records)


def test_a_brokers_registration_state_registered_beside_others_is_read_within_a_round(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A KRaft controller adds BrokerRegistrationState,broker=<id> when a broker registers, beside the gauges
    of the brokers it has. A pattern that matched was trusted for a minute (RESOLVE_TTL_SECONDS): a broker
    registered and unregistered within it was never seen, and its unregistration proved nothing (found on
    real 4.3.1 by tests/integration/test_discovery.py). Queries that follow the controller are asked again
    after RESOLVE_SOON_SECONDS, matched or not."""
    from jpype import JClass

    monkeypatch.setattr(jpype_client, "RESOLVE_STARTUP_SECONDS", 0.0)  # an old connection
    monkeypatch.setattr(jpype_client, "RESOLVE_SOON_SECONDS", 0.2)
    shared_client()
    Integer = JClass("java.lang.Integer")
    pattern = "ctlplane.test:type=KafkaController,name=BrokerRegistrationState,broker=*"
    query = MBeanQuery(pattern, ("Value",), follows_controller=True)
    with jmx_server({f"{pattern[:-1]}1": {"Value": lambda: Integer(30)}}) as port:
        client = JPypeJmxClient(timeout_seconds=2.0)
        endpoint = Endpoint("127.0.0.1", port)
        assert [r.values["Value"] for r in client.read(endpoint, [query])] == [30]
        port.register(f"{pattern[:-1]}3", {"Value": lambda: Integer(10)})
        time.sleep(0.5)  # the next round
        read = client.read(endpoint, [query])
        client.close()
    assert sorted(r.values["Value"] for r in read) == [10, 30]


@pytest.mark.parametrize("follows_controller", [True, False], ids=["controller-queues", "other-mode-mbeans"])
def test_queues_a_broker_registers_on_becoming_controller_are_read_within_a_round(
    monkeypatch: pytest.MonkeyPatch, follows_controller: bool
) -> None:
    """A ZooKeeper-mode broker registers ControllerChannelManager's per-broker queues when it wins an election.
    On an old connection an empty pattern was trusted for a minute (RESOLVE_TTL_SECONDS), so after a
    failover the new controller's queues, and with them ZooKeeper-mode lag and crash evidence, were missing
    for up to four rounds (seen on Kafka 2.8.2). Queries that follow the controller are asked again after
    RESOLVE_SOON_SECONDS; other empty patterns (the other mode's MBeans) still wait the full TTL."""
    from jpype import JClass

    monkeypatch.setattr(jpype_client, "RESOLVE_STARTUP_SECONDS", 0.0)  # an old connection
    monkeypatch.setattr(jpype_client, "RESOLVE_SOON_SECONDS", 0.2)
    shared_client()
    Integer = JClass("java.lang.Integer")
    pattern = "ctlplane.test:type=ControllerChannelManager,name=QueueSize,broker-id=*"
    query = MBeanQuery(pattern, ("Value",), follows_controller=follows_controller)
    with jmx_server({"ctlplane.test:type=Other": {"Value": lambda: Integer(1)}}) as port:
        client = JPypeJmxClient(timeout_seconds=2.0)
        endpoint = Endpoint("127.0.0.1", port)
        assert client.read(endpoint, [query]) == []  # not the controller yet
        port.register(
            "ctlplane.test:type=ControllerChannelManager,name=QueueSize,broker-id=2", {"Value": lambda: Integer(3)}
        )
        time.sleep(0.5)  # the next round
        read = client.read(endpoint, [query])
        client.close()
    assert [r.values["Value"] for r in read] == ([3] if follows_controller else [])


def test_a_dormant_query_waits_as_the_others_and_the_same_query_unmarked_finds_the_queues_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Asked of a node that was not the active controller (MBeanQuery.dormant, readings.queries_for), a query
    that follows the controller waits RESOLVE_TTL_SECONDS as the others, not RESOLVE_SOON_SECONDS; the read
    that finds the node active asks for it unmarked (Scraper._read), which is looked up at once and finds
    the queues the election registered."""
    from jpype import JClass

    monkeypatch.setattr(jpype_client, "RESOLVE_STARTUP_SECONDS", 0.0)  # an old connection
    monkeypatch.setattr(jpype_client, "RESOLVE_SOON_SECONDS", 0.2)
    shared_client()
    Integer = JClass("java.lang.Integer")
    pattern = "ctlplane.test:type=ControllerChannelManager,name=QueueSize,broker-id=*"
    dormant = MBeanQuery(pattern, ("Value",), follows_controller=True, dormant=True)
    with jmx_server({"ctlplane.test:type=Other": {"Value": lambda: Integer(1)}}) as port:
        client = JPypeJmxClient(timeout_seconds=2.0)
        endpoint = Endpoint("127.0.0.1", port)
        try:
            assert client.read(endpoint, [dormant]) == []  # not the controller
            port.register(f"{pattern[:-1]}2", {"Value": lambda: Integer(3)})  # elected
            time.sleep(0.5)  # past RESOLVE_SOON_SECONDS, within RESOLVE_TTL_SECONDS
            still = client.read(endpoint, [dormant])
            awake = client.read(endpoint, [replace(dormant, dormant=False)])
        finally:
            client.close()
    assert still == []
    assert [r.values["Value"] for r in awake] == [3]


def test_a_pattern_registered_once_is_not_looked_up_again_once_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pattern whose MBeans stay for the JVM's life (MBeanQuery.registered_once: the collectors, app-info)
    is looked up until it finds them, then never again on that connection; an ordinary pattern is looked up
    again after RESOLVE_TTL_SECONDS and finds what was added."""
    from jpype import JClass

    monkeypatch.setattr(jpype_client, "RESOLVE_STARTUP_SECONDS", 0.0)  # an old connection
    monkeypatch.setattr(jpype_client, "RESOLVE_TTL_SECONDS", 0.2)
    shared_client()
    Integer = JClass("java.lang.Integer")
    once = MBeanQuery("ctlplane.test:type=GarbageCollector,name=*", ("Value",), registered_once=True)
    ordinary = MBeanQuery("ctlplane.test:type=Other,name=*", ("Value",))
    initial = {f"{query.pattern[:-1]}first": {"Value": lambda: Integer(1)} for query in (once, ordinary)}
    with jmx_server(initial) as port:
        client = JPypeJmxClient(timeout_seconds=2.0)
        endpoint = Endpoint("127.0.0.1", port)
        try:
            assert len(client.read(endpoint, [once, ordinary])) == 2
            for query in (once, ordinary):
                port.register(f"{query.pattern[:-1]}second", {"Value": lambda: Integer(2)})
            time.sleep(0.5)  # past RESOLVE_TTL_SECONDS
            read = client.read(endpoint, [once, ordinary])
        finally:
            client.close()
    assert sorted((r.pattern, r.values["Value"]) for r in read) == [
        (once.pattern, 1), (ordinary.pattern, 1), (ordinary.pattern, 2),
    ]  # fmt: skip


def test_mbeans_the_catalogue_does_not_expect_on_the_node_are_looked_for_again_only_rarely(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A query the catalogue does not expect on the node (MBeanQuery.unexpected: another mode's or role's
    MBeans, readings.queries_for) that matched nothing on an old connection is asked again only after
    RESOLVE_UNEXPECTED_SECONDS, not every RESOLVE_TTL_SECONDS as the others: re-resolving those was about
    half of a fleet's exporter CPU. Asked again, it finds what appeared."""
    from jpype import JClass

    monkeypatch.setattr(jpype_client, "RESOLVE_STARTUP_SECONDS", 0.0)  # an old connection
    monkeypatch.setattr(jpype_client, "RESOLVE_TTL_SECONDS", 0.2)
    monkeypatch.setattr(jpype_client, "RESOLVE_UNEXPECTED_SECONDS", 3600.0)
    shared_client()
    Integer = JClass("java.lang.Integer")
    expected = MBeanQuery("ctlplane.test:type=Late,name=Expected", ("Value",))
    unexpected = MBeanQuery("ctlplane.test:type=Late,name=Unexpected", ("Value",), unexpected=True)
    with jmx_server({"ctlplane.test:type=Other": {"Value": lambda: Integer(1)}}) as port:
        client = JPypeJmxClient(timeout_seconds=2.0)
        endpoint = Endpoint("127.0.0.1", port)
        try:
            assert client.read(endpoint, [expected, unexpected]) == []
            port.register(expected.pattern, {"Value": lambda: Integer(1)})
            port.register(unexpected.pattern, {"Value": lambda: Integer(2)})
            time.sleep(0.5)  # past RESOLVE_TTL_SECONDS
            assert [r.pattern for r in client.read(endpoint, [expected, unexpected])] == [expected.pattern]
            monkeypatch.setattr(jpype_client, "RESOLVE_UNEXPECTED_SECONDS", 0.2)
            time.sleep(0.5)
            found = sorted(r.pattern for r in client.read(endpoint, [expected, unexpected]))
        finally:
            client.close()
    assert found == sorted([expected.pattern, unexpected.pattern])
