"""The container image's size and its start-to-first-scrape time.

    .venv/bin/python -m bench.image [--runs 3] [--cold]     # as root, with tools/install-system-deps.sh test's tools

Builds the image as tests/integration/test_image.py does (tools/image.py: buildah's cache, seconds when
nothing changed; with --cold first in an empty container storage of its own, the local bases included, timed
and then removed). Its size unpacked (the layers as the storage holds them) and as `podman save` writes
it gzip-compressed (about what a registry stores and a node pulls), and the layers over the base. Then one
real ZooKeeper-mode cluster of 3 brokers (Kafka 3.9, from the cached jars) and, --runs times, the image
started with podman as the test starts it (read-only root, no capabilities, host network), with the
product's default scrape settings: seconds from `podman run` to /healthz answering 200 and to the first
/metrics page with every broker up. The same for `ctlplane run` as a plain process, for what the
container adds. Where Docker Hub is out of reach the bases are tools/image.py's, made from Debian's
packages: Debian's python3 with pip is ~120 MB more than Docker Hub's python:3.11-slim-bookworm.
Target: the first scrape within the image's HEALTHCHECK --start-period (60 s); the Kubernetes startupProbe
allows 300 s (tools/k8s.py). The issue sets none for the size.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
import zlib
from collections.abc import Sequence
from pathlib import Path

import httpx
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.machine import load
from harness import localkafka
from harness.localkafka import KafkaCluster, clusters_config, free_port
from tools import image as image_tool

TARGET_FIRST_SCRAPE_SECONDS = 60.0  # the Dockerfile's HEALTHCHECK --start-period
MB = 1e6


def compressed_size(storage: image_tool.Storage, reference: str) -> int:
    """Bytes of `podman save`'s archive gzip-compressed at gzip's default level, as registries store layers."""
    packer = zlib.compressobj(6, zlib.DEFLATED, 31)
    size = 0
    with subprocess.Popen(
        storage.podman("save", "--format", "docker-archive", reference), stdout=subprocess.PIPE
    ) as save:
        assert save.stdout is not None
        while chunk := save.stdout.read(1 << 20):
            size += len(packer.compress(chunk))
    if save.returncode != 0:
        raise RuntimeError(f"podman save exited {save.returncode}")
    return size + len(packer.flush())


def layers(storage: image_tool.Storage, reference: str) -> list[tuple[int, str]]:
    """(bytes, instruction) of each layer with content, newest first."""
    history = json.loads(
        subprocess.run(
            storage.podman("history", "--format", "json", reference), capture_output=True, text=True, check=True
        ).stdout
    )
    return [(int(entry["size"]), " ".join(entry["CreatedBy"].split())) for entry in history if int(entry["size"]) > 0]


def first_scrape(command: Sequence[str], url: str, wanted: Sequence[str], log: Path) -> tuple[float, float]:
    """Seconds from starting `command` to /healthz answering 200, and to a /metrics page with every `wanted`
    line; the process is stopped after."""
    started = time.monotonic()
    healthy = 0.0
    with log.open("ab") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
    try:
        while time.monotonic() - started < 300:
            if process.poll() is not None:
                raise RuntimeError(f"exited {process.returncode}:\n{log.read_text()[-3000:]}")
            try:
                if not healthy and httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    healthy = time.monotonic() - started
                if healthy and all(line in httpx.get(f"{url}/metrics", timeout=5).text for line in wanted):
                    return healthy, time.monotonic() - started
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"no complete scrape in 300 s:\n{log.read_text()[-3000:]}")
    finally:
        process.terminate()
        process.wait(60)


def start_times(cluster: KafkaCluster, runs: int, workdir: Path) -> dict[str, list[tuple[float, float]]]:
    wanted = [f'ctlplane_up{{cluster="{cluster.name}",node="{node.name}",role="broker"}} 1.0' for node in cluster.nodes]
    times: dict[str, list[tuple[float, float]]] = {"image": [], "process": []}
    storage = image_tool.Storage()
    hardening = [option for options in image_tool.HARDENING.values() for option in options]
    for run in range(runs):
        port = free_port()
        config = workdir / f"ctlplane-{run}.yaml"
        config.write_text(yaml.safe_dump({"clusters": clusters_config((cluster,)), "http": {"port": port}}))
        name = f"ctlplane-bench-{uuid.uuid4().hex[:8]}"
        container = storage.podman(
            "run", "--rm", "--name", name, "--network", "host", *image_tool.run_limits(), *hardening,
            "--volume", f"{config}:/etc/ctlplane.yaml:ro", image_tool.IMAGE,
        )  # fmt: skip
        try:
            times["image"].append(first_scrape(container, f"http://127.0.0.1:{port}", wanted, workdir / "image.log"))
        finally:
            subprocess.run(storage.podman("rm", "--force", name), capture_output=True, check=False)
        process = [sys.executable, "-m", "ctlplane.cli", "run", "--config", str(config)]
        times["process"].append(first_scrape(process, f"http://127.0.0.1:{port}", wanted, workdir / "process.log"))
    return times


def cold_build() -> image_tool.Build:
    """The image and its bases built in an empty container storage of its own, removed after."""
    root = Path(tempfile.mkdtemp(prefix="ctlplane-cold-storage-", dir="/var/tmp"))
    storage = image_tool.Storage(root)
    try:
        return image_tool.build_image(storage, output=root.parent / f"{root.name}.log")
    finally:
        subprocess.run(storage.buildah("rmi", "--all", "--force"), capture_output=True, check=False)
        overlay = root / "storage" / "overlay"
        if overlay.is_mount():  # the overlay driver's private bind mount of its own folder
            subprocess.run(["umount", str(overlay)], check=False)
        shutil.rmtree(root)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="starts of the image (and of the plain process)")
    parser.add_argument("--cold", action="store_true", help="also time a build in an empty container storage")
    args = parser.parse_args()
    if missing := image_tool.tools_missing():
        sys.exit(f"missing: {' '.join(missing)} (tools/install-system-deps.sh test installs them)")
    print(load())
    if args.cold:
        started = time.monotonic()
        cold = cold_build()
        steps = ", ".join(f"{step} {seconds:.0f} s" for step, seconds in cold.seconds.items())
        print(f"cold build (empty storage, bases made here): {time.monotonic() - started:.0f} s ({steps}); {load()}")
    started = time.monotonic()
    image_tool.build_image()
    print(f"build with buildah's cache: {time.monotonic() - started:.1f} s")
    storage = image_tool.Storage()
    size = image_tool.image_size(storage)
    base = image_tool.image_size(storage, image_tool.PYTHON.reference)
    packed = compressed_size(storage, image_tool.IMAGE)
    for layer_size, instruction in layers(storage, image_tool.IMAGE):
        print(f"  {layer_size / MB:7.1f} MB  {instruction[:100]}")
    with tempfile.TemporaryDirectory(prefix="ctlplane-bench-") as directory:
        workdir = Path(directory)
        cluster = localkafka.start_zk_cluster("bench-3.9", workdir, brokers=3, control_plane_listener=True)
        try:
            times = start_times(cluster, args.runs, workdir)
        finally:
            cluster.stop()
    print(load())
    print(f"{'figure':<64} {'value':>12}   target")
    print(f"{'image size unpacked, MB':<64} {size / MB:>12.0f}   (none set; the base {base / MB:.0f} MB)")
    print(f"{'image size gzip-compressed (podman save), MB':<64} {packed / MB:>12.0f}")
    for what, label in (("image", "podman run"), ("process", "ctlplane run (plain process)")):
        healthy = [h for h, _ in times[what]]
        scraped = [s for _, s in times[what]]
        print(
            f"{label + ' to /healthz 200, s (median)':<64} {statistics.median(healthy):>12.1f}   "
            f"({', '.join(f'{h:.1f}' for h in healthy)})"
        )
        print(
            f"{label + ' to first full scrape, s (median)':<64} {statistics.median(scraped):>12.1f}   "
            f"<= {TARGET_FIRST_SCRAPE_SECONDS:.0f} ({', '.join(f'{s:.1f}' for s in scraped)})"
        )


if __name__ == "__main__":
    main()
