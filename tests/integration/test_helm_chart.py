"""The Helm chart deploy/helm/ctlplane/ as a user installs it: `helm lint` passes and `helm template` renders
objects that pass the kustomize base's checks (tests/integration/manifests.py: Kubernetes 1.25 and 1.37
schemas and the Prometheus Operator CRDs, strict; promtool on the rules) for the default values and for a
sharded, secured example (tests/data/helm/sharded-secured.yaml, the one docs/kubernetes.md shows), and that
say what the kustomize base says: tools/helm.py builds the chart from tools/k8s.py's objects, and this is
the proof from the rendered side that nothing was lost on the way (rules, dashboards, probes, ports,
security contexts, resources, the config)."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from ctlplane.exporter.config.file import load_settings
from ctlplane.exporter.shards import resolve_shard
from tests.integration.manifests import ROOT, assert_promtool_accepts, helm, helm_template, kustomize, problems

CHART = ROOT / "deploy" / "helm" / "ctlplane"
KUBE = ROOT / "deploy" / "kubernetes"
EXAMPLE = ROOT / "tests" / "data" / "helm" / "sharded-secured.yaml"
WORKLOADS = {"Deployment", "StatefulSet"}


def _by_kind(documents: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (document,) = (d for d in documents if d["kind"] == kind)
    return document


@pytest.mark.parametrize("values", [None, EXAMPLE], ids=["default", "sharded-secured"])
def test_helm_lint_passes(values: Path | None) -> None:
    done = helm("lint", "--strict", str(CHART), *(["--values", str(values)] if values else []))
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("values", "workload", "monitor"),
    [(None, "Deployment", "ServiceMonitor"), (EXAMPLE, "StatefulSet", "PodMonitor")],
    ids=["default", "sharded-secured"],
)
def test_every_rendered_object_is_valid(values: Path | None, workload: str, monitor: str) -> None:
    documents = helm_template(CHART, *(["--values", str(values)] if values else []))
    kinds = sorted(d["kind"] for d in documents)
    assert kinds == sorted(["ConfigMap"] * 3 + ["PrometheusRule", "Service", "ServiceAccount", monitor, workload])
    for document in documents:
        assert problems(document) == [], (document["kind"], document["metadata"]["name"])


def _comparable(document: dict[str, Any]) -> dict[str, Any]:
    """The object without what the chart and the kustomize base say differently on purpose: labels and
    selectors (Helm's standard ones), the pods' config checksum (kustomize hashes the ConfigMap's name
    instead), the image (a value in the chart), and the config's comments (each says how to replace it)."""
    out = copy.deepcopy(document)
    # kustomize's configMapGenerator names the ConfigMap ctlplane-config-<hash of its content>
    out["metadata"] = {"name": re.sub(r"^(ctlplane-config)-[a-z0-9]{10}$", r"\1", document["metadata"]["name"])}
    spec = out.get("spec", {})
    spec.pop("selector", None)
    if out["kind"] in WORKLOADS:
        pod = spec.pop("template")["spec"]
        for volume in pod["volumes"]:
            if "configMap" in volume:
                volume["configMap"]["name"] = re.sub(r"-[a-z0-9]{10}$", "", volume["configMap"]["name"])
        for container in pod["containers"]:
            container.pop("image"), container.pop("imagePullPolicy", None)
        spec["pod"] = pod
    if out["kind"] == "ConfigMap" and "ctlplane.yaml" in out["data"]:
        out["data"]["ctlplane.yaml"] = yaml.safe_load(out["data"]["ctlplane.yaml"])
    return out


@pytest.mark.parametrize("mode", ["single", "sharded"])
def test_the_chart_renders_what_the_kustomize_base_does(mode: str) -> None:
    chart = helm_template(CHART, "--set", f"mode={mode}")
    base = kustomize(KUBE / mode)
    # object for object, field for field: the PrometheusRule's groups, the dashboards' JSON, the pod's
    # probes, ports, security contexts, resources, volumes, variables and the StatefulSet's shards
    charts = {(d["kind"], d["metadata"]["name"]): d for d in map(_comparable, chart)}
    bases = {(d["kind"], d["metadata"]["name"]): d for d in map(_comparable, base)}
    assert charts.keys() == bases.keys()
    for key, document in charts.items():
        assert document == bases[key], key
    # and the chart's selectors pick its own pods: the Service's, the workload's and the monitor's
    workload = next(d for d in chart if d["kind"] in WORKLOADS)
    pod_labels = workload["spec"]["template"]["metadata"]["labels"]
    service = _by_kind(chart, "Service")
    monitor = _by_kind(chart, "ServiceMonitor")
    assert workload["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    assert service["spec"]["selector"].items() <= pod_labels.items()
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert _by_kind(chart, "PrometheusRule")["spec"] == _by_kind(base, "PrometheusRule")["spec"]  # said again


def test_promtool_accepts_the_charts_prometheus_rule(tmp_path: Path) -> None:
    assert_promtool_accepts(_by_kind(helm_template(CHART), "PrometheusRule"), tmp_path)


def test_the_sharded_secured_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    documents = helm_template(CHART, "--values", str(EXAMPLE))
    values = yaml.safe_load(EXAMPLE.read_text())
    stateful_set = _by_kind(documents, "StatefulSet")
    pod = stateful_set["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"] == "registry.example.com/ctlplane:0.1.0"
    # each of the `shards` pods (hostname <name>-<ordinal>) serves a share of its own, together every share
    replicas, name = stateful_set["spec"]["replicas"], stateful_set["metadata"]["name"]
    shard = next(e["value"] for e in container["env"] if e["name"] == "CTLPLANE_SHARD")
    shards = [resolve_shard(shard, hostname=f"{name}-{ordinal}") for ordinal in range(replicas)]
    assert [(s.index, s.count) for s in shards] == [(i, values["shards"]) for i in range(values["shards"])]
    assert stateful_set["spec"]["serviceName"] == _by_kind(documents, "Service")["metadata"]["name"]
    # the credentials come from the Secrets the values name, as the variables the config reads
    references = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in container["env"] if "valueFrom" in e}
    assert references["PAYMENTS_JMX_PASSWORD"] == {"name": "payments-kafka-jmx", "key": "jmx-password",
                                                   "optional": True}  # fmt: skip
    assert references["ADMIN_PASSWORD"] == {"name": "ctlplane", "key": "password", "optional": True}
    config = next(
        d["data"]["ctlplane.yaml"] for d in documents if d["kind"] == "ConfigMap" and "ctlplane.yaml" in d["data"]
    )
    for variable in references:
        monkeypatch.setenv(variable, f"from-secret-{variable}")
    path = tmp_path / "ctlplane.yaml"
    path.write_text(config)
    settings = load_settings(path)
    for cluster in settings.clusters:
        auth = settings.jmx_for(cluster)
        assert auth.username == f"from-secret-{auth.username_env}" and auth.password_env in references
    payments = next(c for c in settings.clusters if c.name == "payments")
    assert payments.admin is not None and payments.admin.password_env in references
    # the Prometheus Operator objects carry the label the Prometheus selects by
    for kind in ("PodMonitor", "PrometheusRule"):
        assert _by_kind(documents, kind)["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    # and docs/kubernetes.md shows this very file
    assert EXAMPLE.read_text() in (ROOT / "docs" / "kubernetes.md").read_text()


def test_the_switches_the_names_and_the_values_schema() -> None:
    switched_off = [f"{key}.enabled=false" for key in ("serviceMonitor", "prometheusRule", "grafanaDashboards")]
    documents = helm_template(CHART, "--set", ",".join(switched_off), release="kafka-monitoring")
    assert sorted((d["kind"], d["metadata"]["name"]) for d in documents) == [
        ("ConfigMap", "kafka-monitoring-ctlplane-config"),
        ("Deployment", "kafka-monitoring-ctlplane"),
        ("Service", "kafka-monitoring-ctlplane"),
        ("ServiceAccount", "kafka-monitoring-ctlplane"),
    ]
    # values that do not fit are refused, each naming what is wrong
    for arguments, message in [
        (["--set", "mode=shareded"], "value must be one of 'single', 'sharded'"),
        (["--set", "serviceMonitor.enabeld=true"], "'enabeld' not allowed"),
        (["--set", "existingSecret="], "secretEnv JMX_USERNAME: set existingSecret or the entry's secret"),
    ]:
        done = helm("template", "ctlplane", str(CHART), *arguments)
        assert done.returncode != 0 and message in done.stderr, (arguments, done.stderr)


def test_the_packaged_chart_renders_as_the_directory(tmp_path: Path) -> None:
    # what `make chart` does: the .tgz carries files/ (the rules and dashboards .Files reads) and renders alike
    done = helm("package", str(CHART), "--destination", str(tmp_path))
    assert done.returncode == 0, done.stderr
    (package,) = tmp_path.glob("ctlplane-*.tgz")
    assert helm_template(package, "--values", str(EXAMPLE)) == helm_template(CHART, "--values", str(EXAMPLE))
