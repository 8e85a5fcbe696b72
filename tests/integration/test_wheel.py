"""`pip install ctlplane` alone: a wheel built from the repo's sources, installed into a clean virtualenv
(ctlplane's own dependencies from PyPI, no extras, nothing of the repo on the path; uv's pip interface),
runs the exporter against a real broker with only a JDK; the commands that need an extra say which."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from harness.localkafka import KafkaCluster, clusters_config, free_port
from tests.integration.served import metrics_until
from tests.kafka_versions import ZK_NAME

ROOT = Path(__file__).resolve().parents[2]
# the checkout's packages: the product, and the harness that must not be installed with it
# Built and installed with uv's pip interface, as `make` installs the checkout: the same build backend, wheel
# metadata and PyPI resolution as pip's (pip wheel + venv + pip install: ~105 s of the fixture's setup in a
# loaded 4-worker run, ci32; uv: 5 s alone with its cache warm from `make`'s install)
UV = Path(sys.executable).with_name("uv")
PACKAGES = ("ctlplane", "harness")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The `bin` directory of a fresh virtualenv with the wheel installed."""
    work = tmp_path_factory.mktemp("wheel")
    # the build sees the sources only (no virtualenv, caches or build leftovers of the checkout)
    source = work / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    for package in PACKAGES:
        shutil.copytree(ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([str(UV), "build", "--quiet", "--wheel", "--out-dir", str(work / "dist"), str(source)],
                   check=True, timeout=300)  # fmt: skip
    (wheel,) = (work / "dist").glob("ctlplane-*.whl")
    # one import name (client_python ships prometheus_client alone): `import exporter` or `import pipeline`
    # in a user's virtualenv or a shared Spark image must not find ctlplane's
    with zipfile.ZipFile(wheel) as built:
        names = built.namelist()
        (top_level,) = [n for n in names if n.endswith(".dist-info/top_level.txt")]
        assert built.read(top_level).decode().split() == ["ctlplane"]
    assert {n.split("/")[0] for n in names if ".dist-info/" not in n} == {"ctlplane"}, names
    assert not [n for n in names if n.startswith(("ctlplane/localkafka", "harness/"))], "the harness is installed"
    venv = work / "venv"
    subprocess.run([str(UV), "venv", "--quiet", "--seed", "--python", sys.executable, str(venv)], check=True,
                   timeout=120)  # fmt: skip
    subprocess.run([str(UV), "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), str(wheel)],
                   check=True, timeout=600)  # fmt: skip
    yield venv / "bin"


def _clean_env() -> dict[str, str]:
    """This process's environment without what would let the installed ctlplane see the checkout's."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if ".venv" not in p)
    return env


def test_the_wheel_installs_only_ctlplanes_dependencies_and_knows_its_version(installed: Path) -> None:
    expected = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    version = subprocess.run(
        [str(installed / "ctlplane"), "--version"], capture_output=True, text=True, env=_clean_env(), check=True
    )
    assert version.stdout == f"ctlplane {expected}\n"
    listed = subprocess.run(
        [str(installed / "pip"), "list", "--format=freeze"], capture_output=True, text=True, check=True
    ).stdout.lower()
    for extra in ("dash", "pyspark", "pytest"):  # extras and test tools stay out
        assert f"\n{extra}==" not in f"\n{listed}", listed


@pytest.mark.parametrize(
    ("argv", "extra"),
    [
        (["demo"], "dashboard"),
        (["dashboard", "--exporter", "http://127.0.0.1:1"], "dashboard"),
        (["pipeline", "episodes", "--archive", "/nonexistent", "--out", "/nonexistent"], "pipeline"),
    ],
    ids=["demo", "dashboard", "pipeline"],
)
def test_a_command_that_needs_an_extra_says_which_and_how_to_install_it(
    installed: Path, argv: list[str], extra: str, tmp_path: Path
) -> None:
    result = subprocess.run(
        [str(installed / "ctlplane"), *argv], capture_output=True, text=True, env=_clean_env(), cwd=tmp_path, timeout=60
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"pip install 'ctlplane[{extra}]'" in result.stderr
    assert "Traceback" not in result.stderr


def test_run_without_a_config_says_the_local_clusters_need_a_checkout(installed: Path, tmp_path: Path) -> None:
    result = subprocess.run(
        [str(installed / "ctlplane"), "run"], capture_output=True, text=True, env=_clean_env(), cwd=tmp_path, timeout=60
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert "give --config FILE" in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_the_installed_exporter_serves_a_real_cluster(
    installed: Path, zk_cluster: KafkaCluster, tmp_path: Path
) -> None:
    port = free_port()
    config = tmp_path / "ctlplane.yaml"
    # the dashboard is on by default; without its extra the exporter is served and a warning says why not
    document = {
        "clusters": clusters_config((zk_cluster,)),
        "scrape": {"interval_seconds": 2, "timeout_seconds": 1.5},
        "http": {"port": port},
    }
    config.write_text(yaml.safe_dump(document))
    log = tmp_path / "ctlplane.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [str(installed / "ctlplane"), "run", "--config", str(config)],
            stdout=output,
            stderr=subprocess.STDOUT,
            env=_clean_env(),
            cwd=tmp_path,
        )
        try:
            wanted = [
                f'ctlplane_up{{cluster="{ZK_NAME}",node="{node.name}",role="broker"}} 1.0' for node in zk_cluster.nodes
            ]
            wanted.append(f'kafka_cluster_active_controllers{{cluster="{ZK_NAME}"}} 1.0')
            metrics_until(f"http://127.0.0.1:{port}", wanted, process, log.read_text, 90, "the wheel's exporter")
            assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200
            assert httpx.get(f"http://127.0.0.1:{port}/dashboard/", timeout=5).status_code == 404
        finally:
            process.terminate()
            process.wait(timeout=20)
    text = log.read_text()
    assert "dashboard not served" in text and "pip install 'ctlplane[dashboard]'" in text, text
    assert "Traceback" not in text, text
