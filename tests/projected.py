"""Files as the kubelet projects a Kubernetes Secret into a pod, for the rotation tests: each `<dir>/<name>`
is a link to `..data/<name>`, `..data` a link to the version's own directory, and a renewal renames a new
`..data` link over the old (atomic), so a file keeps its name while the file behind it changes."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def project_secret(directory: Path, version: str, files: Mapping[str, str]) -> None:
    """`files` (name -> text) as version `version` of the Secret projected at `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"..{version}").mkdir()
    for name, text in files.items():
        (directory / f"..{version}" / name).write_text(text)
    (directory / "..data_tmp").symlink_to(f"..{version}")
    os.replace(directory / "..data_tmp", directory / "..data")
    for name in files:
        if not (directory / name).is_symlink():
            (directory / name).symlink_to(f"..data/{name}")
