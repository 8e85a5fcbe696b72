"""The cuttable link the partition faults rely on: transparent, then a black hole, then transparent again."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from harness.netcut import CuttableLink


@pytest.fixture
def echo() -> Iterator[int]:
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        with conn:
            while data := conn.recv(4096):
                conn.sendall(data)

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    server.close()


def _client(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.settimeout(1.0)
    return sock


def test_a_cut_link_holds_traffic_without_refusing_and_delivers_it_when_healed(echo: int) -> None:
    with CuttableLink(("127.0.0.1", echo)) as link, _client(link.port) as before:
        before.sendall(b"ping")
        assert before.recv(16) == b"ping"
        link.cut()
        before.sendall(b"lost?")
        with pytest.raises(TimeoutError):  # no answer and no reset: a partition, not a refusal
            before.recv(16)
        with _client(link.port) as during:  # a connect during the cut is accepted, then nothing
            during.sendall(b"new")
            with pytest.raises(TimeoutError):
                during.recv(16)
            link.heal()
            during.settimeout(5)
            before.settimeout(5)
            assert during.recv(16) == b"new"
            assert before.recv(16) == b"lost?"


def test_a_link_to_a_stopped_target_closes_the_client_connection() -> None:
    spare = socket.create_server(("127.0.0.1", 0))
    port = spare.getsockname()[1]
    spare.close()  # nothing listens there now
    with CuttableLink(("127.0.0.1", port)) as link, _client(link.port) as client:
        assert client.recv(16) == b""
