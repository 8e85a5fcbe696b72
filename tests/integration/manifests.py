"""Kubernetes objects as a user applies them and the checks they pass, shared by the kustomize base's and the
Helm chart's tests: rendered by kustomize (kubectl's, or the kustomize binary tools/install-system-deps.sh
builds where kubectl is missing) or by helm (the binary on PATH, or the one that script builds), every
object valid against the Kubernetes schemas (kubernetes-validate, strict: an unknown field fails) of the
oldest and newest release it bundles, the Prometheus Operator's and Strimzi's objects against their CRDs'
schemas (tests/data/crds, made strict the same way), and a PrometheusRule's groups accepted by promtool."""

from __future__ import annotations

import functools
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CRDS = ROOT / "tests" / "data" / "crds"
KUBERNETES_VERSIONS = ("1.25", "1.37")  # the oldest and newest schemas kubernetes-validate bundles


def _documents(text: str) -> list[dict[str, Any]]:
    return [document for document in yaml.safe_load_all(text) if document]


def kustomize(directory: Path) -> list[dict[str, Any]]:
    if (kubectl := shutil.which("kubectl")) is not None:
        command = [kubectl, "kustomize", str(directory)]
    else:
        binary = ROOT / ".cache" / "bin" / "kustomize"
        assert binary.is_file(), "neither kubectl nor .cache/bin/kustomize: run tools/install-system-deps.sh test"
        command = [str(binary), "build", str(directory)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return _documents(done.stdout)


# make test builds helm at nice 19 beside the suite (tools/install-system-deps.sh): ~8 min of a busy machine's
# idle time at worst, and the chart's tests run late in the run
HELM_BUILD_WAIT_SECONDS = 1200.0


def helm_binary() -> str:
    """helm on PATH, or .cache/bin/helm once its build in the background (if one runs) has ended."""
    if (on_path := shutil.which("helm")) is not None:
        return on_path
    binaries = ROOT / ".cache" / "bin"
    building, log = binaries / "helm.building", binaries / "helm.log"
    deadline = time.monotonic() + HELM_BUILD_WAIT_SECONDS
    while building.exists() and time.monotonic() < deadline:
        time.sleep(2)
    binary = binaries / "helm"
    if not binary.is_file():
        said = log.read_text()[-3000:] if log.is_file() else "no build log"
        state = "still building" if building.exists() else "not built"
        pytest.fail(
            f"neither helm on PATH nor .cache/bin/helm ({state}; run tools/install-system-deps.sh test):\n{said}"
        )
    return str(binary)


def helm(*arguments: str) -> subprocess.CompletedProcess[str]:
    """helm with `arguments`, run to its end (the caller checks its exit status)."""
    return subprocess.run([helm_binary(), *arguments], capture_output=True, text=True, timeout=120)


def helm_template(chart: Path, *arguments: str, release: str = "ctlplane") -> list[dict[str, Any]]:
    done = helm("template", release, str(chart), *arguments)
    assert done.returncode == 0, done.stderr
    return _documents(done.stdout)


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


# read when a test first needs them, not at import: every pytest-xdist worker imports the test modules to
# collect them, and the CRDs are ~4 s of YAML
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


def problems(document: dict[str, Any]) -> list[str]:
    """Every schema violation of one object (empty when it is valid)."""
    key = (document["apiVersion"], document["kind"])
    crd_validators = _crd_validators()
    if key in crd_validators:
        return [f"{list(e.path)}: {e.message}" for e in crd_validators[key].iter_errors(document)]
    found = []
    for version in KUBERNETES_VERSIONS:
        try:
            kubernetes_validate.validate(document, version, strict=True)
        except kubernetes_validate.ValidationError as error:
            found.append(f"k8s {version} {list(error.path)}: {error.message}")
    return found


def assert_promtool_accepts(rule: dict[str, Any], directory: Path) -> None:
    """promtool's check (and its lint, fatal) of a PrometheusRule's groups as a rule file."""
    rules_file = directory / "ctlplane.rules.yml"
    rules_file.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}, sort_keys=False))
    done = subprocess.run(["promtool", "check", "rules", "--lint=all", "--lint-fatal", str(rules_file)],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {sum(len(g['rules']) for g in rule['spec']['groups'])} rules found" in done.stdout
