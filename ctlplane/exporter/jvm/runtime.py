"""The host's Java, checked before any cluster is read: every read goes through a JVM (JPype's in-process JVM
for JMX and Kafka's Admin client, or jmxquery's `java`), so a host without one, or with one older than the
Kafka client needs, is told in one line what to install rather than failing on its first read.

Found the way JPype will start it (`jpype.getDefaultJVMPath()`: `$JAVA_HOME`, then the platform's usual
places), its release read from the Java home's `release` file, without starting a JVM."""

from __future__ import annotations

import re
from pathlib import Path

# Kafka's 4.x client needs Java 11 (KIP-1013), as do the classes jvm/javac.py compiles (JAVA_RELEASE); the manual
# asks for 17, what the suite and the image run.
MIN_JAVA = 11
INSTALL = "install a JDK 17 (e.g. `apt-get install openjdk-17-jre-headless`) or point JAVA_HOME at one"

_JAVA_VERSION = re.compile(r'^JAVA_VERSION="?(?P<version>[^"\s]+)"?\s*$', re.MULTILINE)


def java_major(libjvm: Path) -> int | None:
    """The Java release of the JVM whose library this is, from its home's `release` file (a directory above
    `lib/server/libjvm.so`, or `jre/lib/<arch>/server/libjvm.so` before Java 9); None where none says."""
    for home in list(libjvm.parents)[1:5]:
        try:
            text = (home / "release").read_text(errors="replace")
        except OSError:
            continue
        found = _JAVA_VERSION.search(text)
        if found is None:
            return None
        parts = re.split(r"[._+-]", found.group("version"))
        major = parts[1] if parts[0] == "1" and len(parts) > 1 else parts[0]  # "1.8.0_392" is Java 8
        return int(major) if major.isdigit() else None
    return None


def java_problem() -> str | None:
    """What is missing for ctlplane to read a cluster on this host, as one line with what to install; None
    when a JVM is found that is recent enough (or does not say its release)."""
    try:
        import jpype

        libjvm = Path(jpype.getDefaultJVMPath())
    except Exception as exc:  # JVMNotFoundException, JVMNotSupportedException: their own words, on one line
        said = " ".join(str(exc).split()) or type(exc).__name__
        return f"no Java found, and ctlplane reads Kafka through a JVM ({said}): {INSTALL}"
    major = java_major(libjvm)
    if major is not None and major < MIN_JAVA:
        home = libjvm.parents[2]
        return f"Java {major} at {home} is too old: ctlplane needs Java {MIN_JAVA} or newer: {INSTALL}"
    return None
