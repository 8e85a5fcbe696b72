"""The image's sources agree with each other: every base the Dockerfile starts from can be made here
(tools/image.py: the development machines reach no container registry), and requirements.lock pins every
runtime requirement of pyproject.toml (the Dockerfile installs the lock's wheels offline, so a requirement
the lock misses fails the image's build: tests/integration/test_image.py)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

from tools import image

ROOT = Path(__file__).resolve().parents[3]


def _key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_every_base_of_the_dockerfile_has_a_local_recipe() -> None:
    bases = [image.qualified(name) for name in image.dockerfile_bases()]
    # Maven's first: the wheel's build stage places the client jars its stage fetched (issue #50)
    assert bases == ["docker.io/library/maven:3.9.9-eclipse-temurin-17", "docker.io/library/python:3.11-slim-bookworm"]
    assert set(bases) <= {base.reference for base in image.BASES}


def test_the_bases_are_the_images_the_from_lines_name_not_the_stages(tmp_path: Path) -> None:
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text(
        "FROM python:3.11 AS build\nRUN true\nfrom --platform=linux/amd64 quay.io/x/y:1 as tools\n"
        "FROM build\nFROM python:3.11\nFROM Tools AS last\n"
    )
    assert image.dockerfile_bases(dockerfile) == ["python:3.11", "quay.io/x/y:1"]


def test_short_names_are_docker_hubs() -> None:
    assert image.qualified("python:3.11-slim-bookworm") == "docker.io/library/python:3.11-slim-bookworm"
    assert image.qualified("bitnami/kafka:3.9") == "docker.io/bitnami/kafka:3.9"
    assert image.qualified("quay.io/strimzi/kafka:0.45") == "quay.io/strimzi/kafka:0.45"
    assert image.qualified("localhost:5000/ctlplane:1") == "localhost:5000/ctlplane:1"
    assert image.qualified(image.DEBIAN) == image.DEBIAN


def test_the_lock_pins_every_runtime_requirement_in_its_range() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = dict(line.split("==", 1) for line in (ROOT / "requirements.lock").read_text().splitlines() if "==" in line)
    pins = {_key(name): version for name, version in pins.items()}
    for text in (*project["dependencies"], *project["optional-dependencies"]["dashboard"]):
        requirement = Requirement(text)
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        version = pins.get(_key(requirement.name))
        assert version is not None, f"{text}: not in requirements.lock (tools/lock.py writes it)"
        assert requirement.specifier.contains(version, prereleases=True), f"{text}: the lock pins {version}"
