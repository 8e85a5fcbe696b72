"""The recorded fault table replayed at each candidate `for:` of KafkaBrokerFenced and evaluation interval:
which pages it would have sent (true and false) and how soon. `python -m tools.page_sweep` prints
docs/alerts.md's table; `--write` puts it there (a unit test keeps the two in step).

Every file in alerts/tests/recorded/ is a real fault on a real cluster, ctlplane's /metrics every 15 s
(tests/integration/test_fault_table.py). A page is *expected* where the recording's own test says the fault
pages KafkaBrokerFenced for that broker (a crash, a hang, a partition), *false* anywhere else (a restart, a
planned stop on Kafka 4.1+, a restart held in start-up). The rules are evaluated the way Prometheus does,
every evaluation interval over the recording's 15 s grid (a round's values hold until the next round's): an
expression true at consecutive evaluations from the one at t fires at the first evaluation at t' with
t' - t >= `for:`. At a 5 s evaluation a `for:` under 15 s fires within a recorded round, as a 0 s one
at 15 s does: the recordings cannot tell those apart, the live exporter's woken rounds can
(docs/alerts.md "How fast a page comes"). Recordings made before kafka_broker_fenced_unplanned existed have no
such series, so the shipped rules read them as the 1m rule does (as `make lint`'s promtool replay does).

The same question over an operator's own history: `ctlplane pipeline sweep --series
kafka_broker_fenced_unplanned --thresholds 1 --for 0,15,30,60` counts what the 15 s rule would have paged.
"""

from __future__ import annotations

import argparse
import math
import re
import statistics
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from tools.markers import between

ROOT = Path(__file__).resolve().parent.parent
RECORDED = ROOT / "alerts" / "tests" / "recorded"
DOCS = ROOT / "docs" / "alerts.md"
STEP_SECONDS = 15.0
BEGIN = "<!-- page_sweep: begin (python -m tools.page_sweep --write) -->"
END = "<!-- page_sweep: end -->"
ALERT = "KafkaBrokerFenced"
_SERIES = re.compile(r"^(?P<name>[a-z_]+)\{(?P<labels>.*)\}$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class Broker:
    """One broker of one recording: per 15 s step, FENCED (1/0) and unplanned (1/0, None if not recorded)."""

    recording: str
    node: str
    fenced: tuple[bool, ...]
    unplanned: tuple[bool | None, ...]
    expected: bool  # the recording's test says KafkaBrokerFenced pages for this broker


@dataclass(frozen=True)
class Outcome:
    true_pages: int
    false_pages: int
    missed: int
    seconds_to_fire: tuple[float, ...]  # expected pages: from the first FENCED step to firing
    flagged_seconds_to_fire: tuple[float, ...]  # the same, of recordings with kafka_broker_fenced_unplanned
    false_recordings: tuple[str, ...]


def _values(text: str) -> list[float | None]:
    out: list[float | None] = []
    for token in str(text).split():
        out.append(None if token in ("_", "stale") else float(token))
    return out


def _labels(text: str) -> dict[str, str]:
    return dict(_LABEL.findall(text))


def read_recording(path: Path) -> list[Broker]:
    document = yaml.safe_load(path.read_text())
    test = document["tests"][0]
    fenced: dict[str, list[float | None]] = {}
    unplanned: dict[str, list[float | None]] = {}
    for entry in test["input_series"]:
        match = _SERIES.match(entry["series"])
        if match is None:
            continue
        labels = _labels(match["labels"])
        if match["name"] == "kafka_broker_lifecycle_state" and labels.get("state") == "FENCED":
            fenced[labels["node"]] = _values(entry["values"])
        elif match["name"] == "kafka_broker_fenced_unplanned":
            unplanned[labels["node"]] = _values(entry["values"])
    expected = {
        sample_node
        for case in test.get("promql_expr_test", [])
        if 'severity="critical"' in case["expr"]
        for sample in case.get("exp_samples") or []
        if f'alertname="{ALERT}"' in sample["labels"]
        for sample_node in re.findall(r'node="([^"]+)"', sample["labels"])
    }
    brokers = []
    for node, values in sorted(fenced.items()):
        flags = unplanned.get(node)
        brokers.append(
            Broker(
                recording=path.name.removesuffix(".test.yml"),
                node=node,
                fenced=tuple(v == 1 for v in values),
                unplanned=tuple((v == 1) if v is not None else None for v in flags)
                if flags is not None
                else (None,) * len(values),
                expected=node in expected,
            )
        )
    return brokers


def fires_at(condition: Sequence[bool], for_seconds: float, every: float = STEP_SECONDS) -> float | None:
    """When (seconds from the first step) an alert on `condition` (one value per 15 s step) evaluated every
    `every` seconds (a divisor of 15, from the first step) fires, or None."""
    per_step = round(STEP_SECONDS / every)
    need = math.ceil(for_seconds / every - 1e-9)
    run = 0
    for index in range(len(condition) * per_step):
        true = condition[index // per_step]
        run = run + 1 if true else 0
        if true and run - 1 >= need:
            return index * every
    return None


def first_fire(broker: Broker, fast: float | None, slow: float, every: float = STEP_SECONDS) -> float | None:
    """When the rules would fire for `broker`: with `fast` None one rule on FENCED with `for: slow`; else the
    shipped pair, FENCED and unplanned with `for: fast`, FENCED unless unplanned with `for: slow`."""
    if fast is None:
        return fires_at(broker.fenced, slow, every)
    unplanned = [f and u is True for f, u in zip(broker.fenced, broker.unplanned, strict=True)]
    sustained = [f and u is not True for f, u in zip(broker.fenced, broker.unplanned, strict=True)]
    times = [t for t in (fires_at(unplanned, fast, every), fires_at(sustained, slow, every)) if t is not None]
    return min(times) if times else None


def outcome(brokers: Iterable[Broker], fast: float | None, slow: float, every: float = STEP_SECONDS) -> Outcome:
    true_pages = false_pages = missed = 0
    seconds: list[float] = []
    flagged: list[float] = []
    false_in: list[str] = []
    for broker in brokers:
        step = first_fire(broker, fast, slow, every)
        if broker.expected and step is not None:
            true_pages += 1
            seconds.append(step - broker.fenced.index(True) * STEP_SECONDS)
            if any(u is not None for u in broker.unplanned):
                flagged.append(seconds[-1])
        elif broker.expected:
            missed += 1
        elif step is not None:
            false_pages += 1
            false_in.append(f"{broker.recording}/{broker.node}")
    return Outcome(true_pages, false_pages, missed, tuple(seconds), tuple(flagged), tuple(sorted(set(false_in))))


def _duration(seconds: float) -> str:
    return f"{seconds / 60:g}m" if seconds >= 60 and seconds % 60 == 0 else f"{seconds:g}s"


# (unplanned `for:` or None for one rule, the other `for:`, the evaluation interval)
CANDIDATES: tuple[tuple[float | None, float, float], ...] = (
    (None, 0.0, 15.0),
    (None, 15.0, 15.0),
    (None, 30.0, 15.0),
    (None, 60.0, 15.0),
    (0.0, 60.0, 15.0),
    (15.0, 60.0, 15.0),
    (30.0, 60.0, 15.0),
    (10.0, 60.0, 5.0),
    (15.0, 60.0, 5.0),
)
SHIPPED = (10.0, 60.0, 5.0)


def _spread(seconds: Sequence[float]) -> str:
    return f"{statistics.median(seconds):g} s / {max(seconds):g} s" if seconds else "-"


def table(brokers: Sequence[Broker]) -> str:
    recordings = len({b.recording for b in brokers})
    with_flag = len({b.recording for b in brokers if any(u is not None for u in b.unplanned)})
    lines = [
        f"{recordings} recordings ({with_flag} with `kafka_broker_fenced_unplanned`), "
        f"{sum(b.expected for b in brokers)} expected {ALERT} pages.",
        "",
        "| rules | true pages | false pages | not fired in the recording "
        "| after the first FENCED round: median / worst | the same, recordings with the flag | false pages in |",
        "|---|---|---|---|---|---|---|",
    ]
    for fast, slow, every in CANDIDATES:
        result = outcome(brokers, fast, slow, every)
        if fast is None:
            rules = f"one rule, `for: {_duration(slow)}`"
        else:
            rules = f"unplanned `for: {_duration(fast)}`, otherwise `for: {_duration(slow)}`"
        rules += f", evaluated every {_duration(every)}"
        if (fast, slow, every) == SHIPPED:
            rules = f"**{rules} (shipped)**"
        where = ", ".join(f"`{name}`" for name in result.false_recordings) or "-"
        lines.append(
            f"| {rules} | {result.true_pages} | {result.false_pages} | {result.missed} "
            f"| {_spread(result.seconds_to_fire)} | {_spread(result.flagged_seconds_to_fire)} | {where} |"
        )
    return "\n".join(lines) + "\n"


def all_brokers(directory: Path = RECORDED) -> list[Broker]:
    return [broker for path in sorted(directory.glob("*.test.yml")) for broker in read_recording(path)]


def main(argv: Sequence[str] | None = None, docs: Path = DOCS) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.page_sweep", description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help=f"replace the table in {docs.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    body = table(all_brokers())
    if args.write:
        docs.write_text(between(docs.read_text(), BEGIN, END, body, str(docs.relative_to(ROOT))))
    else:
        sys.stdout.write(body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
