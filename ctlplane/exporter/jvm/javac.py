"""Java classes compiled from source that the package ships, for a JPype JVM's class path.

Why source and not class files: the package stays pure Python (no build step, nothing binary in git) and
the classes always match the JDK that runs them. javac takes ~1 s, so the classes are compiled once into
a cache directory keyed by the source's hash, before the JVM starts (a JVM's class path is fixed at start).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

JAVA_RELEASE = "11"  # class files any JVM from 11 on loads, whichever javac compiled them


class JavacError(RuntimeError):
    pass


def _java_home() -> Path | None:
    """The JDK or JRE that JPype will start (same JDK, no class-version surprises)."""
    try:
        import jpype

        return Path(jpype.getDefaultJVMPath()).resolve().parent.parent.parent  # <home>/lib/server/libjvm.so
    except Exception:  # no JVM found: JPype will report it more clearly at startJVM
        return None


def javac_command() -> list[str]:
    """How to run javac: the JDK's javac, else the compiler module of a JRE that has one.

    A JRE has no javac launcher, but Debian's openjdk-17-jre-headless (the Docker image's JVM) carries the
    jdk.compiler module in its module image, so `java -m jdk.compiler/...` compiles without a JDK.
    """
    homes = [Path(os.environ["JAVA_HOME"])] if os.environ.get("JAVA_HOME") else []
    home = _java_home()
    if home is not None:
        homes.append(home)
    for home in homes:
        javac = home / "bin" / "javac"
        if javac.is_file() and os.access(javac, os.X_OK):
            return [str(javac)]
    found = shutil.which("javac")
    if found is not None:
        return [found]
    for home in homes:
        java = home / "bin" / "java"
        if java.is_file() and os.access(java, os.X_OK):
            return [str(java), "-m", "jdk.compiler/com.sun.tools.javac.Main"]
    raise JavacError("no javac found (install a JDK, or a JRE with the jdk.compiler module)")


def cache_root() -> Path:
    """Where ctlplane keeps what it builds or fetches once: the checkout's `.cache/`, or a per-user
    directory under the temporary directory where the installation is read-only."""
    repo_cache = Path(__file__).resolve().parents[3] / ".cache"  # <checkout>/ctlplane/exporter/jvm/javac.py
    if os.access(repo_cache.parent, os.W_OK):
        return repo_cache
    return Path(tempfile.gettempdir()) / f"ctlplane-cache-{os.getuid()}"


def _cache_root(kind: str) -> Path:
    return cache_root() / f"{kind}-java"


def compiled_classes(kind: str, sources: Mapping[str, str]) -> Path:
    """A directory holding the classes compiled from `sources` (file name -> Java source), compiled once.

    `kind` names the cache directory (".cache/<kind>-java/<hash>"). Raises JavacError if javac fails.
    """
    text = "\n".join(f"{name}\n{source}" for name, source in sorted(sources.items()))
    digest = hashlib.sha256(f"{JAVA_RELEASE}\n{text}".encode()).hexdigest()[:16]
    target = _cache_root(kind) / digest
    if target.is_dir():  # only ever created whole, by the rename below
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    # Compile into a private directory, then rename: processes starting together never see half a tree.
    with tempfile.TemporaryDirectory(dir=target.parent, prefix="build-") as build:
        files = []
        for name, source in sources.items():
            path = Path(build) / name
            path.write_text(source)
            files.append(str(path))
        out = Path(build) / "classes"
        try:
            result = subprocess.run(
                [*javac_command(), "--release", JAVA_RELEASE, "-nowarn", "-d", str(out), *files],
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise JavacError(f"javac could not run: {exc}") from exc
        if result.returncode != 0:
            raise JavacError(f"javac failed: {result.stderr.strip()[-2000:]}")
        try:
            out.rename(target)
        except OSError:
            if not target.is_dir():
                raise  # not a concurrent compile winning the race: a real failure
    return target
