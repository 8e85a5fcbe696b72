"""The metadata canary: a change ctlplane makes to a cluster's metadata, and when each broker serves it.

Every interval the canary creates a topic of its own (`<topic_prefix><unix ms>`, one partition, the cluster's
default replication factor), then asks every broker itself, with a Metadata request for that topic alone
(allowAutoTopicCreation false), until the broker's answer names it; then deletes it. A broker answers a
Metadata request from its own metadata cache in both modes (KafkaApis.handleTopicMetadataRequest ->
metadataCache.getTopicMetadata: the ZooKeeper mode's cache is filled by the controller's UpdateMetadata
requests, KRaft's from the metadata log), and a topic its cache does not have yet answers
UNKNOWN_TOPIC_OR_PARTITION. So the time until a broker names the topic is how long the control plane took to
bring that broker the change, end to end, whatever its own counters say.

The Admin client would send a Metadata request to whichever node it likes (the least loaded), so the
requests go through Kafka's own NetworkClient, one connection per broker (ClientUtils.createNetworkClient
with a ManualMetadataUpdater, as Kafka's own tools do): no protocol is written here.

The ACLs it needs (docs/canary.md): on topics PREFIXED with `topic_prefix`, CREATE, DELETE and DESCRIBE;
describeCluster needs none. A refusal is one error by reason; the rest of ctlplane goes on.
"""

from __future__ import annotations

import logging
import threading
import time
from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ctlplane.exporter.model import CANARY_BUCKETS, CanaryBroker, CanaryView
from ctlplane.exporter.sources.admin.client import (
    AdminClientError,
    class_loader,
    java_class,
    kafka_reason,
    prepare_client,
)
from ctlplane.exporter.sources.admin.security import ClientSecurity

log = logging.getLogger(__name__)

# How often a broker that does not serve the change yet is asked again: often while a healthy broker would
# (within tens of ms), then once a second, so that a stale broker is not asked hundreds of times a change
ASK_EVERY_SECONDS = 0.1
ASKED_OFTEN_FOR_SECONDS = 2.0
ASK_LATER_EVERY_SECONDS = 1.0
# Kafka's error codes (org.apache.kafka.common.protocol.Errors)
_NONE = 0
_UNKNOWN_TOPIC_OR_PARTITION = 3
_TOPIC_AUTHORIZATION_FAILED = 29
# a canary topic this old is a leftover (a process that stopped mid-change), deleted; younger ones may be another
# ctlplane's (two replicas watching one cluster), left alone
LEFTOVER_SECONDS = 600.0
# a broker describeCluster no longer names is still asked while it answers, and this many changes after
FORGET_AFTER_CYCLES = 10
# A creation that timed out is tried again this soon, not an interval later. In KRaft the Admin client sends
# CreateTopics to the broker its metadata names as controller, a random alive broker (KRaftMetadataCache
# .getControllerId, KIP-590), which forwards it: a broker cut off from the quorum holds it until the call
# times out. The call's disconnect refreshes the client's metadata (AdminMetadataManager's updater:
# handleServerDisconnect -> requestUpdate), so the next try names a broker at random again; waiting an
# interval instead would lose a whole change, and the canary's word on the cut-off broker with it.
RETRY_CREATE_AFTER_SECONDS = 1.0


def error_reason(text: str) -> str:
    """The `reason` label of an error, from Kafka's exception (the text of `kafka_reason`)."""
    for words, reason in (
        ("Authorization", "not_authorized"),
        ("Authentication", "authentication"),
        ("Timeout", "timeout"),
        ("PolicyViolation", "rejected"),
        ("InvalidReplicationFactor", "rejected"),
    ):
        if words in text:
            return reason
    return "failed"


@dataclass
class _Broker:
    """What the canary keeps of one broker between its answers (the thread's own)."""

    node: Any  # org.apache.kafka.common.Node
    answered: bool = False
    unserved_since: float | None = None
    served: bool = False  # the latest change
    in_flight: bool = False
    next_ask: float = 0.0
    error: str | None = None
    silent_cycles: int = 0  # changes since it last answered
    counts: list[int] = field(default_factory=lambda: [0] * (len(CANARY_BUCKETS) + 1))
    seconds_total: float = 0.0

    def observe(self, seconds: float) -> None:
        self.counts[bisect_left(CANARY_BUCKETS, seconds)] += 1
        self.seconds_total += seconds

    def value(self) -> CanaryBroker:
        cumulative, running = [], 0
        for count in self.counts:
            running += count
            cumulative.append(running)
        return CanaryBroker(
            node_id=int(self.node.id()),
            answered=self.answered,
            unserved_since=self.unserved_since,
            error=self.error,
            buckets=tuple(cumulative),
            seconds_total=self.seconds_total,
        )


class MetadataCanary:
    """One cluster's canary: a thread of its own, making a change every `interval_seconds` and asking every
    broker for it until the next; `view()` is what it knows now, for the scraper's round."""

    def __init__(
        self,
        cluster: str,
        bootstrap: tuple[str, ...],
        *,
        topic_prefix: str,
        interval_seconds: float,
        timeout_seconds: float,
        security: ClientSecurity | Mapping[str, str] | None = None,
    ) -> None:
        self.cluster = cluster
        self.bootstrap = bootstrap
        self.topic_prefix = topic_prefix
        self.interval_seconds = interval_seconds
        self.timeout_ms = max(1000, int(timeout_seconds * 1000))
        # made again when a file behind them changes (a rotated credential): then both clients are made again
        self._security = security if isinstance(security, ClientSecurity) else ClientSecurity.fixed(security)
        self._brokers: dict[int, _Broker] = {}
        self._errors: dict[str, int] = {}
        self._error: str | None = None
        self._topic: str | None = None
        self._changed_at: float | None = None
        self._changes = 0
        self._listed = 0  # brokers describeCluster named last
        self._undeleted: list[str] = []  # created, not yet deleted: at most one but where deleting fails
        self._unconfirmed: list[str] = []  # creations that timed out: made or not, deleted with the next change
        self._view = CanaryView(read_at=time.time())
        self._stop = threading.Event()
        self._admin: Any = None
        self._network: Any = None
        self._thread = threading.Thread(target=self._run, name=f"canary-{cluster}", daemon=True)

    def start(self) -> MetadataCanary:
        self._thread.start()
        return self

    def view(self) -> CanaryView:
        return self._view

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=self.timeout_ms / 1000 + 2)

    def _run(self) -> None:
        loaded = False
        try:
            while not self._stop.is_set():
                started = time.monotonic()
                retry_soon = False
                try:
                    loaded = loaded or self._load_client()
                    if loaded:
                        self._delete_leftovers()
                        retry_soon = self._cycle()
                except Exception as exc:  # a fault here must not end the canary: said, and tried again
                    log.exception("metadata canary of %s", self.cluster)
                    self._close_clients()
                    self._failed("failed", repr(exc))
                wait = self.interval_seconds - (time.monotonic() - started)
                self._stop.wait(max(0.0, min(wait, RETRY_CREATE_AFTER_SECONDS) if retry_soon else wait))
        finally:
            self._undeleted.extend(self._unconfirmed)
            if self._undeleted:
                try:
                    self._deleted(self._admin_client())
                except Exception:  # stopping: what is left is deleted by the next canary (_delete_leftovers)
                    log.debug("deleting the canary topic of %s on close failed", self.cluster, exc_info=True)
            self._close_clients()

    def _load_client(self) -> bool:
        """Whether the client's classes load on this thread (through its context class loader, as the client
        asks: Utils.getContextOrKafkaClassLoader); why not is counted as reason `client`."""
        import jpype

        try:
            loader = class_loader()
        except AdminClientError as exc:
            self._failed("client", str(exc))
            return False
        jpype.JClass("java.lang.Thread").currentThread().setContextClassLoader(loader)
        return True

    def _failed(self, reason: str, text: str) -> None:
        self._errors[reason] = self._errors.get(reason, 0) + 1
        self._error = f"{reason}: {text}"
        log.warning("metadata canary of %s: %s", self.cluster, text)
        self._publish()

    def _publish(self) -> None:
        self._view = CanaryView(
            read_at=time.time(),
            topic=self._topic,
            changed_at=self._changed_at,
            brokers=tuple(b.value() for _, b in sorted(self._brokers.items())),
            changes_total=self._changes,
            errors_total=MappingProxyType(dict(self._errors)),
            error=self._error,
        )

    def _cycle(self) -> bool:
        """One change: the brokers as describeCluster names them, the topic created, every broker asked until
        it serves the topic or the interval is over, the topic deleted. Whether to try again soon: the creation
        timed out (RETRY_CREATE_AFTER_SECONDS)."""
        import jpype

        try:
            if self._security.renewed():  # a rotated credential: the clients made with the old one go
                self._close_clients()
        except ValueError as exc:
            self._failed("client", f"the renewed credentials do not load: {exc}")
            return False
        try:
            admin = self._admin_client()
            nodes = list(admin.describeCluster(self._options("DescribeClusterOptions")).nodes().get())
        except AdminClientError as exc:  # a client key that does not decrypt: the same until its files change
            self._failed("client", str(exc))
            return False
        except jpype.JException as exc:
            self._close_clients()
            self._failed("describe_cluster", f"describeCluster: {kafka_reason(exc)}")
            return False
        self._listed = len(nodes)
        self._brokers = self._asked(nodes)
        if self._undeleted and not self._deleted(admin):
            return False  # no second topic while the last cannot be deleted (its error is counted)
        topic = f"{self.topic_prefix}{int(time.time() * 1000)}"
        asked_at = time.time()
        try:
            self._create(admin, topic)
        except jpype.JException as exc:
            text = kafka_reason(exc)
            reason = error_reason(text)
            self._failed(reason, f"creating {topic}: {text}")
            if reason != "timeout":
                return False
            # the forwarded creation may still be made (the broker that held it reaches the controller later,
            # or the controller was only slow): deleted with the next change made, not left for LEFTOVER_SECONDS
            self._unconfirmed.append(topic)
            return True
        self._undeleted.extend([*self._unconfirmed, topic])
        self._unconfirmed = []
        self._topic, self._changed_at, self._changes, self._error = topic, asked_at, self._changes + 1, None
        for broker in self._brokers.values():
            broker.served, broker.next_ask = False, 0.0
        self._publish()
        try:
            self._ask_until_served(topic, asked_at, time.monotonic() + self.interval_seconds * 0.9)
        except jpype.JException as exc:
            self._close_clients()
            self._failed("failed", f"asking the brokers for {topic}: {kafka_reason(exc)}")
            return False  # deleted at the next cycle's start
        self._deleted(admin)
        return False

    def _deleted(self, admin: Any) -> bool:
        """Whether the canary's topics not yet deleted are now; an error is counted by its reason."""
        import jpype

        try:
            self._delete(admin, self._undeleted)
        except jpype.JException as exc:
            text = kafka_reason(exc)
            if "UnknownTopicOrPartition" not in text:  # gone already: what was asked
                self._failed(error_reason(text), f"deleting {', '.join(self._undeleted)}: {text}")
                if error_reason(text) == "not_authorized":
                    return False
                # else left to _delete_leftovers: a ZooKeeper-mode deletion waits for every replica's
                # StopReplica (DelayedDeleteTopics), so one replica out of the controller's reach times the
                # request out while the deletion stays queued, and the canary goes on
        self._undeleted = []
        return True

    def _asked(self, nodes: list[Any]) -> dict[int, _Broker]:
        """The brokers to ask: those describeCluster names, and those it named before that answered within
        FORGET_AFTER_CYCLES changes. A KRaft broker cut off from the quorum is fenced and then left out of
        describeCluster (before Kafka 4.0, and by default after: KIP-1073), yet it still answers clients from
        the metadata it has: the broker the canary is for."""
        listed = {int(n.id()): self._brokers.get(int(n.id()), _Broker(n)) for n in nodes}
        for node_id, broker in self._brokers.items():
            if node_id not in listed and broker.silent_cycles < FORGET_AFTER_CYCLES:
                listed[node_id] = broker
        for broker in listed.values():
            broker.silent_cycles = 0 if broker.answered else broker.silent_cycles + 1
        return dict(sorted(listed.items()))

    def _ask_until_served(self, topic: str, asked_at: float, until: float) -> None:
        """Ask every broker that does not serve `topic` yet (every ASK_EVERY_SECONDS, after
        ASKED_OFTEN_FOR_SECONDS every ASK_LATER_EVERY_SECONDS) until all do or `until` (time.monotonic()); each
        answer is published as it comes."""
        network = self._network_client()
        clock = java_class("org.apache.kafka.common.utils.Time").SYSTEM
        while not self._stop.is_set() and time.monotonic() < until:
            pending = [b for b in self._brokers.values() if not b.served]
            if not pending:
                return
            late = time.time() - asked_at > ASKED_OFTEN_FOR_SECONDS
            every = ASK_LATER_EVERY_SECONDS if late else ASK_EVERY_SECONDS
            for broker in pending:
                self._maybe_ask(network, clock, broker, topic, every)
            for response in network.poll(50, clock.milliseconds()):
                self._answered(response, topic, asked_at)
        for broker in self._brokers.values():
            if not broker.served and broker.in_flight:
                broker.in_flight = False  # its answer, if it comes, is for a change no longer asked

    def _maybe_ask(self, network: Any, clock: Any, broker: _Broker, topic: str, every: float) -> None:
        import jpype

        now = time.monotonic()
        if broker.in_flight or now < broker.next_ask:
            return
        node = broker.node
        if network.connectionFailed(node):
            failure = network.authenticationException(node)
            broker.answered = False
            where = f"{node.host()}:{node.port()}"
            broker.error = kafka_reason(failure) if failure is not None else f"cannot connect to {where}"
            self._publish()
        if not network.ready(node, clock.milliseconds()):
            broker.next_ask = now + every  # connecting (ready() starts it)
            return
        collections = jpype.JClass("java.util.Collections")
        builder = java_class("org.apache.kafka.common.requests.MetadataRequest").Builder(
            collections.singletonList(topic), False
        )
        request = network.newClientRequest(str(node.idString()), builder, clock.milliseconds(), True)
        network.send(request, clock.milliseconds())
        broker.in_flight, broker.next_ask = True, now + every

    def _answered(self, response: Any, topic: str, asked_at: float) -> None:
        broker = self._brokers.get(int(str(response.destination())))
        if broker is None or not broker.in_flight:
            return
        broker.in_flight = False
        now = time.time()
        if response.wasDisconnected() or response.responseBody() is None:
            broker.answered, broker.error = False, "no answer (disconnected or timed out)"
            self._publish()
            return
        codes = {str(t.name()): int(t.errorCode()) for t in response.responseBody().data().topics()}
        code = codes.get(topic, _UNKNOWN_TOPIC_OR_PARTITION)
        broker.answered, broker.error = True, None
        if code == _NONE:
            broker.served, broker.unserved_since = True, None
            broker.observe(max(0.0, now - asked_at))
        elif code == _TOPIC_AUTHORIZATION_FAILED:
            broker.answered, broker.error = False, "TOPIC_AUTHORIZATION_FAILED: DESCRIBE on the canary's topics"
            broker.served = True  # nothing more to ask this change
            self._errors["not_authorized"] = self._errors.get("not_authorized", 0) + 1
        elif broker.unserved_since is None:
            broker.unserved_since = asked_at
        self._publish()

    def _options(self, name: str) -> Any:
        import jpype

        options = java_class(f"org.apache.kafka.clients.admin.{name}")()
        options.timeoutMs(jpype.JInt(self.timeout_ms))
        return options

    def _create(self, admin: Any, topic: str) -> None:
        """One partition on up to three of the brokers describeCluster named (those it names are registered,
        and in KRaft unfenced, so the factor can be met): the canary's own partition stays online while any of
        them lives, so a broker's crash never makes ctlplane's topic an offline partition of its own."""
        import jpype

        optional = jpype.JClass("java.util.Optional")
        replicas = max(1, min(3, self._listed))
        new_topic = java_class("org.apache.kafka.clients.admin.NewTopic")(
            topic, optional.of(jpype.JInt(1)), optional.of(jpype.JShort(replicas))
        )
        collections = jpype.JClass("java.util.Collections")
        admin.createTopics(collections.singletonList(new_topic), self._options("CreateTopicsOptions")).all().get()

    def _delete(self, admin: Any, topics: list[str]) -> None:
        import jpype

        names = jpype.JClass("java.util.ArrayList")()
        for topic in topics:
            names.add(topic)
        admin.deleteTopics(names, self._options("DeleteTopicsOptions")).all().get()

    def _delete_leftovers(self) -> None:
        """Canary topics older than LEFTOVER_SECONDS (by the time in their name), left by a process that
        stopped between creating and deleting one."""
        import jpype

        try:
            admin = self._admin_client()
            names = [str(n) for n in admin.listTopics(self._options("ListTopicsOptions")).names().get()]
            cutoff = (time.time() - LEFTOVER_SECONDS) * 1000
            old = [
                n
                for n in names
                if n.startswith(self.topic_prefix)
                and n[len(self.topic_prefix) :].isdigit()
                and int(n[len(self.topic_prefix) :]) < cutoff
            ]
            if old:
                self._delete(admin, old)
        except AdminClientError:  # no client can be made: the change's own try says why (_cycle)
            return
        except jpype.JException as exc:
            text = kafka_reason(exc)
            self._failed(error_reason(text), f"deleting old canary topics: {text}")

    def _properties(self) -> Any:
        from java.util import Properties

        props = Properties()
        props.setProperty("bootstrap.servers", ",".join(self.bootstrap))
        props.setProperty("client.id", f"ctlplane-canary-{self.cluster}")
        props.setProperty("request.timeout.ms", str(self.timeout_ms))
        props.setProperty("default.api.timeout.ms", str(self.timeout_ms))
        props.setProperty("reconnect.backoff.max.ms", "1000")
        for name, value in self._security.properties().items():
            props.setProperty(name, value)
        prepare_client(props)  # the OAUTHBEARER token endpoint allowed, an encrypted client key decrypted
        return props

    def _admin_client(self) -> Any:
        if self._admin is None:
            self._admin = java_class("org.apache.kafka.clients.admin.Admin").create(self._properties())
        return self._admin

    def _network_client(self) -> Any:
        if self._network is None:
            config = java_class("org.apache.kafka.clients.admin.AdminClientConfig")(self._properties())
            self._network = java_class("org.apache.kafka.clients.ClientUtils").createNetworkClient(
                config,
                f"ctlplane-canary-{self.cluster}",
                java_class("org.apache.kafka.common.metrics.Metrics")(),
                "ctlplane-canary",
                java_class("org.apache.kafka.common.utils.LogContext")(f"[canary {self.cluster}] "),
                java_class("org.apache.kafka.clients.ApiVersions")(),
                java_class("org.apache.kafka.common.utils.Time").SYSTEM,
                1,
                self.timeout_ms,
                None,
                java_class("org.apache.kafka.clients.ManualMetadataUpdater")(),
                java_class("org.apache.kafka.clients.DefaultHostResolver")(),
                None,
                None,
            )
        return self._network

    def _close_clients(self) -> None:
        admin, self._admin = self._admin, None
        network, self._network = self._network, None
        for client in (admin, network):
            if client is not None:
                try:
                    client.close()
                except Exception:  # a broken client's close must not hide why it broke
                    log.debug("closing a canary client of %s failed", self.cluster, exc_info=True)
