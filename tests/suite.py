"""How the suite runs side by side: each test's group (what it is: the time per group is printed, and one
group runs alone) and which tests run together on one pytest-xdist worker, from one table.

Most of the suite's wall time is waiting: the fault table's rows watch real clusters at the real 15 s round,
the paging tests wait for Prometheus and Alertmanager. `make test` runs the tests on several pytest-xdist
workers: tests with the same `together` run on one worker in file order (`pytest_xdist_make_scheduler`
below), so tests that take turns on one stateful cluster fixture never run beside each other, and each
worker starts only the session clusters its tests use (tests/conftest.py's fixtures are per worker). The
`together`s are handed out longest first, so the long waits start at once and the short tests fill the
gaps.

    make test GROUP=fault_table     # one group alone (pytest -m fault_table does the same)
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

# The groups `make test` prints its time per, each a marker too (pytest -m browser).
GROUPS = ("fault_table", "e2e", "spark", "browser", "integration", "unit")


@dataclass(frozen=True)
class Rule:
    """Tests whose node id starts with one of `prefixes` (the first matching rule wins) are in `group`; those
    with the same `together` run on one worker in file order (they take turns on one stateful fixture, or
    share an expensive one), the others each on whichever worker is free."""

    prefixes: tuple[str, ...]
    group: str
    together: str | None = None


FAULTS = "tests/integration/test_fault_table.py::"
ENDPOINTS = "tests/integration/test_endpoint_source.py::"
SOURCES = "tests/integration/test_source_fault_table.py::"
# The order the scheduler hands the `together`s out: the longest first. The minutes are from fresh-clone runs
# (2 cores, 2026-11-26 on 3 workers, the source lanes and Spark's place 2026-11-28 on 5), to see why the order
# is what it is. The tests of one session cluster
# run together whether they are fault rows or not: a second copy of a cluster on another worker cost its
# start-up and ~0.14 of a core while idle (a KRaft cluster of 5 JVMs), and two lanes end where one would.
RULES: tuple[Rule, ...] = (
    # the session KRaft cluster: its fault rows (each kills or stops its brokers and heals them, ~9 min) and
    # every other test of it (and the two that read both session clusters, ~8 min)
    Rule(
        (
            FAULTS + "test_kill_just_after",
            FAULTS + "test_kill_at_other_phases",
            FAULTS + "test_controlled_shutdown_between_rounds",
            FAULTS + "test_a_rolling_restart",
        ),
        "fault_table",
        "kraft",
    ),
    # the faults on a KRaft cluster of its own (restarted_kraft: the rows restart its controllers), ~13 min
    Rule(
        (
            FAULTS + "test_a_broker_cut_off_from_the_controllers",
            FAULTS + "test_killed_active_controller",
            FAULTS + "test_a_hung_broker",
            FAULTS + "test_a_crash_without_registration_gauges",
            FAULTS + "test_controlled_shutdown_without_registration_gauges",
            FAULTS + "test_a_restart_held_in_start_up",
            FAULTS + "test_discovered_brokers",
        ),
        "fault_table",
        "faults-restarted-kraft",
    ),
    # the session ZooKeeper-mode clusters: their fault rows (zk_cluster, and zk_linked on its ZooKeeper),
    # ~5.5 min, and every other test of them, ~3 min
    Rule((FAULTS + "test_zookeeper_mode", FAULTS + "test_a_zookeeper_mode"), "fault_table", "zookeeper"),
    Rule(
        (
            "tests/integration/test_quorum_view.py",
            "tests/integration/test_credential_rotation.py",
            "tests/integration/test_canary_tls.py",
            "tests/integration/test_health_kafka.py::test_stalled",
            "tests/integration/test_health_kafka.py::test_a_broker_missing_from_the_config",
            "tests/integration/test_health_kafka.py::test_controlled_shutdown",
            "tests/integration/test_health_kafka.py::test_metadata",
            "tests/integration/test_exporter_kafka.py::test_kraft",
            "tests/integration/test_exporter_kafka.py::test_a_stalled",
            "tests/integration/test_exporter_kafka.py::test_ctlplane_run_serves_both",
            "tests/integration/test_localkafka.py::test_kraft",
            "tests/integration/test_localkafka.py::test_every_kraft",
            "tests/integration/test_node_reader.py",
            "tests/integration/test_fencing_watch.py::test_a_broker_fenced",
            # the installed wheel against the KRaft cluster (its module's wheel built again here: ~5 s)
            "tests/integration/test_wheel.py::test_the_installed_wheel_reads_a_kraft_quorum",
        ),
        "integration",
        "kraft",
    ),
    Rule(("tests/e2e/test_paging.py",), "e2e", "kraft"),
    Rule(("tests/integration/test_dashboard_kraft.py",), "browser", "kraft"),
    Rule(
        (
            "tests/integration/test_exporter_kafka.py",
            "tests/integration/test_fencing_watch.py",
            "tests/integration/test_health_kafka.py",
            "tests/integration/test_localkafka.py",
            "tests/integration/test_unreachable_nodes.py",
            "tests/integration/test_wheel.py",
            # the image run against zk_cluster (its build: seconds from buildah's cache, minutes cold)
            "tests/integration/test_image.py",
            "tests/integration/test_reload.py",
            # it reads both session clusters: here, the KRaft cluster's lane is the longest (~15 min)
            "tests/integration/test_grafana_queries.py",
        ),
        "integration",
        "zookeeper",
    ),
    # the fault rows on each source beyond remote JMX (test_source_fault_table.py), a cluster of 7 JVMs each:
    # Strimzi's rules with the Admin API alone read beside them (~8.5 min), jmx_exporter's default naming (~5)
    Rule((SOURCES + "TestStrimziRulesAndTheAdminApiAlone",), "fault_table", "source-strimzi-admin"),
    # clusters at production size (a broker of 10,000 partitions) read through every source, one after the other
    # (each such broker holds ~10,100 descriptors and ~0.1 of a core): KRaft with its hang and crash rows, ~10
    # min, then ZooKeeper mode's reads, ~3 min
    Rule(
        ("tests/integration/test_large_cluster.py", "tests/integration/test_large_zookeeper_cluster.py"),
        "fault_table",
        "large-cluster",
    ),
    # A controller partitioned from the other voters, on a cluster of its own wired through links, ~8 min:
    Rule(("tests/integration/test_partitioned_controller.py",), "fault_table", "partitioned-controller"),
    # Spark (~5 min), one after the other on one worker: the local Spark JVM (a worker process keeps it,
    # ~1-3 min), then a standalone master and two workers (~3-5 min of both cores). Side by side on two workers they
    # took each other's CPU and the cluster's jobs ran past the test's 600 s (a fresh-clone run on 3 workers)
    Rule(("tests/integration/test_history_pipeline.py",), "spark", "spark"),
    Rule(("tests/unit/pipeline/",), "unit", "spark"),
    Rule(("tests/integration/test_spark_cluster.py",), "spark", "spark"),
    Rule((SOURCES + "TestDefaultNaming",), "fault_table", "source-default-naming"),
    # the metrics-endpoint sources' own clusters: the naming comparisons, a cluster each, and a ZooKeeper-mode
    # crash row, ~4 min; the Strimzi Metrics Reporter's crash row on a cluster of its own, ~3 min
    Rule((ENDPOINTS + "test_strimzi_metrics_reporter",), "fault_table", "endpoint-reporter"),
    Rule((ENDPOINTS,), "fault_table", "endpoint-sources"),
    # discovery's own clusters (a KRaft and a ZooKeeper-mode one, module fixtures; the Admin API alone reads
    # them too): one copy of each, ~4.5 min
    Rule(("tests/integration/test_discovery.py",), "integration", "discovery"),
    # the GSSAPI cluster and its KDC (a controller and a broker), its two tests on one worker, ~25 s
    Rule(("tests/integration/test_kerberos.py",), "integration", "kerberos"),
    # the dynamic quorum's own cluster (4 controllers, a broker): its voter changes at the 15 s round, ~2.5 min
    Rule(("tests/integration/test_dynamic_quorum.py",), "fault_table", "dynamic-quorum"),
    # a broker stopped inside a real GC pause, on a KRaft cluster of its own (3 JVMs), ~1.5 min
    Rule(("tests/integration/test_gc_pause.py",), "fault_table", "gc-pause"),
    # one Chromium, ~1.5 min
    Rule(("tests/e2e/test_dashboard_browser.py",), "browser", "browser"),
    # the metadata canary, each test on a cluster of its own (ZooKeeper mode, KRaft, KRaft with an authorizer),
    # ~35 s each: handed out with the fault rows, before the short tests
    Rule(("tests/integration/test_metadata_canary.py",), "fault_table"),
    # the rest, each test on whichever worker is free
    Rule(("tests/e2e/",), "e2e"),
    Rule(("tests/integration/",), "integration"),
    Rule(("tests/unit/",), "unit"),
)


def rule_of(nodeid: str, rules: Sequence[Rule] = RULES) -> Rule:
    for rule in rules:
        if nodeid.startswith(rule.prefixes):
            return rule
    raise LookupError(f"{nodeid}: no rule of tests/suite.py places it (add one)")


def pytest_configure(config: pytest.Config) -> None:
    for group in GROUPS:
        config.addinivalue_line("markers", f"{group}: a group of tests/suite.py (make test GROUP={group})")


# The tests in no `together`, by group: the longer tests first and the many short unit tests last, which
# fill the gaps as the workers finish (the last test handed out sets the run's end: in file order it was
# the simulated paging e2e, ~30 s each).
FILL_ORDER = ("e2e", "browser", "spark", "fault_table", "integration", "unit")

# tests/conftest.py's session clusters: a test that uses one and is in no `together` would start another
# copy on whichever worker it lands on.
SESSION_CLUSTERS = frozenset({"kraft_cluster", "zk_cluster", "zk_cluster_no_listener"})
# Stopped after the last test of a `together` that uses them (the clusters before the ZooKeeper they share):
# a session fixture otherwise lives until its worker ends, and its JVMs burnt ~0.15 of a core idle for up to
# 12 minutes of a run that is CPU-bound. A later test on the same worker that wants one starts it again.
STOPPED_AFTER_LAST_USE = ("kraft_cluster", "zk_cluster", "zk_cluster_no_listener", "zookeeper")

_LAST_USES: dict[str, tuple[str, ...]] = {}


def last_uses(tests: Sequence[tuple[str, Sequence[str]]]) -> dict[str, tuple[str, ...]]:
    """For tests (node id, fixture names) in run order: the session fixtures each test is the last user of in
    its `together` (in STOPPED_AFTER_LAST_USE's order). Tests in no `together` never use them (checked at
    collection)."""
    last: dict[tuple[str, str], str] = {}
    for nodeid, fixtures in tests:
        together = rule_of(nodeid).together
        if together is not None:
            for name in STOPPED_AFTER_LAST_USE:
                if name in fixtures:
                    last[(together, name)] = nodeid
    uses: dict[str, tuple[str, ...]] = {}
    for name in STOPPED_AFTER_LAST_USE:
        for (_, fixture), nodeid in last.items():
            if fixture == name:
                uses[nodeid] = (*uses.get(nodeid, ()), name)
    return uses


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test with its group, and order the tests as RULES orders their `together` (file order
    within one; the others after them, by FILL_ORDER, each group in file order)."""
    first_rule = {rule.together: i for i, rule in reversed(list(enumerate(RULES))) if rule.together}
    rank: dict[str, int] = {}
    for item in items:
        rule = rule_of(item.nodeid)
        clusters = SESSION_CLUSTERS.intersection(getattr(item, "fixturenames", ()))
        if clusters and rule.together is None:
            raise pytest.UsageError(f"{item.nodeid} uses {sorted(clusters)}: give it a `together` in tests/suite.py")
        item.add_marker(getattr(pytest.mark, rule.group))
        together = first_rule.get(rule.together)
        rank[item.nodeid] = together if together is not None else len(RULES) + FILL_ORDER.index(rule.group)
    items.sort(key=lambda item: rank[item.nodeid])
    _LAST_USES.clear()
    _LAST_USES.update(last_uses([(item.nodeid, getattr(item, "fixturenames", ())) for item in items]))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    """After the test's own teardown: stop the session clusters it was the last user of in its `together`
    (their fixtures' teardown, which asserts every process gone) unless the next test wants one."""
    result = yield
    if not isinstance(item, pytest.Function):
        return result
    wanted = getattr(nextitem, "fixturenames", ())
    # pytest's own way to end a fixture early (a parametrized fixture's change of parameter does the same):
    # its FixtureDef's finish, which first ends the fixtures that depend on it
    definitions = item._fixtureinfo.name2fixturedefs
    for name in _LAST_USES.get(item.nodeid, ()):
        if name not in wanted and name in definitions:
            definitions[name][-1].finish(item._request)
    return result


def together_scheduling(config: pytest.Config, log: Any = None) -> Any:
    """xdist's scope scheduling with RULES' `together` as the scope: each scope runs whole on one worker,
    handed out in collection order (--no-loadscope-reorder), the order made above. (Not `--dist loadgroup`:
    it marks a group by rewriting the test's node id, which pytest 9.2 no longer lets it do.)

    A worker is handed its next scope only when one test of its own is left, not xdist's two: a worker runs
    a test only once it knows the next (its teardown needs it), so one is the least, and with two a worker
    whose last two tests were fault rows (~2.5 min each) took the Spark lane minutes before another worker
    was free, and ended the run ~100 s after the others (a fresh-clone run, 2026-11-28)."""
    from xdist.scheduler import LoadScopeScheduling

    class TogetherScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            together = rule_of(nodeid).together
            return nodeid if together is None else f"together:{together}"

        def _reschedule(self, node: Any) -> None:
            if node.shutting_down:
                return
            if not self.workqueue:
                node.shutdown()
                return
            if self._pending_of(self.assigned_work[node]) > 1:
                return
            self._assign_work_unit(node)

    return TogetherScheduling(config, log)


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: without xdist the suite runs in one process
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    return together_scheduling(config, log)


@dataclass
class _Test:
    worker: str
    start: float = float("inf")
    stop: float = 0.0


_TESTS: dict[str, _Test] = {}


@dataclass
class _Span:
    first: float = float("inf")
    last: float = 0.0
    busy: float = 0.0
    tests: int = 0
    workers: frozenset[str] = frozenset()


_SPANS: dict[str, _Span] = {}
_STARTED = time.time()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Where the time goes, per group: first start to last stop (wall) and the sum of its tests' phases
    (busy); in the xdist controller every worker's reports arrive here."""
    span = _SPANS.setdefault(rule_of(report.nodeid).group, _Span())
    span.first = min(span.first, report.start)
    span.last = max(span.last, report.stop)
    span.busy += report.duration
    if report.when == "call":
        span.tests += 1
    node = getattr(report, "node", None)
    worker = getattr(getattr(node, "gateway", None), "id", None)
    if worker is not None:
        span.workers = span.workers | {worker}
    test = _TESTS.setdefault(report.nodeid, _Test(worker or "main"))
    test.start, test.stop = min(test.start, report.start), max(test.stop, report.stop)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _SPANS or hasattr(terminalreporter.config, "workerinput"):
        return
    terminalreporter.section("time per group (wall: first start to last end; busy: the tests' own time)")
    rows = sorted(_SPANS.items(), key=lambda kv: -(kv[1].last - kv[1].first))
    for group, span in rows:
        workers = f" on {len(span.workers)} workers" if span.workers else ""
        terminalreporter.write_line(
            f"{group:<12} wall {span.last - span.first:7.1f} s  busy {span.busy:7.1f} s  {span.tests:4d} tests{workers}"
        )
    terminalreporter.write_line(f"{'pytest':<12} wall {time.time() - _STARTED:7.1f} s")
    _write_timeline(Path(terminalreporter.config.rootpath) / ".test-artifacts" / "suite-timeline.json")


def _write_timeline(path: Path) -> None:
    """Each test's worker, `together` and seconds from the session's start to its start and end: which worker
    waited on what, for the next change of RULES."""
    rows = [
        {
            "test": nodeid,
            "worker": test.worker,
            "together": rule_of(nodeid).together,
            "start": round(test.start - _STARTED, 1),
            "end": round(test.stop - _STARTED, 1),
        }
        for nodeid, test in sorted(_TESTS.items(), key=lambda kv: kv[1].start)
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows, indent=1) + "\n")
