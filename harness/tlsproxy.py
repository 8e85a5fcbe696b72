"""nginx (Debian's nginx-light) in front of a node's metrics endpoint, as kube-rbac-proxy or an ingress fronts
a pod's: https with a certificate of a local CA, a client certificate required (signed by that CA, and of
those only the one allowed, by its fingerprint) and a bearer token. `allow` changes both and reloads nginx,
as a rotation does on the server's side."""

from __future__ import annotations

import hashlib
import http.client
import os
import shutil
import signal
import ssl
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.localkafka import LOOPBACK, LocalPki, free_port
from harness.localkafka.errors import LocalKafkaError

NGINX = "nginx"


def fingerprint(certificate: Path) -> str:
    """nginx's $ssl_client_fingerprint: the SHA-1 of the certificate's DER, lower-case hex."""
    return hashlib.sha1(ssl.PEM_cert_to_DER_cert(certificate.read_text())).hexdigest()


@dataclass
class TlsProxy:
    """`upstream` (host:port of a plain-http endpoint) served at https://127.0.0.1:`port`/metrics."""

    directory: Path
    upstream: str
    pki: LocalPki
    server: str  # the name of the proxy's certificate in `pki`
    port: int = field(default_factory=free_port)
    _process: subprocess.Popen[bytes] | None = field(default=None, init=False, repr=False)

    @property
    def url(self) -> str:
        return f"https://{LOOPBACK}:{self.port}/metrics"

    def start(self, client: str, token: str) -> None:
        """Serve, accepting the certificate `client` of `pki` and `token`."""
        if shutil.which(NGINX) is None:
            raise LocalKafkaError("nginx is needed (Debian's nginx-light: make test installs it)")
        self.directory.mkdir(parents=True, exist_ok=True)
        self._write(client, token)
        log = (self.directory / "nginx.out").open("wb")
        self._process = subprocess.Popen(
            [NGINX, "-p", str(self.directory), "-c", str(self.directory / "nginx.conf")],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        self._until_accepted(client, token)

    def allow(self, client: str, token: str) -> None:
        """Accept only `client`'s certificate and `token` from now on (a reload: the old workers finish)."""
        assert self._process is not None
        self._write(client, token)
        os.kill(self._process.pid, signal.SIGHUP)
        self._until_accepted(client, token)

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()  # nginx's fast shutdown
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(10)
            self._process = None

    def _write(self, client: str, token: str) -> None:
        d = self.directory
        temp = "\n".join(
            f"  {name}_temp_path {d}/{name};" for name in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        )
        (d / "nginx.conf").write_text(
            f"""daemon off;
user root;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log info;
events {{ worker_connections 64; }}
http {{
  access_log {d}/access.log;
{temp}
  map $ssl_client_fingerprint $client_allowed {{ default 0; "{fingerprint(self.pki.cert(client))}" 1; }}
  server {{
    listen {LOOPBACK}:{self.port} ssl;
    ssl_certificate {self.pki.cert(self.server)};
    ssl_certificate_key {self.pki.key(self.server)};
    ssl_client_certificate {self.pki.ca};
    ssl_verify_client on;
    location /metrics {{
      if ($client_allowed = 0) {{ return 403; }}
      if ($http_authorization != "Bearer {token}") {{ return 401; }}
      proxy_pass http://{self.upstream};
    }}
  }}
}}
"""
        )

    def _until_accepted(self, client: str, token: str, timeout: float = 30.0) -> None:
        """Until a page asked with `client`'s certificate and `token` is served (nginx up, or reloaded)."""
        context = ssl.create_default_context(cafile=str(self.pki.ca))
        context.load_cert_chain(self.pki.cert(client), self.pki.key(client))
        deadline = time.monotonic() + timeout
        last = "no answer"
        while time.monotonic() < deadline:
            if self._process is not None and self._process.poll() is not None:
                raise LocalKafkaError(f"nginx exited: {(self.directory / 'nginx.out').read_text()[-2000:]}")
            connection = http.client.HTTPSConnection(LOOPBACK, self.port, context=context, timeout=10)
            try:
                connection.request("GET", "/metrics", headers={"Authorization": f"Bearer {token}"})
                response = connection.getresponse()
                response.read()
                if response.status == 200:
                    return
                last = f"HTTP {response.status}"
            except (OSError, http.client.HTTPException) as exc:
                last = str(exc)
            finally:
                connection.close()
            time.sleep(0.2)
        raise LocalKafkaError(f"nginx at {self.url} did not serve {client}'s page within {timeout:g}s: {last}")
