"""A DNS server on loopback for the DNS discovery tests: real UDP queries, answered from a table the test
edits while it runs (as Kubernetes' DNS answers a headless Service's records as pods come and go)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import dns.message
import dns.rcode
import dns.rdatatype
import dns.rrset


class LoopbackDns:
    """`records[(name, type)]` -> record texts, e.g. ("_jmx._tcp.kafka.test.", "SRV"): ["0 0 9999 b-1.test."].
    `silent`: drop every query (a resolver that never answers)."""

    def __init__(self) -> None:
        self.records: dict[tuple[str, str], list[str]] = {}
        self.silent = False
        self.queries = 0
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._socket.bind(("127.0.0.1", 0))
        self._socket.settimeout(0.2)
        self.address = f"127.0.0.1:{self._socket.getsockname()[1]}"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="loopback-dns", daemon=True)

    def _answer(self, query: dns.message.Message) -> dns.message.Message:
        response = dns.message.make_response(query)
        question = query.question[0]
        name = question.name.to_text().lower()
        rdtype = dns.rdatatype.to_text(question.rdtype)
        if not any(known == name for known, _ in self.records):
            response.set_rcode(dns.rcode.NXDOMAIN)
            return response
        texts = self.records.get((name, rdtype), [])
        if texts:
            response.answer.append(dns.rrset.from_text(name, 5, "IN", rdtype, *texts))
        return response

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                wire, peer = self._socket.recvfrom(4096)
            except TimeoutError:
                continue
            except OSError:
                return
            self.queries += 1
            if self.silent:
                continue
            self._socket.sendto(self._answer(dns.message.from_wire(wire)).to_wire(), peer)

    def start(self) -> LoopbackDns:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._socket.close()


@contextmanager
def loopback_dns() -> Iterator[LoopbackDns]:
    server = LoopbackDns().start()
    try:
        yield server
    finally:
        server.stop()
