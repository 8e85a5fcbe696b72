"""Place Kafka's Java client in the package before its wheel is built (issue #50): the jars of
ctlplane/exporter/sources/admin/kafka-clients.pom.xml (kafka-clients and its runtime dependencies as the pom
resolves them, slf4j-nop), with their licence and NOTICE files, into ctlplane/exporter/sources/admin/jars/
(git-ignored; pyproject.toml's package-data takes it into the wheel), where client.client_jars looks first.

    python -m tools.client_jars                  # the pom's jars, fetched with Maven into the cache once
    python -m tools.client_jars --jars DIR       # the jars Maven already copied to DIR (the Dockerfile's stage)
    python -m tools.client_jars --into DIR       # somewhere else (tests/integration/test_wheel.py's copy)

`make jars` (so `make run`, `make test`) and `make wheel` run it. Standard library only, like
harness.localkafka: the system's Python runs it beside the virtualenv's install.

Licences: kafka-clients (Apache-2.0) carries its LICENSE and NOTICE at the root of its jar; the jar is kept
whole, and both are also extracted beside it as `<jar>.LICENSE` / `<jar>.NOTICE`, readable without unzipping
(Apache-2.0 §4(d) asks for the NOTICE "within a text file distributed as part of the Derivative Works"). The
SLF4J jars (MIT) carry none: tools/licenses/slf4j-LICENSE.txt goes beside each; nor does jose4j (Apache-2.0,
for OAUTHBEARER): tools/licenses/Apache-2.0.txt; nor do aws-msk-iam-auth and eventstream (Apache-2.0, their
NOTICE files kept here too) and reactive-streams (MIT-0), for AWS_MSK_IAM. A jar with neither stops this
with an error, so a dependency added to the pom cannot ship without its licence.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

from ctlplane.exporter.releases import CLIENT_VERSION
from ctlplane.exporter.sources.admin import client as kafka_admin

LICENSES = Path(__file__).resolve().parent / "licenses"
# the jars whose licence is not inside them: artifact id -> the licence text kept here
KEPT_LICENSES = {
    "slf4j-api": "slf4j-LICENSE.txt",
    "slf4j-nop": "slf4j-LICENSE.txt",
    "jose4j": "Apache-2.0.txt",  # Apache-2.0 (bitbucket.org/b_c/jose4j), its jar carries no licence file
    # AWS_MSK_IAM (Apache-2.0, github.com/aws/aws-msk-iam-auth) and two of the AWS SDK's dependencies
    "aws-msk-iam-auth": "Apache-2.0.txt",
    "eventstream": "Apache-2.0.txt",  # github.com/awslabs/aws-eventstream-java
    "reactive-streams": "reactive-streams-LICENSE.txt",  # MIT No Attribution (reactive-streams-jvm)
}
# the NOTICE files of Apache-2.0 works whose jars carry none (§4(d)): artifact id -> the text kept here,
# from each project's repository
KEPT_NOTICES = {
    "aws-msk-iam-auth": "aws-msk-iam-auth-NOTICE.txt",
    "eventstream": "aws-eventstream-NOTICE.txt",
}
# licence and notice files inside a jar, at its root or under META-INF/
_INSIDE = re.compile(r"^(?:META-INF/)?(?P<kind>LICENSE|NOTICE)(?:\.txt|\.md)?$", re.IGNORECASE)
README = """\
Kafka's Java client for ctlplane's quorum view and discovery (ctlplane/exporter/sources/admin/client.py):
the jars of ctlplane/exporter/sources/admin/kafka-clients.pom.xml as Maven resolves them, placed here by
tools/client_jars.py when the package was built. Each jar's licence (and NOTICE) is beside it as
<jar>.LICENSE / <jar>.NOTICE.
"""


def _artifact(jar: Path) -> str:
    """kafka-clients-4.3.1.jar -> kafka-clients"""
    return re.sub(r"-\d[^-]*$", "", jar.stem)


def place(jars: list[Path], into: Path) -> list[Path]:
    """Copy `jars` and their licence files into `into`, replacing what was there; the files written."""
    if not any(jar.name == kafka_admin.MAIN_JAR for jar in jars):
        raise SystemExit(f"error: no {kafka_admin.MAIN_JAR} among {[j.name for j in jars]}")
    into.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=into.parent, prefix=f".{into.name}-"))
    staging.chmod(0o755)  # mkdtemp's 0700 would keep another user of a checkout (or an image's) out
    try:
        for jar in jars:
            shutil.copy2(jar, staging / jar.name)
            found = 0
            with zipfile.ZipFile(jar) as archive:
                for name in archive.namelist():
                    inside = _INSIDE.match(name)
                    if inside and not name.endswith("/"):
                        (staging / f"{jar.name}.{inside.group('kind').upper()}").write_bytes(archive.read(name))
                        found += 1
            if (notice := KEPT_NOTICES.get(_artifact(jar))) is not None:
                shutil.copyfile(LICENSES / notice, staging / f"{jar.name}.NOTICE")
            kept = KEPT_LICENSES.get(_artifact(jar))
            if kept is not None:
                shutil.copyfile(LICENSES / kept, staging / f"{jar.name}.LICENSE")
            elif not found:
                raise SystemExit(
                    f"error: {jar.name} carries no LICENSE: add its licence text to {LICENSES} and KEPT_LICENSES"
                )
        (staging / "README.txt").write_text(README)
        if into.exists():
            shutil.rmtree(into)
        staging.rename(into)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return sorted(into.iterdir())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.client_jars", description=__doc__.splitlines()[0])
    parser.add_argument("--jars", type=Path, help="a directory holding the pom's jars (default: fetch with Maven)")
    parser.add_argument("--into", type=Path, default=kafka_admin.PACKAGED_JARS, help="default: %(default)s")
    args = parser.parse_args(argv)
    try:
        jars = sorted(args.jars.glob("*.jar")) if args.jars else kafka_admin.fetched_jars()
    except kafka_admin.AdminClientError as exc:
        raise SystemExit(f"error: {exc}") from None
    written = place(jars, args.into)
    size = sum(path.stat().st_size for path in written) / 1e6
    sys.stdout.write(f"kafka-clients {CLIENT_VERSION}: {len(written)} files, {size:.1f} MB in {args.into}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
