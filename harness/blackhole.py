"""Loopback ports that never answer a connect: a stand-in for a firewalled or vanished JMX host.

A listening socket with backlog 0 whose accept queue holds a connection nobody accepts: Linux then drops
every further SYN (it does not refuse), so a client's connect waits for the kernel's SYN retries (~127 s
with the default net.ipv4.tcp_syn_retries of 6) unless it has a timeout of its own. Loopback only.
"""

from __future__ import annotations

import contextlib
import socket
from types import TracebackType


class BlackHoles:
    """`count` loopback ports whose connects hang; close() (or the with block's end) frees them."""

    def __init__(self, count: int) -> None:
        self._sockets: list[socket.socket] = []
        self.ports: list[int] = []
        try:
            for _ in range(count):
                self.ports.append(self._open())
        except BaseException:
            self.close()
            raise

    def _open(self) -> int:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sockets.append(listener)
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port: int = listener.getsockname()[1]
        # One connection fills a backlog-0 accept queue; a blocking connect returns once it is queued.
        filler = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sockets.append(filler)
        filler.settimeout(5)
        filler.connect(("127.0.0.1", port))
        # A second one whose SYN is already dropped, in case a kernel admits one more than the backlog.
        spare = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sockets.append(spare)
        spare.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            spare.connect(("127.0.0.1", port))
        return port

    def close(self) -> None:
        for sock in self._sockets:
            sock.close()
        self._sockets.clear()

    def __enter__(self) -> BlackHoles:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()
