"""The kustomizations under deploy/kubernetes/ as a user applies them: rendered by kustomize (kubectl's, or
the kustomize binary tools/install-system-deps.sh builds where kubectl is missing), every object valid
against the Kubernetes schemas (kubernetes-validate, strict: an unknown field fails) of the oldest and
newest release it bundles, the Prometheus Operator's objects against its CRDs' schemas (tests/data/crds,
made strict the same way), and the PrometheusRule's groups accepted by promtool as a rule file."""

from __future__ import annotations

import copy
import functools
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
KUBE = ROOT / "deploy" / "kubernetes"
CRDS = ROOT / "tests" / "data" / "crds"
KUBERNETES_VERSIONS = ("1.25", "1.37")  # the oldest and newest schemas kubernetes-validate bundles
VARIANTS = ("single", "sharded")


def _kustomize(directory: Path) -> list[dict[str, Any]]:
    if (kubectl := shutil.which("kubectl")) is not None:
        command = [kubectl, "kustomize", str(directory)]
    else:
        kustomize = ROOT / ".cache" / "bin" / "kustomize"
        assert kustomize.is_file(), "neither kubectl nor .cache/bin/kustomize: run tools/install-system-deps.sh test"
        command = [str(kustomize), "build", str(directory)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return [document for document in yaml.safe_load_all(done.stdout) if document]


def _strict(schema: Any) -> Any:
    """The schema with unknown properties refused wherever it lists properties and does not say unknown
    fields are kept: what the API server prunes silently, and what `kubectl apply --validate=strict` refuses."""
    if isinstance(schema, dict):
        schema = {key: _strict(value) for key, value in schema.items()}
        if (
            "properties" in schema
            and "additionalProperties" not in schema
            and not schema.get("x-kubernetes-preserve-unknown-fields")
        ):
            schema["additionalProperties"] = False
        return schema
    if isinstance(schema, list):
        return [_strict(item) for item in schema]
    return schema


# read when a test first needs them, not at import: every pytest-xdist worker imports this module to collect
# it, and the CRDs are ~4 s of YAML
@functools.cache
def _crd_validators() -> dict[tuple[str, str], jsonschema.Draft7Validator]:
    validators = {}
    for path in sorted(CRDS.glob("*.yaml")):
        crd = yaml.load(path.read_text(), Loader=yaml.CSafeLoader)  # libyaml: the CRDs are large
        (version,) = crd["spec"]["versions"]
        api_version = f"{crd['spec']['group']}/{version['name']}"
        schema = _strict(version["schema"]["openAPIV3Schema"])
        validators[(api_version, crd["spec"]["names"]["kind"])] = jsonschema.Draft7Validator(schema)
    return validators


def _problems(document: dict[str, Any]) -> list[str]:
    """Every schema violation of one object (empty when it is valid)."""
    key = (document["apiVersion"], document["kind"])
    crd_validators = _crd_validators()
    if key in crd_validators:
        return [f"{list(e.path)}: {e.message}" for e in crd_validators[key].iter_errors(document)]
    problems = []
    for version in KUBERNETES_VERSIONS:
        try:
            kubernetes_validate.validate(document, version, strict=True)
        except kubernetes_validate.ValidationError as error:
            problems.append(f"k8s {version} {list(error.path)}: {error.message}")
    return problems


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_rendered_object_is_valid(variant: str) -> None:
    documents = _kustomize(KUBE / variant)
    kinds = sorted(d["kind"] for d in documents)
    workload = "Deployment" if variant == "single" else "StatefulSet"
    assert kinds == sorted(["ConfigMap"] * 3 + ["PrometheusRule", "Service", "ServiceAccount", "ServiceMonitor",
                                                workload])  # fmt: skip
    for document in documents:
        assert _problems(document) == [], (document["kind"], document["metadata"]["name"])
    # the config volume names the ConfigMap kustomize generated (its name carries the content's hash)
    (pod,) = (d["spec"]["template"]["spec"] for d in documents if d["kind"] == workload)
    config_volume = next(v["configMap"]["name"] for v in pod["volumes"] if v["name"] == "config")
    generated = [d for d in documents if d["kind"] == "ConfigMap" and d["metadata"]["name"] == config_volume]
    assert config_volume.startswith("ctlplane-config-") and "ctlplane.yaml" in generated[0]["data"]


def test_the_podmonitor_is_valid() -> None:
    (podmonitor,) = [d for d in yaml.safe_load_all((KUBE / "podmonitor.yaml").read_text()) if d]
    assert _problems(podmonitor) == []


def test_the_validation_can_fail() -> None:
    documents = {d["kind"]: d for d in _kustomize(KUBE / "single")}
    bad_monitor = copy.deepcopy(documents["ServiceMonitor"])
    bad_monitor["spec"]["endpoints"][0]["intervall"] = "15s"  # a typo the API server would drop silently
    assert any("intervall" in p for p in _problems(bad_monitor))
    bad_rule = copy.deepcopy(documents["PrometheusRule"])
    del bad_rule["spec"]["groups"][0]["rules"][0]["expr"]
    assert any("'expr' is a required property" in p for p in _problems(bad_rule))
    bad_deployment = copy.deepcopy(documents["Deployment"])
    bad_deployment["spec"]["template"]["spec"]["containers"][0]["readOnlyRootFileSystem"] = True  # misplaced
    assert any("readOnlyRootFileSystem" in p for p in _problems(bad_deployment))


def test_promtool_accepts_the_prometheus_rules_groups(tmp_path: Path) -> None:
    (rule,) = [d for d in _kustomize(KUBE / "single") if d["kind"] == "PrometheusRule"]
    rules_file = tmp_path / "ctlplane.rules.yml"
    rules_file.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}, sort_keys=False))
    done = subprocess.run(["promtool", "check", "rules", "--lint=all", "--lint-fatal", str(rules_file)],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {sum(len(g['rules']) for g in rule['spec']['groups'])} rules found" in done.stdout


OVERLAY = """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: kafka
resources:
  - {base}
images:
  - {{name: ctlplane, newName: registry.example.com/ctlplane, newTag: 0.1.0}}
configMapGenerator:
  - {{name: ctlplane-config, behavior: replace, files: [ctlplane.yaml]}}
labels:
  - pairs: {{release: kube-prometheus-stack}}
"""


def test_the_overlay_in_docs_sets_namespace_image_config_and_selection_label(tmp_path: Path) -> None:
    # the overlay docs/kubernetes.md tells users to write, with a config of their own
    docs = (ROOT / "docs" / "kubernetes.md").read_text()
    assert OVERLAY.format(base="../deploy/kubernetes/single") in docs
    base = os.path.relpath(KUBE / "single", tmp_path)  # kustomize takes a base by relative path only
    (tmp_path / "kustomization.yaml").write_text(OVERLAY.format(base=base))
    (tmp_path / "ctlplane.yaml").write_text("clusters:\n  - name: ours\n    nodes: [{address: 'kafka-0:9999'}]\n")
    documents = _kustomize(tmp_path)
    for document in documents:
        assert _problems(document) == [], (document["kind"], document["metadata"]["name"])
        assert document["metadata"]["namespace"] == "kafka"
        assert document["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    (deployment,) = (d for d in documents if d["kind"] == "Deployment")
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.example.com/ctlplane:0.1.0"
    assert deployment["spec"]["selector"]["matchLabels"] == {"app.kubernetes.io/name": "ctlplane"}  # untouched
    (config,) = (d for d in documents if d["kind"] == "ConfigMap" and "ctlplane.yaml" in d["data"])
    assert "name: ours" in config["data"]["ctlplane.yaml"]


def test_the_strimzi_example_is_valid_and_is_what_the_example_config_reads(tmp_path: Path) -> None:
    # the Kafka and node pools against Strimzi 1.2.0's CRDs (tests/data/crds), strict like the others
    documents = [d for d in yaml.safe_load_all((KUBE / "strimzi" / "kafka.yaml").read_text()) if d]
    assert sorted(d["kind"] for d in documents) == ["Kafka", "KafkaNodePool", "KafkaNodePool"]
    for document in documents:
        assert _problems(document) == [], (document["kind"], document["metadata"]["name"])
    (kafka,) = (d for d in documents if d["kind"] == "Kafka")
    assert kafka["spec"]["kafka"]["jmxOptions"] == {"authentication": {"type": "password"}}
    # every pod of every pool (<cluster>-<pool>-<id>, ids pinned by strimzi.io/next-node-ids) is a target of
    # the SRV records of the cluster's headless service for its `jmx` port (JmxModel.JMX_PORT_NAME, on every
    # node whatever its role): the config finds them there, with no pod listed
    cluster, namespace = kafka["metadata"]["name"], kafka["metadata"]["namespace"]
    for pool in (d for d in documents if d["kind"] == "KafkaNodePool"):
        first, last = (int(n) for n in pool["metadata"]["annotations"]["strimzi.io/next-node-ids"][1:-1].split("-"))
        assert last - first + 1 == pool["spec"]["replicas"]
    config = yaml.safe_load((KUBE / "common" / "ctlplane.yaml").read_text())
    (configured,) = config["clusters"]
    assert configured["name"] == cluster and "nodes" not in configured
    assert configured["discovery"] == {
        "dns": [{"name": f"_jmx._tcp.{cluster}-kafka-brokers.{namespace}.svc.cluster.local"}]
    }
    assert configured["bootstrap_servers"] == [f"{cluster}-kafka-bootstrap.{namespace}.svc:9092"]
    assert {"name": "plain", "port": 9092, "type": "internal", "tls": False} in kafka["spec"]["kafka"]["listeners"]
    # and a Kafka with a misplaced jmxOptions (under a node pool, which has none) is refused
    pool = copy.deepcopy(next(d for d in documents if d["kind"] == "KafkaNodePool"))
    pool["spec"]["jmxOptions"] = {}
    assert any("jmxOptions" in p for p in _problems(pool))
