"""The simulator process: one JVM (JPype) serving every simulated node over real remote JMX.

Each node gets its own MBeanServer (nodes must not see each other's MBeans) and its own RMI registry
plus connector server on one loopback port. MBeans are Java DynamicMBeans (ctlplane/demo/javaside.py) reading a
snapshot of the value model that Python publishes in bulk once per time bucket, so serving a read never
enters Python (no GIL, no JPype proxy on RMI threads). A tiny HTTP endpoint switches scenarios;
`unreachable-broker` unexports the node's registry and connector so its port refuses connections, and
re-creates them on the same port when it ends.
See shared/reference/jmx-clients.md, "Serving MBeans from Python", for the pitfalls handled here.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ctlplane.demo.javaside import CLASS
from ctlplane.demo.layout import MBeanSlots, ValueLayout
from ctlplane.demo.scenarios import ScenarioError
from ctlplane.demo.shapes import NodeSpec
from ctlplane.demo.simulation import BUCKET_SECONDS, Simulation

log = logging.getLogger("ctlplane.demo.server")

JVM_FLAGS = (
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",  # C1 only: the JIT's C2 threads would compete for 2 shared cores
    "-Xrs",  # leave SIGTERM/SIGINT to Python so shutdown runs our cleanup (connector stops first)
    "-Djava.rmi.server.hostname=127.0.0.1",
    # Idle RMI connection threads (one per open client connection) end after 5 s instead of 60 s.
    "-Dsun.rmi.transport.tcp.threadKeepAliveTime=5000",
)
STOP_DEADLINE_SECONDS = 20.0


def start_jvm(max_heap: str) -> None:
    import jpype

    from ctlplane.demo.javaside import class_dir

    jpype.startJVM(f"-Xmx{max_heap}", *JVM_FLAGS, classpath=[str(class_dir())], convertStrings=False)
    import jpype.imports


def _java_types() -> dict[str, Any]:
    """The Java classes of ctlplane/demo/javaside.py (loadable once the JVM runs with their class path)."""
    from jpype import JClass

    return {
        "SimulatedMBean": JClass(CLASS),
        "Bank": JClass(f"{CLASS}$Bank"),
        "LoopbackServerSocketFactory": JClass(f"{CLASS}$LoopbackServerSocketFactory"),
    }


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class NodeEndpoint:
    """One simulated node's MBeanServer, RMI registry and JMX connector server, on one port."""

    def __init__(self, node: NodeSpec, mbean_server: Any, socket_factory: Any) -> None:
        self.node = node
        self.mbean_server = mbean_server
        self.socket_factory = socket_factory
        self.port = 0
        self._registry: Any = None
        self._connector: Any = None

    @property
    def up(self) -> bool:
        return self._connector is not None

    def start(self) -> None:
        from java.rmi import RemoteException

        for attempt in range(1, 21):
            port = self.port or _free_port()
            try:
                self._listen(port)
            except RemoteException as exc:
                # A fresh port taken by another process between probe and bind: the next attempt
                # probes another. Our own port after an unreachable spell: wait for it to close.
                self.close()
                log.debug("port %d unavailable (%s), attempt %d", port, exc, attempt)
                if self.port:
                    time.sleep(0.1)
                continue
            self.port = port
            return
        raise RuntimeError(f"no port for {self.node.cluster}/{self.node.name} after 20 attempts")

    def _listen(self, port: int) -> None:
        from java.rmi.registry import LocateRegistry
        from java.util import HashMap
        from javax.management.remote import JMXServiceURL
        from javax.management.remote.rmi import RMIConnectorServer, RMIJRMPServerImpl

        self._registry = LocateRegistry.createRegistry(port, None, self.socket_factory)
        env = HashMap()
        env.put(RMIConnectorServer.RMI_SERVER_SOCKET_FACTORY_ATTRIBUTE, self.socket_factory)
        server = RMIJRMPServerImpl(port, None, self.socket_factory, env)
        # No /jndi/ part: binding through JNDI is a remote call to our own registry, which leaves a DGC
        # "RMI RenewClean" thread and pooled connection threads behind for every node (~3 threads each).
        # Bound locally instead, clients still find it at service:jmx:rmi:///jndi/rmi://host:port/jmxrmi.
        connector = RMIConnectorServer(
            JMXServiceURL(f"service:jmx:rmi://127.0.0.1:{port}"), env, server, self.mbean_server
        )
        connector.start()
        self._connector = connector
        self._registry.bind("jmxrmi", server.toStub())

    def close(self) -> None:
        """Stop the connector and unexport the registry: the port then refuses connections."""
        from java.rmi.server import UnicastRemoteObject

        if self._connector is not None:
            try:
                self._connector.stop()
            except Exception:
                log.exception("stopping the connector of %s", self.node.name)
            self._connector = None
        if self._registry is not None:
            UnicastRemoteObject.unexportObject(self._registry, True)
            self._registry = None


def _register_node(mbeans: tuple[MBeanSlots, ...], bank: Any, types: dict[str, Any]) -> Any:
    from javax.management import MBeanServerFactory, ObjectName
    from jpype import JArray, JInt, JString

    server = MBeanServerFactory.newMBeanServer()
    for mbean in mbeans:
        java_mbean = types["SimulatedMBean"](
            bank, JArray(JString)(list(mbean.names)), mbean.types, JArray(JInt)(list(mbean.slots))
        )
        server.registerMBean(java_mbean, ObjectName(mbean.object_name))
    return server


class ValuePublisher:
    """Computes every node's values once per time bucket and publishes them to the Java bank in one call.

    Reads never wait for this: they see the last published snapshot. The cadence is the value model's
    bucket (0.5 s), stretched so refreshing takes at most MAX_DUTY of the time: 1,000 nodes take
    ~0.3 s of CPU to compute (every ~3 s then; measured, refreshing was most of the simulator's CPU),
    and the simulator shares its cores with the exporter it serves. Scenario changes force a refresh.
    """

    MAX_DUTY = 0.1

    def __init__(self, simulation: Simulation, bank: Any) -> None:
        self.simulation = simulation
        self.bank = bank
        self.layout = ValueLayout(simulation, simulation.clock())
        self._lock = threading.Lock()
        self._bucket: float | None = None
        self._due = 0.0  # monotonic time of the next refresh
        self.last_seconds = 0.0  # how long the last refresh took (wall)

    def refresh(self, *, force: bool = False) -> float:
        """Publish the current bucket's values if due (or `force`d: a scenario changed); returns the
        seconds until the next refresh is due."""
        from jpype import JArray, JDouble, JString

        with self._lock:
            now = time.monotonic()
            t = self.simulation.clock()
            bucket = (t // BUCKET_SECONDS) * BUCKET_SECONDS
            if force or (now >= self._due and bucket != self._bucket):
                numbers, strings = self.layout.flatten(self.simulation, t)
                self.bank.publish(JArray(JDouble)(numbers), JArray(JString)(strings))
                self._bucket = bucket
                self.last_seconds = time.monotonic() - now
                self._due = now + max(BUCKET_SECONDS, self.last_seconds / self.MAX_DUTY)
            next_bucket = bucket + BUCKET_SECONDS - t
            return max(0.01, self._due - time.monotonic(), next_bucket)


@dataclass
class Simulator:
    simulation: Simulation
    endpoints: dict[tuple[str, str], NodeEndpoint]
    publisher: ValuePublisher
    _lock: threading.Lock

    def reconcile(self) -> None:
        """Close the ports of unreachable nodes, reopen the others."""
        down = self.simulation.unreachable()
        with self._lock:
            for key, endpoint in self.endpoints.items():
                if key in down and endpoint.up:
                    log.info("%s/%s: closing JMX port %d (unreachable)", *key, endpoint.port)
                    endpoint.close()
                elif key not in down and not endpoint.up:
                    log.info("%s/%s: reopening JMX port %d", *key, endpoint.port)
                    endpoint.start()

    def tick(self) -> float:
        """Apply scheduled scenario changes: ports and values; returns seconds until the next tick."""
        self.reconcile()
        return min(0.5, self.publisher.refresh())

    def ready_document(self, control_url: str) -> dict[str, Any]:
        return {
            "ready": True,
            "pid": os.getpid(),
            "control_url": control_url,
            "seed": self.simulation.seed,
            "nodes": [
                {
                    "cluster": node.cluster,
                    "name": node.name,
                    "node_id": node.node_id,
                    "mode": node.mode.value,
                    "role": node.role.value,
                    "version": node.version,
                    "port": self.endpoints[(node.cluster, node.name)].port,
                }
                for node in self.simulation.nodes()
            ],
        }

    def stop(self) -> None:
        with self._lock, ThreadPoolExecutor(max_workers=16) as pool:
            list(pool.map(lambda endpoint: endpoint.close(), self.endpoints.values()))


def build_simulator(simulation: Simulation) -> Simulator:
    types = _java_types()
    factory = types["LoopbackServerSocketFactory"]()
    publisher = ValuePublisher(simulation, types["Bank"]())
    publisher.refresh(force=True)  # values before any port opens
    endpoints = {}
    for node in simulation.nodes():
        key = (node.cluster, node.name)
        endpoints[key] = NodeEndpoint(
            node, _register_node(publisher.layout.mbeans[key], publisher.bank, types), factory
        )
    simulator = Simulator(simulation, endpoints, publisher, threading.Lock())
    down = simulation.unreachable()
    for key, endpoint in endpoints.items():
        if key not in down:
            endpoint.start()
    return simulator


def _control_handler(simulator: Simulator) -> type[BaseHTTPRequestHandler]:
    simulation = simulator.simulation

    class ControlHandler(BaseHTTPRequestHandler):
        """GET /scenario, POST /scenario {"name", "cluster"?, "node"?, "at"?}, GET /nodes."""

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("control: " + format, *args)

        def _reply(self, status: int, body: object) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path == "/scenario":
                self._reply(200, simulation.describe())
            elif self.path == "/nodes":
                self._reply(200, simulator.ready_document("")["nodes"])
            else:
                self._reply(404, {"error": f"no {self.path}; try GET /scenario, POST /scenario, GET /nodes"})

        def do_POST(self) -> None:
            if self.path != "/scenario":
                self._reply(404, {"error": f"no {self.path}"})
                return
            try:
                request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                if not isinstance(request, dict) or not isinstance(request.get("name"), str):
                    raise ScenarioError('expected a JSON object with "name" (and optional "cluster", "node")')
                at = request.get("at")
                cluster, change = simulation.schedule(
                    request["name"], request.get("cluster"), request.get("node"), float(at) if at else None
                )
            except (ScenarioError, ValueError) as exc:
                self._reply(400, {"error": str(exc)})
                return
            simulator.reconcile()
            simulator.publisher.refresh(force=True)  # the next read already sees the new scenario
            self._reply(
                200, {"cluster": cluster, "scenario": change.scenario.value, "node": change.node, "at": change.at}
            )

    return ControlHandler


def serve(
    simulation: Simulation,
    *,
    max_heap: str,
    control_port: int,
    stop: threading.Event,
    on_ready: Callable[[dict[str, Any]], None],
) -> None:
    """Run until `stop` is set: JVM, endpoints, control HTTP; then stop every connector, then the JVM."""
    import jpype

    start_jvm(max_heap)
    simulator = build_simulator(simulation)
    http = ThreadingHTTPServer(("127.0.0.1", control_port), _control_handler(simulator))
    http.daemon_threads = True
    http_thread = threading.Thread(target=http.serve_forever, name="control-http", daemon=True)
    http_thread.start()
    host, port = http.server_address[:2]
    on_ready(simulator.ready_document(f"http://{host!s}:{port}"))
    try:
        # Reads never enter Python; the main thread wakes once per value bucket to publish values and to
        # apply scenario changes scheduled for later (scripts).
        while not stop.wait(simulator.tick()):
            pass
    finally:
        watchdog = threading.Timer(STOP_DEADLINE_SECONDS, lambda: os._exit(3))
        watchdog.daemon = True
        watchdog.start()
        http.shutdown()
        simulator.stop()  # without cs.stop() shutdownJVM hangs on RMI's non-daemon threads
        jpype.shutdownJVM()
        watchdog.cancel()
