"""Builds the container image from the repository's Dockerfile without a Docker daemon: Debian's buildah.

    python -m tools.image                  # ctlplane:test in the machine's container storage (the bases first)
    python -m tools.image --root DIR       # the same in a storage of its own (an empty one: a cold build)

The Dockerfile is built unchanged. Its bases (`FROM python:3.11-slim-bookworm`, `FROM maven:…`) are pulled
from Docker Hub where it answers. Where it does not (the development machines resolve no registry's name;
the pull's error is logged), equivalents are made here from Debian bookworm's packages and tagged under the
same names, so that `FROM` finds them in the local storage:

- a slim rootfs by mmdebstrap: minbase, merged /usr, and the dpkg excludes of Docker Hub's slim images (no
  man pages, docs or locales, but the empty man<N> folders they keep), with ca-certificates and the trust
  anchors the building machine added (/usr/local/share/ca-certificates: where a TLS-inspecting egress proxy
  stands between the machine and PyPI or Maven Central, pip and Maven inside the build need its CA; on an
  ordinary machine the folder is empty). An image built on it trusts what the machine trusts: it is for
  this machine's tests, never for a registry.
- python: Debian's Python 3.11 (3.11.2, where Docker Hub's image has the newest 3.11) and pip, without
  PEP 668's EXTERNALLY-MANAGED marker (Docker Hub's image has none; the Dockerfile pip-installs into the
  system's Python). Debian's python3 with pip is ~120 MB more than Docker Hub's slim image.
- maven: Debian's Maven 3.8 and OpenJDK 17 (the Dockerfile's stage only runs `dependency:copy-dependencies`).

A local base carries the label BASE_LABEL, a hash of its recipe: a changed recipe makes it again, an
unchanged one is kept, so buildah's layer cache (`--layers`) holds from one build to the next.

buildah and podman run containers with runc: crun, podman's default on Debian, refuses the development
machines' hybrid cgroup hierarchy ("cgroups in hybrid mode not supported, drop all controllers from
cgroupv2"). Images are built in Docker's format: an OCI image config has no HEALTHCHECK, and buildah drops
it from one.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import logging
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "Dockerfile"
IMAGE = "localhost/ctlplane:test"
BASE_LABEL = "dev.ctlplane.local-base"
DEBIAN = "localhost/ctlplane-base/debian:bookworm-slim"
MIRRORS = (  # what Docker Hub's bookworm images list
    "deb http://deb.debian.org/debian bookworm main",
    "deb http://deb.debian.org/debian bookworm-updates main",
    "deb http://deb.debian.org/debian-security bookworm-security main",
)
# debuerreotype's slim variant (Docker Hub's *-slim): these paths are never unpacked, also by later apt runs
SLIM_EXCLUDES = (
    "path-exclude=/usr/share/doc/*",
    "path-include=/usr/share/doc/*/copyright",
    "path-exclude=/usr/share/man/*",
    "path-exclude=/usr/share/groff/*",
    "path-exclude=/usr/share/info/*",
    "path-exclude=/usr/share/lintian/*",
    "path-exclude=/usr/share/linda/*",
    "path-exclude=/usr/share/locale/*",
)
EXTRA_TRUST = Path("/usr/local/share/ca-certificates")
# crun refuses the hybrid cgroup hierarchy of the development machines; runc runs on v1, v2 and hybrid
RUNTIME = "runc"

# The Kubernetes pod's securityContext (tools/k8s.py) as podman options; tests/integration/test_image.py
# drops one the runtime refuses and skips its check with the runtime's error
HARDENING: dict[str, tuple[str, ...]] = {
    "read-only root filesystem": ("--read-only",),  # podman mounts a tmpfs on /tmp, as the pod's emptyDir
    "capabilities dropped": ("--cap-drop", "ALL", "--security-opt", "no-new-privileges"),
}

log = logging.getLogger("tools.image")


def run_limits() -> list[str]:
    """Explicit rlimits for `podman run`: podman's defaults for a rootful container (nofile 1048576, nproc
    4194304) are above the development machines' hard limits, which only CAP_SYS_RESOURCE could raise and
    the sandbox withholds ("runc create failed: ... error setting rlimit type 7: operation not permitted")."""
    nofile = min(resource.getrlimit(resource.RLIMIT_NOFILE)[1], 1 << 20)
    return ["--ulimit", f"nofile={nofile}:{nofile}", "--ulimit", "nproc=4096:4096"]  # the exporter: ~100 threads


@dataclass(frozen=True)
class Base:
    """A base image of the Dockerfile and how to make an equivalent from Debian's packages."""

    name: str  # as `FROM` spells it
    containerfile: str  # FROM DEBIAN + what Debian installs

    @property
    def reference(self) -> str:
        return qualified(self.name)


PYTHON = Base(
    "python:3.11-slim-bookworm",
    f"""FROM {DEBIAN}
RUN apt-get update \\
    && apt-get install -y --no-install-recommends python3 python3-pip python3-venv python-is-python3 \\
    && rm -rf /var/lib/apt/lists/* /usr/lib/python3.11/EXTERNALLY-MANAGED
ENV LANG=C.UTF-8
CMD ["python3"]
""",
)
MAVEN = Base(
    "maven:3.9.9-eclipse-temurin-17",
    f"""FROM {DEBIAN}
RUN apt-get update \\
    && apt-get install -y --no-install-recommends openjdk-17-jdk-headless maven \\
    && rm -rf /var/lib/apt/lists/*
CMD ["mvn"]
""",
)
BASES = (PYTHON, MAVEN)


def qualified(name: str) -> str:
    """`name` as the container storage lists it: Docker Hub's library images under docker.io/library/."""
    first = name.split("/", 1)[0]
    if "/" in name and ("." in first or ":" in first or first == "localhost"):
        return name
    return f"docker.io/{name}" if "/" in name else f"docker.io/library/{name}"


def dockerfile_bases(dockerfile: Path = DOCKERFILE) -> list[str]:
    """The images the Dockerfile's stages start from, in order, without its own stages' names."""
    stages: set[str] = set()
    bases: list[str] = []
    for line in dockerfile.read_text().splitlines():
        found = re.match(r"\s*FROM\s+(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?", line, re.IGNORECASE)
        if found is None:
            continue
        image, stage = found.group(1), found.group(2)
        if image.lower() not in stages and image not in bases:
            bases.append(image)
        if stage:
            stages.add(stage.lower())
    return bases


@dataclass
class Storage:
    """Where buildah and podman keep images: the machine's (None) or another folder (a cold build)."""

    root: Path | None = None

    def args(self) -> list[str]:
        if self.root is None:
            return []
        return ["--root", str(self.root / "storage"), "--runroot", str(self.root / "run")]

    def buildah(self, *args: str) -> list[str]:
        return ["buildah", *self.args(), *args]

    def podman(self, *args: str) -> list[str]:
        return ["podman", *self.args(), "--runtime", RUNTIME, *args]


@dataclass
class Build:
    """What a build did: the seconds per step, and the bases that Docker Hub did not give (with its error)."""

    seconds: dict[str, float] = field(default_factory=dict)
    pull_errors: dict[str, str] = field(default_factory=dict)

    def timed(self, step: str, started: float) -> None:
        self.seconds[step] = self.seconds.get(step, 0.0) + time.monotonic() - started


def _run(command: Sequence[str], output: Path | None, timeout: float) -> None:
    """Run `command` at nice 10 (the suite's Kafka clusters keep the CPU their timing needs), its output
    appended to `output` (else this process's); a failure raises with the output's tail."""
    log.info("%s", " ".join(command))
    with open(output, "ab") if output is not None else contextlib.nullcontext() as sink:
        result = subprocess.run(
            ["nice", "-n", "10", *command],
            stdout=sink,
            stderr=subprocess.STDOUT if sink is not None else None,
            timeout=timeout,
            check=False,
        )
    if result.returncode != 0:
        tail = output.read_bytes()[-4000:].decode(errors="replace") if output is not None else "(output above)"
        raise RuntimeError(f"exit {result.returncode}: {' '.join(command)}\n{tail}")


def image_label(storage: Storage, reference: str, label: str) -> str | None:
    """The image's `label`, "" if it has none, None if the storage has no such image."""
    result = subprocess.run(
        storage.podman("image", "inspect", "--format", f'{{{{index .Labels "{label}"}}}}', reference),
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        return None
    return result.stdout.strip().removeprefix("<no value>")


def _trust_anchors() -> list[Path]:
    return sorted(EXTRA_TRUST.glob("*.crt")) if EXTRA_TRUST.is_dir() else []


def recipe_hash(base: Base | None) -> str:
    """A hash of what a local base is made of: the rootfs's recipe, the trust anchors, the Containerfile."""
    digest = hashlib.sha256()
    for part in (*MIRRORS, *SLIM_EXCLUDES, "man1-8", *(p.read_text() for p in _trust_anchors())):
        digest.update(part.encode() + b"\0")
    if base is not None:
        digest.update(base.containerfile.encode())
    return digest.hexdigest()[:16]


def build_debian(storage: Storage, output: Path | None) -> None:
    """The slim bookworm rootfs (mmdebstrap, as root) imported as DEBIAN."""
    anchors = _trust_anchors()
    with tempfile.TemporaryDirectory(prefix="ctlplane-rootfs-") as work:
        tarball = Path(work) / "rootfs.tar"
        command = [
            "mmdebstrap",
            "--mode=root",
            "--variant=minbase",
            "--format=tar",
            "--include=ca-certificates",
            # merged /usr by mmdebstrap's hook, as Docker Hub's images are: without it the usrmerge
            # package and Perl (47 MB) stay in the image
            "--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr",
            *(f"--dpkgopt={option}" for option in (*SLIM_EXCLUDES, "force-unsafe-io")),
        ]
        if anchors:
            command.append(f"--customize-hook=copy-in {' '.join(map(str, anchors))} {EXTRA_TRUST}")
        command += [
            '--customize-hook=chroot "$1" update-ca-certificates --fresh',
            # debuerreotype keeps the empty man<N> folders (debuerreotype#116): without man1, the JRE's
            # update-alternatives fails ("error creating symbolic link '/usr/share/man/man1/java.1.gz.dpkg-tmp'")
            "--customize-hook=mkdir -p " + " ".join(f'"$1"/usr/share/man/man{n}' for n in range(1, 9)),
            "bookworm",
            str(tarball),
            *MIRRORS,
        ]
        _run(command, output, timeout=900)
        _run(
            storage.podman(
                "import", "--change", f"LABEL {BASE_LABEL}={recipe_hash(None)}", "--change", 'CMD ["bash"]',
                str(tarball), DEBIAN,
            ),
            output,
            timeout=600,
        )  # fmt: skip


def _buildah_build(storage: Storage, containerfile: Path, context: Path, tag: str, output: Path | None) -> None:
    _run(
        storage.buildah(
            "build",
            "--runtime", RUNTIME,
            "--layers",  # each step's result is kept and reused while its inputs are unchanged
            "--format", "docker",  # OCI's image config has no HEALTHCHECK: buildah drops it from an OCI image
            "--pull-never",  # the bases are in the storage (ensure_bases)
            "--network", "host",  # RUN steps reach PyPI, Maven Central and Debian's mirror as the machine does
            # the stages side by side while they wait on downloads: a cold build of the image's own layers
            # took 153 s with 3 jobs, 188 s with 1 (its bases made, load 12-16)
            "--jobs", "3",
            "-f", str(containerfile), "-t", tag, str(context),
        ),
        output,
        timeout=1800,
    )  # fmt: skip


def bases_to_make(storage: Storage, dockerfile: Path = DOCKERFILE) -> list[str]:
    """The Dockerfile's bases that are not in the storage, or were made from a recipe since changed."""
    known = {b.reference: b for b in BASES}
    missing = []
    for name in dockerfile_bases(dockerfile):
        base = known.get(qualified(name))
        label = image_label(storage, qualified(name), BASE_LABEL)
        if label is None or (label != "" and base is not None and label != recipe_hash(base)):
            missing.append(name)  # "": pulled, not made here
    return missing


def ensure_bases(storage: Storage, output: Path | None, build: Build, dockerfile: Path = DOCKERFILE) -> None:
    """Every base of the Dockerfile in the storage: already there, pulled, or made from Debian's packages."""
    known = {b.reference: b for b in BASES}
    for name in bases_to_make(storage, dockerfile):
        reference = qualified(name)
        base = known.get(reference)
        if image_label(storage, reference, BASE_LABEL) is None:
            started = time.monotonic()
            pulled = subprocess.run(
                storage.buildah("pull", "--quiet", reference), capture_output=True, text=True, timeout=900, check=False
            )
            build.timed("pull", started)
            if pulled.returncode == 0:
                continue
            build.pull_errors[name] = pulled.stderr.strip().splitlines()[-1] if pulled.stderr.strip() else "?"
            log.warning("%s: not pulled (%s), made from Debian's packages", name, build.pull_errors[name])
        if base is None:
            raise LookupError(f"FROM {name}: not pulled and no local recipe for it in tools/image.py")
        if image_label(storage, DEBIAN, BASE_LABEL) != recipe_hash(None):
            started = time.monotonic()
            build_debian(storage, output)
            build.timed("debian rootfs", started)
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="ctlplane-base-") as context:
            containerfile = Path(context) / "Containerfile"
            containerfile.write_text(f"{base.containerfile}LABEL {BASE_LABEL}={recipe_hash(base)}\n")
            _buildah_build(storage, containerfile, Path(context), reference, output)
        build.timed(f"base {name}", started)


def build_image(
    storage: Storage | None = None, tag: str = IMAGE, output: Path | None = None, context: Path = ROOT
) -> Build:
    """The repository's Dockerfile built as `tag` (the bases first, where missing)."""
    storage = storage or Storage()
    build = Build()
    ensure_bases(storage, output, build, context / "Dockerfile")
    started = time.monotonic()
    _buildah_build(storage, context / "Dockerfile", context, tag, output)
    build.timed("image", started)
    return build


def image_size(storage: Storage, reference: str = IMAGE) -> int:
    """The image's size in bytes, unpacked (its layers as the storage holds them)."""
    result = subprocess.run(
        storage.podman("image", "inspect", "--format", "{{.Size}}", reference),
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return int(result.stdout.strip())


def tools_missing() -> list[str]:
    """The programs a build needs that are not on PATH (tools/install-system-deps.sh test installs them)."""
    return [name for name in ("buildah", "podman", "mmdebstrap", RUNTIME) if shutil.which(name) is None]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, help="a container storage of its own (empty: a cold build)")
    parser.add_argument("--tag", default=IMAGE)
    parser.add_argument(
        "--if-buildable",
        action="store_true",
        help="exit 0 with the reason where this machine cannot build (make test: the image's test skips then)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    unbuildable = 0 if args.if_buildable else 1
    if missing := tools_missing():
        sys.stderr.write(f"missing: {' '.join(missing)} (tools/install-system-deps.sh test installs them)\n")
        return unbuildable
    if os.geteuid() != 0:
        sys.stderr.write("run as root: mmdebstrap and buildah build here as root (rootless is not set up)\n")
        return unbuildable
    build = build_image(Storage(args.root), args.tag)
    for step, seconds in build.seconds.items():
        sys.stderr.write(f"{step:<40} {seconds:7.1f} s\n")
    for name, error in build.pull_errors.items():
        sys.stderr.write(f"not pulled, made here: {name}: {error}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
