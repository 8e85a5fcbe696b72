"""Ports for local Kafka nodes: outside the kernel's ephemeral range, so that while a node is stopped (a
restart in a fault test) no outgoing connection of any process can take its port as a local one. CI
once lost a broker restart to "Socket server failed to bind to 127.0.0.1:34177: Address already in
use" (a port bind(0) had handed out, in the ephemeral range)."""

from __future__ import annotations

import socket

from ctlplane.localkafka import free_port
from ctlplane.localkafka.process import ephemeral_port_range


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
