"""The kustomizations under deploy/kubernetes/ as a user applies them: rendered by kustomize (kubectl's, or
the kustomize binary tools/install-system-deps.sh builds where kubectl is missing), every object valid
against the Kubernetes schemas (kubernetes-validate, strict: an unknown field fails) of the oldest and
newest release it bundles, the Prometheus Operator's objects against its CRDs' schemas (tests/data/crds,
made strict the same way), and the PrometheusRule's groups accepted by promtool as a rule file (the
checks are tests/integration/manifests.py's, which the Helm chart's test shares)."""

from __future__ import annotations

import copy
import os
from pathlib import Path

import pytest
import yaml

from tests.integration.manifests import ROOT, assert_promtool_accepts, kustomize, problems

KUBE = ROOT / "deploy" / "kubernetes"
VARIANTS = ("single", "sharded")


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_rendered_object_is_valid(variant: str) -> None:
    documents = kustomize(KUBE / variant)
    kinds = sorted(d["kind"] for d in documents)
    workload = "Deployment" if variant == "single" else "StatefulSet"
    assert kinds == sorted(["ConfigMap"] * 3 + ["PrometheusRule", "Service", "ServiceAccount", "ServiceMonitor",
                                                workload])  # fmt: skip
    for document in documents:
        assert problems(document) == [], (document["kind"], document["metadata"]["name"])
    # the config volume names the ConfigMap kustomize generated (its name carries the content's hash)
    (pod,) = (d["spec"]["template"]["spec"] for d in documents if d["kind"] == workload)
    config_volume = next(v["configMap"]["name"] for v in pod["volumes"] if v["name"] == "config")
    generated = [d for d in documents if d["kind"] == "ConfigMap" and d["metadata"]["name"] == config_volume]
    assert config_volume.startswith("ctlplane-config-") and "ctlplane.yaml" in generated[0]["data"]


def test_the_podmonitor_is_valid() -> None:
    (podmonitor,) = [d for d in yaml.safe_load_all((KUBE / "podmonitor.yaml").read_text()) if d]
    assert problems(podmonitor) == []


def test_the_validation_can_fail() -> None:
    documents = {d["kind"]: d for d in kustomize(KUBE / "single")}
    bad_monitor = copy.deepcopy(documents["ServiceMonitor"])
    bad_monitor["spec"]["endpoints"][0]["intervall"] = "15s"  # a typo the API server would drop silently
    assert any("intervall" in p for p in problems(bad_monitor))
    bad_rule = copy.deepcopy(documents["PrometheusRule"])
    del bad_rule["spec"]["groups"][0]["rules"][0]["expr"]
    assert any("'expr' is a required property" in p for p in problems(bad_rule))
    bad_deployment = copy.deepcopy(documents["Deployment"])
    bad_deployment["spec"]["template"]["spec"]["containers"][0]["readOnlyRootFileSystem"] = True  # misplaced
    assert any("readOnlyRootFileSystem" in p for p in problems(bad_deployment))


def test_promtool_accepts_the_prometheus_rules_groups(tmp_path: Path) -> None:
    (rule,) = [d for d in kustomize(KUBE / "single") if d["kind"] == "PrometheusRule"]
    assert_promtool_accepts(rule, tmp_path)


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
    documents = kustomize(tmp_path)
    for document in documents:
        assert problems(document) == [], (document["kind"], document["metadata"]["name"])
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
        assert problems(document) == [], (document["kind"], document["metadata"]["name"])
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
    assert any("jmxOptions" in p for p in problems(pool))
