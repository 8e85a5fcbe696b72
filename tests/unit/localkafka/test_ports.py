"""Ports for local Kafka nodes: outside the kernel's ephemeral range, so that while a node is stopped (a
restart in a fault test) no outgoing connection of any process can take its port as a local one. CI
once lost a broker restart to "Socket server failed to bind to 127.0.0.1:34177: Address already in
use" (a port bind(0) had handed out, in the ephemeral range)."""

from __future__ import annotations

import re
import socket

import pytest

from harness.localkafka import LocalKafkaError, free_port
from harness.localkafka.process import ENV_PORT_SHARE, ephemeral_port_range, local_ports, port_share


def test_ports_are_outside_the_ephemeral_range_distinct_and_free() -> None:
    low, high = ephemeral_port_range()
    ports = [free_port() for _ in range(50)]
    assert len(set(ports)) == len(ports)
    assert all(not low <= port <= high and 1024 < port < 65536 for port in ports), (low, high, ports)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", ports[-1]))  # free when handed out


def test_the_ephemeral_range_is_the_kernels() -> None:
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        expected = tuple(int(part) for part in f.read().split())
    assert ephemeral_port_range() == expected


def test_processes_side_by_side_take_disjoint_shares_of_the_ports(monkeypatch: pytest.MonkeyPatch) -> None:
    """The suite's xdist workers each start clusters: CTLPLANE_PORT_SHARE keeps their picks apart."""
    monkeypatch.delenv(ENV_PORT_SHARE, raising=False)
    every = local_ports()
    picked: list[set[int]] = []
    for index in range(3):
        monkeypatch.setenv(ENV_PORT_SHARE, f"{index}/3")
        share = port_share(every, f"{index}/3")
        assert local_ports() == share
        ports = {free_port() for _ in range(30)}
        assert all(port in share for port in ports), (share, ports)
        picked.append(ports)
    assert not (picked[0] & picked[1] or picked[1] & picked[2] or picked[0] & picked[2])


@pytest.mark.parametrize("share", ["3/3", "1", "a/b", "0/0", "0/1000"])
def test_a_share_that_is_not_one_names_the_variable(share: str) -> None:
    with pytest.raises(LocalKafkaError, match=f"{ENV_PORT_SHARE}='{re.escape(share)}'"):
        port_share(range(20000, 32768), share)
