"""`pip install ctlplane` alone: a wheel built from the repo's sources as `make wheel` builds it (Kafka's client
jars placed in the package first), installed into a clean virtualenv (ctlplane's own dependencies from PyPI,
no extras, nothing of the repo on the path; uv's pip interface), runs the exporter against a real broker with
only a JDK, and reads a KRaft cluster's quorum from one address with no Maven on PATH and an empty cache
(issue #50); the commands that need an extra say which."""

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

from ctlplane.exporter.releases import CLIENT_VERSION
from ctlplane.exporter.sources.admin.client import MAIN_JAR
from harness.localkafka import KafkaCluster, clusters_config, free_port, quorum_bootstrap
from tests.integration.served import metrics_until
from tests.kafka_versions import ZK_NAME

ROOT = Path(__file__).resolve().parents[2]
# the checkout's packages: the product, and the harness that must not be installed with it
# Built and installed with uv's pip interface, as `make` installs the checkout: the same build backend, wheel
# metadata and PyPI resolution as pip's (pip wheel + venv + pip install: ~105 s of the fixture's setup in a
# loaded 4-worker run, ci32; uv: 5 s alone with its cache warm from `make`'s install)
UV = Path(sys.executable).with_name("uv")
PACKAGES = ("ctlplane", "harness")
JARS = "ctlplane/exporter/sources/admin/jars"  # Kafka's client jars in the package (tools/client_jars.py)


# the jars AWS_MSK_IAM brings (kafka-clients.pom.xml: aws-msk-iam-auth 2.4.0, as Maven resolves it)
AWS_JARS = (
    "aws-msk-iam-auth-2.4.0",
    "eventstream-1.0.1",
    "httpclient5-5.6.4",
    "httpcore5-5.4.3",
    "httpcore5-h2-5.4.3",
    "annotations-2.51.2",
    "apache5-client-2.51.2",
    "auth-2.51.2",
    "aws-core-2.51.2",
    "aws-json-protocol-2.51.2",
    "aws-query-protocol-2.51.2",
    "checksums-2.51.2",
    "checksums-spi-2.51.2",
    "endpoints-spi-2.51.2",
    "http-auth-2.51.2",
    "http-auth-aws-2.51.2",
    "http-auth-aws-eventstream-2.51.2",
    "http-auth-spi-2.51.2",
    "http-client-spi-2.51.2",
    "identity-spi-2.51.2",
    "json-utils-2.51.2",
    "metrics-spi-2.51.2",
    "profiles-2.51.2",
    "protocol-core-2.51.2",
    "regions-2.51.2",
    "retries-2.51.2",
    "retries-spi-2.51.2",
    "sdk-core-2.51.2",
    "sso-2.51.2",
    "ssooidc-2.51.2",
    "sts-2.51.2",
    "third-party-jackson-core-2.51.2",
    "utils-2.51.2",
    "utils-lite-2.51.2",
)


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
        shutil.copytree(ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__", "jars"))
    # `make wheel`'s first step: Kafka's client jars (fetched into the checkout's cache by `make jars`) and
    # their licences into the package
    subprocess.run([sys.executable, "-m", "tools.client_jars", "--into", str(source / JARS)], cwd=ROOT, check=True,
                   timeout=600)  # fmt: skip
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
    # Kafka's client and its runtime dependencies, each with its licence (and kafka-clients' NOTICE) beside it
    carried = sorted(n.removeprefix(f"{JARS}/") for n in names if n.startswith(f"{JARS}/"))
    assert carried == sorted(
        [MAIN_JAR, f"{MAIN_JAR}.LICENSE", f"{MAIN_JAR}.NOTICE", "README.txt"]
        + [f"slf4j-{a}-1.7.36.jar{s}" for a in ("api", "nop") for s in ("", ".LICENSE")]
        # OAUTHBEARER's OIDC login (KIP-768): jose4j and Jackson, which kafka-clients' pom does not list
        + [f"jose4j-0.9.6.jar{s}" for s in ("", ".LICENSE")]
        + [
            f"jackson-{a}.jar{s}"
            for a in ("annotations-2.21", "core-2.21.2", "databind-2.21.2")
            for s in ("", ".LICENSE", ".NOTICE")
        ]
        # AWS_MSK_IAM: aws-msk-iam-auth and the AWS SDK v2 parts it signs with, Apache-2.0 each (a licence and a
        # NOTICE beside every jar), but reactive-streams (MIT-0, a licence alone)
        + [f"{jar}.jar{s}" for jar in AWS_JARS for s in ("", ".LICENSE", ".NOTICE")]
        + [f"reactive-streams-1.0.4.jar{s}" for s in ("", ".LICENSE")]
    ), carried
    with zipfile.ZipFile(wheel) as built:
        assert "Apache License" in built.read(f"{JARS}/{MAIN_JAR}.LICENSE").decode()
        assert "Apache Kafka" in built.read(f"{JARS}/{MAIN_JAR}.NOTICE").decode()
        assert "Permission is hereby granted" in built.read(f"{JARS}/slf4j-api-1.7.36.jar.LICENSE").decode()
        assert "Apache License" in built.read(f"{JARS}/jose4j-0.9.6.jar.LICENSE").decode()
    sys.stderr.write(f"wheel: {wheel.name} {wheel.stat().st_size / 1e6:.1f} MB\n")
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
    assert version.stdout == f"ctlplane {expected} (Kafka client {CLIENT_VERSION})\n"  # carried, not fetched
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


@pytest.mark.parametrize("naming", ["jmx_exporter", "strimzi"])
def test_the_installed_wheel_carries_each_naming_profile(installed: Path, tmp_path: Path, naming: str) -> None:
    """A cluster read through its nodes' metrics endpoints (docs/sources.md): the profile's rules are package
    data, and check-config of such a config needs no Java (no JMX, no quorum's view)."""
    config = tmp_path / "ctlplane.yaml"
    config.write_text(
        "clusters:\n  - name: msk\n    nodes: [{address: 'b-1.msk.example:11001', node_id: 1}]\n"
        f"    metrics: {{naming: {naming}}}\n"
    )
    env = {**_clean_env(), "JAVA_HOME": str(tmp_path / "no-java")}
    result = subprocess.run(
        [str(installed / "ctlplane"), "check-config", str(config)], capture_output=True, text=True, env=env, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr


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


def _without_maven(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """`env` with no directory on PATH that has an `mvn`, and an empty temporary directory (where an
    installation that cannot write beside itself keeps its cache: ctlplane/exporter/jvm/javac.py cache_root)."""
    path = [p for p in env["PATH"].split(os.pathsep) if not (Path(p) / "mvn").exists()]
    assert shutil.which("mvn", path=os.pathsep.join(path)) is None
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    return {**env, "PATH": os.pathsep.join(path), "TMPDIR": str(temporary)}


def _installed_cache(installed: Path) -> Path:
    """The cache of the installed ctlplane: `.cache` beside its package, in a virtualenv it can write to."""
    site = subprocess.run(
        [str(installed / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    return Path(site) / ".cache"


def _probe(installed: Path, config: Path, env: dict[str, str], *flags: str) -> str:
    """`ctlplane probe` of the installed wheel: its output, checked for a clean exit and no Maven."""
    done = subprocess.run(
        [str(installed / "ctlplane"), "probe", "--config", str(config), *flags],
        capture_output=True, text=True, env=env, cwd=config.parent, timeout=180,
    )  # fmt: skip
    said = done.stdout + done.stderr
    assert done.returncode == 0 and "Traceback" not in said, said
    assert "mvn" not in said and "kafka-clients" not in said, said  # the client was there: no fetch, no error
    return done.stdout


def _one_address(tmp_path: Path, name: str, bootstrap: dict[str, list[str]]) -> Path:
    """A config of one cluster given by one kind of bootstrap address, every node's JMX on port 1 of its own
    host (refused): what the cluster's Admin API says is what is tested here, not JMX."""
    config = tmp_path / "ctlplane.yaml"
    # the product's default read budget: with a 4 s one, a fresh JVM's Admin client on a loaded machine (a CI run
    # beside the Spark lane) had no node assigned within the call (each request gets a third of it)
    document = {"clusters": [{"name": name, **bootstrap, "discovery": {"jmx_port": 1}}]}
    config.write_text(yaml.safe_dump(document))
    return config


def _read_ids(table: str, cluster: str) -> set[int]:
    """The node ids of `probe`'s table rows of this cluster (cluster node role mode id …)."""
    rows = [line.split() for line in table.splitlines()]
    return {int(row[4]) for row in rows if row[:1] == [cluster] and len(row) > 4 and row[4].isdigit()}


def test_the_installed_wheel_reads_a_kraft_quorum_from_one_address_without_maven_or_a_cache(
    installed: Path, kraft_cluster: KafkaCluster, tmp_path: Path
) -> None:
    """A host with Python and a JDK only: the quorum's view and every node the cluster names, through the
    client the wheel carries, given only `bootstrap_controllers`."""
    env = _without_maven(_clean_env(), tmp_path)
    cache = _installed_cache(installed)
    shutil.rmtree(cache, ignore_errors=True)  # nothing fetched or compiled by an earlier test of this module
    config = _one_address(tmp_path, "kraft-wheel", {"bootstrap_controllers": quorum_bootstrap(kraft_cluster)})
    checked = subprocess.run(
        [str(installed / "ctlplane"), "check-config", str(config)],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # a round finds the nodes, a second reads the controllers it found: each with its id
    table = _probe(installed, config, env)
    controllers = {node.node_id for node in kraft_cluster.controllers()}
    assert _read_ids(table, "kraft-wheel") == controllers, table
    quorum = [line.split() for line in table.splitlines() if "quorum's view:" in line]
    assert quorum and quorum[0][2] == "leader" and int(quorum[0][3].rstrip(",")) in controllers, table
    # the brokers, quorum observers without a host for the JMX rule, are named and listed as not watched
    said = _probe(installed, config, env, "--discover")
    listing = [line.split() for line in said.splitlines()]
    unwatched = {int(row[3]) for row in listing if row[:2] == ["kraft-wheel", "-"] and "not" in row}
    assert unwatched == {node.node_id for node in kraft_cluster.brokers()}, said
    # the client came from the package: nothing fetched into any cache
    assert not (cache / "kafka-clients").exists()
    assert not list((tmp_path / "tmp").glob("*/kafka-clients"))


def test_the_installed_wheel_finds_a_zookeeper_mode_clusters_brokers_from_one_address_without_maven(
    installed: Path, zk_cluster: KafkaCluster, tmp_path: Path
) -> None:
    """The same host, a ZooKeeper-mode cluster given one broker's address: every broker, named by
    describeCluster through the client the wheel carries, is read."""
    env = _without_maven(_clean_env(), tmp_path)
    config = _one_address(tmp_path, "zk-wheel", {"bootstrap_servers": [zk_cluster.brokers()[0].address]})
    table = _probe(installed, config, env)
    assert _read_ids(table, "zk-wheel") == {node.node_id for node in zk_cluster.brokers()}, table
    assert not (_installed_cache(installed) / "kafka-clients").exists()


def test_the_installed_wheel_on_a_host_with_too_old_a_java_says_what_to_install(
    installed: Path, tmp_path: Path
) -> None:
    """`check-config` and `run` stop before any cluster is read, in one line: a Java 8 home (JAVA_HOME, as
    JPype finds it first; its release file says 1.8)."""
    home = tmp_path / "jdk8"
    (home / "lib" / "server").mkdir(parents=True)
    (home / "lib" / "server" / "libjvm.so").write_bytes(b"")
    (home / "release").write_text('JAVA_VERSION="1.8.0_392"\n')
    config = tmp_path / "ctlplane.yaml"
    config.write_text(yaml.safe_dump({"clusters": [{"name": "c1", "nodes": [{"address": "127.0.0.1:1"}]}]}))
    env = {**_clean_env(), "JAVA_HOME": str(home)}
    for argv in (["check-config", str(config)], ["run", "--config", str(config)]):
        done = subprocess.run(
            [str(installed / "ctlplane"), *argv], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60
        )
        assert done.returncode == 2 and done.stdout == "", done.stdout + done.stderr
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
        assert f"Java 8 at {home} is too old" in done.stderr and "openjdk-17-jre-headless" in done.stderr
