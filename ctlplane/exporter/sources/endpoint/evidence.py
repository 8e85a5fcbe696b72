"""What a naming must serve for ctlplane to know a broker's lifecycle at all.

A broker's state rests on its own BrokerState, or the controllers' word on it: BrokerRegistrationState per
broker (4.1+), FencedBrokerCount (3.1+), ZooKeeper mode's request queue per broker (health/lifecycle.py). A
naming that serves none of them leaves every broker's state unknown: a `rules_file` like that is refused by
`check-config`, with what to add, rather than watched as if healthy.
"""

from __future__ import annotations

from ctlplane.exporter.readings import plan_queries
from ctlplane.exporter.sources.endpoint.client import inversion_for
from ctlplane.exporter.sources.endpoint.profiles import EndpointNaming

# (MBean pattern, attribute): any one of them is enough
LIFECYCLE_EVIDENCE = (
    ("kafka.server:type=KafkaServer,name=BrokerState", "Value"),
    ("kafka.controller:type=KafkaController,name=BrokerRegistrationState,broker=*", "Value"),
    ("kafka.controller:type=KafkaController,name=FencedBrokerCount", "Value"),
    ("kafka.controller:type=ControllerChannelManager,name=QueueSize,broker-id=*", "Value"),
)


def missing_lifecycle_evidence(naming: EndpointNaming) -> str | None:
    """None where the naming serves some lifecycle evidence; else one line saying what to serve."""
    mapped = inversion_for(naming, plan_queries()).mapped()
    if any(pair in mapped for pair in LIFECYCLE_EVIDENCE):
        return None
    mbeans = ", ".join(f"{pattern} {attribute}" for pattern, attribute in LIFECYCLE_EVIDENCE)
    return f"serves none of a broker's lifecycle evidence: add a rule for one of {mbeans}"
