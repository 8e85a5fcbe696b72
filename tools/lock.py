"""Write requirements.lock: the exact versions of ctlplane's runtime dependencies (with the dashboard),
as installed in this environment, where the suite passed. The container image installs with it as
constraints, so an image built later gets the versions that were tested, not whatever is newest (bcrypt 5
changed behaviour under an unpinned range).

    .venv/bin/python tools/lock.py > requirements.lock
"""

from __future__ import annotations

import re
import sys
from importlib import metadata

from packaging.markers import default_environment
from packaging.requirements import Requirement

ROOT_EXTRAS = ("dashboard",)


def _closure(name: str, extras: tuple[str, ...]) -> dict[str, str]:
    """Every distribution `name[extras]` needs in this environment -> its installed version."""
    found: dict[str, str] = {}
    pending: list[tuple[str, tuple[str, ...]]] = [(name, extras)]
    while pending:
        current, wanted = pending.pop()
        distribution = metadata.distribution(current)
        key = re.sub(r"[-_.]+", "-", distribution.metadata["Name"]).lower()
        if key in found and not wanted:
            continue
        found[key] = distribution.version
        for text in distribution.requires or []:
            requirement = Requirement(text)
            base: dict[str, str] = {str(k): str(v) for k, v in default_environment().items()}
            environments = [{**base, "extra": extra} for extra in ("", *wanted)]
            if requirement.marker is not None and not any(requirement.marker.evaluate(e) for e in environments):
                continue
            pending.append((requirement.name, tuple(sorted(requirement.extras))))
    found.pop("ctlplane", None)
    return found


def main() -> int:
    pins = _closure("ctlplane", ROOT_EXTRAS)
    sys.stdout.write(
        "# ctlplane's runtime dependencies (with the dashboard) as tested: tools/lock.py writes this file.\n"
    )
    sys.stdout.writelines(f"{name}=={version}\n" for name, version in sorted(pins.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
