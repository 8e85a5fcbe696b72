"""The metadata quorum's own view of a cluster, through Kafka's Admin API in the process's JVM.

Kafka's Java client (`org.apache.kafka:kafka-clients`, carried by the wheel in `jars/`, else fetched from
Maven Central once into the checkout's cache) runs in the JVM that JPype already hosts for JMX: no
Kafka protocol is re-implemented here. `Admin.describeMetadataQuorum()` (KIP-836, Kafka 3.3+) answers what
`kafka-metadata-quorum.sh describe --replication` prints: the leader, its epoch and high watermark, and for
every voter (controller) and observer (broker) its log end offset, last fetch and last caught-up time.

The JVM's class path is fixed when it starts, and the JMX client may have started it before any cluster
asked for the quorum's view, so the client's jars are loaded through a class loader of their own.
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ctlplane.exporter.catalog import Role
from ctlplane.exporter.jvm.javac import cache_root
from ctlplane.exporter.model import OBSERVER_HEARD_WITHIN_SECONDS, Member, QuorumReplica, QuorumView, merged
from ctlplane.exporter.releases import CLIENT_VERSION
from ctlplane.exporter.sources.admin.client_key import ClientKeyError, decrypt_client_key
from ctlplane.exporter.sources.admin.security import ClientSecurity

log = logging.getLogger(__name__)

# What to fetch, as a Maven project (also the container image's build stage, Dockerfile): kafka-clients
# without the compression codecs and their native libraries (the admin client needs none), and slf4j-nop so
# that the client's logging (slf4j-api 1.7) stays out of the exporter's stderr.
POM_FILE = Path(__file__).with_name("kafka-clients.pom.xml")
# The jars the package carries (issue #50): the pom's, placed here by `make wheel`/`make jars`
# (tools/client_jars.py) before the wheel is built, never committed (.gitignore); with the licence and NOTICE
# files their licences ask for beside them. An installed wheel needs neither Maven nor the network.
PACKAGED_JARS = Path(__file__).with_name("jars")
# A directory of the same jars, for a package built without them; only where the package carries none.
JARS_ENV = "CTLPLANE_KAFKA_CLIENT_JARS"
MAIN_JAR = f"kafka-clients-{CLIENT_VERSION}.jar"

_fetch_lock = threading.Lock()
# A failed fetch (no Maven, no network) is not retried every round: its error stands this long.
FETCH_RETRY_SECONDS = 300.0
_fetch_failure: tuple[float, str] | None = None
_loader_lock = threading.Lock()
_loader: Any = None


class AdminClientError(Exception):
    """The Kafka client jars cannot be fetched or loaded: the quorum's view is off, JMX goes on."""


def in_checkout(module: Path = Path(__file__)) -> bool:
    """Whether this module runs from the repository's checkout (an editable install, `make`), not from an
    installed package: only there may the jars be fetched with Maven."""
    return (module.resolve().parents[4] / "pyproject.toml").is_file()  # <checkout>/ctlplane/exporter/sources/admin/…


def packaged_client() -> bool:
    """Whether the package carries the client's jars (a wheel built by `make wheel`)."""
    return (PACKAGED_JARS / MAIN_JAR).is_file()


def client_jars() -> list[Path]:
    """The client's jars: the package's own (`ctlplane/exporter/sources/admin/jars/`), else
    `$CTLPLANE_KAFKA_CLIENT_JARS`, else, in a checkout only, the cache (`.cache/kafka-clients/<hash of the
    pom>/`) fetched with Maven the first time (fetched_jars). An installed package without jars raises
    AdminClientError saying what to do, without looking for Maven."""
    if packaged_client():
        return sorted(PACKAGED_JARS.glob("*.jar"))
    baked = os.environ.get(JARS_ENV)
    if baked:
        if not (Path(baked) / MAIN_JAR).is_file():
            raise AdminClientError(f"{JARS_ENV}={baked} has no {MAIN_JAR}")
        return sorted(Path(baked).glob("*.jar"))
    if not in_checkout():
        raise AdminClientError(
            f"the quorum's view needs org.apache.kafka:kafka-clients:{CLIENT_VERSION}, which this package does "
            f"not carry (built without `make wheel`): install a wheel built by `make wheel`, or set {JARS_ENV} "
            f"to a directory holding {MAIN_JAR} and its dependencies"
        )
    return fetched_jars()


def fetched_jars() -> list[Path]:
    """The pom's jars in the cache (`.cache/kafka-clients/<hash of the pom>/`), fetched with Maven the first
    time: what `make jars` fetches and tools/client_jars.py places in the package.

    Maven writes into a private directory that is renamed into place whole, so processes starting together
    never see half a directory. Raises AdminClientError with Maven's own words if it fails."""
    pom = POM_FILE.read_text()
    target = cache_root() / "kafka-clients" / hashlib.sha256(pom.encode()).hexdigest()[:16]
    global _fetch_failure
    with _fetch_lock:
        if not (target / MAIN_JAR).is_file():
            if _fetch_failure is not None and time.monotonic() - _fetch_failure[0] < FETCH_RETRY_SECONDS:
                raise AdminClientError(_fetch_failure[1])
            try:
                _fetch(target, pom)
            except AdminClientError as exc:
                _fetch_failure = (time.monotonic(), str(exc))
                raise
            _fetch_failure = None
    return sorted(target.glob("*.jar"))


def _fetch(target: Path, pom_text: str) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise AdminClientError(
            f"the quorum's view needs org.apache.kafka:kafka-clients:{CLIENT_VERSION}: it is not in {target} "
            "and 'mvn' is not on PATH to fetch it (`make jars` fetches it; a wheel built by `make wheel` carries it)"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix="fetch-") as build:
        pom = Path(build) / "pom.xml"
        pom.write_text(pom_text)
        jars = Path(build) / "jars"
        command = [mvn, "-q", "-B", "-f", str(pom), "dependency:copy-dependencies", f"-DoutputDirectory={jars}"]
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise AdminClientError(f"fetching kafka-clients failed: {exc}") from exc
        if result.returncode != 0 or not (jars / MAIN_JAR).is_file():
            tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-20:])
            raise AdminClientError(f"fetching kafka-clients failed ({shlex.join(command)}):\n{tail}")
        try:
            jars.rename(target)
        except OSError:
            if not (target / MAIN_JAR).is_file():
                raise


def class_loader() -> Any:
    """A class loader over the client's jars, parented by the JVM's (which the JMX client started)."""
    global _loader
    with _loader_lock:
        if _loader is None:
            import jpype

            if not jpype.isJVMStarted():
                raise AdminClientError("the JVM is not started (the JMX client starts it)")
            from java.net import URL, URLClassLoader

            urls = jpype.JArray(URL)([URL(jar.resolve().as_uri()) for jar in client_jars()])
            _loader = URLClassLoader(urls, jpype.JClass("java.lang.ClassLoader").getSystemClassLoader())
        return _loader


def java_class(name: str) -> Any:
    import jpype

    return jpype.JClass(name, loader=class_loader())


# Kafka refuses every OAuth token and JWKS URL not listed in this JVM system property (3.9.1+/4.0+, empty by
# default on 4.0+: BrokerSecurityConfigs.ALLOWED_SASL_OAUTHBEARER_URLS_CONFIG), read anew at each check as a
# comma-separated set of exact, trimmed strings (ConfigurationUtils.throwIfResourceIsNotAllowed, 4.3).
ALLOWED_URLS_PROPERTY = "org.apache.kafka.sasl.oauthbearer.allowed.urls"
TOKEN_ENDPOINT_KEY = "sasl.oauthbearer.token.endpoint.url"
_allowed_lock = threading.Lock()


def allow_oauth_urls(urls: Sequence[str]) -> str:
    """Add `urls` to the JVM's allowed OAuth URLs, keeping what is there (other clusters' endpoints, a `-D`
    given to the JVM): one property for the whole process, so every cluster's endpoint is merged into it.
    Returns the property's new value."""
    from java.lang import System

    with _allowed_lock:
        current = str(System.getProperty(ALLOWED_URLS_PROPERTY) or "")
        allowed = [u.strip() for u in current.split(",") if u.strip()]
        allowed += [u.strip() for u in urls if u.strip() and u.strip() not in allowed]
        value = ",".join(allowed)
        System.setProperty(ALLOWED_URLS_PROPERTY, value)
        return value


def allow_token_endpoint(properties: Any) -> None:
    """Allow the token endpoint `properties` (a java.util.Properties) names, before its client logs in."""
    url = properties.getProperty(TOKEN_ENDPOINT_KEY)
    if url is not None:
        allow_oauth_urls([str(url)])


# The JDK's Kerberos reads one krb5.conf per JVM, named by this system property (sun.security.krb5.Config
# .getJavaFileName: read again only by Config.refresh(), which Krb5LoginModule calls before each login with
# refreshKrb5Config=true, as every GSSAPI client here asks: kerberos_properties)
KRB5_CONF_PROPERTY = "java.security.krb5.conf"
_krb5_lock = threading.Lock()
_krb5_file: Path | None = None


def use_krb5_conf(text: str) -> Path:
    """Make `text` (kerberos.merge_krb5_confs: every GSSAPI cluster's realms) the JVM's krb5.conf: written to a
    file of this process's own (replaced whole, so a login never reads half of it) and named by the system
    property, replacing any value given to the JVM. Takes effect at each client's next login."""
    from java.lang import System

    global _krb5_file
    with _krb5_lock:
        if _krb5_file is None:
            directory = Path(tempfile.mkdtemp(prefix="ctlplane-krb5-"))
            atexit.register(shutil.rmtree, directory, True)
            _krb5_file = directory / "krb5.conf"
        if not _krb5_file.is_file() or _krb5_file.read_text() != text:
            written = _krb5_file.with_name("krb5.conf.new")
            written.write_text(text)
            written.replace(_krb5_file)
        System.setProperty(KRB5_CONF_PROPERTY, str(_krb5_file))
        return _krb5_file


def prepare_client(properties: Any) -> None:
    """What `properties` (a java.util.Properties) need before any Kafka client is made over them: an
    OAUTHBEARER client's token endpoint allowed (allow_oauth_urls: the client logs in while it is made), an
    encrypted client key decrypted (client_key.py: Kafka's own decryption lacks PBES2 on JDK 17).
    AdminClientError where the key does not decrypt."""
    allow_token_endpoint(properties)
    try:
        decrypt_client_key(properties)
    except ClientKeyError as exc:
        raise AdminClientError(str(exc)) from None


def create_admin(properties: Any) -> Any:
    """Kafka's Admin client over `properties` (a java.util.Properties, prepare_client's first), on any thread."""
    from java.lang import Thread

    prepare_client(properties)

    # The client loads configured classes through the thread's context class loader
    # (Utils.getContextOrKafkaClassLoader): make it the one that holds the client's jars while it is made.
    thread = Thread.currentThread()
    previous = thread.getContextClassLoader()
    thread.setContextClassLoader(class_loader())
    try:
        return java_class("org.apache.kafka.clients.admin.Admin").create(properties)
    finally:
        thread.setContextClassLoader(previous)


def _optional_seconds(value: Any) -> float | None:
    """An OptionalLong of epoch milliseconds as unix seconds."""
    return int(value.getAsLong()) / 1000.0 if value.isPresent() else None


def _quorum_members(info: Any, now: float, controller_ids: frozenset[int] = frozenset()) -> list[Member]:
    """The voters (controllers, with the host of their first endpoint where the leader gives endpoints:
    DescribeQuorum v2, Kafka 3.9+, KIP-853) and the observers (no host) of a QuorumInfo. An observer is a
    broker unless `controller_ids` (the controllers that describeCluster through bootstrap.controllers names,
    KIP-919) has it: a controller of a dynamic quorum fetches as an observer until it is added as a voter
    (KIP-853), and it is a controller all the same."""
    hosts: dict[int, str] = {}
    for node_id, node in dict(info.nodes()).items():
        endpoints = list(node.endpoints())
        if endpoints:
            hosts[int(node_id)] = str(endpoints[0].host())
    voters = [Member(int(s.replicaId()), Role.CONTROLLER, hosts.get(int(s.replicaId()))) for s in info.voters()]
    observers = []
    for state in info.observers():
        fetched_at = _optional_seconds(state.lastFetchTimestamp())
        heard = fetched_at is not None and now - fetched_at <= OBSERVER_HEARD_WITHIN_SECONDS
        node_id = int(state.replicaId())
        role = Role.CONTROLLER if node_id in controller_ids else Role.BROKER
        observers.append(Member(node_id, role, current=heard))
    return voters + observers


ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"  # Uuid.ZERO_UUID.toString(): what a replica without a directory id reports


def _directory_id(state: Any) -> str | None:
    """ReplicaState.replicaDirectoryId() (3.9+) as Kafka prints it; None before 3.9 or where it is unset."""
    getter = getattr(state, "replicaDirectoryId", None)
    if getter is None:
        return None
    text = str(getter())
    return None if text == ZERO_UUID else text


def quorum_view(info: Any, read_at: float) -> QuorumView:
    """A QuorumInfo (Java) as a QuorumView."""
    replicas = [
        QuorumReplica(
            replica_id=int(state.replicaId()),
            voter=voter,
            log_end_offset=int(state.logEndOffset()),
            last_fetch_at=_optional_seconds(state.lastFetchTimestamp()),
            last_caught_up_at=_optional_seconds(state.lastCaughtUpTimestamp()),
            directory_id=_directory_id(state),
        )
        for voter, states in ((True, info.voters()), (False, info.observers()))
        for state in states
    ]
    return QuorumView(
        read_at=read_at,
        leader_id=int(info.leaderId()),
        leader_epoch=int(info.leaderEpoch()),
        high_watermark=int(info.highWatermark()),
        replicas=tuple(sorted(replicas, key=lambda r: (not r.voter, r.replica_id))),
    )


# A read's deadline is shared by up to this many tries, each asked anew when the last timed out. A node that
# takes a request and never answers it (a hung broker, or one cut off from the quorum that holds what it should
# forward: DescribeQuorum, KIP-836) keeps the Admin client's call until the call's own deadline: the client's
# I/O thread sleeps until the next call deadline (its NetworkClient is made with an hour's request timeout), so
# `request.timeout.ms` is noticed only then (seen with Kafka's own client, 4.3.1: a 2 s request timeout, a 10 s
# call, one try, failed at 10 s). The call's expiry drops that node's connection and refreshes the client's
# metadata; the next call goes to the least loaded node, another one.
ATTEMPTS = 3
MIN_ATTEMPT_MS = 1000


def _timed_out(error: str | None) -> bool:
    return error is not None and ("TimeoutException" in error or error.startswith("no answer within"))


# Java's wrappers around what Kafka said (Future.get's ExecutionException, and the like)
_WRAPPERS = frozenset({"ExecutionException", "CompletionException", "UndeclaredThrowableException"})


def _class_and_message(throwable: Any) -> tuple[str, str]:
    name = throwable.getClass().getSimpleName() if hasattr(throwable, "getClass") else type(throwable).__name__
    message = throwable.getMessage() if hasattr(throwable, "getMessage") else str(throwable)
    return str(name), str(message or "")


def kafka_reason(exc: BaseException) -> str:
    """Kafka's exception and, where it has a cause, the root cause: "SslAuthenticationException: SSL
    handshake failed (SunCertPathBuilderException: unable to find valid certification path ...)" says both
    what failed and why."""
    chain = _chain(exc)
    said = next((t for t in chain if _class_and_message(t)[0] not in _WRAPPERS), chain[-1])
    name, message = _class_and_message(said)
    text = f"{name}: {message}" if message else name
    if chain[-1] is not said:
        root_name, root_message = _class_and_message(chain[-1])
        if root_message not in text:
            text += f" ({root_name}: {root_message})" if root_message else f" ({root_name})"
    return text


# Refused credentials, not a Kafka fault: the broker refused the SASL exchange (SaslAuthenticationException, an
# AuthenticationException), or the client got no token to offer (OAUTHBEARER: the token endpoint refused the
# client id and secret, or answered no usable token; Kafka's login says so with a LoginException or a
# JwtRetrieverException/JwtValidatorException, kafka-clients 4.1+), or the listener offers no such mechanism
# (UnsupportedSaslMechanismException, an AuthenticationException: the config names the wrong listener or
# mechanism, AWS_MSK_IAM on a listener that is not MSK's IAM one)
_AUTH_FAILURES = frozenset(
    {
        "AuthenticationException",
        "SaslAuthenticationException",
        "UnsupportedSaslMechanismException",
        "LoginException",
        "JwtRetrieverException",
        "JwtValidatorException",
    }
)

_NO_TOKEN = frozenset({"LoginException", "JwtRetrieverException", "JwtValidatorException"})


def _chain(exc: BaseException) -> list[Any]:
    chain: list[Any] = [exc]
    while len(chain) < 10 and (inner := chain[-1].getCause() if hasattr(chain[-1], "getCause") else None):
        chain.append(inner)
    return chain


# "org.apache.kafka.common.KafkaException: java.io.IOException: why": a throwable's toString() inside a message
_QUALIFIED = re.compile(r"^(?:[a-z_$][\w$]*\.)+([A-Z][\w$]*): (.*)$")
# where a Throwable's message holds its stack trace (Kafka's LoginException does: LoginManager)
_STACK = re.compile(r"\s+at [\w$.]+\(")


def _said(message: str) -> tuple[str | None, str]:
    """A message's first line, without its stack trace, and the innermost exception it names, if any."""
    text = _STACK.split(message.strip().splitlines()[0] if message.strip() else "", maxsplit=1)[0]
    name = None
    while (found := _QUALIFIED.match(text)) is not None:
        name, text = found.group(1), found.group(2)
    return name, text


# What admin_reason starts a refusal with: the cluster refused ctlplane's credentials (authentication) or its
# principal's rights (authorisation: Kafka's AuthorizationException and its subclasses, e.g. the
# ClusterAuthorizationException of DescribeQuorum without Describe on the cluster, ControllerApis.scala). Either
# is the operator's to fix (docs/ports-and-acls.md), not a fault of the cluster: QuorumView.refused.
AUTHENTICATION_FAILED = "authentication failed: "
NOT_AUTHORISED = "not authorised: "


def is_refusal(reason: str | None) -> bool:
    """Whether `reason` (admin_reason's) says the cluster refused ctlplane's credentials or rights."""
    return reason is not None and reason.startswith((AUTHENTICATION_FAILED, NOT_AUTHORISED))


# Where a Kerberos login could not reach a KDC: Krb5LoginModule.attemptAuthentication wraps the KDC exchange's
# IOException (KdcComm: UDP or TCP to each `kdc` of the realm) in its LoginException, as it wraps a KrbException
# (the KDC's refusal: "Pre-authentication information was invalid (24)", "Client not found in Kerberos
# database (6)")
_UNREACHED = frozenset(
    {"SocketTimeoutException", "PortUnreachableException", "ConnectException", "UnknownHostException"}
)
# what Kafka's login callback answers when Krb5LoginModule asks for a password, which it does when the keytab
# holds no key for the principal (AbstractLogin.DefaultLoginCallbackHandler)
_ASKED_FOR_A_PASSWORD = "is being asked for a password"


def admin_reason(exc: BaseException, mechanism: str | None = None) -> str:
    """kafka_reason on one line, or, where Kafka says the credentials were refused, "authentication failed:"
    and why (a refused credential is the operator's to fix, not a fault of the cluster): the broker refused the
    SASL exchange, or the login got no token (the token endpoint refused the client: Kafka's LoginException
    holds the cause's stack trace in its message, HttpJwtRetriever's words are its first line), or, for
    `mechanism` GSSAPI, the Kerberos login failed or got no ticket for the broker (kerberos_reason); where the
    principal lacks an ACL, "not authorised:" and Kafka's words."""
    chain = _chain(exc)
    refused = [t for t in chain if _class_and_message(t)[0] in _AUTH_FAILURES]
    if not refused:
        said = " ".join(kafka_reason(exc).split())
        denied = any(_class_and_message(t)[0].endswith("AuthorizationException") for t in chain)
        return f"{NOT_AUTHORISED}{said}" if denied else said
    login_failed = any(_class_and_message(t)[0] in _NO_TOKEN for t in refused)
    if mechanism == "GSSAPI":
        return kerberos_reason(chain, login_failed)
    name, message = _class_and_message(chain[-1])
    inner, message = _said(message)
    said = f"{inner or name}: {message}" if message else inner or name
    if login_failed:
        return f"{AUTHENTICATION_FAILED}the login got no token ({said})"
    return f"{AUTHENTICATION_FAILED}{said}"


def kerberos_reason(chain: Sequence[Any], login_failed: bool) -> str:
    """Why a GSSAPI client was refused, from its exception's chain (outermost first). The JDK's KrbException
    says it (the KDC's error text and code, sun.security.krb5.KrbException(int)); the root cause under it
    misleads: a KRB-ERROR the JDK first tried to read as the answer it wanted is an Asn1Exception "Identifier
    doesn't match expected value (906)" (KrbAsRep, KrbTgsRep), under "Pre-authentication information
    was invalid (24)" or "Server not found in Kerberos database (7)". A KDC that never answers leaves an
    IOException instead (Krb5LoginModule.attemptAuthentication wraps both in its LoginException)."""
    said_by = [
        t
        for t in chain
        if _class_and_message(t)[0].startswith("Krb") and _class_and_message(t)[0].endswith("Exception")
    ]
    name, message = _class_and_message(said_by[0] if said_by else chain[-1])
    inner, message = _said(message)
    said = f"{inner or name}: {message}" if message else inner or name
    if _ASKED_FOR_A_PASSWORD in said:
        return f"{AUTHENTICATION_FAILED}the keytab holds no key for the principal (the login asked for a password)"
    if not said_by and (inner or name) in _UNREACHED:
        return f"{AUTHENTICATION_FAILED}no KDC answered the Kerberos login ({said})"
    if login_failed:
        return f"{AUTHENTICATION_FAILED}the Kerberos login failed ({said})"
    if said_by:
        # Kafka's SaslClientAuthenticator: the ticket for <service name>/<broker host> was not given
        return f"{AUTHENTICATION_FAILED}no service ticket for the broker ({said})"
    return f"{AUTHENTICATION_FAILED}{said}"


# Kafka's login modules per SASL mechanism (clients/.../security/plain, .../security/scram)
_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
OAUTH_LOGIN_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
# KIP-768's OIDC login handler: in `...oauthbearer.secured` in 3.1-3.3, in `...oauthbearer` since 3.4 (KIP-768's
# move; kafka-clients 4.3.1 carries org/apache/kafka/common/security/oauthbearer/OAuthBearerLoginCallbackHandler)
OAUTH_LOGIN_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"


@dataclass(frozen=True)
class OAuthLogin:
    """OIDC client credentials for OAUTHBEARER (KIP-768); the secret is never in its repr."""

    token_endpoint_url: str
    client_id: str | None
    client_secret: str | None = field(default=None, repr=False)
    scope: str | None = None


def oauth_properties(login: OAuthLogin) -> dict[str, str]:
    """OAUTHBEARER with Kafka's OIDC login handler: it asks the token endpoint for a token (client_credentials,
    the id and secret as HTTP basic auth: ClientCredentialsRequestFormatter) and refreshes it before it expires
    (ExpiringCredentialRefreshingLogin); a `file:` endpoint is a token file (FileJwtRetriever)."""
    named = (("clientId", login.client_id), ("clientSecret", login.client_secret), ("scope", login.scope))
    options = [f"{name}={_jaas_quoted(value)}" for name, value in named if value is not None]
    return {
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.login.callback.handler.class": OAUTH_LOGIN_HANDLER,
        TOKEN_ENDPOINT_KEY: login.token_endpoint_url,
        "sasl.jaas.config": f"{OAUTH_LOGIN_MODULE} required {' '.join(options)};".replace(" ;", ";"),
    }


KRB5_LOGIN_MODULE = "com.sun.security.auth.module.Krb5LoginModule"


@dataclass(frozen=True)
class KerberosLogin:
    """A principal and its keytab for SASL GSSAPI; `service_name` is the brokers' (their principals are
    <service_name>/<host>@REALM)."""

    principal: str
    keytab_file: str
    service_name: str = "kafka"


def kerberos_properties(login: KerberosLogin) -> dict[str, str]:
    """GSSAPI with a keytab, as Kafka's documentation writes it (docs/security.html, "Configuring Kafka Clients":
    Krb5LoginModule required useKeyTab=true storeKey=true keyTab="..." principal="..."), logged in by Kafka's
    KerberosLogin (SaslChannelBuilder's default login class for GSSAPI), which logs in again before the ticket
    expires. The service name goes in `sasl.kerberos.service.name` (KerberosLogin.getServiceName refuses it
    given differently in the JAAS options too). refreshKrb5Config=true: Krb5LoginModule.login re-reads the
    JVM's krb5.conf first, so one that use_krb5_conf wrote after the JVM's first Kerberos use is the one read."""
    options = (
        ("useKeyTab", "true"),
        ("storeKey", "true"),
        ("keyTab", _jaas_quoted(login.keytab_file)),
        ("principal", _jaas_quoted(login.principal)),
        ("refreshKrb5Config", "true"),
    )
    return {
        "sasl.mechanism": "GSSAPI",
        "sasl.kerberos.service.name": login.service_name,
        "sasl.jaas.config": f"{KRB5_LOGIN_MODULE} required {' '.join(f'{k}={v}' for k, v in options)};",
    }


@dataclass(frozen=True)
class AwsIamLogin:
    """Where AWS_MSK_IAM's credentials come from: AWS's default chain, else `profile`; `role_arn` assumed with
    them (through `sts_region`'s STS endpoint, the global one without)."""

    profile: str | None = None
    role_arn: str | None = None
    role_session_name: str | None = None
    sts_region: str | None = None


# aws-msk-iam-auth's login module and SASL client callback (its README, "Configuring a Kafka client to use AWS
# IAM"); the JAAS options are IAMLoginModule's (awsProfileName, awsRoleArn, awsRoleSessionName, awsStsRegion)
IAM_LOGIN_MODULE = "software.amazon.msk.auth.iam.IAMLoginModule"
IAM_CALLBACK_HANDLER = "software.amazon.msk.auth.iam.IAMClientCallbackHandler"


def aws_iam_properties(login: AwsIamLogin) -> dict[str, str]:
    """SASL AWS_MSK_IAM: the library signs each login (SigV4, action kafka-cluster:Connect) with credentials it
    resolves itself at each login, so renewed ones (IRSA's web identity token, an instance role) are used."""
    options = (
        ("awsProfileName", login.profile),
        ("awsRoleArn", login.role_arn),
        ("awsRoleSessionName", login.role_session_name),
        ("awsStsRegion", login.sts_region),
    )
    given = "".join(f" {name}={_jaas_quoted(value)}" for name, value in options if value is not None)
    return {
        "sasl.mechanism": "AWS_MSK_IAM",
        "sasl.jaas.config": f"{IAM_LOGIN_MODULE} required{given};",
        "sasl.client.callback.handler.class": IAM_CALLBACK_HANDLER,
    }


def _jaas_quoted(value: str) -> str:
    """A JAAS option value as Kafka's parser reads it (clients/.../common/security/JaasConfig.java: a
    java.io.StreamTokenizer, whose quoted strings take backslash escapes and end at a line break, so a line
    break cannot be quoted at all)."""
    if "\n" in value or "\r" in value:
        raise ValueError(
            "a SASL user, password or client secret cannot contain a line break "
            "(Kafka's JAAS parser ends the value there)"
        )
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True)
class JavaStore:
    """A JKS or PKCS12 store file as Kafka's client reads it: `ssl.truststore.*` or `ssl.keystore.*`. A trust
    store's password is optional (Kafka reads it unchecked without); a key store's is not."""

    location: str
    type: str  # JKS, JCEKS or PKCS12 (config/stores.py store_type)
    password: str | None = field(default=None, repr=False)

    def properties(self, prefix: str) -> dict[str, str]:
        props = {f"{prefix}.type": self.type, f"{prefix}.location": self.location}
        if self.password is not None:
            props[f"{prefix}.password"] = self.password
        return props


def security_properties(
    protocol: str,
    mechanism: str | None = None,
    username: str | None = None,
    password: str | None = None,
    *,
    ca_file: str | None = None,
    certificate: tuple[str, str] | None = None,
    key_password: str | None = None,
    truststore: JavaStore | None = None,
    keystore: JavaStore | None = None,
    oauth: OAuthLogin | None = None,
    kerberos: KerberosLogin | None = None,
    aws_iam: AwsIamLogin | None = None,
) -> dict[str, str]:
    """The admin client's security settings: `security.protocol`; for SASL the mechanism and an inline
    `sasl.jaas.config`; for TLS the CA to trust (`ca_file`, PEM) and the client's (certificate chain, key)
    as PEM text (KIP-651's `ssl.keystore.certificate.chain` / `ssl.keystore.key`), an encrypted key's password
    as `ssl.key.password` (create_admin decrypts such a key itself before the client is made: client_key.py);
    or a JKS/PKCS12 `truststore` and `keystore` as files Kafka reads, `key_password` then the key entry's
    password where it is not the store's (DefaultSslEngineFactory.FileBasedStore: the store's otherwise).
    The password, the JAAS config, the key and its password are PASSWORD-type configs, which Kafka never logs
    in clear."""
    props = {"security.protocol": protocol}
    if protocol.startswith("SASL_") and mechanism == "OAUTHBEARER":
        if oauth is None:
            raise ValueError("OAUTHBEARER needs the OIDC client credentials (oauth)")
        props |= oauth_properties(oauth)
    elif protocol.startswith("SASL_") and mechanism == "GSSAPI":
        if kerberos is None:
            raise ValueError("GSSAPI needs a principal and its keytab (kerberos)")
        props |= kerberos_properties(kerberos)
    elif protocol.startswith("SASL_") and mechanism == "AWS_MSK_IAM":
        if aws_iam is None:
            raise ValueError("AWS_MSK_IAM needs where its AWS credentials come from (aws_iam)")
        props |= aws_iam_properties(aws_iam)
    elif protocol.startswith("SASL_"):
        if mechanism not in _LOGIN_MODULES or username is None or password is None:
            raise ValueError(f"{protocol} needs one of {', '.join(_LOGIN_MODULES)}, a username and a password")
        props["sasl.mechanism"] = mechanism
        props["sasl.jaas.config"] = (
            f"{_LOGIN_MODULES[mechanism]} required username={_jaas_quoted(username)} password={_jaas_quoted(password)};"
        )
    if ca_file is not None:
        props |= {"ssl.truststore.type": "PEM", "ssl.truststore.location": ca_file}
    if truststore is not None:
        props |= truststore.properties("ssl.truststore")
    if keystore is not None:
        props |= keystore.properties("ssl.keystore")
    if certificate is not None:
        chain, key = certificate
        props |= {"ssl.keystore.type": "PEM", "ssl.keystore.certificate.chain": chain, "ssl.keystore.key": key}
    if key_password is not None and (certificate is not None or keystore is not None):
        props["ssl.key.password"] = key_password
    return props


class QuorumReader:
    """One cluster's Admin client, kept between rounds and rebuilt after a failure.

    `controllers`: the addresses are KRaft controllers (`bootstrap.controllers`, KIP-919), which answer
    even when every broker is down; else brokers (`bootstrap.servers`). Every call has its own deadline
    (`timeout_seconds`): the client's request and API timeouts, and the wait for the answer."""

    def __init__(
        self,
        cluster: str,
        bootstrap: Sequence[str],
        *,
        controllers: bool,
        timeout_seconds: float,
        security: ClientSecurity | Mapping[str, str] | None = None,
    ) -> None:
        self.cluster = cluster
        self.bootstrap = tuple(bootstrap)
        self.controllers = controllers
        # security_properties(), made again when a file behind them changes: they hold the SASL password
        self._security = security if isinstance(security, ClientSecurity) else ClientSecurity.fixed(security)
        self.timeout_ms = max(1, int(timeout_seconds * 1000))
        self._admin: Any = None
        self._lock = threading.Lock()
        self._fenced_listed = True  # until the brokers say they cannot (before Kafka 4.0)
        self._fenced_refusal: str | None = None  # what they said then
        # every error names what was asked: Kafka's own messages do not say which cluster or address
        self._where = f"{'bootstrap.controllers' if controllers else 'bootstrap.servers'} {','.join(self.bootstrap)}"

    def _properties(self) -> Any:
        from java.util import Properties

        props = Properties()
        key = "bootstrap.controllers" if self.controllers else "bootstrap.servers"
        props.setProperty(key, ",".join(self.bootstrap))
        props.setProperty("client.id", f"ctlplane-{self.cluster}")
        for name, value in self._security.properties().items():
            props.setProperty(name, value)
        timeout = str(self.timeout_ms)
        # A request to a node that never answers is given up at its call's deadline, not at this timeout (ATTEMPTS
        # says why); read() asks again within the round. With the whole deadline for one call, one hung broker
        # that the client picked cost the round its answer (seen in CI: the Admin API alone read every broker
        # UNREACHABLE for a round).
        props.setProperty("request.timeout.ms", str(max(MIN_ATTEMPT_MS, self.timeout_ms // ATTEMPTS)))
        props.setProperty("default.api.timeout.ms", timeout)
        props.setProperty("socket.connection.setup.timeout.ms", timeout)
        props.setProperty("socket.connection.setup.timeout.max.ms", timeout)
        # a node that went away is retried within a round, not after the default 1 s backing off to 10 s
        props.setProperty("reconnect.backoff.max.ms", "1000")
        return props

    def _admin_client(self) -> Any:
        try:
            if self._security.renewed():  # a rotated credential: the client made with the old one goes
                log.info("cluster %s: the Admin client's credentials changed on disk; making it again", self.cluster)
                self._close_admin()
        except ValueError as exc:
            raise AdminClientError(f"{self._where}: the renewed credentials do not load: {exc}") from None
        if self._admin is None:
            self._admin = create_admin(self._properties())
        return self._admin

    def read(self) -> QuorumView:
        """The quorum's view now, or a QuorumView saying why there is none; never raises for Kafka's
        failures (an unreachable quorum is a value, as an unreachable node is).

        describeCluster and describeMetadataQuorum are asked side by side (the client sends both at once),
        so a cluster that answers neither costs one deadline, not two. describeCluster answers also where
        there is no quorum to describe (ZooKeeper mode): its nodes are what discovery finds brokers from."""
        import jpype

        with self._lock:
            # within the round's wait for it (the scraper waits `timeout`), so that the last try's answer is this
            # round's, not the next one's
            end = time.monotonic() + self.timeout_ms / 1000 * 0.98
            info = nodes = controller = None
            error = nodes_error = None
            for attempt in range(ATTEMPTS):
                # each try its share of the deadline, the last the rest of it
                left_ms = max(1, int((end - time.monotonic()) * 1000))
                call_ms = left_ms if attempt == ATTEMPTS - 1 else min(left_ms, self.timeout_ms // ATTEMPTS)
                if attempt and call_ms < MIN_ATTEMPT_MS:
                    break
                try:
                    admin = self._admin_client()
                    quorum_future = None if info is not None else self._describe_quorum(admin, call_ms)
                    described = None if nodes is not None else self._describe_cluster(
                        admin, include_fenced=self._fenced_listed, timeout_ms=call_ms
                    )  # fmt: skip
                except AdminClientError as exc:
                    return QuorumView(read_at=time.time(), error=str(exc))
                except jpype.JException as exc:
                    self._close_admin()
                    reason = admin_reason(exc, self._security.properties().get("sasl.mechanism"))
                    return QuorumView(read_at=time.time(), error=f"{self._where}: {reason}", refused=is_refusal(reason))
                # one deadline for both answers (a second past the client's own): the round waits for this read
                # no longer than for one call, also when neither answers
                deadline = time.monotonic() + call_ms / 1000 + 1
                if quorum_future is not None:
                    info, error = self._answer(quorum_future, deadline, call_ms)
                if described is not None:
                    nodes, nodes_error = self._answer(described.nodes(), deadline, call_ms)
                    if nodes_error is not None and self._fenced_listed and "UnsupportedVersion" in nodes_error:
                        # brokers before 4.0 cannot list fenced ones (DescribeCluster v2, KIP-1073): ask as they can
                        self._fenced_listed, self._fenced_refusal = False, nodes_error
                        again = time.monotonic() + call_ms / 1000 + 1
                        described = self._describe_cluster(admin, include_fenced=False, timeout_ms=call_ms)
                        nodes, nodes_error = self._answer(described.nodes(), again, call_ms)
                    # the same response's controller (one DescribeCluster answers both futures)
                    controller = (
                        self._answer(described.controller(), deadline, call_ms)[0] if nodes is not None else None
                    )
                if not (_timed_out(error) or _timed_out(nodes_error)):
                    break
            return self._view(info, error, nodes, nodes_error, controller)

    def _view(self, info: Any, error: str | None, nodes: Any, nodes_error: str | None, controller: Any) -> QuorumView:
        """The quorum's view from describeMetadataQuorum's answer (or why none) and describeCluster's nodes and
        controller (or why none)."""
        now = time.time()
        role = Role.CONTROLLER if self.controllers else Role.BROKER
        members = [Member(int(n.id()), role, str(n.host()) or None) for n in nodes or ()]
        if info is None:
            # ZooKeeper-mode brokers have no quorum: "UnsupportedVersionException: The node does not
            # support DESCRIBE_QUORUM" (seen on 3.9.2), while describeCluster answers
            no_quorum = nodes is not None and not self.controllers and "UnsupportedVersion" in (error or "")
            refused = is_refusal(error) or (nodes is None and is_refusal(nodes_error))
            view = QuorumView(read_at=now, error=f"{self._where}: {error}", no_quorum=no_quorum, refused=refused)
            if nodes is None:
                self._close_admin()  # nothing answered: the next round starts a new client
        else:
            view = quorum_view(info, now)
            controller_ids = frozenset(m.node_id for m in members if self.controllers)
            members += _quorum_members(info, now, controller_ids)
        fenced: Mapping[int, bool] | None = None
        registrations_error = None
        if not self.controllers:
            # controllers answer DescribeCluster with themselves (KIP-919): fenced flags come from brokers
            if nodes is not None and self._fenced_listed:
                fenced = MappingProxyType({int(n.id()): bool(n.isFenced()) for n in nodes})
            else:
                registrations_error = nodes_error or self._fenced_refusal
        return replace(
            view,
            fenced=fenced,
            registrations_error=registrations_error,
            members=tuple(merged(members).values()),  # one per node: several answers name most nodes
            members_error=None if nodes is not None else f"{self._where}: {nodes_error}",
            controller_id=int(controller.id()) if controller is not None and int(controller.id()) >= 0 else None,
        )

    def _describe_quorum(self, admin: Any, timeout_ms: int) -> Any:
        import jpype

        options = java_class("org.apache.kafka.clients.admin.DescribeMetadataQuorumOptions")()
        options.timeoutMs(jpype.JInt(timeout_ms))
        return admin.describeMetadataQuorum(options).quorumInfo()

    def _describe_cluster(self, admin: Any, *, include_fenced: bool, timeout_ms: int) -> Any:
        import jpype

        options = java_class("org.apache.kafka.clients.admin.DescribeClusterOptions")()
        options.timeoutMs(jpype.JInt(timeout_ms))
        if include_fenced and not self.controllers:
            options.includeFencedBrokers(True)
        return admin.describeCluster(options)

    def _answer(self, future: Any, deadline: float, call_ms: int) -> tuple[Any, str | None]:
        """A future's value, or (None, why) at `deadline` (time.monotonic()): a second past the client's own,
        so where Kafka says why it gave up, its words win."""
        import jpype
        from java.util.concurrent import TimeUnit

        wait_ms = max(0, int((deadline - time.monotonic()) * 1000))
        try:
            return future.get(wait_ms, TimeUnit.MILLISECONDS), None
        except jpype.JException as exc:
            if exc.getClass().getName() == "java.util.concurrent.TimeoutException":
                return None, f"no answer within {call_ms / 1000 + 1:g}s"  # Future.get's deadline
            return None, admin_reason(exc, self._security.properties().get("sasl.mechanism"))

    def _close_admin(self) -> None:
        admin, self._admin = self._admin, None
        if admin is not None:
            try:
                from java.time import Duration

                admin.close(Duration.ofMillis(0))
            except Exception:  # closing a broken client must not hide why it broke
                log.debug("closing the admin client of %s failed", self.cluster, exc_info=True)

    def close(self) -> None:
        with self._lock:
            self._close_admin()
