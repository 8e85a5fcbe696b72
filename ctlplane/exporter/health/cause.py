"""Why a broker is not ACTIVE, or not read: the first move of the engineer paged for it differs (restart
the process, take a thread dump, look at the network, wait for a start-up), and the snapshot's evidence
already tells most of them apart.

- JMX refused or reset (`Failure.GONE`): no process listens on the port, so the process is gone.
- JMX timed out (`Failure.TIMEOUT`): a stopped or wedged JVM answers nothing, and neither does a host whose
  network drops packets; with the controller fencing it too, a hang and a partition of the broker from both
  ctlplane and the controller read the same, so the cause names both.
- Its own JMX answers, BrokerState RUNNING, while the controller fences it: its heartbeats (KRaft) do not
  reach the controller, a partition between the two that ctlplane is not inside - unless the active
  controller's TimedOutBrokerHeartbeatCount rose since the last round: then heartbeats did arrive and expired
  on the controller's event queue (QuorumController.processBrokerHeartbeat: a heartbeat past its deadline is
  processExpiredBrokerHeartbeat and incrementTimedOutHeartbeats), an overloaded controller; and unless its
  JVM spent seconds in GC pauses between two reads (health/gc.py): then its own pause stopped its heartbeats.
- ZooKeeper mode, its SessionState not CONNECTED (ZooKeeperClient.scala's gauge of `ZooKeeper.getState()`): it
  lost ZooKeeper.
- SHUTDOWN and INITIAL are the lifecycle's own evidence (a controlled shutdown; a start-up).
- ACTIVE by the quorum's word while its JMX does not answer: only ctlplane cannot read it. A node read at its own
  pace (NodeSnapshot.held: its page takes longer than a round) is not that: nothing is wrong it can name.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ctlplane.exporter.catalog import Mode
from ctlplane.exporter.health.model import BrokerHealth, BrokerState, Cause, Lifecycle
from ctlplane.exporter.model import Failure, NodeSnapshot

_UNREAD = {
    Failure.GONE: Cause.PROCESS_GONE,
    Failure.TIMEOUT: Cause.HUNG_OR_ISOLATED,
    Failure.AUTH: Cause.JMX_AUTH_FAILED,
}


@dataclass(frozen=True)
class CauseText:
    """How a page, a runbook and the dashboard say a cause: one home for the words (the alert rules'
    templates and the runbooks' sections are written from this table by `python -m tools.alert_rules`)."""

    phrase: str  # after "is fenced: " in a page's summary
    evidence: str  # what ctlplane saw, the sentence a page's description and PagerDuty's details carry
    first_move: str  # the first thing to run, in the runbook's section for the cause


CAUSE_TEXT: dict[Cause, CauseText] = {
    Cause.PROCESS_GONE: CauseText(
        "process gone",
        "its JMX port refuses connections: no process listens there, the broker process has exited",
        "On the broker's host, see how the process ended: `journalctl -u kafka --since -1h | tail -50` (or "
        "`kubectl describe pod <pod>` for its last state and exit code), then the end of its `server.log` and "
        "any `hs_err_pid*.log`. Start it again once the cause is known.",
    ),
    Cause.HUNG_OR_ISOLATED: CauseText(
        "hung or isolated",
        "its JMX port takes connections but never answers: a stopped or wedged JVM, or a network that drops "
        "packets to and from the broker (ctlplane's and the controller's alike)",
        "On the broker's host: `ps -o pid,stat,etime -p $(pgrep -f kafka.Kafka)` (state `T` is stopped, send "
        "`kill -CONT`), then `jcmd <pid> Thread.print > /tmp/threads.txt` twice 10 s apart (a hang shows the same "
        "threads blocked); if the JVM answers, test the network to a controller: "
        "`nc -vz <controller-host> <controller-port>`.",
    ),
    Cause.CUT_OFF_FROM_CONTROLLER: CauseText(
        "cut off from the controller",
        "its own JMX says RUNNING while the controller fences it: its heartbeats do not reach the active controller",
        "From the broker's host: `nc -vz <controller-host> <controller-port>` for each controller in "
        "`controller.quorum.bootstrap.servers` (or `controller.quorum.voters`), and "
        "`grep -i 'heartbeat' server.log | tail` for the broker's side of it.",
    ),
    Cause.CONTROLLER_OVERLOADED: CauseText(
        "controller overloaded",
        "its own JMX says RUNNING while the controller fences it, and the active controller's "
        "TimedOutBrokerHeartbeatCount rose: heartbeats reached the controller and expired on its event queue",
        "On the active controller: the event-queue time (the cluster page's event-queue graph, "
        "`kafka_controller_event_queue_time_seconds`), its GC (`jstat -gcutil <pid> 1s`) and CPU (`top -H -p <pid>`); "
        "`kafka-metadata-quorum.sh --bootstrap-controller <controller:port> describe --status` for who leads.",
    ),
    Cause.LONG_GC_PAUSE: CauseText(
        "long GC pause",
        "its own JMX says RUNNING while the controller fences it, and its JVM spent seconds in stop-the-world "
        "garbage collection between two reads: the pause stopped its heartbeats for longer than "
        "broker.session.timeout.ms",
        "On the broker's host: `grep -E 'Pause (Young|Full|Remark)' logs/kafkaServer-gc.log | tail` for the pause "
        "and its heap before and after (kafka-server-start.sh writes that log), and `jstat -gcutil <pid> 1s` for "
        "how full the old generation is; a heap too small for its load (KAFKA_HEAP_OPTS) or a swapping host are "
        "the usual causes.",
    ),
    Cause.ZOOKEEPER_SESSION_LOST: CauseText(
        "ZooKeeper session lost",
        "its ZooKeeper SessionState is not CONNECTED: it is not registered as alive",
        "From the broker's host: `echo srvr | nc <zookeeper-host> 2181` for each ZooKeeper server, and "
        "`grep -i 'session' server.log | tail` for why the session went.",
    ),
    Cause.CONTROLLED_SHUTDOWN: CauseText(
        "controlled shutdown",
        "it went through a controlled shutdown: an operator or a supervisor stopped it",
        "Check who stopped it: `journalctl -u kafka --since -1h | grep -i stop` (or the rollout: "
        "`kubectl rollout status statefulset/<kafka>`).",
    ),
    Cause.STARTING: CauseText(
        "starting",
        "its BrokerState is STARTING or RECOVERY, or just turned RUNNING: it is loading logs, registering, "
        "catching up on metadata or being unfenced",
        "Watch the log recovery: `grep -E 'Loading producer state|Recovering unflushed segment|log loading' "
        "server.log | tail`.",
    ),
    Cause.JMX_UNREACHABLE: CauseText(
        "unreachable from ctlplane only",
        "its JMX does not answer ctlplane while the controller and the quorum count it ACTIVE",
        "From ctlplane's host: `nc -vz <broker-host> <jmx-port>`; the broker serves clients, so look at the "
        "path between ctlplane and it (firewall, JMX port, `com.sun.management.jmxremote.rmi.port`).",
    ),
    Cause.JMX_AUTH_FAILED: CauseText(
        "JMX credentials refused",
        "its JMX port (or metrics endpoint: HTTP 401/403) refuses ctlplane's credentials: it answers, and ctlplane "
        "cannot read it until they are fixed",
        "Compare ctlplane's `jmx:` credentials with the broker's `jmxremote.password` and `jmxremote.access` "
        "files (or the endpoint's auth); `ctlplane probe --config <file>` names the node that refuses them.",
    ),
    Cause.NO_NODE_METRICS: CauseText(
        "cause not visible without the node's metrics",
        "ctlplane watches this cluster through the Admin API alone and reads no metrics of the broker: the "
        "cluster's answers say it is fenced or no longer registered, never whether it crashed, hangs, is cut off "
        "or was stopped on purpose",
        "See when the quorum last heard from it (`kafka-metadata-quorum.sh --bootstrap-server <broker:port> "
        "describe --replication`), then its process and `server.log` on its host or in the service's console.",
    ),
    Cause.UNKNOWN: CauseText(
        "cause unknown",
        "the evidence names no cause: ctlplane reads the broker but nothing it says explains the state",
        "Read the broker's page on the dashboard (the page's `dashboard` link) for what each view said round "
        "by round, then its `server.log`.",
    ),
}

# The causes `fault_cause` (and health/admin.py) give a broker in each lifecycle state (tests/unit/exporter/
# test_cause.py holds it to that): a rule on one state names those, and its runbook has a section for each.
CAUSES_OF_STATE: dict[Lifecycle, tuple[Cause, ...]] = {
    Lifecycle.FENCED: (
        Cause.PROCESS_GONE,
        Cause.HUNG_OR_ISOLATED,
        Cause.CUT_OFF_FROM_CONTROLLER,
        Cause.LONG_GC_PAUSE,
        Cause.CONTROLLER_OVERLOADED,
        Cause.ZOOKEEPER_SESSION_LOST,
        Cause.NO_NODE_METRICS,
        Cause.UNKNOWN,
    ),
    Lifecycle.UNREACHABLE: (
        Cause.PROCESS_GONE,
        Cause.HUNG_OR_ISOLATED,
        Cause.JMX_AUTH_FAILED,
        Cause.ZOOKEEPER_SESSION_LOST,
        Cause.NO_NODE_METRICS,
        Cause.UNKNOWN,
    ),
    Lifecycle.SHUTDOWN: (Cause.CONTROLLED_SHUTDOWN,),
    Lifecycle.INITIAL: (Cause.STARTING,),
    Lifecycle.ACTIVE: (Cause.JMX_UNREACHABLE, Cause.JMX_AUTH_FAILED, Cause.ZOOKEEPER_SESSION_LOST),
}


def _session_lost(node: NodeSnapshot) -> bool:
    """ZooKeeper mode: the broker's session state (one series per state, 1 for the current) is not CONNECTED."""
    state = node.state("kafka_zookeeper_session_state")
    return state is not None and state != "CONNECTED"


TIMED_OUT_HEARTBEATS = "kafka_controller_timed_out_broker_heartbeats_total"


def heartbeats_timing_out(active: NodeSnapshot | None, last: tuple[str, float] | None) -> bool:
    """The active controller's TimedOutBrokerHeartbeatCount rose since it was last read (the same controller:
    the count starts again at 0 on another, or after a restart)."""
    if active is None or not active.up or last is None:
        return False
    count = active.value(TIMED_OUT_HEARTBEATS)
    return count is not None and last[0] == active.node and count > last[1]


def fault_cause(
    broker: BrokerHealth,
    node: NodeSnapshot,
    mode: Mode | None,
    heartbeats_timed_out: bool = False,
    gc_paused_seconds: float | None = None,
) -> Cause | None:
    """The cause of `broker`'s state this round (None: ACTIVE, read, and nothing wrong it can name);
    `heartbeats_timed_out`: heartbeats_timing_out() of the round; `gc_paused_seconds`: health/gc.py's
    `gc_pauses` for the broker."""
    if broker.state is Lifecycle.SHUTDOWN:
        return Cause.CONTROLLED_SHUTDOWN
    if broker.state is Lifecycle.INITIAL:
        return Cause.STARTING
    if node.up and mode is Mode.ZOOKEEPER and _session_lost(node):
        return Cause.ZOOKEEPER_SESSION_LOST  # whatever the controller's word yet: what follows comes from it
    if broker.state is Lifecycle.ACTIVE:
        if node.served:
            return None
        return Cause.JMX_AUTH_FAILED if node.failure is Failure.AUTH else Cause.JMX_UNREACHABLE
    if not node.up:
        cause = _UNREAD.get(node.failure) if node.failure is not None else None
        if cause is Cause.JMX_AUTH_FAILED and broker.state is Lifecycle.FENCED:
            return Cause.UNKNOWN  # the controller fences it; ctlplane cannot read why
        return cause or Cause.UNKNOWN
    # read, and FENCED or UNREACHABLE by the controller's or ZooKeeper's word
    if broker.state is Lifecycle.FENCED and node.value("kafka_broker_state") == BrokerState.RUNNING:
        if gc_paused_seconds is not None:
            # the broker's own evidence: its JVM stopped for as long (the controller's timed-out heartbeats
            # would be the ones it sent before or after the pause)
            return Cause.LONG_GC_PAUSE
        return Cause.CONTROLLER_OVERLOADED if heartbeats_timed_out else Cause.CUT_OFF_FROM_CONTROLLER
    return Cause.UNKNOWN


def with_cause(
    broker: BrokerHealth,
    node: NodeSnapshot,
    mode: Mode | None,
    heartbeats_timed_out: bool,
    gc_paused_seconds: float | None,
) -> BrokerHealth:
    """`broker` with its `fault_cause`, and the GC time in its evidence where a pause is the cause."""
    cause = fault_cause(broker, node, mode, heartbeats_timed_out, gc_paused_seconds)
    if cause is Cause.LONG_GC_PAUSE:
        said = f"its JVM spent {gc_paused_seconds:.1f} s in GC pauses between two reads; {broker.evidence}"
        return replace(broker, cause=cause, evidence=said)
    return replace(broker, cause=cause)
