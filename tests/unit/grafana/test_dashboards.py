"""Structure of grafana/dashboards/*.json and grafana/provisioning, without network.

The checks follow grafana/dashboard-linter's rules (datasource variable, units, $__rate_interval, no
hard-coded selectors), which cannot be installed here, plus ctlplane's own: every series a panel
names is in the metric catalogue, and mode markers agree with the catalogue's modes.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from ctlplane.exporter.catalog import KRAFT, SPECS_BY_SERIES, ZK, Mode, all_series_names
from grafana import build

GRAFANA = Path(build.__file__).resolve().parent
DASHBOARD_FILES = sorted(build.DASHBOARDS_DIR.glob("*.json"))
PROMETHEUS_DS = {"type": "prometheus", "uid": "${datasource}"}


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    return list(build.iter_panels(dashboard))


def targets() -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    return [
        (path.name, panel, target)
        for path in DASHBOARD_FILES
        for panel in panels(load(path))
        for target in panel["targets"]
    ]


def _summary_base(name: str) -> str:
    return re.sub(r"_(count|sum)$", "", name)


def test_both_dashboards_exist_and_are_the_builders_output() -> None:
    assert [p.name for p in DASHBOARD_FILES] == ["ctlplane-cluster.json", "ctlplane-fleet.json"]
    for path, text in build.outputs().items():
        assert path.read_text() == text, f"{path.name} is stale: run python -m grafana.build"


def test_check_mode_reports_a_stale_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(build, "DASHBOARDS_DIR", tmp_path)
    (tmp_path / "ctlplane-fleet.json").write_text("{}\n")
    assert build.main(["--check"]) == 1
    assert build.main([]) == 0
    assert build.main(["--check"]) == 0


@pytest.mark.parametrize("path", DASHBOARD_FILES, ids=lambda p: p.name)
def test_dashboard_model(path: Path) -> None:
    dashboard = load(path)
    assert dashboard["uid"] == path.stem
    assert 39 <= dashboard["schemaVersion"] <= 41
    assert dashboard["title"] and dashboard["tags"]
    assert "__inputs" not in dashboard, "exported-dashboard inputs (${DS_...}) break file provisioning"
    assert "${DS_" not in path.read_text()
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert list(variables) == ["datasource", "cluster", "node"]
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    for name in ("cluster", "node"):
        variable = variables[name]
        assert variable["type"] == "query"
        assert variable["datasource"] == PROMETHEUS_DS
        assert variable["definition"].startswith("label_values(")
        assert variable["query"]["query"] == variable["definition"]
        assert variable["refresh"] == 2, "reload on time-range change, as clusters and nodes come and go"
    assert variables["node"]["multi"] and variables["node"]["allValue"] == ".+"
    ids = [p["id"] for p in dashboard["panels"]] + [p["id"] for r in dashboard["panels"] for p in r.get("panels", [])]
    assert len(ids) == len(set(ids)), "panel ids must be unique"


@pytest.mark.parametrize("path", DASHBOARD_FILES, ids=lambda p: p.name)
def test_panels_use_the_datasource_variable_and_have_units(path: Path) -> None:
    for panel in panels(load(path)):
        where = f"{path.name}: {panel['title']}"
        assert panel["type"] in ("timeseries", "stat"), where
        assert panel["datasource"] == PROMETHEUS_DS, where
        assert panel["description"], where
        assert panel["targets"], where
        assert panel["fieldConfig"]["defaults"].get("unit"), f"{where}: no unit"
        for target in panel["targets"]:
            assert target["datasource"] == PROMETHEUS_DS, where
            assert target["expr"].strip(), where
        assert len({t["refId"] for t in panel["targets"]}) == len(panel["targets"]), where


@pytest.mark.parametrize("path", DASHBOARD_FILES, ids=lambda p: p.name)
def test_panels_do_not_overlap(path: Path) -> None:
    cells: dict[tuple[int, int], str] = {}
    for panel in load(path)["panels"]:
        grid = panel["gridPos"]
        assert 0 <= grid["x"] and grid["x"] + grid["w"] <= 24, panel["title"]
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in cells, f"{panel['title']} overlaps {cells[(x, y)]}"
                cells[(x, y)] = panel["title"]


def test_every_rate_and_increase_uses_rate_interval() -> None:
    checked = 0
    for name, panel, target in targets():
        for match in re.finditer(r"\b(rate|irate|increase|delta|deriv)\s*\(", target["expr"]):
            checked += 1
            window = re.search(r"\[([^\]]*)\]", target["expr"][match.end() :])
            assert window is not None and window.group(1) == "$__rate_interval", f"{name}: {panel['title']}"
    assert checked >= 10


def test_no_hard_coded_cluster_or_node() -> None:
    for name, panel, target in targets():
        matchers = re.findall(r'\b(cluster|node)\s*(=~|!~|!=|=)\s*"([^"]*)"', target["expr"])
        for label, _op, value in matchers:
            assert value == f"${label}", f"{name}: {panel['title']}: {label} is hard-coded as {value!r}"
        # Every per-series selector is scoped to the selected clusters: global ctlplane series are
        # scoped through `and on (instance, job) ctlplane_up{cluster...}` instead.
        assert "$cluster" in target["expr"], f"{name}: {panel['title']}: not filtered by $cluster"


def test_every_series_a_panel_names_is_in_the_catalogue() -> None:
    known = all_series_names()
    named: set[str] = set()
    for name, panel, target in targets():
        series = build.promql_series(target["expr"])
        assert series, f"{name}: {panel['title']}: no series found in {target['expr']!r}"
        unknown = series - known
        assert not unknown, f"{name}: {panel['title']}: not in ctlplane.exporter.catalog: {sorted(unknown)}"
        named |= series
    # The dashboards chart the families an SRE needs (issue 7): none of these may silently drop out.
    for family in (
        "kafka_control_plane_request_queue_size",
        "kafka_control_plane_response_queue_size",
        "kafka_control_plane_network_processor_idle_ratio",
        "kafka_control_plane_request_handler_idle_ratio",
        "kafka_control_plane_expired_connections_killed_total",
        "kafka_request_queue_size",
        "kafka_response_queue_size",
        "kafka_network_processor_idle_ratio",
        "kafka_request_handler_idle_ratio",
        "kafka_expired_connections_killed_total",
        "kafka_cluster_active_controllers",
        "kafka_controller_failovers_total",
        "kafka_broker_lifecycle_state",
        "kafka_broker_metadata_lag_records",
        "kafka_broker_metadata_lag_seconds",
        "kafka_broker_metadata_stale",
        "kafka_broker_metadata_frozen",
        "kafka_controller_event_queue_size",
        "kafka_controller_event_queue_time_seconds",
        "kafka_controller_channel_queue_size",
        "kafka_controller_timed_out_broker_heartbeats_total",
        "kafka_request_total_time_seconds",
        "ctlplane_up",
        "ctlplane_scrape_duration_seconds",
        "ctlplane_snapshot_age_seconds",
    ):
        assert family in named, f"no panel charts {family}"


def test_mode_markers_agree_with_the_catalogue() -> None:
    """A panel naming only ZooKeeper-only (or only KRaft-only) series must say so, and a marked panel
    must not chart a series that its mode never has."""
    only = {Mode.ZOOKEEPER: ZK, Mode.KRAFT: KRAFT}
    for name, panel in [(p.name, panel) for p in DASHBOARD_FILES for panel in panels(load(p))]:
        mode = build.panel_mode(panel)
        specs = [
            SPECS_BY_SERIES[base]
            for target in panel["targets"]
            for series in build.promql_series(target["expr"])
            if (base := _summary_base(series)) in SPECS_BY_SERIES
        ]
        where = f"{name}: {panel['title']}"
        if mode is None:
            for spec in specs:
                assert Mode.ZOOKEEPER in spec.modes and Mode.KRAFT in spec.modes, (
                    f"{where}: {spec.series} exists only in {sorted(spec.modes)}; mark the panel"
                )
        else:
            assert any(spec.modes <= only[mode] for spec in specs) or not specs, f"{where}: marked {mode} needlessly"
            for spec in specs:
                assert mode in spec.modes, f"{where}: marked {mode} but charts {spec.series}"
            assert panel["fieldConfig"]["defaults"]["noValue"].startswith("n/a")


def test_panel_mode_parses_the_marker() -> None:
    assert build.panel_mode({"description": "[ZooKeeper only] queue"}) is Mode.ZOOKEEPER
    assert build.panel_mode({"description": "[KRaft only] lag"}) is Mode.KRAFT
    assert build.panel_mode({"description": "both modes [KRaft only]"}) is None
    assert build.panel_mode({}) is None


@pytest.mark.parametrize(
    ("expr", "series"),
    [
        ('sum by (state) (kafka_broker_lifecycle_state{cluster="$cluster", state!="ACTIVE"})',
         {"kafka_broker_lifecycle_state"}),
        ("rate(a_total{x=\"by (y)\"}[$__rate_interval]) / on (instance, job) group_left() b > bool 0",
         {"a_total", "b"}),
        ("max(ctlplane_snapshot_age_seconds and on (instance, job) ctlplane_up{cluster=\"$cluster\"})",
         {"ctlplane_snapshot_age_seconds", "ctlplane_up"}),
        ("sum(increase(x[5m] offset 1h)) or vector(0)", {"x"}),
    ],
)  # fmt: skip
def test_promql_series_extracts_metric_names(expr: str, series: set[str]) -> None:
    assert build.promql_series(expr) == series


def test_every_expression_is_valid_promql(tmp_path: Path) -> None:
    """promtool parses each query (variables filled) as a recording rule: syntax errors fail here."""
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool (Debian package prometheus) is not installed")
    rules = [
        {"record": f"grafana:check:{index}", "expr": fill(target["expr"])}
        for index, (_, _, target) in enumerate(targets())
    ]
    for path in DASHBOARD_FILES:
        for annotation in load(path)["annotations"]["list"]:
            if "expr" in annotation:
                rules.append({"record": f"grafana:annotation:{len(rules)}", "expr": fill(annotation["expr"])})
    rule_file = tmp_path / "panels.yml"
    rule_file.write_text(yaml.safe_dump({"groups": [{"name": "panels", "rules": rules}]}))
    result = subprocess.run([promtool, "check", "rules", str(rule_file)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(rules)} rules found" in result.stdout


def fill(expr: str) -> str:
    return expr.replace("$__rate_interval", "1m").replace("$cluster", "c").replace("$node", ".+")


@pytest.mark.parametrize("path", DASHBOARD_FILES, ids=lambda p: p.name)
def test_firing_alerts_annotation(path: Path) -> None:
    layers = [a for a in load(path)["annotations"]["list"] if "expr" in a]
    assert len(layers) == 1
    layer = layers[0]
    assert layer["datasource"] == PROMETHEUS_DS and layer["enable"]
    assert layer["expr"].startswith('ALERTS{alertstate="firing"')


def test_provisioning_files() -> None:
    datasources = yaml.safe_load((GRAFANA / "provisioning/datasources/ctlplane.yml").read_text())
    assert datasources["apiVersion"] == 1
    (source,) = datasources["datasources"]
    assert source["type"] == "prometheus" and source["access"] == "proxy" and source["url"].startswith("http")
    dashboards = yaml.safe_load((GRAFANA / "provisioning/dashboards/ctlplane.yml").read_text())
    assert dashboards["apiVersion"] == 1
    (provider,) = dashboards["providers"]
    assert provider["type"] == "file"
    # docs/grafana.md mounts grafana/dashboards at exactly this path
    assert provider["options"]["path"] == "/var/lib/grafana/dashboards/ctlplane"
    docs = (GRAFANA.parent / "docs/grafana.md").read_text()
    assert ":/var/lib/grafana/dashboards/ctlplane" in docs and ":/etc/grafana/provisioning" in docs


ALERTS_DIR = GRAFANA.parent / "alerts"
# alert name -> (the comparison in its expr, the dashboard constant that must equal its threshold)
ALERT_THRESHOLDS: dict[str, list[tuple[str, float]]] = {
    "KafkaControlPlaneRequestQueueBacklog": [
        (r"kafka_control_plane_request_queue_size\s*>=\s*([\d.]+)", build.CONTROL_PLANE_QUEUE_SATURATED)
    ],
    "KafkaControlPlaneThreadsSaturated": [(r"idle_ratio\s*<\s*([\d.]+)", build.IDLE_SATURATED)],
    "KafkaKRaftControllerSaturated": [(r"idle_ratio\{[^}]*\}\s*<\s*([\d.]+)", build.IDLE_SATURATED)],
    "KafkaBrokerMetadataStale": [(r"lag_seconds\s*>\s*([\d.]+)", build.METADATA_ALERT_SECONDS)],
    "KafkaBrokerMetadataLagRecords": [(r"lag_records\s*>\s*([\d.]+)", build.METADATA_STALE_RECORDS)],
    "KafkaZkBrokerMetadataBacklog": [(r"lag_records\s*>=\s*([\d.]+)", build.ZK_CONTROLLER_QUEUE_STALE)],
    "KafkaControllerEventQueueBacklog": [
        (r"_count\[[^\]]*\]\)\s*>\s*([\d.]+)", build.EVENT_QUEUE_WAIT_ALERT_SECONDS),
        (r"event_queue_size\s*>\s*([\d.]+)", build.EVENT_QUEUE_SIZE_ALERT),
    ],
    "KafkaControllerChurn": [(r"\)\s*>=\s*([\d.]+)", build.FAILOVERS_ALERT)],
    "KafkaControllerHeartbeatsTimedOut": [(r"\)\s*>=\s*([\d.]+)", build.HEARTBEAT_TIMEOUTS_ALERT)],
    "CtlplaneSnapshotStale": [(r"age_seconds\s*>\s*([\d.]+)", build.SNAPSHOT_AGE_ALERT_SECONDS)],
    "CtlplaneScrapeSlow": [(r"round_duration_seconds\s*>\s*([\d.]+)", build.ROUND_DURATION_ALERT_SECONDS)],
    "KafkaZkUpdateMetadataSlow": [(r"_count\{[^}]*\}\[[^\]]*\]\)\s*>\s*([\d.]+)", build.UPDATE_METADATA_ALERT_SECONDS)],
}


def test_thresholds_match_the_alert_rules() -> None:
    """The coloured thresholds are the alert rules' (alerts/ is written by its own issue)."""
    if not ALERTS_DIR.is_dir():
        pytest.skip("alerts/ is not in this checkout")
    exprs: dict[str, str] = {}
    for path in sorted(ALERTS_DIR.glob("*.rules.yml")):
        for group in yaml.safe_load(path.read_text())["groups"]:
            for rule in group["rules"]:
                if "alert" in rule:
                    exprs[rule["alert"]] = " ".join(str(rule["expr"]).split())
    missing = sorted(set(ALERT_THRESHOLDS) - set(exprs))
    assert not missing, f"alert rules renamed or removed, update grafana/build.py: {missing}"
    for alert, checks in ALERT_THRESHOLDS.items():
        for pattern, expected in checks:
            match = re.search(pattern, exprs[alert])
            assert match is not None, f"{alert}: {pattern!r} not found in {exprs[alert]!r}"
            assert float(match.group(1)) == expected, f"{alert} fires at {match.group(1)}, dashboards use {expected}"
    # The thresholds are also drawn: at least one panel uses each alert threshold as a step.
    steps = {
        step["value"]
        for path in DASHBOARD_FILES
        for panel in panels(load(path))
        for step in panel["fieldConfig"]["defaults"]["thresholds"]["steps"]
    }
    for alert, checks in ALERT_THRESHOLDS.items():
        for _pattern, expected in checks:
            assert expected in steps, f"no panel draws {alert}'s threshold {expected}"
