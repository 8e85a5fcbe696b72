"""Persistent remote-JMX client running in an in-process JVM (JPype).

One long-lived connector per node; MBean names are resolved with queryNames and cached, then each
MBean is read with one batched getAttributes call. Measured at ~1-4 ms client CPU per node against
~300-450 ms for a JVM per call (shared/reference/jmx-clients.md, bench/scrape_cost.py).
"""

from __future__ import annotations

import logging
import math
import threading
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ctlplane.exporter.jvm.javac import JavacError
from ctlplane.exporter.model import Failure, MBeanQuery, RawReading
from ctlplane.exporter.sources.base import ReadTimeouts
from ctlplane.exporter.sources.jmx import connect_timeouts, node_reader
from ctlplane.exporter.sources.jmx.base import Endpoint, JmxError
from ctlplane.exporter.sources.jmx.tls_routes import Entered, RouteError, TlsRoutes, asked_for_certificate, close_to

# Re-resolve MBean names this often: MBeans such as ControllerChannelManager's per-broker queues or
# the controller's per-broker registration state appear and disappear as brokers come and go.
RESOLVE_TTL_SECONDS = 60.0
# A pattern that matched nothing is retried sooner: a starting broker registers some MBeans (app-info,
# the controller's) only at the end of its start-up. So is every pattern that follows the controller,
# matched or not: a broker's registration gauge appears beside the others' when it registers.
RESOLVE_SOON_SECONDS = 10.0
# ... but only while the connection is young (a restarted broker breaks the connector, so its start-up
# is always a young connection). Later, an empty pattern is one of the ~14 of 45 that belong to the
# other mode (ZooKeeper vs KRaft) or role: re-querying them at every 15 s read cost ~40% more exporter
# CPU per read (11 -> 16 ms against the simulator), so they wait RESOLVE_TTL_SECONDS like the others.
RESOLVE_STARTUP_SECONDS = 120.0
# ... and a query the catalogue does not expect on the node (MBeanQuery.unexpected: another mode's or role's
# MBeans) that matched nothing after the start-up is looked for again this rarely. Re-resolving those every
# 60 s was about half of a fleet's exporter CPU (docs/benchmarks.md, the fleet bench: 7.2 ms per node read,
# 3.2 ms with no re-resolution at all); a node changes mode or role only by a restart, which breaks the
# connection (a new one resolves everything afresh).
RESOLVE_UNEXPECTED_SECONDS = 1800.0
# A read is ~45 RPCs, each bounded by the RMI timeouts (connect, handshake, response: ~3 timeouts at
# worst), so a node that answers every call just under the timeout would hold a worker for minutes. A read
# stops starting RPCs after this many timeouts: with the CLI's timeout of a third of the scrape timeout,
# that is two scrape timeouts, and a read holds its worker for at most about three (the last RPC's bound).
READ_DEADLINE_TIMEOUTS = 6.0
# A node is a server ctlplane reads, not one it trusts: a compromised or broken one must not exhaust the
# exporter's memory nor run code in it. Beyond these caps a query's extra MBeans and an over-long string
# value are left out (and logged): no catalogue pattern matches more than a few hundred MBeans on a real
# node (per-request-type, per-broker), and every string ctlplane reads is a version or a state name.
MAX_MBEANS_PER_QUERY = 10_000
MAX_STRING_CHARS = 1024
# What RMI may deserialise in this JVM (JEP 290, jdk.serialFilter; the JDK filters only the RMI registry
# and DGC by default, not the values a JMX server returns): the JMX, RMI and open-type classes, the
# java.lang/java.util values they carry, exceptions; nothing else, so a node cannot hand the exporter a
# gadget chain (a java.net.URL in a HashMap, a commons-collections Transformer). Limits bound a hostile
# stream's depth, references, array lengths and bytes (64 MiB: a whole read of a node is ~100 KiB).
SERIAL_FILTER = ";".join(
    [
        "maxdepth=40",
        "maxrefs=1000000",
        "maxarray=1000000",
        "maxbytes=67108864",
        "java.lang.*",
        "java.util.*",
        "java.math.*",
        "java.io.IOException",
        "java.io.*Exception",
        "java.net.*Exception",
        "java.rmi.**",
        "sun.rmi.**",
        "javax.management.**",
        "javax.rmi.ssl.*",
        "javax.security.auth.Subject",
        "javax.security.auth.Subject$*",
        # a refused login: the JDK agent's SecurityException carries a FailedLoginException as its cause
        # (JMXPluggableAuthenticator.authenticationFailure); refused here, a wrong password read as
        # "filter status: REJECTED", not as an authentication failure (tests/integration/test_jmx_auth.py)
        "java.security.GeneralSecurityException",
        "javax.security.auth.login.LoginException",
        "javax.security.auth.login.FailedLoginException",
        "javax.security.auth.login.AccountException",
        "javax.security.auth.login.AccountExpiredException",
        "javax.security.auth.login.AccountLockedException",
        "javax.security.auth.login.AccountNotFoundException",
        "javax.security.auth.login.CredentialException",
        "javax.security.auth.login.CredentialExpiredException",
        "javax.security.auth.login.CredentialNotFoundException",
        "jdk.proxy*",
        "com.sun.proxy.*",
        "!*",
    ]
)

_jvm_lock = threading.Lock()
log = logging.getLogger(__name__)


def rmi_timeout_seconds(scrape_timeout_seconds: float) -> float:
    """The RMI timeouts for a scrape timeout: they chain (connect, handshake, response), so a third of the
    budget each keeps a stalled node's read near the scrape timeout."""
    return max(0.5, scrape_timeout_seconds / 3)


def start_jvm(
    *,
    timeout_seconds: float,
    max_heap: str = "128m",
) -> None:
    """Start the process's JVM once, with the RMI timeouts a stalled or unreachable node needs.

    Without both RMI timeouts a SIGSTOPped broker hangs a read forever (in the handshake or in
    TCPConnection.isDead); without a connect timeout (connect_timeouts.py) a port whose SYNs are dropped
    holds a read for the kernel's ~127 s. With all three, one RMI call fails after roughly three times
    the timeout. A JVM can start only once per process, so the first caller's settings win.
    """
    import jpype

    with _jvm_lock:
        if jpype.isJVMStarted():
            return
        timeout_ms = str(max(1, int(timeout_seconds * 1000)))
        timeouts_compiled = False
        try:
            classpath = [str(connect_timeouts.class_dir())]
            timeouts_compiled = True
        except JavacError as exc:
            # Reading still works, only without connect timeouts: better than no exporter at all.
            log.error("JMX connect timeouts disabled (%s): an unreachable node holds a worker for ~2 min", exc)
            classpath = []
        try:
            classpath.append(str(node_reader.class_dir()))
        except JavacError as exc:
            log.error("node reads run in Python (%s): ~4x the CPU per read with many workers", exc)
        args = [
            f"-Xmx{max_heap}",
            "-XX:+UseSerialGC",
            "-Xss512k",
            # No hsperfdata: its sampler (StatSampler, every PerfDataSamplingInterval = 50 ms, on the "VM
            # Periodic Task Thread") cost ~1 ms of CPU a second for counters only jstat/jcmd read, ~a tenth
            # of the exporter's CPU per scrape at one scrape a second (bench/vs_jmx_exporter.py)
            "-XX:-UsePerfData",
            f"-Dsun.rmi.transport.tcp.responseTimeout={timeout_ms}",
            f"-Dsun.rmi.transport.tcp.handshakeTimeout={timeout_ms}",
            f"-D{connect_timeouts.PROPERTY}={timeout_ms}",
            f"-Djdk.serialFilter={SERIAL_FILTER}",
            # Kafka's client tells a lasting Kerberos refusal from a passing one by the KrbException's return
            # code, read by reflection (KerberosError.fromException, kafka-clients 4.3.1), which a JDK 17 refuses
            # outside this package's module: every error then counted retriable (a GSSException NO_CRED), so a
            # ticket the KDC refused ("Server not found in Kerberos database (7)": a wrong service name or host)
            # was retried until the call timed out as "Timed out waiting for a node assignment". Kafka's own tests
            # run with this package opened (build.gradle's defaultJvmArgs), so they never see it
            "--add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED",
        ]
        jpype.startJVM(*args, classpath=classpath, convertStrings=False)
        if timeouts_compiled:
            connect_timeouts.install()


def resolve_phase(address: str) -> float:
    """A connection's own phase in [0, 1) of the re-resolution period, fixed by its address."""
    return zlib.crc32(address.encode()) / 2**32


def resolve_due(now: float, resolved_at: float, ttl: float, phase: float) -> bool:
    """Whether names resolved at `resolved_at` (monotonic) are looked up again now: at the first of the
    connection's own boundaries (every `ttl` seconds, shifted by `phase` of it) at least a quarter of `ttl`
    after the last lookup, and never later than `ttl`. Counted from each connection's first read, a
    fleet's connections made in one round all re-resolved in one round of four, doubling its read cost
    (3.6 -> 5-10 ms CPU per node, simulator); with a phase per address a quarter of them do per round."""
    age = now - resolved_at
    if age >= ttl:
        return True
    if age < ttl / 4:
        return False
    return math.floor(now / ttl + phase) != math.floor(resolved_at / ttl + phase)


@dataclass
class _Resolved:
    names: list[tuple[Any, str, dict[str, str]]]  # (ObjectName, canonical string, key properties)
    at: float


@dataclass(frozen=True)
class _Plan:
    """One node read's MBeans in order, and the Java arrays NodeReader.read takes for them.

    Built again only when a query's resolved MBeans change (a re-resolution or an MBean gone): made each
    round, the two arrays were ~45 Python-to-Java conversions and as many Java references for JPype's
    reference-queue thread to release, per node read."""

    resolved: tuple[list[tuple[Any, str, dict[str, str]]], ...]  # _resolve's lists, compared by identity
    rows: tuple[tuple[MBeanQuery, Any, str, dict[str, str]], ...]
    names: Any  # ObjectName[]
    attributes: Any  # String[][]

    def built_from(self, resolved: Sequence[list[tuple[Any, str, dict[str, str]]]]) -> bool:
        return len(resolved) == len(self.resolved) and all(a is b for a, b in zip(resolved, self.resolved, strict=True))


class _Connection:
    def __init__(self, endpoint: Endpoint, entered: Entered) -> None:
        from java.lang import Long, String
        from java.util import HashMap
        from javax.management.remote import (
            JMXConnector,
            JMXConnectorFactory,
            JMXServiceURL,
        )

        env = HashMap()
        # No heartbeat thread per connector: a dead node surfaces as an IOException on the next read.
        env.put("jmx.remote.x.client.connection.check.period", Long(0))
        if endpoint.username is not None:
            env.put(JMXConnector.CREDENTIALS, _jarray(String, [endpoint.username, endpoint.password or ""]))
        if endpoint.registry_ssl:
            from javax.rmi.ssl import SslRMIClientSocketFactory

            env.put("com.sun.jndi.rmi.factory.socket", SslRMIClientSocketFactory())
        self.address = endpoint.address
        with entered:
            self.connector = JMXConnectorFactory.connect(JMXServiceURL(endpoint.service_url), env)
        self.server = self.connector.getMBeanServerConnection()
        self.connected_at = time.monotonic()
        self.resolve_phase = resolve_phase(endpoint.address)
        self.resolved: dict[MBeanQuery, _Resolved] = {}
        self.attribute_arrays: dict[MBeanQuery, Any] = {}  # Java String[] per query, built once
        # per queries tuple: the resolved lists it was built from, and the read's plan and Java arrays
        self.plans: dict[tuple[MBeanQuery, ...], _Plan] = {}

    def close(self) -> None:
        try:
            self.connector.close()
        except Exception:
            pass

    def _resolve(self, query: MBeanQuery, now: float, deadline: float) -> list[tuple[Any, str, dict[str, str]]]:
        cached = self.resolved.get(query)
        if cached is not None:
            young = now - self.connected_at < RESOLVE_STARTUP_SECONDS
            # a dormant one (the node was not the active controller) waits as the others: its MBeans come with
            # an election, and the read that sees it won asks for the query unmarked, a lookup of its own
            following = query.follows_controller and not query.dormant
            if query.unexpected and not cached.names and not young:
                ttl = RESOLVE_UNEXPECTED_SECONDS
            elif following and _is_pattern(query.pattern):
                ttl = RESOLVE_SOON_SECONDS  # its MBeans come and go with elections and registrations
            elif cached.names:
                # an exact ObjectName cannot gain MBeans, and losing its one raises InstanceNotFoundException
                # in read(), which drops it from the cache: only wildcard patterns need re-resolving, and not
                # those registered once for the JVM's life (its collectors, its app-info)
                ttl = RESOLVE_TTL_SECONDS if _is_pattern(query.pattern) and not query.registered_once else math.inf
            elif young or following:
                ttl = RESOLVE_SOON_SECONDS
            else:
                ttl = RESOLVE_TTL_SECONDS
            if not resolve_due(now, cached.at, ttl, self.resolve_phase):
                return cached.names
        from javax.management import ObjectName

        _check(deadline)
        names: list[tuple[Any, str, dict[str, str]]] = []
        found = self.server.queryNames(ObjectName(query.pattern), None)
        for name in found:
            if len(names) >= MAX_MBEANS_PER_QUERY:
                log.warning(
                    "%s: %s matches %d MBeans; reading the first %d",
                    self.address,
                    query.pattern,
                    found.size(),
                    MAX_MBEANS_PER_QUERY,
                )
                break
            canonical = str(name.getCanonicalName())
            keys = key_properties(canonical)
            if keys is None:  # a quoted value: ask Java (one crossing per key, each a GIL hand-over)
                keys = {str(k): str(v) for k, v in name.getKeyPropertyList().items()}
            if query.accepts(keys):
                names.append((name, canonical, keys))
        self.resolved[query] = _Resolved(names, now)
        return names

    def read(self, queries: Sequence[MBeanQuery], deadline: float) -> list[RawReading]:
        """Read every query; raise _DeadlineExceeded rather than start an RPC after `deadline` (monotonic).

        In one call into Java (node_reader.py) where the class could be compiled, else MBean by MBean."""
        reader = _node_reader()
        if reader is None:
            return self.read_each(queries, deadline)
        from java.lang import String
        from javax.management import ObjectName

        now = time.monotonic()
        queries = tuple(queries)
        resolved = [self._resolve(query, now, deadline) for query in queries]
        cached = self.plans.get(queries)
        if cached is None or not cached.built_from(resolved):
            rows = tuple((query, *row) for query, rows in zip(queries, resolved, strict=True) for row in rows)
            cached = self.plans[queries] = _Plan(
                tuple(resolved),
                rows,
                _jarray(ObjectName, [name for _, name, _, _ in rows]),
                _jarray(String[:], [self._attributes_of(query) for query, _, _, _ in rows]),
            )
        plan = cached.rows
        _check(deadline)
        budget = max(1, int((deadline - time.monotonic()) * 1e9))  # Java keeps the rest of the deadline
        try:
            result = reader.read(self.server, cached.names, cached.attributes, budget, MAX_STRING_CHARS)
        except reader.DeadlineExceeded:
            raise _DeadlineExceeded from None
        status = bytes(memoryview(result.status))
        kinds = bytes(memoryview(result.kinds))
        numbers = memoryview(result.numbers).tolist()
        readings = []
        offset = 0  # the MBean's first cell: Result's cells are every MBean's requested attributes, in order
        for index, (query, _, canonical, keys) in enumerate(plan):
            first, offset = offset, offset + len(query.attributes)
            if status[index] == node_reader.GONE:
                self.resolved.pop(query, None)  # unregistered since resolved (a broker left): resolve again
                continue
            if status[index] == node_reader.REJECTED:
                self._log_rejected(canonical, result.problems[index])
                continue
            values: dict[str, float | str] = {}
            for cell, attribute in enumerate(query.attributes, start=first):
                kind = kinds[cell]
                if kind == node_reader.NUMBER:
                    values[attribute] = numbers[cell]
                elif kind == node_reader.TEXT:
                    values[attribute] = str(result.texts[cell])
                elif kind == node_reader.TOO_LONG:
                    self._log_too_long(canonical, int(numbers[cell]))
            readings.append(RawReading(query.pattern, canonical, keys, values))
        return readings

    def _attributes_of(self, query: MBeanQuery) -> Any:
        from java.lang import String

        attributes = self.attribute_arrays.get(query)
        if attributes is None:
            attributes = self.attribute_arrays[query] = _jarray(String, list(query.attributes))
        return attributes

    def _log_rejected(self, canonical: str, reason: object) -> None:
        # SERIAL_FILTER refused a value's class: this MBean is left out, the node read goes on
        log.warning("%s: %s: a value refused by the deserialisation filter: %s", self.address, canonical, reason)

    def _log_too_long(self, canonical: str, length: int) -> None:
        log.warning("%s: %s: a %d-character value left out", self.address, canonical, length)

    def read_each(self, queries: Sequence[MBeanQuery], deadline: float) -> list[RawReading]:
        """read(), one getAttributes call from Python per MBean: where the Java reader is not compiled, and
        the reference its answers are compared with (tests/integration/test_node_reader.py)."""
        from java.lang import Boolean, Number
        from java.rmi import UnmarshalException
        from javax.management import InstanceNotFoundException

        now = time.monotonic()
        readings = []
        for query in queries:
            attributes = self._attributes_of(query)
            requested = set(query.attributes)
            for name, canonical, keys in self._resolve(query, now, deadline):
                _check(deadline)
                try:
                    result = self.server.getAttributes(name, attributes)
                except InstanceNotFoundException:
                    # Unregistered since we resolved it (a broker left): resolve again next time.
                    self.resolved.pop(query, None)
                    continue
                except UnmarshalException as exc:
                    if "REJECTED" not in str(exc.getCause() or ""):
                        raise
                    self._log_rejected(canonical, exc.getCause())
                    continue
                values: dict[str, float | str] = {}
                for attribute in result:  # the AttributeList itself: asList() is one more Java call per MBean
                    name_of = str(attribute.getName())
                    if name_of not in requested:  # an agent may answer more than it was asked
                        continue
                    value = attribute.getValue()
                    # JPype boxes Double/Float as Python floats and Long/Integer/Short/Byte as ints, so
                    # float() converts them without a doubleValue() round trip into Java (~20% of this
                    # loop); Boolean is an int too but no Number, and other Numbers keep doubleValue()
                    if isinstance(value, float) or (isinstance(value, int) and isinstance(value, Number)):
                        values[name_of] = float(value)
                    elif isinstance(value, Number):
                        values[name_of] = float(value.doubleValue())
                    elif value is not None:
                        # toString() of a String is itself, other objects are their text; JPype's str() of a
                        # Boolean is Python's ("True"), Java's is "true", as the Java reader says
                        text = str(value).lower() if isinstance(value, Boolean) else str(value)
                        if len(text) > MAX_STRING_CHARS:
                            self._log_too_long(canonical, len(text))
                            continue
                        values[name_of] = text
                readings.append(RawReading(query.pattern, canonical, keys, values))
        return readings


def key_properties(canonical: str) -> dict[str, str] | None:
    """The key properties of a canonical ObjectName (`domain:k1=v1,k2=v2`, ObjectName.getCanonicalName),
    parsed in Python; None if a value is quoted (it may hold `,` or `=`: let Java parse it). The same as
    getKeyPropertyList(), which a 1,000-node fleet iterated through JPype for ~2% of its GIL time."""
    _, _, properties = canonical.partition(":")
    if '"' in properties:
        return None
    keys = {}
    for pair in properties.split(","):
        key, _, value = pair.partition("=")
        keys[key] = value
    return keys


class _DeadlineExceeded(Exception):
    pass


_READER: list[Any] = []  # [the NodeReader class, or None where it was not compiled]: looked up once


def _node_reader() -> Any:
    if not _READER:
        from jpype import JClass

        try:
            _READER.append(JClass(node_reader.CLASS))
        except Exception:  # not on the class path: start_jvm logged why
            _READER.append(None)
    return _READER[0]


def _check(deadline: float) -> None:
    if time.monotonic() > deadline:
        raise _DeadlineExceeded


def _is_pattern(name: str) -> bool:
    # ObjectName wildcards: * and ? in the domain or a value, or a trailing ",*" property-list pattern
    return "*" in name or "?" in name


def _jarray(element: Any, items: list[str]) -> Any:
    import jpype

    return jpype.JArray(element)(items)


class JPypeJmxClient:
    """JmxClient over persistent connectors; safe to call from many threads (one read per node at a time).

    `timeout_seconds` is each RMI timeout (connect, handshake, response), fixed for the process by the
    first client (one JVM per process); `read_deadline_seconds` (default READ_DEADLINE_TIMEOUTS timeouts)
    bounds a whole read, this client's own.
    """

    def __init__(
        self,
        *,
        timeout_seconds: float,
        read_deadline_seconds: float | None = None,
        max_heap: str = "128m",
    ) -> None:
        start_jvm(timeout_seconds=timeout_seconds, max_heap=max_heap)
        import jpype.imports  # noqa: F401 - enables `from java... import`

        self.read_deadline_seconds = (
            read_deadline_seconds if read_deadline_seconds is not None else READ_DEADLINE_TIMEOUTS * timeout_seconds
        )
        self._connections: dict[Endpoint, _Connection] = {}
        self._locks: dict[Endpoint, threading.Lock] = {}
        self._guard = threading.Lock()
        self._routes = TlsRoutes()
        # per node address: the TLS route its last connection was made under, and where its sockets went
        self._made_under: dict[str, tuple[str | None, tuple[str, ...]]] = {}

    def _lock_for(self, endpoint: Endpoint) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(endpoint, threading.Lock())

    def read(self, endpoint: Endpoint, queries: Sequence[MBeanQuery]) -> list[RawReading]:
        import jpype

        with self._lock_for(endpoint):
            # from the read's start, not from the wait for the lock (at most one read per node runs anyway)
            deadline = time.monotonic() + self.read_deadline_seconds
            connection = self._connections.get(endpoint)
            try:
                # looked at each read: a trust or key store replaced on disk replaces its route (tls_routes.py)
                route = self._route_for(endpoint)
                made = self._made_under.get(endpoint.address)
                if made is not None and made[0] != route:
                    connection = self._connect_again(endpoint, route, made[1])
                elif connection is None:
                    connection = self._connect(endpoint, route)
                return connection.read(queries, deadline)
            except (jpype.JException, _DeadlineExceeded) as exc:
                # Any Java failure leaves the connector in an unknown state: drop it, reconnect next time.
                # So does an abandoned read (the node is too slow to trust its connection's state either).
                if connection is not None:
                    connection.close()
                self._connections.pop(endpoint, None)
                if isinstance(exc, _DeadlineExceeded):
                    message = f"read abandoned after {self.read_deadline_seconds:g}s (answers too slowly)"
                    raise JmxError(f"{endpoint.address}: {message}", Failure.TIMEOUT) from None
                raise _describe(exc, endpoint, asked_for_certificate()) from None

    def _connect(self, endpoint: Endpoint, route: str | None) -> _Connection:
        entered = Entered(route)
        try:
            connection = _Connection(endpoint, entered)
        finally:
            # where its sockets went, added to those of the node's earlier connections (a connect that reuses
            # RMI's pooled connection makes none)
            before = self._made_under.get(endpoint.address, (None, ()))[1]
            self._made_under[endpoint.address] = (route, tuple(dict.fromkeys(before + entered.reached)))
        self._connections[endpoint] = connection
        return connection

    def _connect_again(self, endpoint: Endpoint, route: str | None, destinations: tuple[str, ...]) -> _Connection:
        """The node at the endpoint's address connected again under other TLS material: every connection to
        it goes (a reload's old endpoint too), after its TLS sockets are closed, which RMI would reuse
        (tls_routes.close_to). The old connectors are closed once the new one is made: closed first, their
        close would use the pooled sockets just before the new connect, and RMI reuses a connection used
        less than a round trip ago without the ping that finds it closed (TCPConnection.isDead)."""
        with self._guard:
            stale = [key for key in self._connections if key.address == endpoint.address]
            connections = [self._connections.pop(key) for key in stale]
        close_to(destinations)
        self._made_under[endpoint.address] = (route, ())
        try:
            return self._connect(endpoint, route)
        finally:
            for connection in connections:
                connection.close()

    def _route_for(self, endpoint: Endpoint) -> str | None:
        if endpoint.tls is None:
            return None
        try:
            return self._routes.route_for(endpoint.tls)
        except RouteError as exc:
            # the operator's material, not the node: counted as refused credentials (ctlplane_credentials_refused)
            raise JmxError(f"{endpoint.address}: {exc}", Failure.AUTH) from None

    def configure(self, timeouts: ReadTimeouts) -> None:
        """Nothing: the RMI timeouts are the JVM's, fixed at its start (start_jvm), and the read deadline is
        the one this client was made with (a restart applies a new one)."""

    def close(self) -> None:
        with self._guard:
            connections = list(self._connections.values())
            self._connections.clear()
        for connection in connections:
            connection.close()


_UNTRUSTED = (
    "sun.security.provider.certpath.SunCertPathBuilderException",
    "java.security.cert.CertPathValidatorException",
)


def _tls_refusal(chain: list[str], message: str, endpoint: Endpoint, asked: str | None) -> JmxError | None:
    """What a failed TLS handshake means for the operator, read off the JDK's exceptions on JDK 17
    (tests/integration/test_jmx_tls.py has each, against the JDK's own agent)."""
    where = f"{endpoint.address}: JMX TLS:"
    if any(kind in _UNTRUSTED for kind in chain):
        trust = endpoint.tls is not None and endpoint.tls.trust_file is not None
        by = (
            "this cluster's truststore or ca_file"
            if trust
            else "the JDK's default trust: give jmx.truststore or jmx.ca_file"
        )
        return JmxError(f"{where} the node's certificate is not trusted by {by}", Failure.AUTH)
    if asked == "none" or "bad_certificate" in message or "certificate_required" in message:
        if asked == "none" or endpoint.tls is None or endpoint.tls.key_file is None:
            text = "the node asks for a client certificate (ssl.need.client.auth=true): give jmx.keystore"
        else:
            text = "the node refused ctlplane's client certificate (its trust store does not hold the key store's CA)"
        return JmxError(f"{where} {text}", Failure.AUTH)
    if "non-JRMP server" in message and not endpoint.registry_ssl:
        # a plain lookup answered with TLS: com.sun.management.jmxremote.registry.ssl=true on the node
        text = "the node's RMI registry speaks TLS (registry.ssl=true): set jmx.registry_ssl: true"
        return JmxError(f"{where} {text}")
    lookup = "javax.naming.CommunicationException" in chain  # the registry lookup failed, not the connector
    handshake = "javax.net.ssl.SSLHandshakeException" in chain or "Unsupported or unrecognized SSL" in message
    if lookup and handshake and endpoint.registry_ssl:
        # a plain registry reads the TLS hello as a bad JRMP header and hangs up: the handshake's EOFException
        text = "the node's RMI registry ended the TLS handshake: if it does not speak TLS (registry.ssl=false), "
        return JmxError(f"{where} {text}set jmx.registry_ssl: false")
    return None


def _describe(exc: Any, endpoint: Endpoint, asked: str | None = None) -> JmxError:
    """A one-line reason, from the innermost cause (RMI wraps the useful message several times); `asked`:
    whether the node asked for a client certificate in the read's last handshake (tls_routes.py)."""
    cause = exc
    chain = [str(cause.getClass().getName())]
    while cause.getCause() is not None and cause.getCause() is not cause:
        cause = cause.getCause()
        chain.append(str(cause.getClass().getName()))
    kind = str(cause.getClass().getSimpleName())
    message = str(cause.getMessage() or "")
    if (tls := _tls_refusal(chain, message, endpoint, asked)) is not None:
        return tls
    # the JDK agent refuses a login with a SecurityException caused by a FailedLoginException (a custom
    # JAAS module with another of javax.security.auth.login's exceptions)
    refused = any(k == "java.lang.SecurityException" or k.startswith("javax.security.auth.login.") for k in chain)
    if refused or "Authentication failed" in message:
        return JmxError(f"{endpoint.address}: JMX authentication failed", Failure.AUTH)
    if kind in ("SocketTimeoutException", "ConnectIOException") or "timed out" in message.lower():
        return JmxError(f"{endpoint.address}: timed out ({kind}: {message})", Failure.TIMEOUT)
    if kind == "ConnectException":
        return JmxError(f"{endpoint.address}: connection refused", Failure.GONE)
    if kind in ("SocketException", "EOFException") and ("reset" in message.lower() or kind == "EOFException"):
        # the JVM went away in the middle of the read (a stopping broker)
        return JmxError(f"{endpoint.address}: {kind}: {message}", Failure.GONE)
    return JmxError(f"{endpoint.address}: {kind}: {message}")
