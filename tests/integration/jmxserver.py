"""A real JMX connector server (RMI on loopback) in the test process's JVM, serving MBeans whose values a
test chooses: slow ones, hostile ones. The exporter's JPype client reads it over real RMI, with real
serialisation, exactly as it reads a broker.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from harness.localkafka import free_port
from tests.integration.watch import shared_client

# attribute name -> a function giving the Java value to answer with (made on each read)
Values = Mapping[str, Callable[[], Any]]


class ServedPort(int):
    """The server's port; `register(name, values)` adds an MBean while it runs (a broker that just became the
    controller registering its per-broker queues), `unregister(name)` removes one (a broker that left)."""

    def __new__(
        cls, port: int, register: Callable[[str, Values], object], unregister: Callable[[str], object]
    ) -> ServedPort:
        served = super().__new__(cls, port)
        served.register = register  # type: ignore[method-assign]
        served.unregister = unregister  # type: ignore[method-assign]
        return served

    def register(self, name: str, values: Values) -> object:  # replaced per instance
        raise NotImplementedError

    def unregister(self, name: str) -> object:  # replaced per instance
        raise NotImplementedError


@contextlib.contextmanager
def jmx_server(
    mbeans: Mapping[str, Values],
    delay_seconds: float = 0.0,
    calls: list[str] | None = None,
    credentials: tuple[str, str] | None = None,
) -> Iterator[ServedPort]:
    """Serve `mbeans` (ObjectName -> its attributes) on a free loopback port; yield the port. Each
    getAttributes waits `delay_seconds` and appends the MBean's name to `calls`. With `credentials`
    (user, password) the server authenticates connections as a broker with jmxremote.authenticate does."""
    import jpype
    from jpype import JClass

    shared_client()  # the test process's one JVM, started with the exporter's settings
    Attribute, AttributeList = JClass("javax.management.Attribute"), JClass("javax.management.AttributeList")
    MBeanAttributeInfo, MBeanInfo = JClass("javax.management.MBeanAttributeInfo"), JClass("javax.management.MBeanInfo")

    @jpype.JImplements("javax.management.DynamicMBean")
    class Served:
        def __init__(self, name: str, values: Values) -> None:
            self.name = name
            self.values = values
            infos = [MBeanAttributeInfo(a, "java.lang.Object", "", True, False, False) for a in values]
            self.info = MBeanInfo("Served", "", infos, None, None, None)

        @jpype.JOverride
        def getAttribute(self, attribute: Any) -> Any:
            return self.values[str(attribute)]()

        @jpype.JOverride
        def getAttributes(self, attributes: Any) -> Any:
            if delay_seconds:
                time.sleep(delay_seconds)
            if calls is not None:
                calls.append(self.name)
            result = AttributeList()
            for attribute in attributes:
                make = self.values.get(str(attribute))
                if make is not None:
                    result.add(Attribute(attribute, make()))
            return result

        @jpype.JOverride
        def setAttribute(self, attribute: Any) -> None:
            raise JClass("javax.management.AttributeNotFoundException")(str(attribute.getName()))

        @jpype.JOverride
        def setAttributes(self, attributes: Any) -> Any:
            return AttributeList()

        @jpype.JOverride
        def invoke(self, action: Any, params: Any, signature: Any) -> Any:
            return None

        @jpype.JOverride
        def getMBeanInfo(self) -> Any:
            return self.info

    @jpype.JImplements("java.rmi.server.RMIServerSocketFactory")
    class Loopback:
        @jpype.JOverride
        def createServerSocket(self, port: int) -> Any:
            loopback = JClass("java.net.InetAddress").getByName("127.0.0.1")
            return JClass("java.net.ServerSocket")(port, 50, loopback)

    @jpype.JImplements("javax.management.remote.JMXAuthenticator")
    class Authenticator:
        @jpype.JOverride
        def authenticate(self, given: Any) -> Any:
            if given is None or len(given) != 2 or (str(given[0]), str(given[1])) != credentials:
                raise JClass("java.lang.SecurityException")("Authentication failed! Invalid username or password")
            return JClass("javax.security.auth.Subject")()

    # the stubs this server hands out name this host; the test JVM exports nothing else
    JClass("java.lang.System").setProperty("java.rmi.server.hostname", "127.0.0.1")
    server = JClass("javax.management.MBeanServerFactory").newMBeanServer()
    for name, values in mbeans.items():
        server.registerMBean(Served(name, values), JClass("javax.management.ObjectName")(name))
    port = free_port()
    factory = Loopback()  # one instance for registry and connector: they share the port
    registry = JClass("java.rmi.registry.LocateRegistry").createRegistry(port, None, factory)
    env = JClass("java.util.HashMap")()
    env.put("jmx.remote.rmi.server.socket.factory", factory)
    if credentials is not None:
        env.put("jmx.remote.authenticator", Authenticator())
    url = JClass("javax.management.remote.JMXServiceURL")(
        f"service:jmx:rmi://127.0.0.1:{port}/jndi/rmi://127.0.0.1:{port}/jmxrmi"
    )
    connector = JClass("javax.management.remote.JMXConnectorServerFactory").newJMXConnectorServer(url, env, server)
    connector.start()
    try:
        ObjectName = JClass("javax.management.ObjectName")
        yield ServedPort(
            port,
            lambda name, values: server.registerMBean(Served(name, values), ObjectName(name)),
            lambda name: server.unregisterMBean(ObjectName(name)),
        )
    finally:
        connector.stop()
        JClass("java.rmi.server.UnicastRemoteObject").unexportObject(registry, True)
