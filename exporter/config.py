"""The one typed configuration model, loaded once by the CLI.

Everything else receives plain values taken from it; no other module reads files or environment
variables for settings. Secrets (JMX passwords) are read from a file or an environment variable
named in the config, never written inline, and never shown by ``repr``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

DEFAULT_PORT = 18309  # outside the 9100-9999 exporter range and away from 8000/8050 (see README)


class _Strict(BaseModel):
    # Unknown keys are mistakes (a typo in `interval_seconds` must not silently keep the default).
    model_config = ConfigDict(extra="forbid", frozen=True)


class JmxAuth(_Strict):
    """JMX credentials and transport for a cluster (or every cluster, as the default)."""

    username: str | None = None
    password_file: Path | None = None
    password_env: str | None = None
    ssl: bool = False
    truststore: Path | None = None
    truststore_password_file: Path | None = None

    @model_validator(mode="after")
    def _one_password_source(self) -> JmxAuth:
        if self.password_file is not None and self.password_env is not None:
            raise ValueError("give password_file or password_env, not both")
        if (self.password_file or self.password_env) and not self.username:
            raise ValueError("a password needs a username")
        if self.username and not (self.password_file or self.password_env):
            raise ValueError("username needs password_file or password_env")
        return self

    def password(self) -> SecretStr | None:
        """Read the password from its file or variable; raise ValueError naming the source if absent."""
        if self.password_file is not None:
            try:
                return SecretStr(self.password_file.read_text().strip())
            except OSError as exc:
                raise ValueError(f"cannot read password_file {self.password_file}: {exc.strerror}") from exc
        if self.password_env is not None:
            value = os.environ.get(self.password_env)
            if value is None:
                raise ValueError(f"environment variable {self.password_env} (password_env) is not set")
            return SecretStr(value)
        return None


RoleHint = Literal["broker", "controller", "combined"]


class NodeConfig(_Strict):
    """One Kafka process to read: its remote-JMX endpoint."""

    address: str = Field(description="JMX host:port")
    name: str | None = Field(default=None, description="the `node` label; defaults to the address")
    role: RoleHint | None = Field(default=None, description="used only until the role is detected")

    @field_validator("address")
    @classmethod
    def _host_port(cls, value: str) -> str:
        host, sep, port = value.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"expected host:port with a port in 1-65535, got {value!r}")
        return value

    @property
    def host(self) -> str:
        return self.address.rpartition(":")[0]

    @property
    def port(self) -> int:
        return int(self.address.rpartition(":")[2])

    @property
    def label(self) -> str:
        return self.name or self.address


class ClusterConfig(_Strict):
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.:-]+$")
    nodes: list[NodeConfig] = Field(min_length=1)
    jmx: JmxAuth | None = None

    @model_validator(mode="after")
    def _unique_nodes(self) -> ClusterConfig:
        seen: set[str] = set()
        for node in self.nodes:
            if node.label in seen:
                raise ValueError(f"node {node.label!r} appears twice in cluster {self.name!r}")
            seen.add(node.label)
        return self


class ScrapeConfig(_Strict):
    interval_seconds: float = Field(default=15.0, gt=0)
    timeout_seconds: float = Field(default=10.0, gt=0)
    workers: int = Field(default=16, ge=1, le=1024)
    client: Literal["jpype", "jmxquery"] = "jpype"
    jvm_max_heap: str = Field(default="128m", pattern=r"^\d+[kmgKMG]$")

    @model_validator(mode="after")
    def _timeout_within_interval(self) -> ScrapeConfig:
        if self.timeout_seconds > self.interval_seconds:
            raise ValueError("timeout_seconds must not exceed interval_seconds")
        return self


class TlsConfig(_Strict):
    cert_file: Path
    key_file: Path


class HttpConfig(_Strict):
    host: str = "127.0.0.1"
    port: int = Field(default=DEFAULT_PORT, ge=0, lt=65536)
    tls: TlsConfig | None = None
    # user -> bcrypt hash, the format of Prometheus' web config (`htpasswd -nBC 10 "" | tr -d ':\n'`)
    basic_auth_users: dict[str, str] = Field(default_factory=dict)

    @field_validator("basic_auth_users")
    @classmethod
    def _bcrypt_hashes(cls, users: dict[str, str]) -> dict[str, str]:
        for user, hashed in users.items():
            if not hashed.startswith(("$2a$", "$2b$", "$2y$")):
                raise ValueError(f"password of {user!r} must be a bcrypt hash, not plain text")
        return users


class HealthConfig(_Strict):
    """Thresholds of the health model (exporter/health.py); defaults and meaning are in README."""

    metadata_stale_seconds: float = Field(default=15.0, gt=0)
    metadata_stale_records: float = Field(default=1000.0, gt=0)
    metadata_frozen_scrapes: int = Field(default=3, ge=1, le=100)
    zk_controller_queue_stale: float = Field(default=10.0, gt=0)
    control_plane_queue_saturation_ratio: float = Field(default=0.8, gt=0, le=1)
    control_plane_idle_saturation_ratio: float = Field(default=0.1, ge=0, lt=1)


class HistoryConfig(_Strict):
    """The Parquet archive of every snapshot (exporter/history.py) that the Spark pipeline reads."""

    path: Path
    flush_seconds: float = Field(default=60.0, gt=0)
    retention_days: float | None = Field(default=30.0, gt=0)
    max_bytes: int | None = Field(default=None, gt=0)


class DashboardConfig(_Strict):
    """The web dashboard `ctlplane run` serves at /dashboard/ (docs/dashboard.md)."""

    enabled: bool = True
    refresh_seconds: float = Field(default=5.0, ge=1)
    alerts_url: str | None = Field(default=None, description="Alertmanager or Prometheus base URL")
    history_dir: Path | None = Field(default=None, description="the Spark pipeline's --out directory")
    window_seconds: float = Field(
        default=3600.0, gt=0, le=7 * 86400, description="how far back the graphs and the timeline reach"
    )


class Settings(_Strict):
    clusters: list[ClusterConfig] = Field(min_length=1)
    jmx: JmxAuth = Field(default_factory=JmxAuth)
    scrape: ScrapeConfig = Field(default_factory=ScrapeConfig)
    http: HttpConfig = Field(default_factory=HttpConfig)
    health: HealthConfig = Field(default_factory=HealthConfig)
    history: HistoryConfig | None = None  # off unless configured
    dashboard: DashboardConfig = Field(default_factory=DashboardConfig)

    @model_validator(mode="after")
    def _unique_clusters(self) -> Settings:
        names = [cluster.name for cluster in self.clusters]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"cluster names must be unique: {', '.join(duplicates)}")
        return self

    def jmx_for(self, cluster: ClusterConfig) -> JmxAuth:
        return cluster.jmx or self.jmx


class ConfigError(Exception):
    """A config that cannot be used; the message names the file and the offending field path."""


Problem = Annotated[str, "one line: <field path>: <message>"]


def _describe(error: ValidationError) -> list[Problem]:
    problems = []
    for item in error.errors():
        path = ".".join(str(part) for part in item["loc"]) or "(top level)"
        problems.append(f"{path}: {item['msg']}")
    return problems


def parse_settings(document: object, source: str = "<config>") -> Settings:
    try:
        return Settings.model_validate(document)
    except ValidationError as exc:
        raise ConfigError(f"{source}: invalid configuration\n  " + "\n  ".join(_describe(exc))) from None


def load_settings(path: Path) -> Settings:
    """Read and validate a YAML config file; raise ConfigError naming the field path on any mistake."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(document, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level (with a `clusters:` list)")
    settings = parse_settings(document, str(path))
    for cluster in settings.clusters:
        try:
            settings.jmx_for(cluster).password()
        except ValueError as exc:
            raise ConfigError(f"{path}: invalid configuration\n  clusters.{cluster.name}.jmx: {exc}") from None
    return settings
