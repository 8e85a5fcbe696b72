"""A broker's lifecycle (KIP-631 INITIAL / FENCED / ACTIVE / SHUTDOWN, plus UNREACHABLE) from its own JMX, the
controller's registration gauges and ZooKeeper's word, and whether a fencing was planned."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

from ctlplane.exporter.catalog import START_TIME, Mode, Role
from ctlplane.exporter.health.controller import controller_nodes
from ctlplane.exporter.health.model import (
    BROKER_STATE_NAMES,
    REGISTRATION_STATES,
    BrokerHealth,
    BrokerState,
    ClusterMemory,
    Lifecycle,
)
from ctlplane.exporter.model import ClusterSnapshot, Failure, NodeSnapshot


def is_broker(node: NodeSnapshot) -> bool:
    if node.role in (Role.BROKER, Role.COMBINED):
        return True
    # Never read: show it as a broker unless configuration or an earlier read said otherwise.
    return node.role is Role.UNKNOWN


# BrokerState values that happen only while a broker starts (BrokerState.java): STARTING while it loads logs
# and registers, RECOVERY (KRaft: caught up on metadata, waiting for the controller to unfence it; ZooKeeper
# mode: recovering logs after an unclean shutdown). Neither is a fencing incident, whatever the controller's
# registration says meanwhile (a registering broker is fenced until it catches up, KIP-631).
STARTING_BROKER_STATES = frozenset({BrokerState.STARTING, BrokerState.RECOVERY})


SHUTTING_DOWN_BROKER_STATES = frozenset({BrokerState.PENDING_CONTROLLED_SHUTDOWN, BrokerState.SHUTTING_DOWN})


def _unanswered(
    node: NodeSnapshot, registration: float | None, controller_says: Lifecycle | None, previous: Lifecycle | None
) -> tuple[Lifecycle, str]:
    """A broker whose JMX did not answer: what the controller's registration says, or its last state says."""
    if previous is Lifecycle.SHUTDOWN:
        # After a controlled shutdown the controller fences the departed broker; that is the expected
        # end of a shutdown, not a fencing incident, until the process comes back.
        return Lifecycle.SHUTDOWN, f"after controlled shutdown; JMX: {node.error}"
    if controller_says is Lifecycle.SHUTDOWN:
        return Lifecycle.SHUTDOWN, f"controller BrokerRegistrationState={registration:g}; JMX: {node.error}"
    if controller_says is Lifecycle.FENCED:
        # No evidence of a controlled shutdown: a crash (process gone) or a hang / partition (timeout).
        what = "process gone" if node.failure is Failure.GONE else "hung"
        return Lifecycle.FENCED, (
            f"controller registration state FENCED, {what} without a controlled shutdown; JMX: {node.error}"
        )
    if controller_says is Lifecycle.INITIAL:
        return Lifecycle.INITIAL, f"controller registration state INITIAL; JMX: {node.error}"
    if node.held and previous is Lifecycle.ACTIVE:
        # its page takes longer than a round and is read at its own pace (NodeSnapshot.held): the last page
        # found it ACTIVE and no fresher word of the controller's says otherwise
        return Lifecycle.ACTIVE, f"{node.error}"
    return Lifecycle.UNREACHABLE, f"JMX: {node.error}"


def broker_lifecycle(
    node: NodeSnapshot,
    registration: float | None,
    previous: Lifecycle | None,
    had_broker_state: bool = False,
    just_running: bool = False,
) -> tuple[Lifecycle, str]:
    """The broker's state from the controller's registration, its own BrokerState and its last state;
    `just_running`: a JVM never read RUNNING before reads RUNNING (`just_running()`).

    A page must follow every crash and no restart, so SHUTDOWN needs evidence that the broker went through
    controlled shutdown: its own BrokerState, the controller's registration state, or BrokerState
    unregistered while its JMX still answered. A broker that vanished without such evidence crashed.
    """
    controller_says = REGISTRATION_STATES.get(registration) if registration is not None else None
    if not node.up:
        return _unanswered(node, registration, controller_says, previous)
    broker_state = node.value("kafka_broker_state")
    name = BROKER_STATE_NAMES.get(broker_state, f"{broker_state:g}") if broker_state is not None else None
    said = f"; controller BrokerRegistrationState={registration:g}" if registration is not None else ""
    if broker_state in SHUTTING_DOWN_BROKER_STATES or (
        broker_state == BrokerState.NOT_RUNNING and previous in (Lifecycle.ACTIVE, Lifecycle.SHUTDOWN)
    ):
        # The broker knows it is shutting down before the controller's registration says so; NOT_RUNNING
        # after it has been seen running is the end of a shutdown (at start-up it precedes STARTING, also
        # when the broker comes back after a crash that ctlplane saw as FENCED or UNREACHABLE).
        return Lifecycle.SHUTDOWN, f"BrokerState={name}{said}"
    if broker_state is None and (previous is Lifecycle.SHUTDOWN or (previous is Lifecycle.ACTIVE and had_broker_state)):
        # A stopping KRaft broker unregisters BrokerState first, then the controller fences it while its
        # JMX still answers for a moment (seen on Kafka 4.3.1): that is a shutdown, not a fencing. Only
        # if the last read had BrokerState: a restarted broker can be ACTIVE by the controller's word
        # before ctlplane has read its BrokerState, and a missing MBean then is no shutdown.
        return Lifecycle.SHUTDOWN, "BrokerState unregistered: the broker is shutting down"
    if broker_state in STARTING_BROKER_STATES or broker_state == BrokerState.NOT_RUNNING:  # not yet started
        return Lifecycle.INITIAL, f"BrokerState={name} (starting up){said}"
    running = broker_state == BrokerState.RUNNING
    if controller_says is Lifecycle.FENCED and running and previous is not None and just_running:
        # A KRaft broker turns RUNNING only on the heartbeat answer that unfences it (BrokerLifecycleManager:
        # "The broker has been unfenced. Transitioning from RECOVERY to RUNNING"); the controller's gauge
        # follows its metadata publisher later, and was read at another instant of the round. So the first
        # round a restarted broker reads RUNNING, FENCED is the gauge behind: the end of its start-up. Once
        # only: RUNNING and fenced again next round, its heartbeats do not reach the controller. (A JVM
        # resumed after a hang was RUNNING all along: fenced it is, until the controller unfences it.)
        return Lifecycle.INITIAL, f"BrokerState=RUNNING, a JVM just unfenced{said}"
    if controller_says is not None:
        return controller_says, f"controller BrokerRegistrationState={registration:g}"
    if broker_state is None:
        return Lifecycle.INITIAL, "no BrokerState yet"
    if running:
        return Lifecycle.ACTIVE, f"BrokerState={name}"
    return Lifecycle.INITIAL, f"BrokerState={name}"


def running_start(node: NodeSnapshot) -> float | None:
    """The JVM's start time of a node that reads BrokerState RUNNING (ClusterMemory.running_since keeps it)."""
    return node.value(START_TIME) if node.value("kafka_broker_state") == BrokerState.RUNNING else None


def just_running(node: NodeSnapshot, running_since: Mapping[str, float]) -> bool:
    """`node` reads BrokerState RUNNING from a JVM (its start time) that ctlplane has not read RUNNING before."""
    started = running_start(node)
    return node.up and started is not None and running_since.get(node.node) != started


def controlled_shutdown_evidence(
    count: float | None, brokers: list[BrokerHealth], gone: frozenset[str]
) -> list[BrokerHealth]:
    """Brokers gone and fenced with no sign of a shutdown, that the controller's count says shut down.

    The controller sets a registration's inControlledShutdown when a broker that still leads partitions
    asks to shut down, and fencing the broker afterwards leaves it set until the broker registers again
    (ClusterControlManager, BrokerRegistration; Kafka 4.1+ counts them in ControlledShutdownBrokerCount, while
    BrokerRegistrationState shows such a broker as FENCED because fenced wins). Only when the count covers
    every broker that could hold the flag is each of them known to have shut down on purpose; otherwise a
    crash could hide among them, and a crash must page. `count`: ControlledShutdownBrokerCount
    (`controllers_say`), None where no controller has it.
    """
    if count is None or not math.isfinite(count) or count <= 0:
        return brokers
    vanished = [b for b in brokers if b.node in gone and b.state is Lifecycle.FENCED]
    shutting_down = sum(1 for b in brokers if b.state is Lifecycle.SHUTDOWN)
    if not vanished or int(count) != shutting_down + len(vanished):
        return brokers
    return [
        replace(
            b,
            state=Lifecycle.SHUTDOWN,
            evidence=f"controller ControlledShutdownBrokerCount={count:g} covers it; {b.evidence}",
        )
        if b in vanished
        else b
        for b in brokers
    ]


def zookeeper_deregistered(
    cluster: ClusterSnapshot, active: NodeSnapshot | None, brokers: list[BrokerHealth]
) -> list[BrokerHealth]:
    """ZooKeeper mode: brokers whose ZooKeeper session is gone and whom the controller dropped.

    A ZooKeeper-mode broker is alive for the cluster only while its ephemeral /brokers/ids/N exists, that is
    while it holds its ZooKeeper session (KafkaZkClient.registerBroker). When ZooKeeper expires the session,
    the controller handles the broker's departure (KafkaController.onBrokerFailure): it moves leadership away and
    ControllerChannelManager.removeBroker drops its request queue, with the QueueSize,broker-id=N gauge.
    Meanwhile the broker's BrokerState stays RUNNING and its client keeps reconnecting (SessionState
    CONNECTING). That is fencing in all but name: FENCED. A session only disconnected for less than its
    timeout is still registered and the controller still has its queue, so both signs are required.
    """
    queue = "kafka_controller_channel_queue_size"
    if cluster.mode not in (Mode.ZOOKEEPER, Mode.MIGRATION) or active is None or not active.has(queue):
        return brokers
    nodes = {n.node: n for n in cluster.nodes}
    result = []
    for b in brokers:
        if nodes[b.node].mode is not Mode.ZOOKEEPER:  # a KRaft broker of a migrating cluster
            result.append(b)
            continue
        if (
            not b.up
            and b.state is Lifecycle.UNREACHABLE
            and b.node_id is not None
            and active.value(queue, broker=str(b.node_id)) is None
        ):
            # A crashed or hung broker: its session expired after zookeeper.session.timeout.ms, ZooKeeper
            # deleted /brokers/ids/N and the controller dropped it, so it is out of the live set, not merely
            # unreadable by ctlplane (whose own view of a healthy broker never removes the controller's queue).
            evidence = (
                f"the controller has no request queue for broker {b.node_id}: its ZooKeeper registration is gone "
                f"(its /brokers/ids znode is ephemeral); {b.evidence}"
            )
            result.append(replace(b, state=Lifecycle.FENCED, evidence=evidence))
            continue
        session = nodes[b.node].state("kafka_zookeeper_session_state")
        if (
            b.up
            and b.state is Lifecycle.ACTIVE
            and b.node_id is not None
            and session not in (None, "CONNECTED")
            and active.value(queue, broker=str(b.node_id)) is None
        ):
            evidence = (
                f"ZooKeeper session {session} and the controller has no request queue for broker {b.node_id}: "
                f"not registered (its /brokers/ids znode is ephemeral); {b.evidence}"
            )
            b = replace(b, state=Lifecycle.FENCED, evidence=evidence)
        result.append(b)
    return result


# The ZooKeeper-mode controller's count of ControlledShutdown requests handled: the timer of its
# ControllerState.ControlledShutdown events (ControllerEventManager times each event it processes), made for
# every state when the controller starts (ControllerStats), so read at 0 before any request. Not
# RequestMetrics' RequestsPerSec: its meter per API version is made at the first request
# (RequestChannel.Metrics.requestRate), after ctlplane last looked its MBean names up.
SHUTDOWN_REQUESTS = "kafka_controller_controlled_shutdowns_total"


def shutdown_requests(cluster: ClusterSnapshot, active: NodeSnapshot | None) -> tuple[str, float] | None:
    """(active controller, the ControlledShutdown requests it has handled) in ZooKeeper mode, None where unread."""
    if cluster.mode is not Mode.ZOOKEEPER or active is None or not active.up:
        return None
    count = active.value(SHUTDOWN_REQUESTS)
    return None if count is None else (active.node, count)


def _requests_since_active(node: str, memory: ClusterMemory, requests: tuple[str, float] | None) -> float | None:
    """ZooKeeper mode: the ControlledShutdown requests the active controller handled since `node` was last read
    ACTIVE (`ClusterMemory.shutdown_baselines`), or None where that cannot be said (no count now, no baseline,
    or another controller counted it)."""
    baseline = memory.shutdown_baselines.get(node)
    if requests is None or baseline is None or baseline[0] != requests[0]:
        return None
    return requests[1] - baseline[1]


def zookeeper_shutdown_requests(
    brokers: list[BrokerHealth],
    nodes: Mapping[str, NodeSnapshot],
    memory: ClusterMemory,
    requests: tuple[str, float] | None,
) -> list[BrokerHealth]:
    """ZooKeeper mode: brokers gone since they were last read ACTIVE whom the controller's ControlledShutdown
    requests account for, SHUTDOWN; a controlled shutdown quicker than a round leaves no BrokerState to read.

    A ZooKeeper-mode broker stopping cleanly sets PENDING_CONTROLLED_SHUTDOWN and asks the controller, which
    moves its leadership away (KafkaServer.controlledShutdown -> KafkaController.doControlledShutdown), one
    request per attempt; a crashed one asks nothing. So where the same active controller handled exactly as
    many requests since each of them was last read ACTIVE (`ClusterMemory.shutdown_baselines`) as brokers
    vanished (connection refused) with no other sign, none decided before, and no other broker could have
    asked (one seen shutting down or restarting in this round or the last), each of them shut down on
    purpose. A round between may have read a vanishing broker's JMX failing otherwise (a JVM on its way out):
    UNREACHABLE then, still undecided. Anything less exact (a retried request, a controller change, a round
    without the count) decides nothing: a crash must page.
    """
    if requests is None:
        return brokers
    rises = {
        b.node: rise
        for b in brokers
        if nodes[b.node].failure is Failure.GONE
        and b.state in (Lifecycle.UNREACHABLE, Lifecycle.FENCED)
        and memory.states.get(b.node) in (Lifecycle.ACTIVE, Lifecycle.UNREACHABLE)
        and (rise := _requests_since_active(b.node, memory, requests)) is not None
    }
    gone = [b for b in brokers if b.node in rises]
    if (
        not gone
        or any(rise != len(gone) for rise in rises.values())
        or any(_may_have_asked(b, nodes[b.node], memory) for b in brokers if b not in gone)
    ):
        return brokers
    said = (
        f"the controller {requests[0]} handled {len(gone)} ControlledShutdown request(s) since it was last read "
        "ACTIVE, one per broker gone since"
    )
    return [replace(b, state=Lifecycle.SHUTDOWN, evidence=f"{said}; {b.evidence}") if b in gone else b for b in brokers]


def shutdown_baselines(
    brokers: Sequence[BrokerHealth], memory: ClusterMemory, requests: tuple[str, float] | None, known: set[str]
) -> dict[str, tuple[str, float]]:
    """What the memory keeps for zookeeper_shutdown_requests: per broker, the controller's count in the last
    round it was read ACTIVE (this round's where it was), none for brokers the cluster no longer has."""
    kept = {node: count for node, count in memory.shutdown_baselines.items() if node in known}
    for b in brokers:
        if b.up and b.state is Lifecycle.ACTIVE:
            if requests is None:
                kept.pop(b.node, None)  # no count this round: an older one would stretch the window
            else:
                kept[b.node] = requests
    return kept


def _may_have_asked(broker: BrokerHealth, node: NodeSnapshot, memory: ClusterMemory) -> bool:
    """Whether this broker could have sent a ControlledShutdown request since the last round: shutting down
    in this round or the last, or back from a stop (starting, or running a new JVM)."""
    previous = memory.states.get(broker.node)
    if Lifecycle.SHUTDOWN in (broker.state, previous) and (node.up or broker.node in memory.broker_state_read):
        return True
    return broker.state is Lifecycle.INITIAL or (node.up and just_running(node, memory.running_since))


def registration_state(active: NodeSnapshot | None, cluster: ClusterSnapshot, node: NodeSnapshot) -> float | None:
    """The controller's BrokerRegistrationState for `node`: the active controller's, else any controller's.

    Kafka creates the per-broker gauge only when a registration changes in a metadata delta, not when a
    controller loads a snapshot (ControllerMetadataMetricsPublisher), so after a controller restart the
    active one may lack it for brokers registered earlier; another controller that saw the change has it.
    """
    if node.node_id is None:
        return None
    return controllers_say(active, cluster, "kafka_controller_broker_registration_state", broker=str(node.node_id))


def controllers_say(active: NodeSnapshot | None, cluster: ClusterSnapshot, series: str, **labels: str) -> float | None:
    """A gauge of ControllerMetadataMetrics: the active controller's, else that of the controller furthest
    along the metadata log. Every controller publishes them from its own metadata image (ControllerServer adds
    a ControllerMetadataMetricsPublisher on each), so a follower's say the same a few records later: a round
    whose read of the active controller timed out still has them."""
    if active is not None and (value := active.value(series, **labels)) is not None:
        return value
    others = [n for n in controller_nodes(cluster) if n is not active and n.value(series, **labels) is not None]
    if not others:
        return None
    best = max(others, key=lambda n: n.value("kafka_controller_last_applied_record_offset") or -1.0)
    return best.value(series, **labels)


CANNOT_NAME_SHUTDOWN = " (this controller cannot name a controlled shutdown: a clean stop reads the same, Kafka < 4.1)"


def infer_fenced(
    cluster: ClusterSnapshot,
    active: NodeSnapshot | None,
    brokers: list[BrokerHealth],
    registered: frozenset[str],
) -> list[BrokerHealth]:
    """Where the controller gives no per-broker registration state, it says only how many are fenced.

    `FencedBrokerCount` counts every registration with the fenced flag (ControllerMetadataMetrics): brokers
    that are starting (fenced until caught up), brokers gone after a controlled shutdown, and those known
    fenced by registration. The rest of the count is the brokers fenced without ctlplane knowing which: a
    running broker keeps BrokerState=RUNNING after being fenced, so when the stale or unreachable brokers
    number exactly that rest, they are the fenced ones.
    """
    if active is None or cluster.mode not in (Mode.KRAFT, Mode.MIGRATION):
        return brokers
    fenced = active.value("kafka_controller_fenced_brokers")
    if fenced is None or not math.isfinite(fenced) or fenced <= 0:
        return brokers
    unknown = [b for b in brokers if b.node not in registered]
    known_fenced = sum(1 for b in brokers if b.node in registered and b.state is Lifecycle.FENCED) + sum(
        1 for b in unknown if b.state is Lifecycle.INITIAL or (b.state is Lifecycle.SHUTDOWN and not b.up)
    )
    suspects = [b for b in unknown if b.state is Lifecycle.UNREACHABLE or (b.state is Lifecycle.ACTIVE and b.stale)]
    if not suspects or len(suspects) != int(fenced) - known_fenced:
        return brokers
    said = f"controller FencedBrokerCount={fenced:g}"
    # Before Kafka 4.1 (KAFKA-18666) no controller MBean names a controlled shutdown: a broker that stopped
    # cleanly is gone and fenced exactly like one that crashed, and a crash must page.
    unnamed = "" if active.has("kafka_controller_controlled_shutdown_brokers") else CANNOT_NAME_SHUTDOWN
    return [
        replace(b, state=Lifecycle.FENCED, evidence=f"{said}{'' if b.up else unnamed}; {b.evidence}")
        if b in suspects
        else b
        for b in brokers
    ]


def fenced_unnamed(
    cluster: ClusterSnapshot, active: NodeSnapshot | None, brokers: Sequence[BrokerHealth]
) -> int | None:
    """FencedBrokerCount minus the brokers ctlplane already names fenced, so that a broker nobody listed (and
    nobody discovered) still pages when the controller fences it.

    The count is of registrations with the fenced flag (ControllerMetadataMetrics, KRaft only): a broker
    FENCED here, one starting (INITIAL: fenced until caught up, KIP-631) and one gone after a controlled
    shutdown are each one of them. Whatever remains is a fenced broker that no ctlplane series shows FENCED.
    """
    if active is None or cluster.mode not in (Mode.KRAFT, Mode.MIGRATION):
        return None
    count = active.value("kafka_controller_fenced_brokers")
    if count is None or not math.isfinite(count):
        return None
    named = sum(
        1
        for b in brokers
        if b.state in (Lifecycle.FENCED, Lifecycle.INITIAL) or (b.state is Lifecycle.SHUTDOWN and not b.up)
    )
    return max(0, int(count) - named)


def zookeeper_unasked(broker: BrokerHealth, memory: ClusterMemory, requests: tuple[str, float] | None) -> bool:
    """ZooKeeper mode: the active controller that counted its ControlledShutdown requests when this broker was
    last read ACTIVE is still the active one and has handled none since (`shutdown_requests`,
    `ClusterMemory.shutdown_baselines`). A clean stop asks before it closes its ZooKeeper session
    (KafkaServer.shutdown -> controlledShutdown, then the ZooKeeper client's close), and the controller
    serves its events in order, so the request is counted before the departure the broker's deregistration
    brings (KafkaController's ControlledShutdown before its BrokerChange). A controller change, a round
    without the count, or any request since (whosever it was) decide nothing."""
    return _requests_since_active(broker.node, memory, requests) == 0


def fenced_unplanned(
    broker: BrokerHealth,
    node: NodeSnapshot,
    mode: Mode | None,
    names_shutdown: bool,
    led: bool,
    unasked: bool = False,
) -> bool:
    """FENCED, and no planned stop or restart reads the same, so a page need not wait out a restart.

    - A KRaft broker whose process runs (BrokerState RUNNING) yet is fenced: its heartbeats no longer reach
      the controller (cut off, or hung past broker.session.timeout.ms). Stopping or starting a broker shows
      its own BrokerState (PENDING_CONTROLLED_SHUTDOWN, STARTING, RECOVERY), never RUNNING while fenced.
    - A KRaft broker gone (JMX not answering) that led partitions when last read, on a cluster whose
      controllers name controlled shutdowns (Kafka 4.1+, ControlledShutdownBrokerCount): a clean stop of a
      leader sets the registration's inControlledShutdown (BrokerHeartbeatManager.calculateNextBrokerState
      -> CONTROLLED_SHUTDOWN, ReplicationControlManager.handleBrokerInControlledShutdown), which ctlplane
      reads as SHUTDOWN, so FENCED here is a crash, a hang or a partition.
    - A ZooKeeper-mode broker gone (JMX not answering) and deregistered (`zookeeper_deregistered`) while the
      controller served no ControlledShutdown request since it was last read ACTIVE (`unasked`, from
      `zookeeper_unasked`): a clean stop asks first (controlled.shutdown.enable, true by default), a crash
      or a hang never does. Whether it led partitions does not matter here: every clean stop asks.
    Not: a broker that led nothing (Kafka grants it SHUTDOWN_NOW and fences it like a crash), any gone KRaft
    broker before Kafka 4.1 (KAFKA-18666), a running ZooKeeper-mode broker that lost its session (its
    session alerts name a lost registration; alerts/alertmanager.yml inhibits the fencing page).
    """
    if broker.state is not Lifecycle.FENCED:
        return False
    if mode is Mode.ZOOKEEPER:
        return not node.up and unasked
    if node.up:
        return node.value("kafka_broker_state") == BrokerState.RUNNING
    return names_shutdown and led


def any_fencing_word(cluster: ClusterSnapshot) -> bool:
    """Whether this round has a word on who is fenced: a controller read (its registration states or fenced
    count; in ZooKeeper mode the active controller's queues), or the brokers' describeCluster with fenced
    brokers listed (the quorum's view, 4.0+)."""
    return bool(controller_nodes(cluster)) or (cluster.quorum is not None and cluster.quorum.fenced is not None)


def held_fenced(broker: BrokerHealth, memory: ClusterMemory, fencing_word: bool) -> BrokerHealth | None:
    """A broker FENCED last round, gone still, in a round with no word on fencing (`any_fencing_word`): FENCED
    as the controllers last said, with its unplanned flag; else None (the round decides).

    A round whose controller reads timed out (a loaded controller) says nothing either way, and reading the
    broker UNREACHABLE for it would restart the `for:` of its page."""
    if fencing_word or broker.up or broker.state is not Lifecycle.UNREACHABLE:
        return None
    if memory.states.get(broker.node) is not Lifecycle.FENCED:
        return None
    return replace(
        broker,
        state=Lifecycle.FENCED,
        evidence=f"FENCED at the controllers' last word: no controller was read this round; {broker.evidence}",
        fenced_unplanned=broker.node in memory.unplanned,
    )
