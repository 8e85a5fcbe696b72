"""HTTPS as ctlplane serves it (ctlplane/exporter/http/app.py http_server, the function `ctlplane run` uses): a real
uvicorn server on loopback with certificates made by openssl, and real TLS clients."""

from __future__ import annotations

import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from ctlplane.exporter.config import TlsConfig
from ctlplane.exporter.config.file import load_settings
from ctlplane.exporter.http.app import create_app, http_server
from ctlplane.exporter.state import ExporterState
from ctlplane.exporter.thresholds import Thresholds
from harness.localkafka import free_port, make_local_pki
from tests.e2e.browser import running
from tests.unit.exporter.test_families import sample_fleet


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CA; a server certificate for 127.0.0.1 and a client certificate signed by it; a rogue client
    certificate signed by nobody."""
    return make_local_pki(tmp_path_factory.mktemp("pki"), rogue=True).directory


@contextmanager
def _serving(pki: Path, **tls: str | None) -> Iterator[str]:
    state = ExporterState(sample_fleet(), Thresholds())
    config = TlsConfig.model_validate({"cert_file": pki / "server.pem", "key_file": pki / "server.key", **tls})
    server = http_server(create_app(state.current, interval_seconds=15), "127.0.0.1", 0, config)
    with running(server, "https") as base:
        yield base


def _get(base: str, pki: Path, *, max_version: ssl.TLSVersion | None = None, cert: str | None = None) -> int | str:
    """The status of GET /healthz, or the kind of failure."""
    context = ssl.create_default_context(cafile=str(pki / "ca.pem"))
    if max_version is not None:
        context.maximum_version = max_version
    if cert is not None:
        context.load_cert_chain(str(pki / f"{cert}.pem"), str(pki / f"{cert}.key"))
    try:
        return httpx.get(f"{base}/metrics", verify=context, timeout=10).status_code
    except httpx.HTTPError as exc:
        return type(exc).__name__


def test_min_version_tls13_refuses_a_tls12_client(pki: Path) -> None:
    with _serving(pki, min_version="TLS13") as base:
        assert _get(base, pki) == 200
        assert _get(base, pki, max_version=ssl.TLSVersion.TLSv1_2) != 200
    with _serving(pki) as base:  # the default minimum is TLS 1.2
        assert _get(base, pki, max_version=ssl.TLSVersion.TLSv1_2) == 200


def test_required_client_certificates_are_verified_against_the_client_ca(pki: Path) -> None:
    mtls = {"client_ca_file": str(pki / "ca.pem"), "client_auth_type": "RequireAndVerifyClientCert"}
    with _serving(pki, **mtls) as base:
        assert _get(base, pki, cert="client") == 200
        assert _get(base, pki) != 200, "no client certificate"
        assert _get(base, pki, cert="rogue") != 200, "a certificate the client CA did not sign"
    optional = {"client_ca_file": str(pki / "ca.pem"), "client_auth_type": "VerifyClientCertIfGiven"}
    with _serving(pki, **optional) as base:
        assert _get(base, pki) == 200
        assert _get(base, pki, cert="rogue") != 200


def test_a_prometheus_web_config_file_is_read_with_paths_relative_to_it(pki: Path, tmp_path: Path) -> None:
    web = pki / "web-config.yml"
    web.write_text(
        "tls_server_config:\n"
        "  cert_file: server.pem\n  key_file: server.key\n"
        "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.pem\n  min_version: TLS13\n"
        "basic_auth_users:\n  prometheus: $2b$04$" + "a" * 53 + "\n"
    )
    config = tmp_path / "ctlplane.yaml"
    config.write_text(f"clusters: [{{name: c, nodes: [{{address: 'h:1'}}]}}]\nhttp: {{web_config_file: {web}}}\n")
    http = load_settings(config).http
    assert http.tls is not None and http.tls.cert_file == pki / "server.pem" and http.tls.min_version == "TLS13"
    assert http.tls.client_auth_type == "RequireAndVerifyClientCert" and list(http.basic_auth_users) == ["prometheus"]


def test_the_standalone_dashboard_serves_with_the_same_web_config(pki: Path, tmp_path: Path) -> None:
    import bcrypt

    hashed = bcrypt.hashpw(b"board-pw", bcrypt.gensalt(rounds=4)).decode()
    web = tmp_path / "web-config.yml"
    web.write_text(
        f"tls_server_config: {{cert_file: {pki / 'server.pem'}, key_file: {pki / 'server.key'}}}\n"
        f"basic_auth_users: {{sre: '{hashed}'}}\n"
    )
    port = free_port()
    exporter = f"http://viewer:exporter-pw@127.0.0.1:{free_port()}"  # nothing there: the page still serves
    process = subprocess.Popen(
        [sys.executable, "-m", "ctlplane.cli", "dashboard", "--exporter", exporter, "--port", str(port),
         "--web-config-file", str(web)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        context = ssl.create_default_context(cafile=str(pki / "ca.pem"))
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, process.stdout.read().decode()  # type: ignore[union-attr]
            try:
                anonymous = httpx.get(f"https://127.0.0.1:{port}/dashboard/", verify=context, timeout=5)
                break
            except httpx.ConnectError:
                assert time.monotonic() < deadline, "the dashboard did not start"
                time.sleep(0.3)
        assert anonymous.status_code == 401
        signed_in = httpx.get(
            f"https://127.0.0.1:{port}/dashboard/", verify=context, auth=("sre", "board-pw"), timeout=5
        )
        assert signed_in.status_code == 200
    finally:
        process.terminate()
        output = process.communicate(timeout=30)[0].decode()
    assert "exporter-pw" not in output and "for http://127.0.0.1:" in output, output
