"""Why a broker is not ACTIVE, or not read: the first move of the engineer paged for it differs (restart
the process, take a thread dump, look at the network, wait for a start-up), and the snapshot's evidence
already tells most of them apart.

- JMX refused or reset (`Failure.GONE`): no process listens on the port, so the process is gone.
- JMX timed out (`Failure.TIMEOUT`): a stopped or wedged JVM answers nothing, and neither does a host whose
  network drops packets; with the controller fencing it too, a hang and a partition of the broker from both
  ctlplane and the controller read the same, so the cause names both.
- Its own JMX answers, BrokerState RUNNING, while the controller fences it: its heartbeats (KRaft) do not
  reach the controller, a partition between the two that ctlplane is not inside.
- ZooKeeper mode, its SessionState not CONNECTED (KIP-343's SessionExpireListener): it lost ZooKeeper.
- SHUTDOWN and INITIAL are the lifecycle's own evidence (a controlled shutdown; a start-up).
- ACTIVE by the quorum's word while its JMX does not answer: only ctlplane cannot read it.
"""

from __future__ import annotations

from ctlplane.exporter.catalog import Mode
from ctlplane.exporter.health.model import BrokerHealth, Cause, Lifecycle
from ctlplane.exporter.model import Failure, NodeSnapshot

RUNNING = 3.0  # BrokerState RUNNING (org.apache.kafka.metadata.BrokerState)
_UNREAD = {
    Failure.GONE: Cause.PROCESS_GONE,
    Failure.TIMEOUT: Cause.HUNG_OR_ISOLATED,
    Failure.AUTH: Cause.JMX_AUTH_FAILED,
}


def _session_lost(node: NodeSnapshot) -> bool:
    """ZooKeeper mode: the broker's session state (one series per state, 1 for the current) is not CONNECTED."""
    states = [s for s in node.samples if s.series == "kafka_zookeeper_session_state" and s.value == 1.0]
    return any(value != "CONNECTED" for s in states for key, value in s.labels if key == "state")


def fault_cause(broker: BrokerHealth, node: NodeSnapshot, mode: Mode | None) -> Cause | None:
    """The cause of `broker`'s state this round (None: ACTIVE, read, and nothing wrong it can name)."""
    if broker.state is Lifecycle.SHUTDOWN:
        return Cause.CONTROLLED_SHUTDOWN
    if broker.state is Lifecycle.INITIAL:
        return Cause.STARTING
    if node.up and mode is Mode.ZOOKEEPER and _session_lost(node):
        return Cause.ZOOKEEPER_SESSION_LOST  # whatever the controller's word yet: what follows comes from it
    if broker.state is Lifecycle.ACTIVE:
        return None if node.up else Cause.JMX_UNREACHABLE
    if not node.up:
        cause = _UNREAD.get(node.failure) if node.failure is not None else None
        if cause is Cause.JMX_AUTH_FAILED and broker.state is Lifecycle.FENCED:
            return Cause.UNKNOWN  # the controller fences it; ctlplane cannot read why
        return cause or Cause.UNKNOWN
    # read, and FENCED or UNREACHABLE by the controller's or ZooKeeper's word
    if broker.state is Lifecycle.FENCED and node.value("kafka_broker_state") == RUNNING:
        return Cause.CUT_OFF_FROM_CONTROLLER
    return Cause.UNKNOWN
