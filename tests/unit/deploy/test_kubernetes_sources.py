"""deploy/kubernetes/ and the Helm chart deploy/helm/ctlplane/ come from the project's sources and match
them: the committed files are what tools/k8s.py and tools/helm.py write, the PrometheusRule is
alerts/*.rules.yml, the Grafana ConfigMaps are the dashboards, and the pod runs what the Dockerfile builds
the way the exporter expects."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from ctlplane.exporter.config import HttpConfig
from ctlplane.exporter.config.file import load_settings
from ctlplane.exporter.shards import resolve_shard
from tools import helm, k8s

ROOT = Path(__file__).resolve().parents[3]
KUBE = ROOT / "deploy" / "kubernetes"
CHART = ROOT / "deploy" / "helm" / "ctlplane"


def _objects(relative: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((KUBE / relative).read_text()) if d]


@pytest.mark.parametrize(
    ("generator", "edited", "extra"),
    [(k8s, "common/service.yaml", "single/extra.yaml"), (helm, "templates/service.yaml", "templates/extra.yaml")],
    ids=["kustomize", "helm"],
)
def test_committed_objects_are_what_the_generator_writes(
    generator: ModuleType, edited: str, extra: str, tmp_path: Path
) -> None:
    assert generator.stale() == [], f"stale: run python -m {generator.__name__}"
    # and the check can fail: one edited file and one extra file are both found
    generator.write(tmp_path)
    (tmp_path / edited).write_text("edited by hand\n")
    (tmp_path / extra).write_text("{}\n")
    assert generator.stale(tmp_path) == sorted([edited, extra])


def test_the_chart_holds_the_kustomize_bases_rules_dashboards_and_defaults() -> None:
    # the rule groups and dashboards .Files reads, and values.yaml's defaults (what helm renders from them
    # against the kustomize base: tests/integration/test_helm_chart.py)
    (rule,) = _objects("common/prometheusrule.yaml")
    assert yaml.safe_load((CHART / "files" / "prometheus-rules.yaml").read_text()) == rule["spec"]
    dashboards = {p.name: p.read_text() for p in (CHART / "files" / "dashboards").iterdir()}
    assert dashboards == {p.name: p.read_text() for p in (ROOT / "grafana" / "dashboards").glob("*.json")}
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert yaml.safe_load(values["config"]) == yaml.safe_load((KUBE / "common" / "ctlplane.yaml").read_text())
    _, spec = _pod("single/deployment.yaml")
    (container,) = spec["containers"]
    assert values["resources"] == container["resources"]
    assert [{"name": e["name"], "valueFrom": {"secretKeyRef": {"name": values["existingSecret"], "key": e["key"],
                                                               "optional": True}}} for e in values["secretEnv"]
            ] == container["env"]  # fmt: skip
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["version"] == chart["appVersion"] == container["image"].split(":")[1]


def test_the_prometheus_rule_is_the_rule_files() -> None:
    (rule,) = _objects("common/prometheusrule.yaml")
    groups = [group for path in sorted((ROOT / "alerts").glob("*.rules.yml"))
              for group in yaml.safe_load(path.read_text())["groups"]]  # fmt: skip
    assert rule["spec"]["groups"] == groups
    alerts = [r for g in rule["spec"]["groups"] for r in g["rules"] if "alert" in r]
    assert len(alerts) > 20
    for alert in alerts:  # runbook links kept, each naming the alert's runbook file that exists
        url = alert["annotations"]["runbook_url"]
        assert (ROOT / "alerts" / "runbooks" / url.rsplit("/", 1)[1]).is_file(), url


def test_the_grafana_config_maps_hold_the_dashboards_byte_for_byte() -> None:
    maps = _objects("common/grafana-dashboards.yaml")
    data = {name: text for config_map in maps for name, text in config_map["data"].items()}
    files = {p.name: p.read_text() for p in (ROOT / "grafana" / "dashboards").glob("*.json")}
    assert data == files and len(files) == 2
    assert all(m["metadata"]["labels"]["grafana_dashboard"] == "1" for m in maps)


def _pod(relative: str) -> tuple[dict[str, Any], dict[str, Any]]:
    (workload,) = _objects(relative)
    spec = workload["spec"]["template"]["spec"]
    return workload, spec


@pytest.mark.parametrize("relative", ["single/deployment.yaml", "sharded/statefulset.yaml"])
def test_the_pod_runs_the_image_as_the_dockerfile_builds_it(relative: str) -> None:
    _, spec = _pod(relative)
    (container,) = spec["containers"]
    dockerfile = (ROOT / "Dockerfile").read_text()
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert container["image"] == f"ctlplane:{version}"
    uid = int(re.search(r"--uid (\d+)", dockerfile).group(1))  # type: ignore[union-attr]
    assert spec["securityContext"]["runAsUser"] == uid and spec["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
    (port,) = container["ports"]
    assert port["containerPort"] == HttpConfig().port and f"EXPOSE {port['containerPort']}" in dockerfile
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"] == {"path": "/healthz", "port": port["name"]}
    # the config the container is started with is the ConfigMap's file
    config_arg = container["args"][container["args"].index("--config") + 1]
    mount = next(m for m in container["volumeMounts"] if config_arg.startswith(m["mountPath"] + "/"))
    volume = next(v for v in spec["volumes"] if v["name"] == mount["name"])
    assert volume["configMap"]["name"] == "ctlplane-config" and config_arg.endswith("/ctlplane.yaml")
    assert any(m["mountPath"] == "/tmp" for m in container["volumeMounts"])  # the JVM's and javac's scratch


def test_the_example_config_loads_with_the_secret_the_pod_passes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, spec = _pod("single/deployment.yaml")
    variables = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in spec["containers"][0]["env"] if "valueFrom" in e}
    for name in variables:
        monkeypatch.setenv(name, f"from-secret-{name}")
    path = tmp_path / "ctlplane.yaml"
    path.write_text((KUBE / "common" / "ctlplane.yaml").read_text())
    settings = load_settings(path)
    auth = settings.jmx_for(settings.clusters[0])
    assert auth.username == f"from-secret-{auth.username_env}"
    assert auth.password() is not None and auth.password_env in variables
    # Strimzi's JMX Secret and its keys (strimzi-kafka-operator KafkaResources.kafkaJmxSecretName, JmxModel)
    assert {ref["name"] for ref in variables.values()} == {"my-cluster-kafka-jmx"}
    assert {ref["key"] for ref in variables.values()} == {"jmx-username", "jmx-password"}
    assert settings.http.host == "0.0.0.0" and settings.http.port == HttpConfig().port


def test_the_sharded_replicas_agree_with_their_shard_count() -> None:
    workload, spec = _pod("sharded/statefulset.yaml")
    shard = next(e["value"] for e in spec["containers"][0]["env"] if e["name"] == "CTLPLANE_SHARD")
    replicas, name = workload["spec"]["replicas"], workload["metadata"]["name"]
    # each pod (hostname <name>-<ordinal>) serves a share of its own, and together they serve every share
    shards = [resolve_shard(shard, hostname=f"{name}-{ordinal}") for ordinal in range(replicas)]
    assert [(s.index, s.count) for s in shards] == [(i, replicas) for i in range(replicas)] and replicas > 1
    assert workload["spec"]["serviceName"] == _objects("common/service.yaml")[0]["metadata"]["name"]


def test_the_docs_name_every_value_of_the_chart() -> None:
    docs = (ROOT / "docs" / "kubernetes.md").read_text()
    section = docs[docs.index("## Install with Helm") :].split("\n## ", 1)[0]
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert [key for key in values if f"`{key}`" not in section] == []
