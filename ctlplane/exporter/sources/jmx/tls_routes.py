"""Each cluster's own TLS for remote JMX in one JVM: the Java side, compiled from this source, and its key.

Why routes: the TLS of a JMX connection is not the client's to choose. An SSL agent's RMI stub carries the
server's `SslRMIClientSocketFactory` (the JDK agent's ConnectorBootstrap exports it so), and that factory makes
its sockets with `SSLSocketFactory.getDefault()`: one trust store and one client key for the whole JVM, so with
a trust store holding every cluster's CA each cluster would trust every other's (#61). The JVM's default
factory is ctlplane's own (`ConnectTimeouts$Tls`, connect_timeouts.py), and it asks `TlsRoutes` which
context each socket gets:
- a connection is made with its route entered on the connecting thread (`enter`/`leave` around
  `JMXConnectorFactory.connect`), so every socket made while connecting (the SSL registry lookup, the
  stub's first calls) takes that route's context, and its destination (host:port) is remembered;
- sockets made later on any thread (RMI reopens a pooled connection idle for 15 s,
  sun.rmi.transport.connectionTimeout; the DGC lease renewal calls from its own thread) take the route
  remembered for their destination;
- a socket to a destination no route has reached takes the JDK's default context (its cacerts).
A route that was entered but never put is refused, never silently given the default trust.

A route is a cluster's trust store (JKS or PKCS12; or PEM certificates, read into an in-memory store) and
optional key store, named by their files' identity: a file replaced under the same name (cert-manager's
renewal, a Kubernetes Secret's `..data` swap) names a new route, which takes the old one's destinations. RMI
keeps a node's TLS connection open between calls and reuses it, for the node's next connector too
(sun.rmi.transport.tcp.TCPChannel's free list), so a node whose route changed (a renewal, a reload naming
other files) has its TLS sockets closed and is connected again under the new route (`close_to`,
jpype_client.py): a renewed certificate or a withdrawn CA takes effect at the node's next read, not once a
connection idles out.
"""

from __future__ import annotations

import hashlib
import threading
import time
from typing import Any

from ctlplane.exporter.sources.files import file_stamps
from ctlplane.exporter.sources.jmx.base import JmxTls

CLASS = "ctlplane.jmx.TlsRoutes"
# how often a route's files are looked at again for a replacement: a renewal takes effect within a second
# of the next read, and a fleet's reads stat each file at most once a second
RECHECK_SECONDS = 1.0

JAVA_SOURCE = """\
package ctlplane.jmx;

import java.io.ByteArrayInputStream;
import java.io.File;
import java.io.IOException;
import java.net.Socket;
import java.security.Principal;
import java.security.PrivateKey;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;
import javax.net.ssl.KeyManager;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLSocketFactory;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509ExtendedKeyManager;
import javax.net.ssl.X509KeyManager;

/** Which TLS context a JMX socket gets, by the connecting thread's route or its destination (tls_routes.py). */
public final class TlsRoutes {
    private static final ConcurrentHashMap<String, Route> ROUTES = new ConcurrentHashMap<>();
    private static final ConcurrentHashMap<String, String> DESTINATIONS = new ConcurrentHashMap<>();
    // every TLS socket made, by destination (weakly: RMI drops the ones it closes), to close them (closeTo)
    private static final ConcurrentHashMap<String, Set<Socket>> SOCKETS = new ConcurrentHashMap<>();
    private static final ThreadLocal<String> CURRENT = new ThreadLocal<>();
    private static final ThreadLocal<List<String>> REACHED = new ThreadLocal<>();
    // whether a node asked this thread's last handshake for a client certificate: "none" (it had none) or
    // "offered". Under TLS 1.3 the node's refusal of a missing certificate comes after the client's Finished,
    // so RMI's first write may meet a closed socket ("Broken pipe") before the alert is read
    private static final ThreadLocal<String> ASKED = new ThreadLocal<>();

    private TlsRoutes() {}

    /** A cluster's context. */
    static final class Route {
        final SSLSocketFactory factory;

        Route(SSLSocketFactory factory) {
            this.factory = factory;
        }
    }

    /**
     * Route `name`: trust `trustPath` (a key store, or PEM certificates; null: the JDK's), present `keyPath`'s
     * key. With `replaces`, it takes that route's destinations (a socket made later for one gets the new one).
     */
    public static void put(String name, String replaces, String trustPath, char[] trustPassword, String keyPath,
            char[] keyPassword) throws IOException, GeneralSecurityException {
        TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        try {
            trust.init(trustPath == null ? null : trustStore(new File(trustPath), trustPassword));
        } catch (IOException | GeneralSecurityException e) {
            throw new GeneralSecurityException(trustPath, e);  // the file that failed, for the one-line error
        }
        KeyManager[] keys = null;
        if (keyPath != null) {
            KeyManagerFactory factory = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            try {
                factory.init(KeyStore.getInstance(new File(keyPath), keyPassword), keyPassword);
            } catch (IOException | GeneralSecurityException e) {
                throw new GeneralSecurityException(keyPath, e);
            }
            keys = factory.getKeyManagers();
        }
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(recording(keys), trust.getTrustManagers(), null);
        ROUTES.put(name, new Route(context.getSocketFactory()));
        if (replaces != null && !replaces.equals(name)) {
            DESTINATIONS.replaceAll((destination, route) -> route.equals(replaces) ? name : route);
            ROUTES.remove(replaces);
        }
    }

    private static KeyStore trustStore(File file, char[] password) throws IOException, GeneralSecurityException {
        byte[] bytes = Files.readAllBytes(file.toPath());
        if (!new String(bytes, 0, Math.min(bytes.length, 4096), StandardCharsets.ISO_8859_1).contains("-----BEGIN")) {
            return KeyStore.getInstance(file, password);  // JKS or PKCS12, told apart by the JDK
        }
        Collection<? extends Certificate> found =
                CertificateFactory.getInstance("X.509").generateCertificates(new ByteArrayInputStream(bytes));
        if (found.isEmpty()) {
            throw new GeneralSecurityException("no certificate in " + file);
        }
        KeyStore store = KeyStore.getInstance("PKCS12");
        store.load(null, null);
        int index = 0;
        for (Certificate certificate : found) {
            store.setCertificateEntry("ca-" + index++, certificate);
        }
        return store;
    }

    /** Sockets made on this thread take route `name` ("": the default context) until leave(). */
    public static void enter(String name) {
        CURRENT.set(name);
        REACHED.set(new ArrayList<>());
        ASKED.remove();
    }

    /** "none" if a node asked this thread's last handshake for a client certificate and it had none,
     * "offered" if it gave one, else null; cleared. */
    public static String askedForCertificate() {
        String asked = ASKED.get();
        ASKED.remove();
        return asked;
    }

    /** `keys` (null: none) behind a key manager that records what a node asked (ASKED). */
    static KeyManager[] recording(KeyManager[] keys) {
        X509KeyManager delegate = null;
        for (KeyManager key : keys == null ? new KeyManager[0] : keys) {
            if (key instanceof X509KeyManager) {
                delegate = (X509KeyManager) key;
                break;
            }
        }
        return new KeyManager[] {new Recording(delegate)};
    }

    static final class Recording extends X509ExtendedKeyManager {
        private final X509KeyManager delegate;

        Recording(X509KeyManager delegate) {
            this.delegate = delegate;
        }

        @Override
        public String chooseClientAlias(String[] keyType, Principal[] issuers, Socket socket) {
            String alias = delegate == null ? null : delegate.chooseClientAlias(keyType, issuers, socket);
            ASKED.set(alias == null ? "none" : "offered");
            return alias;
        }

        @Override
        public String[] getClientAliases(String keyType, Principal[] issuers) {
            return delegate == null ? null : delegate.getClientAliases(keyType, issuers);
        }

        @Override
        public String chooseServerAlias(String keyType, Principal[] issuers, Socket socket) {
            return null;  // a client only
        }

        @Override
        public String[] getServerAliases(String keyType, Principal[] issuers) {
            return null;
        }

        @Override
        public X509Certificate[] getCertificateChain(String alias) {
            return delegate == null ? null : delegate.getCertificateChain(alias);
        }

        @Override
        public PrivateKey getPrivateKey(String alias) {
            return delegate == null ? null : delegate.getPrivateKey(alias);
        }
    }

    /** The destinations this thread's sockets went to since enter(), and the route left. */
    public static String[] leave() {
        List<String> reached = REACHED.get();
        CURRENT.remove();
        REACHED.remove();
        return reached == null ? new String[0] : reached.toArray(new String[0]);
    }

    /** Close every TLS socket to these destinations, of any route: a node connected again under another. */
    public static void closeTo(String[] destinations) {
        for (String destination : destinations) {
            Set<Socket> open = SOCKETS.remove(destination);
            if (open == null) {
                continue;
            }
            List<Socket> sockets;
            synchronized (open) {
                sockets = new ArrayList<>(open);
            }
            for (Socket socket : sockets) {
                try {
                    socket.close();
                } catch (IOException ignored) {
                    // closed is all that is wanted; one already broken is as good
                }
            }
        }
    }

    static Socket track(String host, int port, Socket socket) {
        Set<Socket> open = SOCKETS.computeIfAbsent(
                host + ":" + port, key -> Collections.synchronizedSet(Collections.newSetFromMap(new WeakHashMap<>())));
        open.add(socket);
        return socket;
    }

    /** The route for a socket to host:port, or null for the default context. */
    static Route forDestination(String host, int port) throws SSLException {
        String destination = host + ":" + port;
        String name = CURRENT.get();
        if (name != null) {
            REACHED.get().add(destination);
            if (name.isEmpty()) {
                DESTINATIONS.remove(destination);
                return null;
            }
            DESTINATIONS.put(destination, name);
        } else {
            name = DESTINATIONS.get(destination);
        }
        if (name == null) {
            return null;
        }
        Route route = ROUTES.get(name);
        if (route == null) {
            throw new SSLException("no TLS context for route " + name + " (ctlplane did not load it)");
        }
        return route;
    }
}
"""


class RouteError(Exception):
    """The TLS material of a route does not load (a file unreadable, a wrong password, not a key store)."""


class TlsRoutes:
    """The routes put into the JVM, one per distinct material and file identity; safe from many threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._current: dict[JmxTls, tuple[float, tuple[object, ...], str]] = {}  # tls -> (checked, identity, name)

    def route_for(self, tls: JmxTls) -> str:
        """The route's name for `tls` now, put into the JVM on first use and again when a file is replaced."""
        now = time.monotonic()
        with self._lock:
            known = self._current.get(tls)
            if known is not None and now - known[0] < RECHECK_SECONDS:
                return known[2]
            identity = file_stamps((tls.trust_file, tls.key_file))
            if known is not None and known[1] == identity:
                self._current[tls] = (now, identity, known[2])
                return known[2]
            name = _name(tls, identity)
            _put(name, known[2] if known is not None else None, tls)
            self._current[tls] = (now, identity, name)
            return name


def _name(tls: JmxTls, identity: tuple[object, ...]) -> str:
    # passwords enter only the digest, so a route's name never shows one
    text = repr((tls.trust_file, tls.trust_password, tls.key_file, tls.key_password, identity))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


_JAVA: list[Any] = []  # [the TlsRoutes class, or None where it was not compiled]: looked up once


def _java() -> Any:
    if not _JAVA:
        from jpype import JClass

        try:
            _JAVA.append(JClass(CLASS))
        except Exception:  # not on the class path: start_jvm logged why javac failed
            _JAVA.append(None)
    return _JAVA[0]


def _put(name: str, replaces: str | None, tls: JmxTls) -> None:
    import jpype

    routes = _java()
    if routes is None:
        raise RouteError("JMX TLS: ctlplane's Java side could not be compiled (see the log's javac error)")

    def chars(password: str | None) -> Any:
        return None if password is None else jpype.JArray(jpype.JChar)(password)

    try:
        routes.put(name, replaces, tls.trust_file, chars(tls.trust_password), tls.key_file, chars(tls.key_password))
    except jpype.JException as exc:
        raise RouteError(_why(exc, tls)) from None


def _why(exc: Any, tls: JmxTls) -> str:
    failed = str(exc.getMessage() or "")  # the file, as put() names it
    cause, passwords = exc, False
    while cause.getCause() is not None and cause.getCause() is not cause:
        cause = cause.getCause()
        text = str(cause.getMessage() or "")
        passwords |= cause.getClass().getSimpleName() == "UnrecoverableKeyException" or "password" in text
    if failed not in (tls.trust_file, tls.key_file):
        failed = ", ".join(path for path in (tls.trust_file, tls.key_file) if path is not None)
    if passwords:
        store = "key store" if failed == tls.key_file else "trust store"
        return f"JMX TLS: {failed}: a wrong {store} password"
    return f"JMX TLS: {failed} does not load ({cause.getClass().getSimpleName()}: {cause.getMessage()})"


class Entered:
    """`with Entered(name):` the calling thread's TLS sockets take route `name` (None: the JVM's default
    context); `reached` is then the destinations they went to (an SSL stub's host:port may not be the
    registry's: the server's java.rmi.server.hostname and rmi.port)."""

    def __init__(self, name: str | None) -> None:
        self.name = name
        self.reached: tuple[str, ...] = ()

    def __enter__(self) -> Entered:
        if (routes := _java()) is not None:
            routes.enter(self.name or "")
        return self

    def __exit__(self, *_: object) -> None:
        if (routes := _java()) is not None:
            self.reached = tuple(str(destination) for destination in routes.leave())


def close_to(destinations: tuple[str, ...]) -> None:
    """Close every TLS socket to `destinations`: RMI keeps a node's connection open between calls and reuses
    it for the node's next connector (sun.rmi.transport.tcp.TCPChannel's free list), so a node connected again
    under other TLS material would otherwise go on over one made under the old. Closed, a call finds it dead
    (TCPConnection.isDead pings it first) and connects again."""
    if destinations and (routes := _java()) is not None:
        import jpype

        routes.closeTo(jpype.JArray(jpype.JString)(list(destinations)))


def asked_for_certificate() -> str | None:
    """Whether a node asked this thread's last TLS handshake for a client certificate ("none": ctlplane had
    none to give; "offered"), read once; None where the Java side is not compiled."""
    routes = _java()
    asked = routes.askedForCertificate() if routes is not None else None
    return None if asked is None else str(asked)
