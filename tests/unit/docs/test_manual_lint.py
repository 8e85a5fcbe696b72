"""The manual's lint (tools/manual_lint.py): every alert, series, config key, file, link and section a page or
runbook names exists, and the lint fails, naming page:line, on one that does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import manual_lint


def test_every_page_and_runbook_names_only_what_exists() -> None:
    report = manual_lint.lint()
    assert not report.problems, "\n".join(map(str, report.problems))


def test_the_lint_reads_every_page_and_finds_the_names_in_them() -> None:
    """A pattern that matched nothing would pass every page: it must find the mentions the manual has."""
    pages = manual_lint.pages()
    names = {str(page.relative_to(manual_lint.ROOT)) for page in pages}
    assert {"docs/alerts.md", "docs/reference/alerts.md", "alerts/runbooks/KafkaBrokerFenced.md", "README.md"} <= names
    assert len([n for n in names if n.startswith("alerts/runbooks/")]) == len(manual_lint.alert_names())
    checked = manual_lint.lint().checked
    floors = {"alert": 300, "series": 300, "path": 200, "link": 60, "config key": 80, "section": 10, "command": 60}
    for kind, floor in floors.items():
        assert checked[kind] >= floor, (kind, checked[kind])


def _problems(tmp_path: Path, text: str, name: str = "page.md") -> list[str]:
    """The lint's problems for `text` as if it were docs/page.md (its links reach the real pages)."""
    page = manual_lint.ROOT / "docs" / name
    checker = manual_lint.Lint()
    checker.check(page, text)
    return [str(problem) for problem in checker.report.problems]


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("If brokers flap, see `KafkaBrokerHeartbeatTimeouts`.", "unknown alert KafkaBrokerHeartbeatTimeouts"),
        ("split brain (`KafkaSeveralActiveControllers`)", "unknown alert KafkaSeveralActiveControllers"),
        ("Read `kafka_broker_heartbeat_timeouts_total`.", "unknown series kafka_broker_heartbeat_timeouts_total"),
        ("Every `kafka_nothing_*` series.", "unknown series kafka_nothing_*"),
        ("Set `history.dir` to the archive.", "unknown config key history.dir"),
        ("Set `clusters[].discovery.jmx_ports`.", "unknown config key clusters[].discovery.jmx_ports"),
        (
            "The views live in `ctlplane/dashboard/views.py`.",
            "no such file in the repository: ctlplane/dashboard/views.py",
        ),
        ("Runbooks: `alerts/runbooks/<Alert>.yml`.", "no such file in the repository: alerts/runbooks/<Alert>.yml"),
        ("Run `ctlplane pipline episodes`.", "unknown command: ctlplane pipline"),
        ("Run `ctlplane probe --config c.yaml --discovered`.", "unknown flag of ctlplane probe: --discovered"),
        (
            "`ctlplane pipeline sweep --series kafka_broker_fenced_unplanned --thresholds 1 --for 0,15,30,60`.",
            "ctlplane pipeline sweep --series kafka_broker_fenced_unplanned --thresholds 1 --for 0,15,30,60: "
            "ctlplane pipeline sweep: error: the following arguments are required: --archive, --out",
        ),
        ("See [the guide](nowhere.md).", "link to a missing file: nowhere.md"),
        ("See [alerts](alerts.md#how-slow-a-page-comes).", "link to a missing anchor: alerts.md#how-slow-a-page-comes"),
        ('As docs/alerts.md "How slow a page comes" says.', 'docs/alerts.md has no section "How slow a page comes"'),
        ('See [alerts](alerts.md) "Not done".', 'docs/alerts.md has no section "Not done"'),
        ('Not used here; see "Not done".', 'docs/page.md has no section "Not done"'),
    ],
)
def test_a_name_that_does_not_exist_fails_with_its_page_and_line(tmp_path: Path, line: str, problem: str) -> None:
    text = "# A page\n\nSome words.\n" + line + "\n"
    assert _problems(tmp_path, text) == [f"docs/page.md:4: {problem}"]


def test_what_exists_passes(tmp_path: Path) -> None:
    text = "\n".join(
        [
            "# A page",
            "## Its own section",
            "`KafkaBrokerFenced` and KafkaControllerHeartbeatsTimedOut page; `KafkaController` is Kafka's class.",
            '`kafka_broker_lifecycle_state{state="FENCED"}`, `ctlplane_up`, every `kafka_quorum_*` series,',
            "`kafka_2.13` (a Scala build), `history.path`, `clusters[].discovery.jmx_port`, `history.py` (a file).",
            "`alerts/runbooks/<Alert>.md`, `alerts/*.rules.yml`, `ctlplane/dashboard/views/`, deploy/ctlplane.",
            "[alerts](alerts.md#how-fast-a-page-comes), [up](#its-own-section), [x](https://example.com/a.md).",
            'docs/alerts.md "How fast a page comes", docs/pipeline.md "Compaction" (a bold lead),',
            'see "Its own section".',
            'docs/configuration.md "Watching your own clusters" (its title after the colon).',
            "`ctlplane check-config` names a command, `ctlplane probe --config <file>` has a placeholder,",
            "`ctlplane pipeline episodes|sweep|report` three commands.",
            "```promql",
            "kafka_cluster_active_controllers == 0",
            "```",
            "```sh",
            "ctlplane pipeline sweep --archive .data/history --out .data/pipeline \\",
            "    --series kafka_broker_fenced_unplanned --thresholds 1 --for 0,15,30,60 --reference fenced",
            "```",
        ]
    )
    assert _problems(tmp_path, text) == []


def test_a_user_page_that_cites_the_suite_fails_and_a_developer_page_may(tmp_path: Path) -> None:
    cited = "# A page\n\nProven on real clusters (`tests/integration/test_fault_table.py`, `harness/netcut.py`).\n"
    assert _problems(tmp_path, cited) == [
        "docs/page.md:3: test evidence on a user page: tests/integration/test_fault_table.py "
        "(say how it is tested in docs/development.md)",
        "docs/page.md:3: test evidence on a user page: harness/netcut.py (say how it is tested in docs/development.md)",
    ]
    assert _problems(tmp_path, cited, name="development.md") == []
    # the rules' own tests ship beside them: a user runs them
    assert _problems(tmp_path, "# A page\n\nReplayed from `alerts/tests/recorded/`.\n") == []


def test_a_fenced_block_is_checked_for_names_and_commands_but_not_for_links(tmp_path: Path) -> None:
    text = (
        "# A page\n\n```\n[not a link](nowhere.md)\nKafkaNoSuchAlert kafka_no_such_series\n"
        "ctlplane history compact   # for cron\n```\n"
    )
    assert _problems(tmp_path, text) == [
        "docs/page.md:6: ctlplane history compact   # for cron: ctlplane history compact: error: the following "
        "arguments are required: --archive",
        "docs/page.md:5: unknown alert KafkaNoSuchAlert",
        "docs/page.md:5: unknown series kafka_no_such_series",
    ]


def test_the_command_exits_1_and_prints_the_problems(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "bad.md"
    page.write_text("# Bad\n\nsee `KafkaBrokerHeartbeatTimeouts`\n")
    assert manual_lint.main([str(page)]) == 1
    out = capsys.readouterr().out
    assert f"{page}:3: unknown alert KafkaBrokerHeartbeatTimeouts" in out
