"""A loopback TCP link that can be cut like a network partition and healed: one node's path to another.

A real partition rarely refuses: packets are lost, so the sender's requests time out while its socket stays
open. `CuttableLink` forwards a local port to a target; `cut()` stops forwarding in both directions (bytes
wait in the kernel's buffers, TCP flow control holds the sender, new connections are accepted but not
connected onward) and `heal()` resumes, delivering what waited, as a network that comes back would. Nothing
else on the machine is affected: no iptables, no root. Loopback only.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
from types import TracebackType

_POLL_SECONDS = 0.05
_CHUNK = 64 * 1024


class CuttableLink:
    """Forwards 127.0.0.1:`port` to `target` until `cut()`; `heal()` resumes; `close()` ends it."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.port: int = self._listener.getsockname()[1]
        self._peer: dict[socket.socket, socket.socket] = {}  # each forwarded end -> the other end
        self._held: list[socket.socket] = []  # accepted while cut, connected onward on heal
        self._cut = threading.Event()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"link-{self.port}->{target[1]}", daemon=True)
        self._thread.start()

    @property
    def is_cut(self) -> bool:
        return self._cut.is_set()

    def cut(self) -> None:
        self._cut.set()

    def heal(self) -> None:
        self._cut.clear()

    def close(self) -> None:
        self._closed.set()
        self._thread.join(timeout=5)
        for sock in [self._listener, *self._peer, *self._held]:
            sock.close()
        self._peer.clear()
        self._held.clear()

    def _run(self) -> None:
        while not self._closed.is_set():
            cut = self._cut.is_set()
            if not cut and self._held:
                held, self._held = self._held, []
                for client in held:
                    self._connect_onward(client)
            watched = [self._listener] if cut else [self._listener, *self._peer]
            try:
                readable, _, _ = select.select(watched, [], [], _POLL_SECONDS)
            except (OSError, ValueError):  # a socket closed under us: the next loop rebuilds the list
                continue
            for sock in readable:
                if sock is self._listener:
                    self._accept(cut)
                elif sock in self._peer:
                    self._forward(sock)

    def _accept(self, cut: bool) -> None:
        try:
            client, _ = self._listener.accept()
        except OSError:
            return
        if cut:
            self._held.append(client)
        else:
            self._connect_onward(client)

    def _connect_onward(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(self.target, timeout=5)
        except OSError:
            client.close()  # the target is down: the client sees its connection end, as it would
            return
        upstream.settimeout(None)
        self._peer[client] = upstream
        self._peer[upstream] = client

    def _forward(self, source: socket.socket) -> None:
        sink = self._peer[source]
        try:
            data = source.recv(_CHUNK)
            if data:
                sink.sendall(data)
                return
        except OSError:
            pass
        for sock in (source, sink):  # one end closed or failed: close the pair, as the peer would see
            self._peer.pop(sock, None)
            with contextlib.suppress(OSError):
                sock.close()

    def __enter__(self) -> CuttableLink:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()
