"""A network partition between one KRaft broker and the quorum: every byte between them through links
(harness.netcut) that a test cuts and heals, while the broker's clients and JMX still reach it."""

from __future__ import annotations

from pathlib import Path

from harness.localkafka import KafkaCluster, start_kraft_cluster
from harness.localkafka.process import LOOPBACK, free_port
from harness.localkafka.versions import major_minor
from harness.netcut import CuttableLink
from tests.kafka_versions import KRAFT_UNDER_TEST

# The controllers' second listener, which only the cut-off broker uses, through the links.
PARTITIONABLE = "PARTITIONABLE"


def through_links(
    broker: str, links: dict[int, CuttableLink], controller_ports: dict[int, int]
) -> dict[str, dict[str, str]]:
    """Node overrides that route every byte between `broker` and the quorum through `links`.

    Pointing the broker's controller.quorum.voters at the links is not enough: a fetch response carries
    the leader's endpoint for the listener the request came in on (NodeEndpoints, KIP-853), and the
    broker's raft client follows it (KafkaRaftClient.handleFetchResponse, Endpoints.fromFetchResponse), so
    its metadata fetches would bypass the links while only its heartbeats (RaftControllerNodeProvider ->
    the configured voters) took them. So each controller gets a second controller listener, advertised at
    its link's address: broker-1 speaks only that listener, and the leader names the link in its answers.
    Before KIP-853 (Kafka 3.9) a controller may not advertise listeners ("The advertised.listeners config
    must be empty when process.roles=controller", KafkaConfig.validateValues) and a fetch response names
    no endpoint, so the broker's static voters, pointed at the links, carry every byte.
    """
    protocols = f"CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,{PARTITIONABLE}:PLAINTEXT"
    advertises = major_minor(KRAFT_UNDER_TEST) >= (3, 9)
    overrides = {
        f"controller-{nid - 100}": {
            "listeners": f"CONTROLLER://{LOOPBACK}:{controller_ports[nid]},{PARTITIONABLE}://{LOOPBACK}:{link.target[1]}",
            "controller.listener.names": f"CONTROLLER,{PARTITIONABLE}",
            "listener.security.protocol.map": protocols,
        }
        | (
            {
                "advertised.listeners": (
                    f"CONTROLLER://{LOOPBACK}:{controller_ports[nid]},{PARTITIONABLE}://{LOOPBACK}:{link.port}"
                )
            }
            if advertises
            else {}
        )
        for nid, link in links.items()
    }
    overrides[broker] = {
        "controller.listener.names": PARTITIONABLE,
        "controller.quorum.voters": ",".join(f"{nid}@{LOOPBACK}:{link.port}" for nid, link in links.items()),
        "listener.security.protocol.map": protocols,
    }
    return overrides


def start_with_a_broker_to_cut_off(name: str, workdir: Path, link: CuttableLink) -> KafkaCluster:
    """A KRaft cluster of one controller and two brokers whose broker-1 reaches the quorum only through `link`."""
    controller_ports = {101: free_port()}
    return start_kraft_cluster(
        name,
        workdir,
        controllers=1,
        brokers=2,
        version=KRAFT_UNDER_TEST,
        controller_ports=controller_ports,
        node_overrides=through_links("broker-1", {101: link}, controller_ports),
    )
