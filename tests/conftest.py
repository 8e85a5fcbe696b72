"""Session fixtures shared by tests/integration and tests/e2e: real local Kafka clusters from the cached jars.

Each cluster starts lazily on first use and stops at session end; the start-up
time of each is printed in the terminal summary. Under pytest-xdist each worker has its own (tests/suite.py
says which tests share a worker) and its own share of the loopback ports.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness import localkafka
from harness.localkafka import KafkaCluster, ZooKeeperServer
from harness.localkafka.process import ENV_PORT_SHARE
from tests.kafka_versions import (
    KRAFT_NAME,
    KRAFT_UNDER_TEST,
    SASL_REAUTH_MS,
    SASL_USERS,
    ZK_LISTENER,
    ZK_NAME,
    ZK_NOLISTENER_NAME,
    ZK_UNDER_TEST,
)
from tests.suite import (
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_runtest_logreport,
    pytest_runtest_teardown,
    pytest_xdist_make_scheduler,
)
from tests.suite import pytest_terminal_summary as suite_summary

# tests/suite.py's hooks, in force for the whole suite
__all__ = [
    "pytest_collection_modifyitems",
    "pytest_configure",
    "pytest_runtest_logreport",
    "pytest_runtest_teardown",
    "pytest_xdist_make_scheduler",
]

STARTUP_SECONDS: dict[str, float] = {}

# xdist workers ("gw0".."gwN-1") start clusters side by side: each picks ports from its own share
if "PYTEST_XDIST_WORKER" in os.environ:
    os.environ[ENV_PORT_SHARE] = (
        f"{os.environ['PYTEST_XDIST_WORKER'].removeprefix('gw')}/{os.environ['PYTEST_XDIST_WORKER_COUNT']}"
    )


def _assert_gone(pids: list[int]) -> None:
    leftovers = []
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        leftovers.append(pid)
    assert not leftovers, f"processes left behind: {leftovers}"


def _pids(cluster: KafkaCluster) -> list[int]:
    return [pid for n in cluster.nodes if (pid := n.pid) is not None]


@pytest.fixture(scope="session")
def kafka_workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("kafka")


@pytest.fixture(scope="session")
def zookeeper(kafka_workdir: Path) -> Iterator[ZooKeeperServer]:
    """One ZooKeeper shared by both ZooKeeper-mode clusters (each in its own chroot)."""
    started = time.monotonic()
    zk = localkafka.start_zookeeper(kafka_workdir, name="zookeeper", version=ZK_UNDER_TEST)
    STARTUP_SECONDS["zookeeper"] = time.monotonic() - started
    pid = zk.pid
    yield zk
    zk.stop()
    _assert_gone([pid] if pid is not None else [])


def _timed(name: str, start: float) -> None:
    STARTUP_SECONDS[name] = time.monotonic() - start


@pytest.fixture(scope="session")
def zk_cluster(kafka_workdir: Path, zookeeper: ZooKeeperServer) -> Iterator[KafkaCluster]:
    """ZooKeeper mode (3.9.2 unless the matrix says otherwise), 3 brokers, control-plane listener CONTROLLER
    (KIP-291) unless CTLPLANE_TEST_ZK_LISTENER=0."""
    started = time.monotonic()
    cluster = localkafka.start_zk_cluster(
        ZK_NAME,
        kafka_workdir,
        brokers=3,
        control_plane_listener=ZK_LISTENER,
        version=ZK_UNDER_TEST,
        zookeeper=zookeeper,
    )
    _timed(f"{ZK_NAME} (3 brokers{', listener' if ZK_LISTENER else ''})", started)
    yield cluster
    pids = _pids(cluster)
    cluster.stop()
    _assert_gone(pids)


@pytest.fixture(scope="session")
def zk_cluster_no_listener(kafka_workdir: Path, zookeeper: ZooKeeperServer) -> Iterator[KafkaCluster]:
    """ZooKeeper mode, 1 broker, no control-plane listener, same ZooKeeper (own chroot)."""
    started = time.monotonic()
    cluster = localkafka.start_zk_cluster(
        ZK_NOLISTENER_NAME,
        kafka_workdir,
        brokers=1,
        control_plane_listener=False,
        version=ZK_UNDER_TEST,
        zookeeper=zookeeper,
        chroot=f"/{ZK_NOLISTENER_NAME}",
    )
    _timed(f"{ZK_NOLISTENER_NAME} (1 broker)", started)
    yield cluster
    pids = _pids(cluster)
    cluster.stop()
    _assert_gone(pids)


@pytest.fixture(scope="session")
def kraft_cluster(kafka_workdir: Path) -> Iterator[KafkaCluster]:
    """KRaft (4.3.1 unless the matrix says otherwise), 3 controller-only + 2 broker-only nodes, broker
    session timeout 9 s; the brokers also listen with SASL_PLAINTEXT (SASL_USERS, logging in again every
    SASL_REAUTH_MS), SSL (a client certificate of the cluster's pki required) and SASL_SSL."""
    started = time.monotonic()
    cluster = localkafka.start_kraft_cluster(
        KRAFT_NAME,
        kafka_workdir,
        controllers=3,
        brokers=2,
        version=KRAFT_UNDER_TEST,
        sasl_users=SASL_USERS,
        pki=localkafka.make_local_pki(kafka_workdir / "pki"),
        broker_overrides={"listener.name.sasl_plaintext.connections.max.reauth.ms": str(SASL_REAUTH_MS)},
    )
    _timed(f"{KRAFT_NAME} (3 controllers + 2 brokers, incl. storage format)", started)
    yield cluster
    pids = _pids(cluster)
    cluster.stop()
    _assert_gone(pids)


def pytest_sessionfinish(session: pytest.Session) -> None:
    # an xdist worker hands its start-up times to the controller (pytest_testnodedown)
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["startup_seconds"] = dict(STARTUP_SECONDS)


def pytest_testnodedown(node: Any, error: object) -> None:
    worker = node.gateway.id
    for name, seconds in getattr(node, "workeroutput", {}).get("startup_seconds", {}).items():
        STARTUP_SECONDS[f"{name} [{worker}]"] = seconds


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    suite_summary(terminalreporter)
    if not STARTUP_SECONDS:
        return
    terminalreporter.section("local Kafka start-up times")
    for name, seconds in STARTUP_SECONDS.items():
        terminalreporter.write_line(f"{name}: {seconds:.1f} s")
