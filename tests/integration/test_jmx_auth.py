"""JMX authentication against a real JVM's own agent (the one every Kafka broker runs,
com.sun.management.jmxremote with a password and an access file): the right user reads, a wrong password is
an authentication failure (Failure.AUTH: cause jmx_auth_failed), not an unreadable answer.

The JDK's authenticator refuses a login with a SecurityException whose cause is a
javax.security.auth.login.FailedLoginException (JMXPluggableAuthenticator.authenticationFailure); ctlplane's
deserialisation filter must let that exception through, or the refusal arrives as
"InvalidClassException: filter status: REJECTED" and reads as any other failure.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ctlplane.exporter.model import Failure, MBeanQuery
from ctlplane.exporter.sources.jmx.base import Endpoint, JmxError
from harness.localkafka import LOOPBACK, free_port, java_executable, port_open
from tests.integration.watch import shared_client

RUNTIME = (MBeanQuery("java.lang:type=Runtime", ("StartTime",)),)
SLEEPER = "public class Sleeper { public static void main(String[] a) throws Exception { Thread.sleep(600_000); } }\n"


def await_jmx_port(port: int, process: subprocess.Popen[bytes], log: Path, timeout: float = 60) -> None:
    """Until the JVM's JMX port opens; its log if the JVM exits first, or when `timeout` passes."""
    deadline = time.monotonic() + timeout
    while not port_open(port):
        assert process.poll() is None, log.read_text()
        assert time.monotonic() < deadline, f"the JVM's JMX port {port} did not open ({log})"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def guarded_jvm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """A JVM (a source-file program, JEP 330) with remote JMX that takes user monitor, password s3cret, read-only."""
    work = tmp_path_factory.mktemp("jmx-auth")
    (work / "Sleeper.java").write_text(SLEEPER)
    passwords = work / "jmxremote.password"
    passwords.write_text("monitor s3cret\n")
    passwords.chmod(0o600)  # the agent refuses a password file others can read
    access = work / "jmxremote.access"
    access.write_text("monitor readonly\n")
    port = free_port()
    process = subprocess.Popen(
        [
            java_executable(),
            "-Xmx64m",
            "-Dcom.sun.management.jmxremote",
            f"-Dcom.sun.management.jmxremote.port={port}",
            f"-Dcom.sun.management.jmxremote.rmi.port={port}",
            f"-Dcom.sun.management.jmxremote.host={LOOPBACK}",
            f"-Djava.rmi.server.hostname={LOOPBACK}",
            "-Dcom.sun.management.jmxremote.authenticate=true",
            f"-Dcom.sun.management.jmxremote.password.file={passwords}",
            f"-Dcom.sun.management.jmxremote.access.file={access}",
            "-Dcom.sun.management.jmxremote.ssl=false",
            str(work / "Sleeper.java"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=open(work / "jvm.log", "wb"),
    )
    try:
        await_jmx_port(port, process, work / "jvm.log")
        yield port
    finally:
        process.kill()
        process.wait()


def test_the_right_user_reads_the_jvm(guarded_jvm: int) -> None:
    (reading,) = shared_client().read(Endpoint(LOOPBACK, guarded_jvm, "monitor", "s3cret"), RUNTIME)
    assert float(reading.values["StartTime"]) > 0


def test_a_wrong_password_is_an_authentication_failure(guarded_jvm: int) -> None:
    with pytest.raises(JmxError) as error:
        shared_client().read(Endpoint(LOOPBACK, guarded_jvm, "monitor", "wrong"), RUNTIME)
    assert error.value.failure is Failure.AUTH, str(error.value)
    assert str(error.value) == f"{LOOPBACK}:{guarded_jvm}: JMX authentication failed"
