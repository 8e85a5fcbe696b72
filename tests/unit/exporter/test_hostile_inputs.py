"""Hostile or careless input at the edges, generated: any config file is loaded or refused with exit 2 and
one `error:` message, never a traceback; any HTTP request is answered below 500. `bench/hostile_inputs.py`
runs the same properties with many more cases and prints the counts (docs/benchmarks.md "Benchmarks")."""

from __future__ import annotations

import base64
import os
from typing import Any

import bcrypt
import httpx
import pytest
import yaml
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctlplane.cli import main
from ctlplane.dashboard.cli import mount_dashboard
from ctlplane.exporter.http.app import create_app
from ctlplane.exporter.state import ExporterState
from ctlplane.exporter.thresholds import Thresholds
from tests.unit.exporter.test_families import sample_fleet

EXAMPLES = int(os.environ.get("CTLPLANE_HOSTILE_INPUT_EXAMPLES", "120"))
HASHED = bcrypt.hashpw(b"pw", bcrypt.gensalt(rounds=4)).decode()

# Keys a config has, so generated documents reach the validators rather than stop at "unknown key".
KEYS = [
    "clusters", "name", "nodes", "address", "role", "jmx", "username", "password_env", "password_file", "ssl",
    "truststore", "scrape", "interval_seconds", "timeout_seconds", "workers", "client", "jvm_max_heap", "http",
    "host", "port", "tls", "cert_file", "key_file", "min_version", "client_ca_file", "client_auth_type",
    "basic_auth_users", "web_config_file", "health", "metadata_stale_seconds", "history", "path",
    "flush_seconds", "retention_days", "max_bytes", "max_buffered_rows", "compact_after_seconds", "dashboard",
    "refresh_seconds", "alerts_url", "window_seconds", "enabled",
]  # fmt: skip
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.sampled_from(["127.0.0.1:9999", "kafka-1:9999", "[::1]:1", "0.0.0.0", ".inf", "/dev/null", "/proc/self"]),
)
DOCUMENTS = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=8)), inner, max_size=5),
    ),
    max_leaves=30,
)
VALID = {
    "clusters": [{"name": "c1", "nodes": [{"address": "127.0.0.1:9999"}]}],
    "scrape": {"interval_seconds": 15, "timeout_seconds": 10},
}


def _mutated(document: Any, data: st.DataObject) -> Any:
    """A valid config with one generated value put somewhere in it."""
    value = data.draw(DOCUMENTS, label="value")
    section = data.draw(st.sampled_from(["top", "scrape", "http", "cluster", "node", "health", "history"]), label="at")
    key = data.draw(st.sampled_from(KEYS), label="key")
    mutated = yaml.safe_load(yaml.safe_dump(document))
    target = {
        "top": mutated,
        "scrape": mutated["scrape"],
        "http": mutated.setdefault("http", {}),
        "cluster": mutated["clusters"][0],
        "node": mutated["clusters"][0]["nodes"][0],
        "health": mutated.setdefault("health", {}),
        "history": mutated.setdefault("history", {"path": "history"}),
    }[section]
    target[key] = value
    return mutated


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_any_config_file_is_loaded_or_refused_in_one_error_never_a_traceback(
    data: st.DataObject, tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = tmp_path_factory.mktemp("config")
    path = directory / "ctlplane.yaml"
    kind = data.draw(st.sampled_from(["mutated", "document", "bytes"]), label="kind")
    if kind == "bytes":
        path.write_bytes(data.draw(st.binary(max_size=300), label="bytes"))
    else:
        document = _mutated(VALID, data) if kind == "mutated" else data.draw(DOCUMENTS, label="document")
        path.write_text(yaml.safe_dump(document, allow_unicode=True))
    cwd = os.getcwd()
    os.chdir(directory)  # relative paths a document names (history, files) resolve in its own directory
    try:
        code = main(["check-config", str(path)])
    finally:
        os.chdir(cwd)
    out, err = capsys.readouterr()
    assert code in (0, 2), (code, out, err)
    assert (code == 0 and "OK" in out) or err.startswith("error: "), (code, out, err)


@pytest.fixture(scope="module")
def http() -> TestClient:
    state = ExporterState(sample_fleet(), Thresholds())
    # the clock of the snapshot: /healthz says 200 (its 503 for a stale snapshot is an answer, not a failure)
    app = create_app(
        state.current,
        interval_seconds=15,
        version="test",
        basic_auth_users={"prometheus": HASHED},
        clock=lambda: 1005.0,
    )
    mount_dashboard(app, state)
    return TestClient(app, raise_server_exceptions=False)


GOOD_AUTH = "Basic " + base64.b64encode(b"prometheus:pw").decode()
PATHS = [
    "/", "/metrics", "/healthz", "/api/v1/snapshot", "/api/v1/health", "/api/docs", "/openapi.json", "/dashboard/",
    "/dashboard/_dash-layout", "/dashboard/_dash-dependencies", "/dashboard/_dash-update-component",
    "/dashboard/cluster/zk", "/dashboard/alerts", "/dashboard/history", "/dashboard/_reload-hash",
]  # fmt: skip
JSON_BODIES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=20), st.sampled_from(["output", "inputs"])),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)),
    max_leaves=20,
)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    method=st.sampled_from(["GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH"]),
    path=st.one_of(st.sampled_from(PATHS), st.text(max_size=30).map(lambda t: "/" + t)),
    auth=st.one_of(
        st.just(GOOD_AUTH),
        st.none(),
        st.text(max_size=30),
        st.binary(max_size=30).map(lambda b: "Basic " + base64.b64encode(b).decode()),
    ),
    body=st.one_of(st.none(), st.binary(max_size=200), JSON_BODIES.map(lambda d: yaml.safe_dump(d).encode())),
    content_type=st.sampled_from(["application/json", "text/plain", "application/x-www-form-urlencoded", ""]),
)
def test_any_http_request_is_answered_below_500(
    http: TestClient, method: str, path: str, auth: str | None, body: bytes | None, content_type: str
) -> None:
    headers = {"content-type": content_type} if content_type else {}
    if auth is not None:
        try:
            auth.encode("latin-1")
        except UnicodeEncodeError:
            auth = auth.encode("utf-8").decode("latin-1")  # as raw bytes on the wire
        headers["authorization"] = auth
    try:
        response = http.request(method, path, headers=headers, content=body)
    except (ValueError, httpx.InvalidURL):  # httpx refuses to send it: not a request the server can get
        return
    assert response.status_code < 500, (method, path, headers, body, response.status_code, response.text[:300])


def test_a_generated_json_body_for_a_dash_callback_is_a_client_error(http: TestClient) -> None:
    """Dash answers a malformed callback with 500 on its own; behind the guard it must be a 4xx."""
    for body in ({}, {"output": 1}, {"output": "x.y", "inputs": "z"}, [], "text"):
        response = http.post("/dashboard/_dash-update-component", json=body, headers={"authorization": GOOD_AUTH})
        assert 400 <= response.status_code < 500, (body, response.status_code, response.text[:300])


def _outputs(http: TestClient) -> list[str]:
    dependencies = http.get("/dashboard/_dash-dependencies", headers={"authorization": GOOD_AUTH}).json()
    return [d["output"] for d in dependencies]


ID_KEYS = st.sampled_from(["type", "path", "key"])
REFERENCE = st.fixed_dictionaries(
    {"id": st.one_of(st.text(max_size=8), st.dictionaries(ID_KEYS, JSON_BODIES, max_size=3)),
     "property": st.sampled_from(["pathname", "n_intervals", "children", "figure", "id"])},
    optional={"value": JSON_BODIES},
)  # fmt: skip


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_any_callback_request_is_answered_below_500(http: TestClient, data: st.DataObject) -> None:
    """Callback-shaped bodies: real outputs, references with generated ids and values."""
    references = st.lists(st.one_of(REFERENCE, st.lists(REFERENCE, max_size=3)), max_size=3)
    body = data.draw(
        st.fixed_dictionaries(
            {"output": st.one_of(st.sampled_from(_outputs(http)), st.text(max_size=10))},
            optional={
                "inputs": references,
                "state": references,
                "outputs": st.one_of(REFERENCE, references),
                "changedPropIds": st.lists(st.text(max_size=10), max_size=2),
            },
        ),
        label="body",
    )
    response = http.post("/dashboard/_dash-update-component", json=body, headers={"authorization": GOOD_AUTH})
    assert response.status_code < 500, (body, response.status_code, response.text[:300])
