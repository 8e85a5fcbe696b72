"""The one typed configuration model, loaded once by the CLI (reading a file: config_file.py).

Everything else receives plain values taken from it; no other module reads files or environment
variables for settings. Secrets (JMX and admin-client passwords) are read from a file or an environment variable
named in the config, never written inline, and never shown by ``repr``.
"""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import fields as dataclass_fields
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ctlplane.exporter.discovery.answers import JmxRule, check_template
from ctlplane.exporter.model import DEFAULT_NODE_NAME
from ctlplane.exporter.shards import parse_shard, resolve_shard
from ctlplane.exporter.thresholds import HEALTH, Thresholds

DEFAULT_PORT = 18309  # outside the 9100-9999 exporter range and away from 8000/8050 (docs/configuration.md)


class _Strict(BaseModel):
    # Unknown keys are mistakes (a typo in `interval_seconds` must not silently keep the default).
    # inf and nan are never a setting: `.inf` as an interval killed the scraper thread at run time.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


DAY_SECONDS = 86400.0
# A cluster name is a Prometheus label value and a directory of the history archive (cluster=<name>):
# no "/" or anything else a path could be steered with.
CLUSTER_NAME_PATTERN = r"^[A-Za-z0-9_.:-]+$"
# RFC 1123 host name: dot-separated labels of letters, digits and inner hyphens, 63 characters at most
# each, 253 in all (a trailing dot, the DNS root, is allowed).
_HOST_LABEL = re.compile(r"^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$")


def host_problem(host: str, bracketed_ipv6: bool) -> str | None:
    """Why `host` is not a host name or IP address, or None. In a host:port address an IPv6 address is
    written in brackets ([::1]:9999, as in a JMX service URL); a bind address is bare (::)."""
    if host.startswith("[") and host.endswith("]") and bracketed_ipv6:
        try:
            ipaddress.IPv6Address(host[1:-1])
            return None
        except ValueError:
            return f"{host!r} is not an IPv6 address"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        name = host[:-1] if host.endswith(".") else host
        if 0 < len(name) <= 253 and all(_HOST_LABEL.match(label) for label in name.split(".")):
            return None
        return f"{host!r} is not a host name (letters, digits, inner hyphens, dot-separated) or IP address"
    if address.version == 6 and bracketed_ipv6:
        return f"write an IPv6 address in brackets: [{host}]"
    return None


def host_port(value: str) -> str:
    """`value` if it is host:port with a port in 1-65535, else a ValueError saying what is wrong."""
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"expected host:port with a port in 1-65535, got {value!r}")
    problem = host_problem(host, bracketed_ipv6=True)
    if problem is not None:
        raise ValueError(problem)
    return value


def secret_from_file(path: Path, field: str) -> SecretStr:
    """A secret read from its file, stripped; raise ValueError naming the field if it cannot be read."""
    try:
        return SecretStr(path.read_text().strip())
    except OSError as exc:
        raise ValueError(f"cannot read {field} {path}: {exc.strerror}") from exc


class _Credentials(_Strict):
    """A user and where its password is: a file or an environment variable, never inline.

    The user may come from an environment variable too (`username_env`), read when the config is loaded:
    Strimzi's JMX Secret (`<cluster>-kafka-jmx`) holds a generated user beside the password
    (`jmx-username`, `jmx-password`: strimzi-kafka-operator JmxModel.java JMX_USERNAME_KEY), and a
    Kubernetes Secret reaches a container as files or variables, not as config text."""

    username: str | None = Field(default=None, description="the user")
    username_env: str | None = Field(
        default=None, description="an environment variable that holds the user (as a Kubernetes Secret gives it)"
    )
    password_file: Path | None = Field(default=None, description="a file that holds the password (never inline)")
    password_env: str | None = Field(default=None, description="an environment variable that holds the password")

    @model_validator(mode="before")
    @classmethod
    def _username_from_env(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not isinstance(name := data.get("username_env"), str):
            return data  # a wrong type is reported by the field's own check
        if data.get("username") is not None:
            raise ValueError("give username or username_env, not both")
        value = os.environ.get(name)
        if value is None:
            raise ValueError(f"environment variable {name} (username_env) is not set")
        return {**data, "username": value}

    @model_validator(mode="after")
    def _one_password_source(self) -> _Credentials:
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
            return secret_from_file(self.password_file, "password_file")
        if self.password_env is not None:
            value = os.environ.get(self.password_env)
            if value is None:
                raise ValueError(f"environment variable {self.password_env} (password_env) is not set")
            return SecretStr(value)
        return None


# the fields of a cluster's Java trust and key stores (KeyStores), and of an Admin client's PEM client certificate
_STORE_FIELDS = ("truststore", "truststore_password_file", "ca_file", "keystore", "keystore_password_file")
_ADMIN_PEM_FIELDS = ("cert_file", "key_file", "key_password_file")


class KeyStores(_Strict):
    """A cluster's own trust and key material as Java reads it: a JKS or PKCS12 trust store (or PEM CA
    certificates) and a JKS or PKCS12 key store, each password in a file. Remote JMX and the Admin client
    take the same fields."""

    truststore: Path | None = Field(
        default=None, description="a JKS or PKCS12 trust store holding the CA of this cluster's nodes"
    )
    truststore_password_file: Path | None = Field(default=None, description="the trust store's password, in a file")
    ca_file: Path | None = Field(
        default=None, description="PEM CA certificate(s) of this cluster's nodes (instead of a truststore)"
    )
    keystore: Path | None = Field(
        default=None,
        description="a JKS or PKCS12 key store with ctlplane's client certificate, for nodes that need client auth",
    )
    keystore_password_file: Path | None = Field(default=None, description="the key store's password, in a file")

    @model_validator(mode="after")
    def _stores_fit_together(self) -> KeyStores:
        if self.truststore is not None and self.ca_file is not None:
            raise ValueError("give truststore or ca_file, not both")
        if self.truststore_password_file is not None and self.truststore is None:
            raise ValueError("truststore_password_file is the password of a truststore: give truststore")
        if (self.keystore is None) != (self.keystore_password_file is None):
            raise ValueError("keystore and keystore_password_file go together (a key store has a password)")
        return self

    def tls_passwords(self) -> tuple[SecretStr | None, SecretStr | None]:
        """The trust store's and key store's passwords, read from their files; ValueError names one unread."""
        trust, key = self.truststore_password_file, self.keystore_password_file
        return (
            secret_from_file(trust, "truststore_password_file") if trust is not None else None,
            secret_from_file(key, "keystore_password_file") if key is not None else None,
        )

    def store_files(self) -> list[tuple[str, Path]]:
        """The stores' files named, by field: what check-config finds readable or not."""
        return [(name, file) for name in _STORE_FIELDS if (file := getattr(self, name)) is not None]


class JmxAuth(KeyStores, _Credentials):
    """JMX credentials and transport for a cluster (or every cluster, as the default).

    TLS material is the cluster's own: its nodes' certificates are checked against its `truststore` (or
    `ca_file`) only, never another cluster's, and `keystore` is the client certificate a node with
    `com.sun.management.jmxremote.ssl.need.client.auth=true` asks for (ctlplane/exporter/sources/jmx/tls_routes.py)."""

    ssl: bool = Field(default=False, description="JMX over TLS (com.sun.management.jmxremote.ssl=true on the nodes)")
    registry_ssl: bool | None = Field(
        default=None,
        description="the RMI registry lookup over TLS too, as the nodes' com.sun.management.jmxremote.registry.ssl "
        "(default: as `ssl`)",
    )

    @model_validator(mode="after")
    def _tls_material_needs_tls(self) -> JmxAuth:
        material = [name for name in ("truststore", "ca_file", "keystore") if getattr(self, name) is not None]
        if material and not (self.ssl or self.registry_ssl):
            raise ValueError(f"{', '.join(material)} are for JMX over TLS: set ssl: true")
        return self

    @property
    def lookup_over_tls(self) -> bool:
        """Whether the registry is asked over TLS: `registry_ssl`, else as `ssl`."""
        return self.ssl if self.registry_ssl is None else self.registry_ssl

    def files(self) -> list[tuple[str, Path]]:
        """The TLS files named, by field: what check-config finds readable or not."""
        return self.store_files()


SaslMechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI", "AWS_MSK_IAM"]
# what Kafka's OAuth configs take (ConfigurationUtils.validateUrl, kafka-clients 4.3: http, https or file)
_TOKEN_URL_SCHEMES = ("http", "https", "file")


class OAuthClientCredentials(_Strict):
    """SASL OAUTHBEARER's login with OIDC client credentials (KIP-768): Kafka's own login handler asks
    `token_endpoint_url` for a token with the client id and secret (HTTP basic auth, grant_type
    client_credentials) and refreshes it before it expires. The secret comes from a file or an environment
    variable, never inline. A `file:` URL names a file that holds a token (a JWT) instead, re-read by Kafka."""

    token_endpoint_url: str = Field(description="the identity provider's token endpoint: http(s), or a file: token")
    client_id: str | None = Field(default=None, description="the OAuth client id (for an http(s) endpoint)")
    client_secret_file: Path | None = Field(default=None, description="a file that holds the client secret")
    client_secret_env: str | None = Field(default=None, description="an environment variable holding the client secret")
    scope: str | None = Field(default=None, description="the scope asked for (the provider's default without)")

    @field_validator("token_endpoint_url")
    @classmethod
    def _url(cls, value: str) -> str:
        return token_endpoint_problem(value.strip())

    @field_validator("client_id", "scope")
    @classmethod
    def _one_line(cls, value: str | None) -> str | None:
        # Kafka's JAAS parser ends a quoted value at a line break (JaasConfig: a StreamTokenizer)
        if value is not None and ("\n" in value or "\r" in value or not value.strip()):
            raise ValueError("must be one line, not empty")
        return value

    @model_validator(mode="after")
    def _one_secret_source(self) -> OAuthClientCredentials:
        is_file = self.token_endpoint_url.startswith("file:")
        if self.client_secret_file is not None and self.client_secret_env is not None:
            raise ValueError("give client_secret_file or client_secret_env, not both")
        no_secret = self.client_secret_file is None and self.client_secret_env is None
        if not is_file and (self.client_id is None or no_secret):
            raise ValueError("the client credentials grant needs client_id and client_secret_file or client_secret_env")
        return self

    def client_secret(self) -> SecretStr | None:
        """The secret, read now from its file or variable; ValueError naming the source (never the secret)."""
        if self.client_secret_file is not None:
            try:
                value = self.client_secret_file.read_text().strip()
            except (OSError, UnicodeDecodeError) as exc:
                why = getattr(exc, "strerror", None) or type(exc).__name__
                raise ValueError(f"cannot read client_secret_file {self.client_secret_file}: {why}") from exc
        elif self.client_secret_env is not None:
            found = os.environ.get(self.client_secret_env)
            if found is None:
                raise ValueError(f"environment variable {self.client_secret_env} (client_secret_env) is not set")
            value = found
        else:
            return None
        if not value or any(c in value for c in "\r\n"):
            where = self.client_secret_file or self.client_secret_env
            raise ValueError(f"the client secret in {where} is empty or holds a line break")
        return SecretStr(value)


def token_endpoint_problem(value: str) -> str:
    """`value` if it is an http(s) URL with a host or a file: URL, else a ValueError saying which it is not."""
    parts = urlsplit(value)
    if parts.password is not None:
        raise ValueError("the token endpoint URL must not hold a password (give client_secret_file or _env)")
    if parts.scheme.lower() not in _TOKEN_URL_SCHEMES or (parts.scheme.lower() != "file" and not parts.hostname):
        shown = value if len(value) <= 80 else value[:77] + "..."
        raise ValueError(f"expected an http(s) URL with a host or a file: URL, got {shown!r}")
    if parts.scheme.lower() == "file" and not parts.path:
        raise ValueError(f"a file: URL names a file, got {value!r}")
    return value


class KerberosKeytab(_Strict):
    """SASL GSSAPI (Kerberos) with a keytab: the JDK's Krb5LoginModule logs `principal` in with its key from
    `keytab_file` (Kafka's KerberosLogin logs in again before the ticket expires), and asks for a ticket to the
    brokers' `service_name`/(the broker's host name). `krb5_conf` names the realm's KDCs; the JVM reads one
    krb5.conf for the whole process, so ctlplane merges every cluster's into one (docs/secured-clusters.md)."""

    principal: str = Field(description="the client's principal, with its realm: ctlplane@EXAMPLE.COM")
    keytab_file: Path = Field(description="a keytab holding the principal's key (never shown, never copied)")
    service_name: str = Field(
        default="kafka", description="the brokers' principal name, as their sasl.kerberos.service.name"
    )
    krb5_conf: Path = Field(default=Path("/etc/krb5.conf"), description="the krb5.conf naming the realm's KDCs")

    @field_validator("principal")
    @classmethod
    def _with_realm(cls, value: str) -> str:
        # one krb5.conf serves every cluster, so a principal's realm must not come from its default_realm
        name, at, realm = value.strip().rpartition("@")
        if not at or not name or not realm:
            raise ValueError(f"a principal names its realm (name@REALM): got {value.strip()!r}")
        if any(c in value for c in '\r\n"') or " " in value.strip():
            raise ValueError("a principal is one word, without quotes or line breaks")
        return value.strip()

    @field_validator("service_name")
    @classmethod
    def _service(cls, value: str) -> str:
        if not re.fullmatch(r"[^\s/@\"]+", value):
            raise ValueError(f"a service name is one word without / or @ (the brokers' is often kafka): got {value!r}")
        return value


# IAM's own formats (docs.aws.amazon.com IAM identifiers; STS AssumeRole's RoleSessionName: [\w+=,.@-]{2,64}):
# each AwsIamLogin field's pattern, and what its refusal says
_AWS_IAM_FORMATS = {
    "profile": (re.compile(r"[\w.+@-]{1,128}"), "a profile name is one word (letters, digits, . _ + @ -)"),
    "role_arn": (
        re.compile(r"arn:aws(?:-[a-z]+)*:iam::\d{12}:role/[\w+=,.@/-]{1,512}"),
        "expected an IAM role ARN, arn:aws:iam::<12-digit account>:role/<name>",
    ),
    "role_session_name": (
        re.compile(r"[\w+=,.@-]{2,64}"),
        "a role session name is 2-64 of letters, digits and +=,.@_-",
    ),
    "sts_region": (re.compile(r"[a-z]{2}(?:-[a-z]+)+-\d{1,2}"), "expected an AWS region such as eu-west-1"),
}


class AwsIamLogin(_Strict):
    """SASL AWS_MSK_IAM, Amazon MSK's IAM access control (its TLS listeners on port 9098), with AWS's own
    library (software.amazon.msk:aws-msk-iam-auth, carried with the Kafka client): each login is signed with
    credentials from AWS's default chain (environment, the shared files, web identity as EKS's IRSA gives it,
    the container's or the instance's role), or from `profile`, and for `role_arn` those assume that role."""

    profile: str | None = Field(default=None, description="a profile of the shared AWS config and credentials files")
    role_arn: str | None = Field(default=None, description="an IAM role to assume (arn:aws:iam::<account>:role/<name>)")
    role_session_name: str | None = Field(default=None, description="the assumed role's session name")
    sts_region: str | None = Field(
        default=None, description="the regional STS endpoint to assume the role through (default: the global one)"
    )

    @field_validator(*_AWS_IAM_FORMATS)
    @classmethod
    def _of_iams_form(cls, value: str | None, info: ValidationInfo) -> str | None:
        pattern, expected = _AWS_IAM_FORMATS[str(info.field_name)]
        if value is not None and not pattern.fullmatch(value):
            raise ValueError(f"{expected}: got {value!r}")
        return value

    @model_validator(mode="after")
    def _role_options_need_a_role(self) -> AwsIamLogin:
        if self.role_arn is None and (self.role_session_name is not None or self.sts_region is not None):
            raise ValueError("role_session_name and sts_region are for assuming role_arn: give role_arn")
        return self


class AdminSecurity(KeyStores, _Credentials):
    """How the quorum's view (Kafka's admin client) reaches the cluster's listener.

    `security_protocol` is the listener's, as Kafka's `security.protocol`. SASL needs `sasl_mechanism`,
    `username` and a password source. TLS trusts `ca_file` (PEM) or `truststore` (JKS or PKCS12; the JVM's
    trust store without either) and checks the listener's host name; the client certificate a listener with
    `ssl.client.auth=required` asks for is `keystore` (JKS or PKCS12, its key's own password in
    `key_password_file` where it is not the store's) or `cert_file` + `key_file` (PEM, the key PKCS#8,
    encrypted with its password in `key_password_file` or not). `sasl_mechanism: OAUTHBEARER`
    logs in with `oauth` (OIDC client credentials, KIP-768) instead of a username and password, `GSSAPI`
    with `kerberos` (a principal and its keytab), `AWS_MSK_IAM` with `aws_iam` (AWS credentials)."""

    security_protocol: Literal["PLAINTEXT", "SASL_PLAINTEXT", "SSL", "SASL_SSL"] = Field(
        default="PLAINTEXT", description="the listener's, as Kafka's `security.protocol`"
    )
    sasl_mechanism: SaslMechanism | None = Field(
        default=None, description="for SASL: with `username` and a password, `oauth` or `kerberos`"
    )
    cert_file: Path | None = Field(default=None, description="PEM client certificate, for `ssl.client.auth=required`")
    key_file: Path | None = Field(
        default=None, description="its key, PEM PKCS#8 (`BEGIN PRIVATE KEY`, or `BEGIN ENCRYPTED PRIVATE KEY`)"
    )
    key_password_file: Path | None = Field(
        default=None,
        description="a file that holds the password of an encrypted key_file (PBES1 or PBES2: decrypted in "
        "ctlplane's JVM, where Kafka's own ssl.key.password lacks PBES2 on JDK 17), or of the keystore's key "
        "where it is not the store's (Kafka's ssl.key.password)",
    )
    oauth: OAuthClientCredentials | None = Field(
        default=None, description="for sasl_mechanism OAUTHBEARER: the OIDC client credentials (instead of a username)"
    )
    kerberos: KerberosKeytab | None = Field(
        default=None, description="for sasl_mechanism GSSAPI: the principal and its keytab (instead of a username)"
    )
    aws_iam: AwsIamLogin | None = Field(
        default=None,
        description="for sasl_mechanism AWS_MSK_IAM: where its AWS credentials come from ({} for the default chain)",
    )

    @model_validator(mode="after")
    def _fits_the_protocol(self) -> AdminSecurity:
        sasl = self.security_protocol.startswith("SASL_")
        tls = self.security_protocol.endswith("SSL")
        if (self.sasl_mechanism == "OAUTHBEARER") != (self.oauth is not None):
            raise ValueError("sasl_mechanism OAUTHBEARER and oauth go together")
        if self.oauth is not None and self.username is not None:
            raise ValueError("OAUTHBEARER logs in with oauth's client credentials, not a username and password")
        if self.sasl_mechanism == "GSSAPI" and self.kerberos is None:
            raise ValueError("sasl_mechanism GSSAPI needs kerberos: {principal, keytab_file}")
        if self.kerberos is not None and self.sasl_mechanism != "GSSAPI":
            raise ValueError(f"kerberos is for sasl_mechanism GSSAPI, not {self.sasl_mechanism}")
        if self.kerberos is not None and self.username is not None:
            raise ValueError("GSSAPI logs in with kerberos's principal and keytab, not a username and password")
        if (self.sasl_mechanism == "AWS_MSK_IAM") != (self.aws_iam is not None):
            raise ValueError("sasl_mechanism AWS_MSK_IAM and aws_iam go together (aws_iam: {} for AWS's default chain)")
        if self.aws_iam is not None and self.security_protocol != "SASL_SSL":
            raise ValueError(
                "AWS_MSK_IAM is offered on MSK's TLS listeners only (port 9098): security_protocol SASL_SSL"
            )
        if self.aws_iam is not None and self.username is not None:
            raise ValueError("AWS_MSK_IAM signs with AWS credentials, not a username and password")
        login = (
            self.username is not None or self.oauth is not None or self.kerberos is not None or self.aws_iam is not None
        )
        if sasl and (self.sasl_mechanism is None or not login):
            raise ValueError(
                f"security_protocol {self.security_protocol} needs sasl_mechanism and username "
                "(or oauth, kerberos, aws_iam)"
            )
        if not sasl and (self.sasl_mechanism is not None or self.username is not None or self.kerberos is not None):
            raise ValueError(
                f"sasl_mechanism and username are for SASL listeners; security_protocol is {self.security_protocol}"
            )
        material = [n for n in (*_STORE_FIELDS, *_ADMIN_PEM_FIELDS) if getattr(self, n) is not None]
        if not tls and material:
            raise ValueError(
                f"{', '.join(material)} are for TLS listeners; security_protocol is {self.security_protocol}"
            )
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("cert_file and key_file go together")
        if self.keystore is not None and self.cert_file is not None:
            raise ValueError("give keystore or cert_file and key_file, not both (each is the client certificate)")
        if self.key_password_file is not None and self.key_file is None and self.keystore is None:
            raise ValueError("key_password_file is the password of key_file or the keystore's key: give either")
        return self

    def files(self) -> list[tuple[str, Path]]:
        # oauth's client_secret_file is read (and its problems said) by OAuthClientCredentials.client_secret()
        files = self.store_files() + [(name, path) for name in _ADMIN_PEM_FIELDS if (path := getattr(self, name))]
        if self.kerberos is not None:
            files += [("kerberos.keytab_file", self.kerberos.keytab_file)]
            files += [("kerberos.krb5_conf", self.kerberos.krb5_conf)]
        return files

    def secret_files(self) -> list[Path]:
        """Every file the client's credentials are read from (the password, TLS material, keytab, OIDC client
        secret): a change to any makes the client again with what it holds now."""
        files = [path for _, path in self.files()]
        if self.password_file is not None:
            files.append(self.password_file)
        if self.oauth is not None and self.oauth.client_secret_file is not None:
            files.append(self.oauth.client_secret_file)
        return files

    def client_certificate(self) -> tuple[str, SecretStr] | None:
        """The client certificate chain and key, read now; ValueError naming the file if one cannot be."""
        if self.cert_file is None or self.key_file is None:
            return None
        texts = []
        for name, path in (("cert_file", self.cert_file), ("key_file", self.key_file)):
            try:
                texts.append(path.read_text())
            except (OSError, UnicodeDecodeError) as exc:
                raise ValueError(f"cannot read {name} {path}: {getattr(exc, 'strerror', None) or exc}") from exc
        return texts[0], SecretStr(texts[1])

    def key_password(self) -> SecretStr | None:
        """The encrypted key's password, read now from key_password_file; ValueError naming it if it cannot be."""
        return None if self.key_password_file is None else secret_from_file(self.key_password_file, "key_password_file")


RoleHint = Literal["broker", "controller", "combined"]


class NodeConfig(_Strict):
    """One Kafka process to read: its remote-JMX endpoint."""

    address: str = Field(description="JMX host:port (the metrics endpoint's, with the cluster's `metrics`)")
    name: str | None = Field(default=None, description="the `node` label; defaults to the address")
    role: RoleHint | None = Field(
        default=None, description="broker, controller or combined; used only until the role is detected"
    )
    node_id: int | None = Field(
        default=None, ge=0, le=2**31 - 1, description="broker.id / node.id, used only until the node's JMX answers"
    )

    @field_validator("address")
    @classmethod
    def _host_port(cls, value: str) -> str:
        return host_port(value)

    @property
    def host(self) -> str:
        return self.address.rpartition(":")[0]

    @property
    def port(self) -> int:
        return int(self.address.rpartition(":")[2])

    @property
    def label(self) -> str:
        return self.name or self.address


class DnsNameConfig(_Strict):
    """A DNS name whose records are nodes (ctlplane/exporter/discovery/dns.py): SRV, e.g. a headless Service's
    `_jmx._tcp.<service>.<namespace>.svc.cluster.local` (each target a node, named by its first label, at the
    record's port), or A (each IPv4/IPv6 address a node, named by the address, at `port`)."""

    name: str = Field(min_length=1, description="the DNS name")
    type: Literal["SRV", "A"] = Field(default="SRV", description="SRV: targets and ports; A: addresses at `port`")
    port: int | None = Field(default=None, ge=1, lt=65536, description="the JMX port, for type A")

    @model_validator(mode="after")
    def _port(self) -> DnsNameConfig:
        if self.type == "A" and self.port is None:
            raise ValueError(f"{self.name}: an A name needs the JMX port (port:)")
        if self.type == "SRV" and self.port is not None:
            raise ValueError(f"{self.name}: an SRV record carries its port: drop port:")
        return self


class DiscoveryConfig(_Strict):
    """Every node found from the cluster's own answers (ctlplane/exporter/discovery/answers.py; docs/configuration.md
    "Watching your own clusters"): needs the cluster's bootstrap_servers or bootstrap_controllers. Kafka
    advertises no JMX port, so the JMX address comes from here: `jmx_port` on each node's own host, or a
    template per role over {host}, {id} and {id+N}; `overrides` by node id win."""

    jmx_port: int | None = Field(default=None, ge=1, lt=65536, description="each node's JMX port on its own host")
    broker_jmx: str | None = Field(default=None, description="a broker's JMX address, e.g. {host}:9999")
    controller_jmx: str | None = Field(default=None, description="a controller's, e.g. ctl-{id}.kafka:9999")
    overrides: dict[int, str] = Field(default_factory=dict, description="node id -> JMX host:port")
    node_name: str = Field(default=DEFAULT_NODE_NAME, min_length=1, description="the `node` label: {role}, {id}")
    forget_after_seconds: float = Field(
        default=300.0,
        ge=0,
        description="how long the evidence that a node left the cluster (unregistered, removed from the voters, "
        "a ZooKeeper-mode clean shutdown) must hold, its JMX silent, before it is no longer watched",
    )

    dns: list[DnsNameConfig] = Field(default_factory=list, description="DNS names whose records are nodes")
    dns_nameservers: list[str] = Field(
        default_factory=list, description="host or host:port of the name servers; the system's when empty"
    )
    dns_interval_seconds: float = Field(default=30.0, gt=0, description="how often the DNS names are resolved")

    @field_validator("broker_jmx", "controller_jmx")
    @classmethod
    def _template(cls, value: str | None) -> str | None:
        return None if value is None else check_template(value)

    @field_validator("overrides")
    @classmethod
    def _override_addresses(cls, values: dict[int, str]) -> dict[int, str]:
        return {node_id: host_port(address) for node_id, address in values.items()}

    @model_validator(mode="after")
    def _one_rule(self) -> DiscoveryConfig:
        if self.jmx_port is not None and (self.broker_jmx or self.controller_jmx):
            raise ValueError("set jmx_port or broker_jmx/controller_jmx, not both")
        if self.jmx_port is None and not (self.broker_jmx or self.controller_jmx or self.overrides or self.dns):
            raise ValueError("say how to reach a node's JMX: jmx_port, broker_jmx/controller_jmx, overrides or dns")
        return self

    def rule(self) -> JmxRule:
        on_host = None if self.jmx_port is None else f"{{host}}:{self.jmx_port}"
        return JmxRule(
            broker=self.broker_jmx or on_host,
            controller=self.controller_jmx or on_host,
            overrides=MappingProxyType(dict(self.overrides)),
            name=self.node_name,
            forget_after_seconds=self.forget_after_seconds,
        )


MetricsNaming = Literal["jmx_exporter", "strimzi", "confluent", "strimzi_reporter", "aiven"]


class MetricsEndpointConfig(_Credentials):
    """Read the cluster's nodes through their Prometheus endpoints instead of remote JMX: jmx_exporter's
    javaagent, as Amazon MSK (:11001), Strimzi (:9404) and Confluent's jmx-monitoring-stacks run it, or the
    Strimzi Metrics Reporter (docs/sources.md). Each node's address, listed or from discovery, is its endpoint's
    host:port; the naming says how the endpoint names the MBeans."""

    naming: MetricsNaming | None = Field(
        default=None,
        description="the endpoints' naming: jmx_exporter (its default naming, no rules: Amazon MSK) or strimzi "
        "(Strimzi's example kafka-metrics.yaml) or confluent (Confluent's jmx-monitoring-stacks broker rules) or "
        "strimzi_reporter (the Strimzi Metrics Reporter, no JMX) or aiven (Aiven for Apache Kafka's Prometheus "
        "integration); jmx_exporter without this or rules_file",
    )
    rules_file: Path | None = Field(
        default=None, description="the jmx_exporter config the endpoints run, for any other naming (instead of naming)"
    )
    scheme: Literal["http", "https"] = Field(default="http", description="http, or https (jmx_exporter 1.x)")
    path: str = Field(default="/metrics", pattern=r"^/", description="the page's path")
    ca_file: Path | None = Field(
        default=None,
        description="PEM CA for https (the system's trust store without); read again when the file changes",
    )
    cert_file: Path | None = Field(
        default=None,
        description="PEM client certificate, for an https endpoint that asks for one (mutual TLS: a proxy in front "
        "of the agent); read again when the file changes, so a renewed certificate is used without a restart",
    )
    key_file: Path | None = Field(default=None, description="its key, PEM (PKCS#8, PKCS#1 or SEC1)")
    key_password_file: Path | None = Field(
        default=None, description="a file that holds the password of an encrypted key_file; read with the key"
    )
    bearer_token_file: Path | None = Field(
        default=None,
        description="a file that holds a token sent as `Authorization: Bearer` (kube-rbac-proxy in front of the "
        "pods, a projected service-account token); read at every page, so a rotated token is used at once",
    )

    @model_validator(mode="after")
    def _one_naming(self) -> MetricsEndpointConfig:
        if self.naming is not None and self.rules_file is not None:
            raise ValueError("give naming or rules_file, not both")
        for name in ("ca_file", "cert_file", "key_file", "key_password_file"):
            if getattr(self, name) is not None and self.scheme != "https":
                raise ValueError(f"{name} is for scheme: https")
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("cert_file and key_file go together")
        if self.key_password_file is not None and self.key_file is None:
            raise ValueError("key_password_file is the password of key_file: give cert_file and key_file")
        if self.bearer_token_file is not None and self.username is not None:
            raise ValueError("give a user and password or bearer_token_file, not both (one Authorization header)")
        return self

    def url(self, address: str) -> str:
        return f"{self.scheme}://{address}{self.path}"


# Kafka's legal topic names (Topic.LEGAL_CHARS, at most 249 characters); the canary adds 13 digits of unix ms
CANARY_PREFIX_PATTERN = r"^[a-zA-Z0-9._-]{1,200}$"


class CanaryConfig(_Strict):
    """The metadata canary (ctlplane/exporter/sources/admin/canary.py; docs/canary.md): a topic of ctlplane's own
    created at an interval, and every broker asked whether it serves it yet. Off unless given."""

    topic_prefix: str = Field(
        pattern=CANARY_PREFIX_PATTERN,
        description="the canary's topics are this prefix and the unix time in ms; the ACLs are PREFIXED on it",
    )
    interval_seconds: float = Field(default=30.0, ge=5, description="how often a change is made")


class ClusterConfig(_Strict):
    name: str = Field(min_length=1, pattern=CLUSTER_NAME_PATTERN, description="the `cluster` label, unique")
    nodes: list[NodeConfig] = Field(
        default_factory=list, description="the nodes to read as listed; none with `discovery`"
    )
    discovery: DiscoveryConfig | None = Field(
        default=None, description="find the nodes from the cluster's own answers (needs a bootstrap address)"
    )
    jmx: JmxAuth | None = Field(
        default=None, description="this cluster's JMX credentials (the top-level `jmx` without)"
    )
    # The quorum's own view (Admin API, docs/configuration.md "The quorum's view"): brokers' client listeners, or the
    # KRaft controllers' (KIP-919, Kafka 3.7+), which answer even when every broker is down. At most one.
    bootstrap_servers: list[str] = Field(
        default_factory=list,
        description="brokers' client host:port, for the quorum's view (KRaft 3.3+: a broker forwards DescribeQuorum "
        "to the active controller); at most one of the two",
    )
    bootstrap_controllers: list[str] = Field(
        default_factory=list,
        description="the KRaft controllers' host:port (KIP-919, Kafka 3.7+): they answer even when every broker "
        "is down",
    )
    admin: AdminSecurity | None = Field(
        default=None, description="how the quorum's view reaches its listener (plaintext without)"
    )
    metrics: MetricsEndpointConfig | None = Field(
        default=None,
        description="read the nodes through their Prometheus endpoints (jmx_exporter's javaagent) instead of "
        "remote JMX; the nodes' addresses are then the endpoints' host:port",
    )
    canary: CanaryConfig | None = Field(
        default=None,
        description="the metadata canary: a topic change made at an interval and asked of every broker "
        "(needs bootstrap_servers)",
    )

    @property
    def admin_only(self) -> bool:
        """No node to read, listed or discovered: the cluster's Admin API answers alone (health/admin.py)."""
        return not self.nodes and self.discovery is None

    @field_validator("bootstrap_servers", "bootstrap_controllers")
    @classmethod
    def _bootstrap_addresses(cls, values: list[str]) -> list[str]:
        return [host_port(value) for value in values]

    @model_validator(mode="after")
    def _unique_nodes(self) -> ClusterConfig:
        bootstrap = bool(self.bootstrap_servers or self.bootstrap_controllers)
        if not self.nodes and self.discovery is None and not bootstrap:
            raise ValueError(
                f"cluster {self.name!r}: list its nodes, set discovery, or give a bootstrap address alone (the "
                "Admin API's view only)"
            )
        if not self.nodes and self.discovery is None and self.metrics is not None:
            raise ValueError(
                f"cluster {self.name!r}: metrics says how to read its nodes' endpoints: list the nodes or set discovery"
            )
        if (
            self.discovery is not None
            and not self.discovery.dns
            and not (self.bootstrap_servers or self.bootstrap_controllers)
        ):
            raise ValueError(
                f"cluster {self.name!r}: discovery asks the cluster itself: set bootstrap_servers or "
                "bootstrap_controllers (or dns names)"
            )
        seen: set[str] = set()
        for node in self.nodes:
            if node.label in seen:
                raise ValueError(f"node {node.label!r} appears twice in cluster {self.name!r}")
            seen.add(node.label)
        if self.admin is not None and not (self.bootstrap_servers or self.bootstrap_controllers):
            raise ValueError(
                f"cluster {self.name!r}: admin applies to the quorum's view: set bootstrap_servers or "
                "bootstrap_controllers too"
            )
        if self.canary is not None and not self.bootstrap_servers:
            raise ValueError(
                f"cluster {self.name!r}: the canary creates its topics through the brokers and asks each of them: "
                "set bootstrap_servers"
            )
        if self.bootstrap_servers and self.bootstrap_controllers:
            # the admin client refuses both (AdminBootstrapAddresses.fromConfig, KIP-919): say so at load time
            raise ValueError(f"cluster {self.name!r}: set bootstrap_servers or bootstrap_controllers, not both")
        return self


# The slow tier's default period: four rounds at the default interval. The one rule on these series rates
# them over 10 minutes (KafkaZkUpdateMetadataSlow) and their percentiles weigh the last ~5 minutes anyway.
DEFAULT_SLOW_INTERVAL_SECONDS = 60.0


class ScrapeConfig(_Strict):
    interval_seconds: float = Field(
        default=15.0, gt=0, le=DAY_SECONDS, description="one round of every node per interval"
    )
    timeout_seconds: float = Field(
        default=10.0,
        gt=0,
        le=DAY_SECONDS,
        description="a node not answered by then is `ctlplane_up 0` this round; at most the interval. RMI "
        "timeouts are a third of it; a read still running after twice it is abandoned",
    )
    workers: int = Field(
        default=16,
        ge=1,
        le=1024,
        description="parallel JMX reads, shared by the clusters: each holds at most its share (two each, "
        "the rest by node count), so one cluster's hung nodes never take another's workers",
    )
    client: Literal["jpype", "jmxquery"] = Field(
        default="jpype", description="jpype: a persistent in-process JVM; jmxquery: a JVM per read (a few nodes)"
    )
    jvm_max_heap: str = Field(default="128m", pattern=r"^\d+[kmgKMG]$", description="the in-process JVM's heap")
    # how often the slow tier (catalog MetricSpec.slow: the per-RPC request histograms) is read; None: every
    # round, like everything else. At most 4 minutes: a sample is served with the time it was read, and
    # Prometheus' instant queries look back 5 minutes (--query.lookback-delta) for the latest one
    slow_interval_seconds: float | None = Field(
        default=DEFAULT_SLOW_INTERVAL_SECONDS,
        gt=0,
        le=240,
        description="how often the per-RPC request histograms are read (null: every round)",
    )

    fencing_poll_seconds: float = Field(
        default=2.0,
        ge=0,
        le=60,
        description="how often each cluster's active controller is asked for its fencing gauges between rounds; "
        "a change starts the next round at once (0: off, rounds only at their interval)",
    )

    page_timeout_seconds: float = Field(
        default=300.0,
        gt=0,
        le=DAY_SECONDS,
        description="a metrics endpoint's page not complete by then is the node's error, its request held open "
        "for the next read (up to four page timeouts, at most 600 s), never asked again beside it. A page slower "
        "than the scrape timeout (a large broker behind jmx_exporter) is read at its own pace and its last "
        "complete read served; connecting still has the scrape timeout",
    )

    # A page costs its broker about a core for as long as it is collected (8.2 CPU-s for a page of 8.6 s at
    # 10,000 partitions, docs/benchmarks.md "Large brokers"): read back to back, a large broker would give a
    # core to ctlplane alone. At 45 s what is served stays under a minute old.
    page_interval_seconds: float = Field(
        default=45.0,
        gt=0,
        le=3600,
        description="a page read at its own pace is read at most this often (and never sooner than half its "
        "own time after the last ended), so its collection does not keep a broker core busy",
    )

    @property
    def read_deadline_seconds(self) -> float:
        """When a node's read still running is abandoned, and how long a one-shot round may wait for one."""
        return 2 * self.timeout_seconds

    @model_validator(mode="after")
    def _timeout_within_interval(self) -> ScrapeConfig:
        if self.timeout_seconds > self.interval_seconds:
            raise ValueError("timeout_seconds must not exceed interval_seconds")
        if self.page_timeout_seconds < self.timeout_seconds:
            raise ValueError("page_timeout_seconds must not be shorter than timeout_seconds")
        return self


# Prometheus exporter-toolkit's client_auth_type values (Go's tls.ClientAuthType), the ones Python's ssl
# can honour: it verifies a client certificate against client_ca_file or asks for none.
# RequestClientCert and RequireAnyClientCert (accept any certificate, unverified) are refused by name.
CLIENT_AUTH_TYPES = ("NoClientCert", "VerifyClientCertIfGiven", "RequireAndVerifyClientCert")


class TlsConfig(_Strict):
    """HTTPS for every endpoint; the keys of exporter-toolkit's `tls_server_config`."""

    cert_file: Path = Field(description="PEM certificate (chain)")
    key_file: Path = Field(description="its key, PEM")
    min_version: Literal["TLS12", "TLS13"] = Field(
        default="TLS12", description="TLS 1.0 and 1.1 are refused (RFC 8996)"
    )
    client_ca_file: Path | None = Field(default=None, description="PEM CA that client certificates must chain to")
    client_auth_type: str = Field(
        default="NoClientCert",
        description="NoClientCert, VerifyClientCertIfGiven or RequireAndVerifyClientCert (mTLS)",
    )

    @field_validator("client_auth_type")
    @classmethod
    def _known_client_auth(cls, value: str) -> str:
        if value not in CLIENT_AUTH_TYPES:
            raise ValueError(
                f"{value!r} is not supported: use one of {', '.join(CLIENT_AUTH_TYPES)} (ctlplane verifies every "
                "client certificate it accepts against client_ca_file)"
            )
        return value

    @model_validator(mode="after")
    def _ca_for_verification(self) -> TlsConfig:
        if self.client_auth_type != "NoClientCert" and self.client_ca_file is None:
            raise ValueError(f"client_auth_type {self.client_auth_type} needs client_ca_file")
        if self.client_auth_type == "NoClientCert" and self.client_ca_file is not None:
            raise ValueError("client_ca_file is set but client_auth_type is NoClientCert: say which one you mean")
        return self


# bcrypt in the modular crypt format: $2a$/$2b$/$2y$, a two-digit cost of 4-31, then 22 characters of salt
# and 31 of hash in bcrypt's base64 alphabet (60 characters in all). Anything else failed in bcrypt at
# request time, an HTTP 500 for every request that gave that user.
_BCRYPT = re.compile(r"^\$2[aby]\$(0[4-9]|[12][0-9]|3[01])\$[./A-Za-z0-9]{53}$")


class HttpConfig(_Strict):
    host: str = Field(default="127.0.0.1", description="listen address (0.0.0.0 in a container)")
    port: int = Field(default=DEFAULT_PORT, ge=0, lt=65536, description="listen port")
    tls: TlsConfig | None = Field(default=None, description="HTTPS on every endpoint")
    basic_auth_users: dict[str, str] = Field(
        default_factory=dict,
        description="user -> bcrypt hash, as Prometheus' web config (`htpasswd -nBC 10 \"\" | tr -d ':\\n'`); "
        "every endpoint but /healthz",
    )
    web_config_file: Path | None = Field(
        default=None,
        description="a Prometheus exporter-toolkit web config (tls_server_config, basic_auth_users), read in "
        "place of `tls` and `basic_auth_users`",
    )

    @field_validator("host")
    @classmethod
    def _bind_host(cls, value: str) -> str:
        problem = host_problem(value, bracketed_ipv6=False)
        if problem is not None:
            raise ValueError(problem)
        return value

    @field_validator("basic_auth_users")
    @classmethod
    def _bcrypt_hashes(cls, users: dict[str, str]) -> dict[str, str]:
        for user, hashed in users.items():
            if not hashed.startswith(("$2a$", "$2b$", "$2y$")):
                raise ValueError(f"password of {user!r} must be a bcrypt hash, not plain text")
            if not _BCRYPT.match(hashed):
                raise ValueError(
                    f"password of {user!r} is not a whole bcrypt hash ($2b$<cost 04-31>$ and 53 characters; "
                    "make one with `htpasswd -nBC 10 \"\" | tr -d ':\\n'`)"
                )
        return users


def _means(name: str) -> str:
    return str(next(spec.metadata["means"] for spec in dataclass_fields(Thresholds) if spec.name == name))


class HealthConfig(_Strict):
    """Thresholds of the health model (ctlplane/exporter/health/): the defaults and their meaning are
    ctlplane/exporter/thresholds.py's `Thresholds`; here, the bounds a configured value must keep."""

    metadata_stale_seconds: float = Field(
        default=HEALTH.metadata_stale_seconds, gt=0, description=_means("metadata_stale_seconds")
    )
    metadata_stale_records: float = Field(
        default=HEALTH.metadata_stale_records, gt=0, description=_means("metadata_stale_records")
    )
    metadata_frozen_scrapes: int = Field(
        default=HEALTH.metadata_frozen_scrapes, ge=1, le=100, description=_means("metadata_frozen_scrapes")
    )
    zk_controller_queue_stale: float = Field(
        default=HEALTH.zk_controller_queue_stale, gt=0, description=_means("zk_controller_queue_stale")
    )
    control_plane_queue_saturation_ratio: float = Field(
        default=HEALTH.control_plane_queue_saturation_ratio,
        gt=0,
        le=1,
        description=_means("control_plane_queue_saturation_ratio"),
    )
    control_plane_idle_saturation_ratio: float = Field(
        default=HEALTH.control_plane_idle_saturation_ratio,
        ge=0,
        lt=1,
        description=_means("control_plane_idle_saturation_ratio"),
    )
    gc_pause_seconds: float = Field(default=HEALTH.gc_pause_seconds, gt=0, description=_means("gc_pause_seconds"))

    quorum_caught_up_seconds: float = Field(
        default=HEALTH.quorum_caught_up_seconds, gt=0, description=_means("quorum_caught_up_seconds")
    )
    restart_counts_max_age_seconds: float = Field(
        default=HEALTH.restart_counts_max_age_seconds,
        gt=0,
        le=600,
        description=_means("restart_counts_max_age_seconds"),
    )

    def thresholds(self) -> Thresholds:
        return Thresholds(**self.model_dump())


# A day's history files are merged once it ended this long ago, so the writer's late flushes land first
# (ctlplane/exporter/history/ `compact`; `ctlplane history compact --close-after`).
DEFAULT_COMPACT_AFTER_SECONDS = 3600.0


class HistoryConfig(_Strict):
    """The Parquet archive of every snapshot (ctlplane/exporter/history/) that the Spark pipeline reads."""

    path: Path = Field(description="the archive's root directory")
    flush_seconds: float = Field(default=60.0, gt=0, le=DAY_SECONDS, description="how often buffered rows are written")
    retention_days: float | None = Field(
        default=30.0, gt=0, le=100 * 366, description="days kept (null: forever); imported files are never deleted"
    )
    max_bytes: int | None = Field(default=None, gt=0, description="the archive's size cap; the oldest days go first")
    max_buffered_rows: int = Field(
        default=1_000_000,
        ge=1000,
        le=100_000_000,
        description="rows kept in memory while writes fail (a full disk); beyond, the oldest are dropped and counted",
    )
    compact_after_seconds: float | None = Field(
        default=DEFAULT_COMPACT_AFTER_SECONDS,
        ge=0,
        le=30 * DAY_SECONDS,
        description="merge a day's files once it ended this long ago (null: off; `ctlplane history compact`)",
    )


class DashboardConfig(_Strict):
    """The web dashboard `ctlplane run` serves at /dashboard/ (docs/dashboard.md)."""

    enabled: bool = Field(default=True, description="serve the dashboard")
    refresh_seconds: float = Field(default=5.0, ge=1, le=DAY_SECONDS, description="how often the pages refresh")
    alerts_url: str | None = Field(default=None, description="Alertmanager or Prometheus base URL")
    public_url: str | None = Field(
        default=None,
        pattern=r"^https?://[^\s\"]+/$",
        description="the address people open the dashboard at, ending in `/` (e.g. "
        "`https://ctlplane.example.com/dashboard/`): served as `ctlplane_dashboard_info`, so a page links to the "
        "broker's page; unset, the link is `http://<instance>/dashboard/`, the address Prometheus scrapes",
    )
    history_dir: Path | None = Field(default=None, description="the Spark pipeline's --out directory")
    window_seconds: float = Field(
        default=3600.0, gt=0, le=7 * 86400, description="how far back the graphs and the timeline reach"
    )


class Settings(_Strict):
    clusters: list[ClusterConfig] = Field(min_length=1, description="the Kafka clusters to watch")
    jmx: JmxAuth = Field(default_factory=JmxAuth, description="JMX credentials for every cluster without its own")
    scrape: ScrapeConfig = Field(default_factory=ScrapeConfig, description="the scrape rounds")
    http: HttpConfig = Field(
        default_factory=HttpConfig, description="the HTTP server: /metrics, the API, the dashboard"
    )
    health: HealthConfig = Field(default_factory=HealthConfig, description="the health model's thresholds")
    history: HistoryConfig | None = Field(default=None, description="the Parquet archive (off unless configured)")
    dashboard: DashboardConfig = Field(default_factory=DashboardConfig, description="the web dashboard")
    shard: str | None = Field(
        default=None,
        description="this replica's share of the clusters when several split a fleet: INDEX/COUNT, or "
        "auto/COUNT for a StatefulSet pod (the index from its hostname); ctlplane/exporter/shards.py",
    )

    @field_validator("shard")
    @classmethod
    def _valid_shard(cls, value: str | None) -> str | None:
        if value is not None:
            parse_shard(value)  # the form only: `auto` is resolved where the exporter runs
        return value

    def served(self, hostname: str | None = None) -> Settings:
        """These settings with only the clusters this replica serves (all of them without `shard`). A shard
        may serve none: more replicas than clusters."""
        if self.shard is None:
            return self
        shard = resolve_shard(self.shard, hostname)
        return self.model_copy(update={"clusters": [c for c in self.clusters if shard.serves(c.name)]})

    @model_validator(mode="after")
    def _unique_clusters(self) -> Settings:
        names = [cluster.name for cluster in self.clusters]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"cluster names must be unique: {', '.join(duplicates)}")
        return self

    def jmx_for(self, cluster: ClusterConfig) -> JmxAuth:
        return cluster.jmx or self.jmx

    def clusters_jmxquery_cannot_read(self) -> list[str]:
        """Clusters with JMX auth or SSL. jmxquery's jar takes credentials only as `-u USER -p PASSWORD` on
        java's command line, where every local user sees them in `ps`, and jmxquery logs that command at
        DEBUG; it has no SSL."""
        return [
            c.name
            for c in self.clusters
            if (auth := self.jmx_for(c)).username is not None or auth.ssl or auth.lookup_over_tls
        ]
