"""RMI client sockets that give up connecting after a timeout: the Java side, compiled from this source.

Why: the JDK's RMI client connects with no timeout. `sun.rmi.transport.proxy.connectTimeout` only ever
applied to RMI's HTTP-proxy fallback, which JDK 9 removed, so on JDK 17 nothing reads it, and a JMX port
whose SYNs are dropped (a firewalled or vanished host) holds the reading thread for the kernel's SYN
retries: ~127 s on Linux. RMI's handshake and response timeouts start only once connected.

Two factories close that gap, both installed once, right after the JVM starts:
- `ConnectTimeouts$Rmi`, the JVM-wide RMISocketFactory: RMI uses it for every registry lookup without a
  factory of its own and for every stub exported with no client socket factory (a JMX agent without SSL).
- `ConnectTimeouts$Tls`, the JVM's default SSLSocketFactory (security property ssl.SocketFactory.provider):
  it connects with the timeout, then layers TLS with the context of the destination's cluster
  (`TlsRoutes`, tls_routes.py, compiled with it), or the default SSLContext where none was given. The SSL
  registry lookup's SslRMIClientSocketFactory and the one an SSL agent's stubs carry (chosen by the
  server, so the client cannot swap it) both create their sockets with SSLSocketFactory.getDefault().

They are Java, not JPype proxies: a proxy would enter Python (and its GIL) on RMI threads for every
connection. The timeout is a system property read at each connect, so it is set with the JVM's other RMI
timeouts and the classes need no Python call after installation.
"""

from __future__ import annotations

import logging
from pathlib import Path

from ctlplane.exporter.jvm.javac import compiled_classes
from ctlplane.exporter.sources.jmx import tls_routes

log = logging.getLogger(__name__)

PROPERTY = "ctlplane.jmx.connectTimeoutMillis"
RMI_FACTORY = "ctlplane.jmx.ConnectTimeouts$Rmi"
TLS_FACTORY = "ctlplane.jmx.ConnectTimeouts$Tls"

JAVA_SOURCE = """\
package ctlplane.jmx;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.rmi.server.RMISocketFactory;
import java.security.KeyManagementException;
import java.security.NoSuchAlgorithmException;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocketFactory;

/** Client sockets that stop connecting after ctlplane.jmx.connectTimeoutMillis (see connect_timeouts.py). */
public final class ConnectTimeouts {
    public static final String PROPERTY = "ctlplane.jmx.connectTimeoutMillis";
    private static final int DEFAULT_MILLIS = 10_000;

    private ConnectTimeouts() {}

    public static int millis() {
        return Integer.getInteger(PROPERTY, DEFAULT_MILLIS);
    }

    static Socket connect(InetSocketAddress address, InetAddress localAddress, int localPort) throws IOException {
        Socket socket = new Socket();
        try {
            if (localAddress != null || localPort != 0) {
                socket.bind(new InetSocketAddress(localAddress, localPort));
            }
            socket.connect(address, millis());
        } catch (IOException e) {
            socket.close();
            throw e;
        }
        return socket;
    }

    /** The JVM-wide RMI socket factory: registry lookups and stubs that carry no client factory. */
    public static final class Rmi extends RMISocketFactory {
        @Override
        public Socket createSocket(String host, int port) throws IOException {
            return connect(new InetSocketAddress(host, port), null, 0);
        }

        @Override
        public ServerSocket createServerSocket(int port) throws IOException {
            return RMISocketFactory.getDefaultSocketFactory().createServerSocket(port);
        }
    }

    /** The JVM's default SSLSocketFactory: connect with the timeout, then layer the default context's TLS. */
    public static final class Tls extends SSLSocketFactory {
        private final SSLSocketFactory tls;

        // the JDK's default trust (cacerts), no client key, and a record of a node asking for one (TlsRoutes)
        public Tls() throws NoSuchAlgorithmException, KeyManagementException {
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(TlsRoutes.recording(null), null, null);
            tls = context.getSocketFactory();
        }

        // the cluster's own context where a route reaches host:port, else the JVM's default (tls_routes.py)
        private Socket secure(Socket plain, String host, int port, boolean autoClose) throws IOException {
            TlsRoutes.Route route = TlsRoutes.forDestination(host, port);
            SSLSocketFactory factory = route == null ? tls : route.factory;
            return TlsRoutes.track(host, port, factory.createSocket(plain, host, port, autoClose));
        }

        private Socket layer(Socket plain, String host, int port) throws IOException {
            try {
                // RMI's first write starts the TLS handshake before RMI sets a read timeout of its own:
                // without one, a peer that accepts but never answers would hold the thread forever.
                // RMI saves and restores this value around its handshake, and sets its own for responses.
                plain.setSoTimeout(millis());
                return secure(plain, host, port, true);
            } catch (IOException e) {
                plain.close();
                throw e;
            }
        }

        @Override
        public Socket createSocket(String host, int port) throws IOException {
            return layer(connect(new InetSocketAddress(host, port), null, 0), host, port);
        }

        @Override
        public Socket createSocket(String host, int port, InetAddress localHost, int localPort) throws IOException {
            return layer(connect(new InetSocketAddress(host, port), localHost, localPort), host, port);
        }

        // By address: the peer's name for TLS is its literal address (no reverse DNS lookup on this path).
        @Override
        public Socket createSocket(InetAddress host, int port) throws IOException {
            return layer(connect(new InetSocketAddress(host, port), null, 0), host.getHostAddress(), port);
        }

        @Override
        public Socket createSocket(InetAddress host, int port, InetAddress localHost, int localPort)
                throws IOException {
            Socket plain = connect(new InetSocketAddress(host, port), localHost, localPort);
            return layer(plain, host.getHostAddress(), port);
        }

        @Override
        public Socket createSocket() throws IOException {
            return tls.createSocket();  // unconnected: the caller connects, with its own timeout
        }

        @Override
        public Socket createSocket(Socket plain, String host, int port, boolean autoClose) throws IOException {
            return secure(plain, host, port, autoClose);
        }

        @Override
        public Socket createSocket(Socket plain, InputStream consumed, boolean autoClose) throws IOException {
            return tls.createSocket(plain, consumed, autoClose);
        }

        @Override
        public String[] getDefaultCipherSuites() {
            return tls.getDefaultCipherSuites();
        }

        @Override
        public String[] getSupportedCipherSuites() {
            return tls.getSupportedCipherSuites();
        }
    }
}
"""


def class_dir() -> Path:
    """The compiled classes (compiled on first use), for the JVM's class path. Raises JavacError."""
    return compiled_classes("exporter", {"ConnectTimeouts.java": JAVA_SOURCE, "TlsRoutes.java": tls_routes.JAVA_SOURCE})


def install() -> None:
    """Make the factories the JVM's defaults; call once, right after startJVM, before any RMI or TLS use.

    SSLSocketFactory.getDefault() reads the security property once, at its first call, and
    RMISocketFactory.setSocketFactory can be called only once per JVM.
    """
    from jpype import JClass

    JClass("java.security.Security").setProperty("ssl.SocketFactory.provider", TLS_FACTORY)
    JClass("java.rmi.server.RMISocketFactory").setSocketFactory(JClass(RMI_FACTORY)())
