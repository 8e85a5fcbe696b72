"""A real MIT Kerberos KDC on loopback, in a directory of its own: a realm made with `kdb5_util create -s`,
principals and keytabs made with `kadmin.local`, and `krb5kdc` listening on a free port (UDP and TCP). Debian's
`krb5-kdc` and `krb5-admin-server` (tools/install-system-deps.sh test). Nothing of the system's is read or
changed: every command runs with KRB5_CONFIG and KRB5_KDC_PROFILE naming the realm's own files, and the KDC
stops with `stop()` (or when this process exits).

    kdc = LocalKdc.create(workdir / "kdc", "CTLPLANE.TEST")
    kdc.add_principal("kafka/localhost")
    keytab = kdc.keytab("kafka/localhost", workdir / "kafka.keytab")
    kdc.start()
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.localkafka.errors import LocalKafkaError
from harness.localkafka.process import LOOPBACK, _pdeathsig_preexec, free_port, port_open

_started: set[subprocess.Popen[bytes]] = set()


def _kill_started() -> None:
    for process in list(_started):
        with contextlib.suppress(OSError):
            os.killpg(process.pid, signal.SIGKILL)


atexit.register(_kill_started)

MISSING = "they are Debian's krb5-kdc and krb5-admin-server (tools/install-system-deps.sh test)"


def kdc_tools_missing() -> str | None:
    """Why a LocalKdc cannot be made here, or None."""
    missing = [tool for tool in ("krb5kdc", "kdb5_util", "kadmin.local") if _tool(tool) is None]
    return f"{', '.join(missing)} not found: {MISSING}" if missing else None


def _tool(name: str) -> str | None:
    # root's PATH has /usr/sbin; another user's may not
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")


def _free_udp_and_tcp_port() -> int:
    """A loopback port free for TCP (free_port) and for UDP too: the KDC takes both."""
    for _ in range(50):
        port = free_port()
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            try:
                udp.bind((LOOPBACK, port))
            except OSError:
                continue
        return port
    raise LocalKafkaError("no loopback port free for both UDP and TCP")


@dataclass
class LocalKdc:
    """One realm's KDC. `krb5_conf` is the clients' krb5.conf for it (the KDC at 127.0.0.1:`port`, its hosts
    mapped to the realm); `kdc_conf` the KDC's own profile."""

    realm: str
    directory: Path
    port: int
    _process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @classmethod
    def create(
        cls, directory: Path, realm: str, *, hosts: Sequence[str] = ("localhost",), ticket_lifetime: str = "1h"
    ) -> LocalKdc:
        """Write the realm's files and make its database (`kdb5_util create -s`: a random master key, stashed).
        `hosts` are mapped to the realm in its krb5.conf's [domain_realm]."""
        if (missing := kdc_tools_missing()) is not None:
            raise LocalKafkaError(missing)
        directory.mkdir(parents=True, exist_ok=True)
        kdc = cls(realm, directory.resolve(), _free_udp_and_tcp_port())
        address = f"{LOOPBACK}:{kdc.port}"
        kdc.kdc_conf.write_text(
            f"""[kdcdefaults]
    kdc_listen = {address}
    kdc_tcp_listen = {address}

[realms]
    {realm} = {{
        database_name = {kdc.directory}/principal
        key_stash_file = {kdc.directory}/stash
        acl_file = {kdc.directory}/kadm5.acl
        kdc_listen = {address}
        kdc_tcp_listen = {address}
        max_life = {ticket_lifetime}
        max_renewable_life = {ticket_lifetime}
        supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
        default_principal_flags = +preauth
    }}

[logging]
    kdc = FILE:{kdc.directory}/krb5kdc.log
"""
        )
        (kdc.directory / "kadm5.acl").write_text("")
        kdc.krb5_conf.write_text(
            f"""[libdefaults]
    default_realm = {realm}
    dns_lookup_realm = false
    dns_lookup_kdc = false
    rdns = false

[realms]
    {realm} = {{
        kdc = {address}
        kdc_timeout = 3s
        max_retries = 2
    }}

[domain_realm]
"""
            + "".join(f"    {host} = {realm}\n" for host in hosts)
        )
        # -W: the weak random source (a throw-away realm; the strong one can block for entropy), -s: stashed
        kdc._run("kdb5_util", "-r", realm, "create", "-s", "-W", "-P", os.urandom(18).hex(), shown=5)
        return kdc

    @property
    def kdc_conf(self) -> Path:
        return self.directory / "kdc.conf"

    @property
    def krb5_conf(self) -> Path:
        return self.directory / "krb5.conf"

    def env(self) -> dict[str, str]:
        """The environment of a command on this realm's files alone."""
        return {**os.environ, "KRB5_CONFIG": str(self.krb5_conf), "KRB5_KDC_PROFILE": str(self.kdc_conf)}

    def _run(self, tool: str, *args: str, shown: int | None = None) -> str:
        """`tool args` on this realm's files; the words after the first `shown` are not in an error."""
        command = [_tool(tool) or tool, *args]
        done = subprocess.run(command, env=self.env(), capture_output=True, text=True, timeout=60, check=False)
        out = done.stdout + done.stderr
        # kadmin.local exits 0 when its query fails, and says "<query>: <why> while <doing what>" (com_err)
        if done.returncode != 0 or " while " in out:
            words = " ".join(command[: (shown or len(command)) + 1])
            raise LocalKafkaError(f"{words} failed ({done.returncode}): {out.strip()[-2000:]}")
        return out

    def kadmin(self, query: str) -> str:
        """`kadmin.local -q QUERY` on this realm's database."""
        return self._run("kadmin.local", "-r", self.realm, "-q", query)

    def principal(self, name: str) -> str:
        return name if "@" in name else f"{name}@{self.realm}"

    def add_principal(self, name: str) -> str:
        """A principal with a random key (`addprinc -randkey`); its full name."""
        full = self.principal(name)
        self.kadmin(f"addprinc -randkey {full}")
        return full

    def keytab(self, name: str, path: Path) -> Path:
        """The principal's current keys in the keytab `path` (`ktadd -norandkey`: the keys stay as they are, so
        another keytab of it stays good)."""
        self.kadmin(f"ktadd -k {path} -norandkey {self.principal(name)}")
        return path

    def change_key(self, name: str) -> None:
        """A new random key (`cpw -randkey`): every keytab made before holds a key the KDC no longer takes."""
        self.kadmin(f"cpw -randkey {self.principal(name)}")

    def delete_principal(self, name: str) -> None:
        """`delprinc -force`: the KDC no longer knows the principal; its keytabs stay."""
        self.kadmin(f"delprinc -force {self.principal(name)}")

    def start(self, timeout: float = 30) -> None:
        """krb5kdc in the foreground (-n), in its own process group, until its TCP port answers."""
        if self._process is not None and self._process.poll() is None:
            return
        log = (self.directory / "krb5kdc.out").open("ab")
        with log:
            self._process = subprocess.Popen(
                [_tool("krb5kdc") or "krb5kdc", "-n", "-r", self.realm],
                env=self.env(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_pdeathsig_preexec(),
            )
        _started.add(self._process)
        deadline = time.monotonic() + timeout
        while not port_open(self.port, timeout=0.5):
            if self._process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                tail = (self.directory / "krb5kdc.out").read_text()[-1000:]
                raise LocalKafkaError(f"krb5kdc did not listen on {LOOPBACK}:{self.port}: {tail}")
            time.sleep(0.1)

    def stop(self, timeout: float = 10) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(OSError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout)
        _started.discard(process)

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None
