"""The fault runner: real faults on real clusters, watched at ctlplane's default 15 s round, with the
/metrics timeline recorded and replayed through the shipped alert rules by `promtool test rules`.

A `Timeline` scrapes a cluster through the real exporter path (Watch: JPype JMX -> Scraper -> health) at
fixed round times, so a fault can be placed at any phase of a round. `Timeline.promtool_test()` renders
every recorded round with the exporter's own families, keeps the series the alert rules read, and writes
a promtool test that asserts which alerts fired. The real cluster proves the states; the replay proves
the rules, and the recorded file (alerts/tests/recorded/) replays in the fast suite with `make lint`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ctlplane.exporter.catalog import Mode
from ctlplane.exporter.families import render_families
from ctlplane.exporter.health import BrokerHealth, Cause, ClusterHealth, Lifecycle
from ctlplane.exporter.model import NodeSnapshot
from ctlplane.exporter.releases import catalogue_series
from ctlplane.exporter.state import Observation
from harness.localkafka import KafkaCluster, KafkaNode, cluster_label, create_topic, delete_topic
from tests.integration.watch import Watch
from tests.unit.alerts.test_rules import ALL_ALERTS, metric_names

ROUND_SECONDS = 15.0  # ctlplane's default scrape.interval_seconds, and the recorded series' step
ALERTS_DIR = Path(__file__).resolve().parents[2] / "alerts"
RECORDED_DIR = ALERTS_DIR / "tests" / "recorded"
# Prometheus adds these to every series it scrapes from ctlplane.
TARGET_LABELS = {"job": "ctlplane", "instance": "ctlplane:18309"}
RULE_SERIES = frozenset(name for rule in ALL_ALERTS for name in metric_names(str(rule["expr"]))) | {
    "kafka_broker_fault_cause"  # read by the rules' annotation templates (tools/alert_rules.py): the page's why
}


def cluster_health(o: Observation, name: str) -> ClusterHealth:
    health = o.health.cluster(name)
    assert health is not None
    return health


def healthy(name: str) -> Callable[[Observation], bool]:
    """Every node read (or, paced, its last page served: ctlplane_up 1), every broker ACTIVE, exactly one active
    controller and its identity known."""

    def check(o: Observation) -> bool:
        cluster = o.snapshot.cluster(name)
        health = cluster_health(o, name)
        return (
            cluster is not None
            and all(n.served for n in cluster.nodes)
            and all(b.state is Lifecycle.ACTIVE for b in health.brokers)
            and health.active_controllers == 1
            and health.controller.node is not None
        )

    return check


@dataclass
class Timeline:
    """Rounds of one cluster at ROUND_SECONDS apart, from a round clock the caller drives.

    The cluster's Kafka version and mode are parameters of the run, not of the test: the recorded replay
    is named and described after them (`label`, `kafka`), so the same fault run on another version's
    cluster records its own file beside the others."""

    watch: Watch
    kafka_cluster: KafkaCluster
    observations: list[Observation] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    # series recorded beside those the rules read, for a row's SeriesAt expectations
    also: frozenset[str] = frozenset()

    @property
    def cluster(self) -> str:
        return self.kafka_cluster.name

    @property
    def label(self) -> str:
        """Mode, major.minor version and (ZooKeeper mode) the KIP-291 listener, the recorded file's prefix:
        "kraft-4.3", "zk-3.9", "zk-2.8-nolistener", "migration-3.9"."""
        cluster = self.kafka_cluster
        if cluster.migrating:
            return cluster_label("migration", cluster.version)
        return cluster_label(cluster.mode, cluster.version, cluster.control_plane_listener or cluster.mode == "kraft")

    @property
    def kafka(self) -> str:
        """ "Kafka 4.3.1 KRaft", "Kafka 3.9.2 ZooKeeper mode": the run's version, for the recorded header."""
        cluster = self.kafka_cluster
        if cluster.migrating:
            return f"Kafka {cluster.version} ZooKeeper brokers migrating to a KRaft quorum"
        mode = "KRaft" if cluster.mode == "kraft" else "ZooKeeper mode"
        listener = "" if cluster.mode == "kraft" or cluster.control_plane_listener else " without the KIP-291 listener"
        return f"Kafka {cluster.version} {mode}{listener}"

    @property
    def next_round_at(self) -> float:
        return self.started + ROUND_SECONDS * len(self.observations)

    def round(self) -> ClusterHealth:
        """Wait for the next round's time, scrape, and return the cluster's health."""
        delay = self.next_round_at - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        observation = self.watch.scrape()
        self.observations.append(observation)
        health = observation.health.cluster(self.cluster)
        assert health is not None
        return health

    def sleep_into_round(self, seconds: float) -> None:
        """Sleep until `seconds` after the last round's start (a fault placed at that phase)."""
        target = self.started + ROUND_SECONDS * (len(self.observations) - 1) + seconds
        time.sleep(max(0.0, target - time.monotonic()))

    def broker_rounds(self, node: str) -> list[BrokerHealth | None]:
        """`node`'s health per round (None where the round did not list it)."""
        result = []
        for observation in self.observations:
            health = observation.health.cluster(self.cluster)
            result.append(health.broker(node) if health is not None else None)
        return result

    def states(self, node: str) -> list[Lifecycle]:
        return [broker.state for broker in self.broker_rounds(node) if broker is not None]

    def evidence(self, node: str) -> list[str]:
        """State, cause and evidence of `node` per round, for assertion messages."""
        return [
            f"{b.state} ({b.cause or 'no cause'}): {b.evidence}" if b is not None else "-"
            for b in self.broker_rounds(node)
        ]

    def expect_causes(
        self, node: str, expected: set[Cause], *states: Lifecycle, until: int | None = None, exact: bool = True
    ) -> None:
        """#35, every row names its cause: in each round up to `until` (all by default) in which `node` was in
        one of `states`, its cause is one of `expected` (`exact`: and every one of them was seen). Each check
        is also written to $CTLPLANE_CAUSE_REPORT (JSON lines) for the matrix's cause accuracy per row."""
        rounds = [b for b in self.broker_rounds(node)[: None if until is None else until + 1] if b is not None]
        causes = [b.cause for b in rounds if b.state in states]
        right = sum(1 for cause in causes if cause in expected)
        ok = right == len(causes) and (not exact or {c for c in causes if c is not None} == expected)
        report = os.environ.get("CTLPLANE_CAUSE_REPORT")
        if report:
            test = os.environ.get("PYTEST_CURRENT_TEST", "?").split(" ")[0]
            record = {
                "test": test,
                "node": node,
                "states": sorted(str(s) for s in states),
                "expected": sorted(c.value for c in expected),
                "seen": sorted({str(c) for c in causes}),
                "rounds": len(causes),
                "right": right,
                "ok": ok,
            }
            with open(report, "a") as out:
                out.write(json.dumps(record) + "\n")
        assert ok, f"{node}: causes {causes} in {states}, expected {sorted(expected)}: {self.evidence(node)}"

    def series(self) -> dict[str, list[float | None]]:
        """promtool series text -> value per round (None where the series was absent)."""
        table: dict[str, list[float | None]] = {}
        for step, observation in enumerate(self.observations):
            for metric in render_families(observation.snapshot, observation.health):
                for sample in metric.samples:
                    if sample.name not in RULE_SERIES and sample.name not in self.also:
                        continue
                    if sample.labels.get("cluster", self.cluster) != self.cluster:
                        continue
                    labels = {**sample.labels, **TARGET_LABELS}
                    text = sample.name + "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(labels.items())) + "}"
                    table.setdefault(text, [None] * len(self.observations))[step] = sample.value
        table['up{instance="ctlplane:18309",job="ctlplane"}'] = [1.0] * len(self.observations)
        return table

    def promtool_test(
        self, name: str, expectations: Sequence[Expectation | CauseAt | SeriesAt], description: str
    ) -> dict[str, object]:
        input_series = [{"series": text, "values": _values(values)} for text, values in sorted(self.series().items())]
        rule_files = [f"../../{path.name}" for path in sorted(ALERTS_DIR.glob("*.rules.yml"))]
        return {
            "rule_files": rule_files,
            "evaluation_interval": "15s",
            "tests": [
                {
                    "name": f"{name}: {description}",
                    "interval": "15s",
                    "input_series": input_series,
                    "promql_expr_test": [e.promql_test() for e in expectations],
                }
            ],
        }


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def _values(values: Iterable[float | None]) -> str:
    out: list[str] = []
    present = False
    for value in values:
        if value is None:
            # Prometheus marks a series stale as soon as a scrape no longer has it
            out.append("stale" if present else "_")
            present = False
        else:
            out.append(repr(float(value)) if value != int(value) else str(int(value)))
            present = True
    return " ".join(out)


@dataclass(frozen=True)
class Expectation:
    """Which alerts of a severity fire, by (alertname, node): at one round, or ever up to it."""

    severity: str
    at_round: int  # index of the round (eval time = at_round * 15 s)
    firing: frozenset[tuple[str, str]]  # (alertname, node or "" for cluster alerts)
    ever: bool = False  # any time up to at_round, not only at it
    node: str | None = None  # only this node's alerts: the others are not this expectation's business

    def promql_test(self) -> dict[str, object]:
        only = "" if self.node is None else f',node="{self.node}"'
        selector = f'ALERTS{{alertstate="firing",severity="{self.severity}"{only}}}'
        minutes = int(self.at_round * ROUND_SECONDS // 60) + 1
        inner = f"max_over_time({selector}[{minutes}m])" if self.ever else selector
        return {
            "expr": f"count by (alertname, node) ({inner}) > 0",
            "eval_time": f"{int(self.at_round * ROUND_SECONDS)}s",
            "exp_samples": [
                {"labels": "{" + f'alertname="{alert}"' + (f',node="{node}"' if node else "") + "}", "value": 1}
                for alert, node in sorted(self.firing)
            ],
        }


@dataclass(frozen=True)
class CauseAt:
    """The cause `node` carries at one round (the series the page's annotations read: #35)."""

    node: str
    at_round: int
    cause: Cause

    def promql_test(self) -> dict[str, object]:
        return {
            "expr": f'count by (node, cause) (kafka_broker_fault_cause{{node="{self.node}"}})',
            "eval_time": f"{int(self.at_round * ROUND_SECONDS)}s",
            "exp_samples": [{"labels": f'{{cause="{self.cause.value}",node="{self.node}"}}', "value": 1}],
        }


@dataclass(frozen=True)
class SeriesAt:
    """What a PromQL expression without labels gives at one round: a series the row says follows the cluster."""

    expr: str
    at_round: int
    value: float

    def promql_test(self) -> dict[str, object]:
        return {
            "expr": self.expr,
            "eval_time": f"{int(self.at_round * ROUND_SECONDS)}s",
            "exp_samples": [{"labels": "{}", "value": self.value}],
        }


@dataclass
class Source:
    """One way of reading the cluster: its watch, the prefix of its recordings and what a recording says it read.
    `admin`: the Admin API alone (no node read: every cause `no_node_metrics`, a clean stop not told apart)."""

    watch: Watch
    recorded: str
    read_through: str
    admin: bool = False


class SideBySide:
    """The cluster's rounds read through every source on one clock: a Timeline per source, each scraped in
    turn at the same round time (the later ones a fraction of a second after the first)."""

    def __init__(self, cluster: KafkaCluster, sources: list[Source]) -> None:
        started = time.monotonic()
        self.pairs = [(source, Timeline(source.watch, cluster, started=started)) for source in sources]

    def round(self) -> None:
        for _, timeline in self.pairs:
            timeline.round()

    def rounds(self, count: int) -> None:
        for _ in range(count):
            self.round()

    def sleep_into_round(self, seconds: float) -> None:
        self.pairs[0][1].sleep_into_round(seconds)

    @property
    def last(self) -> int:
        return len(self.pairs[0][1].observations) - 1

    def until(self, done: list[str], state: Lifecycle, rounds: int) -> None:
        """Rounds until every node of `done` is in `state` through every source (at most `rounds`), then one
        more: the pages resolved."""
        for _ in range(rounds):
            self.round()
            if all(t.states(node)[-1] is state for _, t in self.pairs for node in done):
                break
        self.round()
        for source, timeline in self.pairs:
            for node in done:
                assert timeline.states(node)[-1] is state, (source.recorded, timeline.evidence(node))


def pages_then_resolves(
    paging_at: int, last: int, pages: frozenset[tuple[str, str]], node: str | None = None
) -> list[Expectation]:
    """The critical half of a fault that pages and heals: `pages` fire by round `paging_at`, nothing else
    critical fires up to round `last`, and nothing critical is firing at `last` (resolved)."""
    return [
        Expectation("critical", paging_at, pages, node=node),
        Expectation("critical", last, pages, ever=True),
        Expectation("critical", last, frozenset()),
    ]


def pages_nothing(last: int) -> list[Expectation]:
    """Nothing critical and nothing warning fires at any round up to `last`."""
    return [
        Expectation("critical", last, frozenset(), ever=True),
        Expectation("warning", last, frozenset(), ever=True),
    ]


def replay(
    timeline: Timeline,
    fault: str,
    expectations: Sequence[Expectation | CauseAt | SeriesAt],
    description: str,
    tmp: Path,
) -> Path:
    """Write the recorded timeline as a promtool test named `<label>-<fault>` and run it against the
    shipped rules; `description` says what was done, the timeline adds the Kafka version and mode.

    The test runs in a temporary directory laid out like alerts/; with CTLPLANE_RECORD_FIXTURES=1 a file
    that passed is then copied to alerts/tests/recorded/ (committed, replayed by `make lint`), so a run
    that failed never leaves a recording that `make lint` would fail on.
    """
    name = f"{timeline.label}-{fault}"
    description = f"{timeline.kafka}, {description}"
    content = timeline.promtool_test(name, expectations, description)
    (tmp / "alerts" / "tests" / "recorded").mkdir(parents=True, exist_ok=True)
    for rules in ALERTS_DIR.glob("*.rules.yml"):
        shutil.copy(rules, tmp / "alerts" / rules.name)
    target = tmp / "alerts" / "tests" / "recorded" / f"{name}.test.yml"
    test = os.environ.get("PYTEST_CURRENT_TEST", "tests/integration/test_fault_table.py").split(" ")[0]
    header = (
        f"# Recorded by {test} from a real run: {description}.\n"
        "# Every round of ctlplane's /metrics (15 s apart) replayed through the shipped rules.\n"
    )
    target.write_text(header + yaml.safe_dump(content, sort_keys=False, width=200))
    promtool = shutil.which("promtool")
    assert promtool is not None, "promtool (Debian package prometheus) is needed"
    result = subprocess.run([promtool, "test", "rules", str(target)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, f"{target}:\n{result.stdout}\n{result.stderr}"
    if os.environ.get("CTLPLANE_RECORD_FIXTURES") == "1":
        recorded = RECORDED_DIR / target.name
        shutil.copy(target, recorded)
        return recorded
    return target


# Kafka 4.1 (KAFKA-18666) lets the controller name a controlled shutdown (ControlledShutdownBrokerCount,
# BrokerRegistrationState=20). Before it, a broker that stopped cleanly between two rounds is gone and
# counted in FencedBrokerCount exactly like a crashed one: ctlplane cannot tell them apart, says FENCED
# (a crash must page) and says why in the evidence.
def names_controlled_shutdown(cluster: KafkaCluster) -> bool:
    """Whether a controlled shutdown between two rounds can be told from a crash: by the KRaft 4.1+
    controllers' ControlledShutdownBrokerCount, in ZooKeeper mode by the ControlledShutdown requests the
    controller served (health.lifecycle.zookeeper_shutdown_requests)."""
    return cluster.mode == "zookeeper" or "kafka_controller_controlled_shutdown_brokers" in catalogue_series(
        Mode.KRAFT, cluster.version, listener=False
    )


def read_of(o: Observation, cluster: str, node: str | None) -> NodeSnapshot | None:
    """What `node` of `cluster` answered in that round (None if it is not in the snapshot)."""
    snapshot = o.snapshot.cluster(cluster)
    return snapshot.node(node) if snapshot is not None and node is not None else None


def offline_partitions(o: Observation, name: str) -> float | None:
    active = read_of(o, name, cluster_health(o, name).controller.node)
    return active.value("kafka_controller_offline_partitions") if active is not None else None


@contextlib.contextmanager
def topic_around_fault(
    watch: Watch, cluster: KafkaCluster, topic: str, replicas: list[list[int]], victim: KafkaNode
) -> Iterator[None]:
    """A topic for the fault to act on, online before it; afterwards the victim runs again, the cluster is
    healthy and the topic is gone, so the shared cluster's other tests see it as it was."""
    create_topic(cluster, topic, replicas)
    try:
        watch.until(
            lambda o: healthy(cluster.name)(o) and offline_partitions(o, cluster.name) == 0, 60, f"{topic} online"
        )
        yield
    finally:
        if not victim.is_running:
            victim.start()
        watch.until(healthy(cluster.name), 120, "cluster healthy again")
        delete_topic(cluster, topic)


@contextlib.contextmanager
def restart_with_the_quorum_frozen(cluster: KafkaCluster, victim: KafkaNode) -> Iterator[None]:
    """2 of 3 voters frozen (SIGSTOP: no leader, no heartbeat answered) and `victim` killed and started again at
    once: its start-up cannot finish while the block runs; the voters resume when it ends."""
    frozen = cluster.controllers()[:2]
    for controller in frozen:
        controller.pause()
    try:
        victim.kill()
        victim.start()  # a restart: the process is back at once
        yield
    finally:
        for controller in frozen:
            controller.resume()


def rounds_until_active(timeline: Timeline, victim: KafkaNode, rounds: int) -> None:
    """Rounds until `victim` is ACTIVE again (at most `rounds`), then one more: its page resolved."""
    for _ in range(rounds):
        broker = timeline.round().broker(victim.name)
        if broker is not None and broker.state is Lifecycle.ACTIVE:
            break
    timeline.round()
    assert timeline.states(victim.name)[-1] is Lifecycle.ACTIVE, timeline.evidence(victim.name)


def controlled_shutdown_of_a_leader(
    watch: Watch, cluster: KafkaCluster, topic: str, recorded: str, setting: str, tmp_path: Path
) -> tuple[Timeline, KafkaNode]:
    """SIGTERM of a broker (broker-2 unless it is the ZooKeeper-mode controller) 0.5 s after a round while it
    leads all 4 partitions of `topic`, not restarted: SHUTDOWN in each of the next 6 rounds and no alert
    fires (replayed through the rules as `recorded`) - where a controlled shutdown can be named
    (names_controlled_shutdown). KRaft before 4.1 cannot: FENCED from the first round, with the reason in
    the evidence, and KafkaBrokerFenced pages.

    Kafka marks a registration inControlledShutdown only for a broker that still leads partitions when it
    asks to shut down; every production broker does. Preferred leader first: the victim leads all 4. Not
    the ZooKeeper-mode controller: it would ask itself, and its successor has no count of that request."""
    controller = cluster_health(watch.until(healthy(cluster.name), 60, "healthy"), cluster.name).controller.node
    brokers = cluster.brokers()
    victim = next(b for b in (*brokers[1:], brokers[0]) if b.name != controller)
    other = next(b for b in brokers if b is not victim)
    # before 4.1 a clean stop and a crash read alike: the process is gone either way
    names_it = names_controlled_shutdown(cluster)
    cause = Cause.CONTROLLED_SHUTDOWN if names_it else Cause.PROCESS_GONE
    with topic_around_fault(watch, cluster, topic, [[victim.node_id, other.node_id]] * 4, victim):
        timeline = Timeline(watch, cluster)
        timeline.round()
        timeline.sleep_into_round(0.5)
        victim.stop()  # SIGTERM: controlled shutdown, finished well within the round
        for _ in range(6):  # 90 s: a misread as FENCED would page by now
            timeline.round()
        stopped = timeline.states(victim.name)[1:]
        last = len(timeline.observations) - 1
        if names_it:
            assert set(stopped) == {Lifecycle.SHUTDOWN}, timeline.evidence(victim.name)
            timeline.expect_causes(victim.name, {Cause.CONTROLLED_SHUTDOWN}, Lifecycle.SHUTDOWN)
            pages: frozenset[tuple[str, str]] = frozenset()
        else:
            assert set(stopped) == {Lifecycle.FENCED}, timeline.evidence(victim.name)
            assert "cannot name a controlled shutdown" in timeline.evidence(victim.name)[-1]
            # Kafka before 4.1 cannot tell a clean stop from a crash; what ctlplane can say is true of both
            timeline.expect_causes(victim.name, {Cause.PROCESS_GONE}, Lifecycle.FENCED)
            pages = frozenset({("KafkaBrokerFenced", victim.name)})
        replay(
            timeline,
            recorded,
            [
                Expectation("critical", last, pages, ever=True),
                Expectation("warning", last, frozenset(), ever=True),
                CauseAt(victim.name, last, cause),
            ],
            f"SIGTERM of {victim.name} (leading 4 partitions) 0.5 s after a round, not restarted{setting}",
            tmp_path,
        )
    return timeline, victim
