"""The one source the scraper reads through (routed.py): each endpoint kind to its source, the JVM only when
a node is read over JMX."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from ctlplane.exporter.model import MBeanQuery, RawReading
from ctlplane.exporter.sources.base import ReadError
from ctlplane.exporter.sources.endpoint.client import EndpointClient, MetricsEndpoint
from ctlplane.exporter.sources.endpoint.profiles import profile
from ctlplane.exporter.sources.jmx.base import Endpoint
from ctlplane.exporter.sources.routed import Sources

READING = RawReading("p", "d:type=T", {"type": "T"}, {"Value": 1.0})


class FakeJmx:
    def __init__(self) -> None:
        self.read_from: list[Endpoint] = []
        self.closed = False

    def read(self, endpoint: Endpoint, queries: Sequence[MBeanQuery]) -> list[RawReading]:
        self.read_from.append(endpoint)
        return [READING]

    def close(self) -> None:
        self.closed = True


class FakeEndpoints(EndpointClient):
    def read(self, endpoint: object, queries: Sequence[MBeanQuery]) -> list[RawReading]:
        return []


def test_the_jmx_client_and_its_jvm_start_only_with_the_first_jmx_read() -> None:
    made: list[FakeJmx] = []

    def make() -> FakeJmx:
        made.append(FakeJmx())
        return made[-1]

    sources = Sources(make, FakeEndpoints(1.0), start_jmx=False)
    assert sources.read(MetricsEndpoint("http://b-1:11001/metrics", profile("jmx_exporter")), ()) == []
    assert made == []
    assert sources.read(Endpoint("b-1", 9999), ()) == [READING]
    assert sources.read(Endpoint("b-2", 9999), ()) == [READING]
    assert len(made) == 1 and made[0].read_from == [Endpoint("b-1", 9999), Endpoint("b-2", 9999)]
    sources.close()
    assert made[0].closed


def test_an_endpoint_no_source_reads_is_a_read_error() -> None:
    class Elsewhere:
        address = "elsewhere"

    with pytest.raises(ReadError, match="no source reads a Elsewhere"):
        Sources(FakeJmx, FakeEndpoints(1.0)).read(Elsewhere(), ())
