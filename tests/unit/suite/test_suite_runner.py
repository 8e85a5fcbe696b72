"""tools/suite.py (`make test`, `make lint`) and tests/suite.py (where each test runs): a failing lint step
fails the run and shows its output, passing ones are one line; every test has a group and the tests of one
stateful cluster run together."""

from __future__ import annotations

import pytest

from tests.suite import GROUPS, RULES, rule_of
from tools import suite


def test_a_failing_step_fails_the_run_with_its_output_and_a_passing_one_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(
        suite,
        "LINT_STEPS",
        (("passes", ("sh", "-c", "echo quiet")), ("fails", ("sh", "-c", "echo 'the reason'; exit 3"))),
    )
    assert suite.main(["lint"]) == 1
    out = capsys.readouterr().out
    assert "lint: passes: ok" in out and "quiet" not in out
    assert "lint: fails: FAILED (exit 3)" in out and "the reason" in out


def test_a_run_whose_steps_pass_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(suite, "LINT_STEPS", (("passes", ("true",)),))
    assert suite.main(["lint"]) == 0


def test_one_group_runs_pytest_with_its_marker_and_no_lint(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ran: list[list[str]] = []

    class Done:
        returncode = 0

    def fake_run(command: list[str], **_: object) -> Done:
        ran.append(command)
        return Done()

    monkeypatch.setattr(suite.subprocess, "run", fake_run)
    assert suite.main(["test", "--group", "unit", "--", "-q", "tests/unit"]) == 0
    assert len(ran) == 1 and ran[0][1:] == ["-q", "tests/unit", "-m", "unit and not matrix"]
    assert "lint:" not in capsys.readouterr().out


def test_every_rule_names_a_known_group_and_the_fault_rows_of_one_cluster_run_together() -> None:
    assert {rule.group for rule in RULES} <= set(GROUPS)
    faults = "tests/integration/test_fault_table.py::"
    assert (
        rule_of(faults + "test_kill_just_after_a_round_x").together
        == rule_of(faults + "test_a_rolling_restart_x").together
    )
    assert rule_of("tests/unit/exporter/test_config.py::test_x").together is None
    with pytest.raises(LookupError, match="no rule"):
        rule_of("elsewhere/test_x.py::test_y")


class _Item:
    def __init__(self, nodeid: str) -> None:
        self.nodeid = nodeid
        self.fixturenames: tuple[str, ...] = ()

    def add_marker(self, _: object) -> None:
        pass


def test_togethers_first_then_the_rest_long_groups_first_and_unit_tests_last() -> None:
    from tests.suite import pytest_collection_modifyitems

    names = [
        "tests/unit/exporter/test_config.py::test_a",
        "tests/integration/test_tls.py::test_b",
        "tests/unit/pipeline/test_transforms.py::test_c",
        "tests/e2e/test_paging_simulated.py::test_d",
        "tests/integration/test_fault_table.py::test_a_hung_broker_x",
        "tests/unit/exporter/http/test_app.py::test_e",
    ]
    items = [_Item(name) for name in names]
    pytest_collection_modifyitems(items)  # type: ignore[arg-type]
    assert [item.nodeid for item in items] == [
        "tests/integration/test_fault_table.py::test_a_hung_broker_x",  # the first together
        "tests/unit/pipeline/test_transforms.py::test_c",  # a later together
        "tests/e2e/test_paging_simulated.py::test_d",  # in none: e2e before integration before unit
        "tests/integration/test_tls.py::test_b",
        "tests/unit/exporter/test_config.py::test_a",
        "tests/unit/exporter/http/test_app.py::test_e",
    ]


def test_a_session_cluster_stops_after_the_last_test_of_its_together_that_uses_it() -> None:
    from tests.suite import last_uses

    quorum = "tests/integration/test_quorum_view.py::"
    grafana = "tests/integration/test_grafana_queries.py::"
    uses = last_uses(
        [
            (quorum + "test_a", ("kraft_cluster",)),
            (quorum + "test_b", ("kraft_cluster", "zk_cluster", "zookeeper")),
            (quorum + "test_c", ("tmp_path",)),  # a lane's test that uses none: the cluster is already stopped
            (grafana + "test_d", ("kraft_cluster", "zk_cluster", "zookeeper")),  # another together: its own last
            ("tests/unit/exporter/test_config.py::test_e", ()),
        ]
    )
    assert uses == {
        quorum + "test_b": ("kraft_cluster", "zk_cluster", "zookeeper"),
        grafana + "test_d": ("kraft_cluster", "zk_cluster", "zookeeper"),
    }


class _Worker:
    """A pytest-xdist worker as its scheduler sees it: the tests sent to it, and whether it was told to stop."""

    def __init__(self, name: str) -> None:
        self.gateway = type("Gateway", (), {"id": name})()
        self.sent: list[int] = []
        self.shutting_down = False

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


def test_a_worker_is_handed_its_next_together_only_when_its_last_test_is_left() -> None:
    from tests.suite import together_scheduling

    class Config:
        option = type("Option", (), {"loadscopereorder": False})()

        def getvalue(self, name: str) -> list[str]:
            assert name == "tx"
            return ["2*popen"]

    faults = "tests/integration/test_fault_table.py::"
    collection = [
        faults + "test_kill_just_after_a_round_a",  # the session KRaft cluster's lane, three tests
        faults + "test_kill_just_after_a_round_b",
        faults + "test_kill_just_after_a_round_c",
        "tests/integration/test_spark_cluster.py::test_d",  # the Spark lane
        "tests/integration/test_dynamic_quorum.py::test_e",
        "tests/unit/exporter/test_config.py::test_f",
    ]
    scheduler = together_scheduling(Config())
    first, second = _Worker("gw0"), _Worker("gw1")
    for worker in (first, second):
        scheduler.add_node(worker)
        scheduler.add_node_collection(worker, collection)
    scheduler.schedule()
    # one together each; the Spark lane's one test cannot run before its worker knows a next one
    assert first.sent == [0, 1, 2] and second.sent == [3, 4]
    scheduler.mark_test_complete(first, 0)
    assert first.sent == [0, 1, 2], "two tests of its own left: xdist's default would take the next lane now"
    scheduler.mark_test_complete(first, 1)
    assert first.sent == [0, 1, 2, 5]
