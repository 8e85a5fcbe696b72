"""Unreachable and slow JMX nodes through the real JPype client: bounded reads, no starved clusters.

A black-holed port (harness.blackhole: SYNs dropped, never refused) is what a firewalled or vanished
host looks like; without a connect timeout a read of it waits for the kernel's ~127 s. Reads run in a
helper thread so that, without the fix, a test fails at its bound instead of waiting for the kernel.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any

import pytest

from ctlplane.exporter.model import Failure, FleetSnapshot, MBeanQuery, NodeSnapshot, RawReading
from ctlplane.exporter.readings import plan_queries
from ctlplane.exporter.scraper import SUSPECT_WAIT_SECONDS, Scraper, Target
from ctlplane.exporter.sources.jmx.base import Endpoint, JmxClient, JmxError
from harness.blackhole import BlackHoles
from harness.localkafka import KafkaCluster
from tests.integration.jmxserver import jmx_server
from tests.integration.watch import DEFAULT_SCRAPE_TIMEOUT, shared_client, targets_of

KERNEL_SYN_GIVE_UP_SECONDS = 127  # net.ipv4.tcp_syn_retries = 6: 1 + 2 + 4 + ... + 64 s


def rmi_timeout_seconds() -> float:
    """The shared JVM's RMI timeout (the first client of the process set it)."""
    from jpype import JClass

    shared_client()
    return int(JClass("java.lang.Integer").getInteger("sun.rmi.transport.tcp.responseTimeout")) / 1000


def read_within(client: JmxClient, endpoint: Endpoint, queries: tuple[MBeanQuery, ...], bound: float) -> Any:
    """The read's readings or JmxError; fails the test if it takes longer than `bound` seconds."""
    outcome: Future[list[RawReading]] = Future()

    def run() -> None:
        try:
            outcome.set_result(client.read(endpoint, queries))
        except BaseException as exc:
            outcome.set_exception(exc)

    # a daemon thread: without the fix it stays in connect() for the kernel's ~127 s after the test failed
    threading.Thread(target=run, name="read-within", daemon=True).start()
    try:
        return outcome.result(timeout=bound)
    except JmxError as exc:
        return exc
    except FutureTimeout:
        pytest.fail(f"a read of {endpoint.address} still hangs after {bound:.0f} s")


@pytest.mark.parametrize("ssl", [False, True], ids=["plain", "ssl"])
def test_a_port_that_drops_syns_fails_as_a_timeout_long_before_the_kernel_gives_up(ssl: bool) -> None:
    timeout = rmi_timeout_seconds()
    bound = 3 * timeout + 5  # connect, handshake and response timeouts, plus slack; far below 127 s
    assert bound < KERNEL_SYN_GIVE_UP_SECONDS / 4
    with BlackHoles(1) as holes:
        started = time.monotonic()
        outcome = read_within(shared_client(), Endpoint("127.0.0.1", holes.ports[0], ssl=ssl), plan_queries(), bound)
        took = time.monotonic() - started
    assert isinstance(outcome, JmxError), outcome
    assert outcome.failure is Failure.TIMEOUT, str(outcome)
    assert "timed out" in str(outcome)
    assert took <= bound


def test_the_default_tls_socket_factory_still_layers_tls_over_its_timed_connect() -> None:
    """SSL JMX stubs get their sockets from SSLSocketFactory.getDefault(): ctlplane's must still be TLS."""
    from jpype import JClass

    shared_client()
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        tls = JClass("javax.net.ssl.SSLSocketFactory").getDefault()
        assert str(tls.getClass().getName()) == "ctlplane.jmx.ConnectTimeouts$Tls"
        sock = tls.createSocket("127.0.0.1", listener.getsockname()[1])
        try:
            assert isinstance(sock, JClass("javax.net.ssl.SSLSocket")) and sock.isConnected()
            assert int(sock.getSoTimeout()) > 0  # bounds the TLS handshake that RMI's first write starts
        finally:
            sock.close()


@dataclass
class SlowServer:
    port: int
    calls: list[str]


@pytest.fixture
def slow_server() -> Iterator[SlowServer]:
    """An in-process JMX connector server on loopback whose 10 MBeans each take 0.4 s to read."""
    from jpype import JClass

    shared_client()
    one = JClass("java.lang.Long")(1)
    calls: list[str] = []
    mbeans = {f"ctlplane.test:type=Slow,name=N{i}": {"Value": lambda: one} for i in range(10)}
    # each read answers just under the RMI timeout
    with jmx_server(mbeans, delay_seconds=0.4, calls=calls) as port:
        yield SlowServer(port, calls)


def test_a_node_that_answers_every_call_just_in_time_is_abandoned_at_the_read_deadline(
    slow_server: SlowServer,
) -> None:
    from ctlplane.exporter.sources.jmx.jpype_client import JPypeJmxClient

    queries = tuple(MBeanQuery(f"ctlplane.test:type=Slow,name=N{i}", ("Value",)) for i in range(10))
    client = JPypeJmxClient(timeout_seconds=rmi_timeout_seconds(), read_deadline_seconds=1.0)
    try:
        # every call answers within the RMI timeouts, so only the read's own deadline can stop it
        outcome = read_within(client, Endpoint("127.0.0.1", slow_server.port), queries, bound=30)
    finally:
        client.close()
    assert isinstance(outcome, JmxError), f"read all {len(outcome)} MBeans: no deadline"
    assert outcome.failure is Failure.TIMEOUT and "abandoned" in str(outcome)
    assert len(slow_server.calls) < len(queries)


def test_a_cluster_of_black_holed_nodes_does_not_starve_a_healthy_cluster(
    zk_cluster_no_listener: KafkaCluster,
) -> None:
    client = shared_client()
    healthy = targets_of(zk_cluster_no_listener)
    # the broker answers JMX before the test starts, so any down round below is starvation
    deadline = time.monotonic() + 60
    while not all(_readable(client, target.endpoint) for target in healthy):
        assert time.monotonic() < deadline, "the healthy broker never answered JMX"
        time.sleep(0.5)
    with BlackHoles(32) as holes:
        # black-holed nodes first: a shared queue would hand them every worker before the healthy ones
        unreachable = [Target("unreachable", f"hole-{port}", Endpoint("127.0.0.1", port)) for port in holes.ports]
        # the scrape timeout `ctlplane run` pairs with the shared client's RMI timeouts (a third of it each)
        timeout = DEFAULT_SCRAPE_TIMEOUT
        scraper = Scraper(unreachable + healthy, client, interval_seconds=timeout, timeout_seconds=timeout, workers=8)
        try:
            timed_out = 0
            for round_number in range(1, 4):
                snapshot = scraper.scrape_once()
                cluster = snapshot.cluster(zk_cluster_no_listener.name)
                assert cluster is not None
                assert all(node.up for node in cluster.nodes), f"round {round_number}: {cluster.nodes}"
                holes_seen = snapshot.cluster("unreachable")
                assert holes_seen is not None and not any(node.up for node in holes_seen.nodes)
                assert {node.failure for node in holes_seen.nodes} == {Failure.TIMEOUT}
                timed_out += sum("Connect timed out" in (node.error or "") for node in holes_seen.nodes)
            assert timed_out > 0  # connects gave up on their own: the workers came back within the rounds
        finally:
            scraper._pool.shutdown(wait=False, cancel_futures=True)  # the shared client stays open


BROKER_STATE = "kafka.server:type=KafkaServer,name=BrokerState"


def test_a_node_whose_last_read_timed_out_no_longer_holds_the_round_to_the_timeout() -> None:
    """A hung broker (its JMX accepts calls and never answers them) beside a healthy one, over real RMI.

    Its first read runs into the RMI timeouts and fails as a timeout within the round. Each later round
    reads it again but waits for it only briefly: were the round held to the scrape timeout each time,
    every snapshot (the healthy node's fresh values, a controller's fencing of the hung one) would be
    published that much later while the node stays hung (issue 16: time to page)."""
    from jpype import JClass

    shared_client()
    running = JClass("java.lang.Integer")(3)  # BrokerState RUNNING
    answering = {BROKER_STATE: {"Value": lambda: running}}
    with jmx_server(answering) as healthy_port, jmx_server(answering, delay_seconds=12.0) as hung_port:
        targets = [
            Target("c1", "healthy", Endpoint("127.0.0.1", healthy_port)),
            Target("c1", "hung", Endpoint("127.0.0.1", hung_port)),
        ]
        scraper = Scraper(targets, shared_client(), interval_seconds=10.0, timeout_seconds=9.0, workers=4)
        try:
            first = scraper.scrape_once()
            hung = _node(first, "hung")
            assert hung is not None and not hung.up and hung.failure is Failure.TIMEOUT, hung
            second = scraper.scrape_once()
        finally:
            scraper._pool.shutdown(wait=False, cancel_futures=True)  # the shared client stays open
    healthy, hung = _node(second, "healthy"), _node(second, "hung")
    assert healthy is not None and healthy.up, healthy
    assert hung is not None and not hung.up, hung
    assert "its last read timed out" in (hung.error or ""), hung.error
    assert hung.scrape_duration_seconds == SUSPECT_WAIT_SECONDS < scraper.timeout_seconds  # the wait it had
    assert second.round_duration_seconds < scraper.timeout_seconds  # the bound that applied, not a speed


def _node(snapshot: FleetSnapshot, name: str) -> NodeSnapshot | None:
    cluster = snapshot.cluster("c1")
    return None if cluster is None else cluster.node(name)


def _readable(client: JmxClient, endpoint: Endpoint) -> bool:
    try:
        client.read(endpoint, plan_queries())
    except JmxError:
        return False
    return True
