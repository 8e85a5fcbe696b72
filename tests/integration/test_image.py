"""The image built from the repository's Dockerfile and run as a cluster operator runs it.

tools/image.py builds it with buildah, no Docker daemon, reusing buildah's layer cache (a few seconds when
nothing changed). Docker Hub is out of reach from the development machines: there, the Dockerfile's bases
(`python:3.11-slim-bookworm`, `maven:3.9.9-eclipse-temurin-17`) are equivalents made from Debian bookworm's
packages and tagged under those names, so the Dockerfile builds unchanged (tools/image.py says what
differs). A cold build, bases included, is 3-6.5 min on 2 shared cores: make test and `make test-image` make
whatever is missing (BUILD_SWITCH below); pytest without the switch runs it only where the bases are there.

One container, started with podman as the Kubernetes pod runs it (docs/kubernetes.md): a read-only root
filesystem, /tmp a tmpfs, every capability dropped, the image's own user, a volume for the history, host
networking to reach the session's ZooKeeper-mode cluster on 127.0.0.1. The module's fixture runs the whole
scenario once and keeps what it saw; each test checks one promise. A runtime feature the sandbox refuses
(an OCI runtime error when the container starts with it) is dropped, and its test is skipped with the
runtime's error as the reason: everything else is still proven.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pyarrow.dataset as ds  # type: ignore[import-untyped]
import pytest
import yaml

from ctlplane.exporter.releases import CLIENT_VERSION
from ctlplane.exporter.sources.admin.client import MAIN_JAR
from harness.localkafka import KafkaCluster, clusters_config, free_port
from tests.integration.served import metrics_until
from tests.kafka_versions import ZK_NAME
from tools import image as image_tool

pytestmark = pytest.mark.zookeeper

# build: make whatever is missing, the bases too (make test, make test-image); otherwise the test runs only where
# the bases are already in the storage, its build then seconds (nothing changed) to ~3 min (requirements.lock changed)
BUILD_SWITCH = "CTLPLANE_TEST_IMAGE"
UID = 10001  # the Dockerfile's `useradd --uid`
HISTORY = "/var/lib/ctlplane/history"
STOP_GRACE_SECONDS = 10  # `podman stop`'s and `docker stop`'s default: SIGTERM, then SIGKILL 10 s later
# podman asks systemd for a timer that runs the image's HEALTHCHECK on its interval
NO_SCHEDULER = "unable to get systemd connection to add healthchecks"


@dataclass
class Scenario:
    """What one run of the container showed."""

    log: Path
    history: Path
    metrics: bytes = b""
    healthz: int = 0
    dashboard: int = 0
    status: dict[str, str] = field(default_factory=dict)  # /proc/<pid>/status of the container's process
    root_mount_options: str = ""
    write_to_root: subprocess.CompletedProcess[str] | None = None
    healthcheck: subprocess.CompletedProcess[str] | None = None
    refused: dict[str, str] = field(default_factory=dict)  # hardening option -> the runtime's error
    exit_code: int | None = None
    stop_seconds: float = 0.0

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def _podman(*args: str) -> list[str]:
    return image_tool.Storage().podman(*args)


def _refusal(log: Path) -> str | None:
    """The OCI runtime's error if podman could not start the container, else None."""
    lines = [line for line in log.read_text(errors="replace").splitlines() if "OCI" in line or "runc" in line]
    return lines[-1] if lines else None


def _start(run_args: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as output:
        return subprocess.Popen(_podman("run", *run_args), stdout=output, stderr=subprocess.STDOUT)


def _refused_options(base: list[str], reference: str) -> dict[str, str]:
    """Which hardening options the runtime refuses, each tried alone with a container that only exits."""
    refused = {}
    for name, options in image_tool.HARDENING.items():
        probe = subprocess.run(
            _podman("run", "--rm", *base, *options, "--entrypoint", "true", reference),
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        if probe.returncode != 0:
            refused[name] = probe.stderr.strip().splitlines()[-1]
    return refused


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> str:
    if missing := image_tool.tools_missing():
        pytest.skip(f"{' '.join(missing)} missing: tools/install-system-deps.sh test installs them")
    if os.geteuid() != 0:
        pytest.skip("buildah and podman run here as root (rootless needs subuid ranges, not set up)")
    if os.environ.get(BUILD_SWITCH) != "build" and (missing := image_tool.bases_to_make(image_tool.Storage())):
        pytest.skip(
            f"the Dockerfile's bases are not in the container storage ({', '.join(missing)}): made here from "
            f"Debian's packages they make a cold build 3-6.5 min on 2 shared cores; `make test` and "
            f"`make test-image` set {BUILD_SWITCH}=build and make them"
        )
    log = tmp_path_factory.mktemp("image") / "build.log"
    try:
        image_tool.build_image(output=log)
    except RuntimeError as error:
        pytest.fail(f"the image did not build: {error}")
    return image_tool.IMAGE


@pytest.fixture(scope="module")
def scenario(built: str, zk_cluster: KafkaCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    work = tmp_path_factory.mktemp("container")
    seen = Scenario(log=work / "podman.log", history=work / "history")
    seen.history.mkdir()
    port = free_port()
    config = work / "ctlplane.yaml"
    document = {
        "clusters": clusters_config((zk_cluster,)),
        "scrape": {"interval_seconds": 2, "timeout_seconds": 1.5},
        "http": {"port": port},  # 127.0.0.1: the host's loopback, the container shares its network
        "history": {"path": HISTORY, "flush_seconds": 3600},  # only the shutdown's flush writes within the test
    }
    config.write_text(yaml.safe_dump(document))
    name = f"ctlplane-test-{uuid.uuid4().hex[:8]}"
    base = [
        "--network", "host",
        *image_tool.run_limits(),
        "--volume", f"{config}:/etc/ctlplane.yaml:ro",
        "--volume", f"{seen.history}:{HISTORY}:U",  # :U chowns it to the image's user
    ]  # fmt: skip
    hardening = [option for options in image_tool.HARDENING.values() for option in options]
    process = _start(["--name", name, *base, *hardening, built], seen.log)
    try:
        if _exited_quickly(process) and (error := _refusal(seen.log)) is not None:
            seen.refused = _refused_options(base, built)
            assert seen.refused, f"the container did not start ({error}), with or without hardening:\n{seen.output()}"
            subprocess.run(_podman("rm", "--force", name), capture_output=True, check=False)
            kept = [o for n, options in image_tool.HARDENING.items() if n not in seen.refused for o in options]
            process = _start(["--name", name, *base, *kept, built], seen.log)
        wanted = [
            f'ctlplane_up{{cluster="{ZK_NAME}",node="{node.name}",role="broker"}} 1.0' for node in zk_cluster.nodes
        ]
        wanted.append(f'kafka_cluster_active_controllers{{cluster="{ZK_NAME}"}} 1.0')
        url = f"http://127.0.0.1:{port}"
        seen.metrics = metrics_until(url, wanted, process, seen.output, 120, "the image's exporter")
        seen.healthz = httpx.get(f"{url}/healthz", timeout=5).status_code
        seen.dashboard = httpx.get(f"{url}/dashboard/", timeout=10).status_code
        pid = subprocess.run(
            _podman("inspect", "--format", "{{.State.Pid}}", name), capture_output=True, text=True, check=True
        ).stdout.strip()
        status = Path(f"/proc/{pid}/status").read_text()
        seen.status = {k: v.strip() for k, _, v in (line.partition(":") for line in status.splitlines())}
        root = next(line for line in Path(f"/proc/{pid}/mountinfo").read_text().splitlines() if line.split()[4] == "/")
        seen.root_mount_options = root.split()[5]
        seen.write_to_root = subprocess.run(
            _podman("exec", name, "touch", "/written"), capture_output=True, text=True, check=False
        )
        seen.healthcheck = subprocess.run(
            _podman("healthcheck", "run", name), capture_output=True, text=True, timeout=60, check=False
        )
        started = time.monotonic()
        subprocess.run(
            _podman("stop", "--time", str(STOP_GRACE_SECONDS), name), capture_output=True, timeout=60, check=False
        )
        seen.exit_code = process.wait(timeout=30)
        seen.stop_seconds = time.monotonic() - started
        yield seen
    finally:
        if process.poll() is None:
            process.kill()
        subprocess.run(_podman("rm", "--force", name), capture_output=True, check=False)


def _exited_quickly(process: subprocess.Popen[bytes]) -> bool:
    """Whether podman gave up at once (a runtime that refuses an option fails before the process starts)."""
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        return False
    return True


def _refused(scenario: Scenario, feature: str) -> None:
    if feature in scenario.refused:
        pytest.skip(f"the runtime refuses the {feature}: {scenario.refused[feature]}")


def test_the_image_serves_metrics_healthz_and_the_dashboard_of_a_real_cluster(scenario: Scenario) -> None:
    assert b"ctlplane_up{" in scenario.metrics
    assert scenario.healthz == 200, scenario.output()
    assert scenario.dashboard == 200, scenario.output()  # the image installs the dashboard extra


def test_the_images_wheel_carries_the_kafka_client(built: str) -> None:
    """The image's ctlplane is a wheel with Kafka's client jars inside (issue #50), as `make wheel` builds it:
    no Maven, no variable pointing elsewhere."""
    version = subprocess.run(
        _podman("run", "--rm", "--network", "none", *image_tool.run_limits(), built, "--version"),
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert version.returncode == 0, version.stdout + version.stderr
    assert version.stdout.rstrip().endswith(f"(Kafka client {CLIENT_VERSION})"), version.stdout
    listed = subprocess.run(
        _podman("run", "--rm", "--network", "none", *image_tool.run_limits(), "--entrypoint", "python", built,
                "-c", "from ctlplane.exporter.sources.admin import client as k; print(*k.client_jars(), sep='\\n')"),
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stdout + listed.stderr
    jars = [Path(line) for line in listed.stdout.split()]
    assert {jar.parent.name for jar in jars} == {"jars"} and f"{MAIN_JAR}" in {j.name for j in jars}, jars


def test_the_process_runs_as_the_images_non_root_user(scenario: Scenario) -> None:
    real, effective, saved, filesystem = (int(uid) for uid in scenario.status["Uid"].split())
    assert real == effective == saved == filesystem == UID, scenario.status["Uid"]
    assert scenario.status["Name"] == "ctlplane", scenario.status["Name"]


def test_the_root_filesystem_is_read_only(scenario: Scenario) -> None:
    _refused(scenario, "read-only root filesystem")
    assert scenario.root_mount_options.split(",")[0] == "ro", scenario.root_mount_options
    assert scenario.write_to_root is not None and scenario.write_to_root.returncode != 0
    assert "Read-only file system" in scenario.write_to_root.stderr, scenario.write_to_root.stderr


def test_no_capability_is_left(scenario: Scenario) -> None:
    _refused(scenario, "capabilities dropped")
    for kind in ("CapEff", "CapPrm", "CapBnd"):
        assert int(scenario.status[kind], 16) == 0, f"{kind} {scenario.status[kind]}"
    assert scenario.status["NoNewPrivs"] == "1"


def test_the_images_healthcheck_passes_inside_the_container(scenario: Scenario) -> None:
    # `podman healthcheck run` execs the image's HEALTHCHECK command in the container, as its timer would
    assert scenario.healthcheck is not None
    assert scenario.healthcheck.returncode == 0, scenario.healthcheck.stdout + scenario.healthcheck.stderr
    assert scenario.healthcheck.stdout.strip() in ("", "healthy"), scenario.healthcheck.stdout


def test_podman_schedules_the_healthcheck(scenario: Scenario) -> None:
    refusal = next((line for line in scenario.output().splitlines() if NO_SCHEDULER in line), None)
    if refusal is not None:  # no systemd on the development machines: the check runs on demand only
        pytest.skip(f"the runtime refuses the healthcheck's timer: {refusal}")
    assert "healthcheck" not in scenario.output().lower(), scenario.output()


def test_podman_stop_flushes_the_history_and_exits_0(scenario: Scenario) -> None:
    assert scenario.exit_code == 0, f"exit {scenario.exit_code} (killed?):\n{scenario.output()}"
    assert scenario.stop_seconds < STOP_GRACE_SECONDS, f"stopped in {scenario.stop_seconds:.1f} s"
    files = list(scenario.history.rglob("part-*.parquet"))
    assert files, f"podman stop lost the history:\n{scenario.output()}"
    assert "SIGTERM: stopping" in scenario.output(), scenario.output()  # podman stop sent the image's StopSignal
    table = ds.dataset(scenario.history, format="parquet", partitioning="hive").to_table()
    assert table.num_rows > 0 and set(table.column("cluster").to_pylist()) == {ZK_NAME}
