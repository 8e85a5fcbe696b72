"""A config file read into the model: YAML without duplicate keys or absurd nesting, the model's checks
with each problem on one line with its field path, the files the config names (TLS pairs, trust stores,
password files, a history directory that can be written), and a Prometheus web config read in place of
`http.tls` and `http.basic_auth_users`. `ctlplane check-config` and `ctlplane run` share it, so a config
that passes never fails at run time for a reason the file shows."""

from __future__ import annotations

import ssl
import tempfile
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import (
    ValidationError,
)

from ctlplane.exporter.config import HttpConfig, KeyStores, MetricsEndpointConfig, Settings, TlsConfig
from ctlplane.exporter.config.stores import client_key_problem, store_problem
from ctlplane.exporter.sources.admin.kerberos import (
    Krb5Conf,
    Krb5ConfError,
    keytab_principals,
    load_krb5_conf,
    merge_krb5_confs,
)
from ctlplane.exporter.sources.endpoint.client import client_tls_context, key_password
from ctlplane.exporter.sources.endpoint.evidence import missing_lifecycle_evidence
from ctlplane.exporter.sources.endpoint.naming import NamingError
from ctlplane.exporter.sources.endpoint.profiles import naming_from_file


class ConfigError(Exception):
    """A config that cannot be used; the message names the file and the offending field path."""


Problem = Annotated[str, "one line: <field path>: <message>"]


def _describe(error: ValidationError) -> list[Problem]:
    problems = []
    for item in error.errors():
        path = ".".join(str(part) for part in item["loc"]) or "(top level)"
        problems.append(f"{path}: {item['msg']}")
    return problems


def _cluster_problems(settings: Settings) -> list[Problem]:
    problems = []
    if settings.scrape.client == "jmxquery":
        problems += [
            f"scrape.client: jmxquery cannot read cluster {name} safely: it puts the JMX password "
            "on java's command line (visible in ps) and has no SSL; use client: jpype"
            for name in settings.clusters_jmxquery_cannot_read()
        ]
        problems += [
            f"clusters.{index}: the quorum's view (bootstrap_servers, bootstrap_controllers) runs Kafka's "
            "admin client in the jpype client's JVM; use scrape.client: jpype"
            for index, cluster in enumerate(settings.clusters)
            if cluster.bootstrap_servers or cluster.bootstrap_controllers
        ]
    return problems


def parse_settings(document: object, source: str = "<config>") -> Settings:
    try:
        settings = Settings.model_validate(document)
    except ValidationError as exc:
        raise ConfigError(f"{source}: invalid configuration\n  " + "\n  ".join(_describe(exc))) from None
    problems = _cluster_problems(settings)
    if problems:
        raise ConfigError(f"{source}: invalid configuration\n  " + "\n  ".join(problems))
    return settings


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping: YAML keeps the last one, so a second
    `clusters:` silently dropped every cluster of the first."""


def _mapping_without_duplicates(loader: _UniqueKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"duplicate key {key!r} (first on line {seen[key] + 1}): YAML would keep only the last",
                key_node.start_mark,
            )
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_without_duplicates)


def _read_yaml(path: Path) -> object:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{path}: not UTF-8 (byte {raw[exc.start]:#04x} on line {line})") from None
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader: no arbitrary objects
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{path}: not a ctlplane config: nested too deeply") from None


def _readable_file(path: Path) -> str | None:
    """Why `path` cannot be read as a file, or None."""
    if not path.is_file():
        return f"{path}: no such file" if not path.exists() else f"{path}: not a regular file"
    try:
        with path.open("rb"):
            return None
    except OSError as exc:
        return f"{path}: {exc.strerror}"


def _writable_directory(path: Path) -> str | None:
    """Why the history writer could not create files under `path` (made on demand), or None. Tried for
    real in the nearest directory that exists, since permission bits do not tell (root, read-only mounts)."""
    existing = path
    while not existing.exists():
        if existing.parent == existing:
            break
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is not a directory" + ("" if existing == path else f", so {path} cannot be made")
    try:
        with tempfile.TemporaryFile(dir=existing, prefix=".ctlplane-check-"):
            return None
    except OSError as exc:
        return f"cannot write in {existing}: {exc.strerror}"


def tls_problems(tls: TlsConfig) -> list[Problem]:
    """Why the TLS files cannot serve: unreadable, or not a certificate, its key and a client CA that load."""
    problems = [
        f"http.tls.{name}: {problem}"
        for name, file in (
            ("cert_file", tls.cert_file),
            ("key_file", tls.key_file),
            ("client_ca_file", tls.client_ca_file),
        )
        if file is not None and (problem := _readable_file(file)) is not None
    ]
    if problems:
        return problems
    try:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(tls.cert_file, tls.key_file)
        if tls.client_ca_file is not None:
            context.load_verify_locations(cafile=tls.client_ca_file)
    except (ssl.SSLError, OSError) as exc:
        return [f"http.tls: {tls.cert_file}, {tls.key_file} (and client_ca_file) do not load: {exc}"]
    return []


def _store_problems(where: str, auth: KeyStores) -> list[Problem]:
    """Each trust/key store file readable (remote JMX's or the Admin client's), each store of its kind and a JKS
    store's password right (stores.py)."""
    problems = [
        f"{where}.{name}: {problem}"
        for name, file in auth.store_files()
        if (problem := _readable_file(file)) is not None
    ]
    if problems:
        return problems
    try:
        trust_password, key_password = auth.tls_passwords()
    except ValueError as exc:
        return [f"{where}: {exc}"]
    stores = (
        ("truststore", auth.truststore, trust_password, True),
        ("ca_file", auth.ca_file, None, True),
        ("keystore", auth.keystore, key_password, False),
    )
    for name, path, password, certificates in stores:
        if path is None:
            continue
        secret = password.get_secret_value() if password is not None else None
        if (problem := store_problem(path, secret, certificates_allowed=certificates)) is not None:
            problems.append(f"{where}.{name}: {problem}")
    return problems


def _check_files(settings: Settings) -> list[Problem]:
    """The checks that need the file system: files named must be readable (the TLS pair must load as
    one), the history directory writable, passwords present. What `run` would otherwise fail on later."""
    problems: list[Problem] = []
    if settings.http.tls is not None:
        problems += tls_problems(settings.http.tls)
    problems += _store_problems("jmx", settings.jmx)
    if settings.history is not None and (problem := _writable_directory(settings.history.path)) is not None:
        problems.append(f"history.path: {problem}")
    for index, cluster in enumerate(settings.clusters):
        try:
            settings.jmx_for(cluster).password()
        except ValueError as exc:
            where = f"clusters.{index}.jmx" if cluster.jmx is not None else "jmx"
            problems.append(f"{where} (cluster {cluster.name}): {exc}")
        if cluster.jmx is not None:
            problems += _store_problems(f"clusters.{index}.jmx", cluster.jmx)
        if cluster.metrics is not None:
            problems += _metrics_problems(f"clusters.{index}.metrics", cluster.name, cluster.metrics)
        if cluster.admin is not None:
            unreadable = [
                f"clusters.{index}.admin.{name}: {problem}"
                for name, file in cluster.admin.files()
                if (problem := _readable_file(file)) is not None
            ]
            problems += unreadable or _store_problems(f"clusters.{index}.admin", cluster.admin)
            try:
                secret = cluster.admin.password()
                if cluster.admin.oauth is not None:
                    cluster.admin.oauth.client_secret()  # its problems name the source, never the secret
                key_password = cluster.admin.key_password()
            except ValueError as exc:
                problems.append(f"clusters.{index}.admin (cluster {cluster.name}): {exc}")
                continue
            admin = cluster.admin
            if not unreadable and admin.cert_file is not None and admin.key_file is not None:
                password = key_password.get_secret_value() if key_password is not None else None
                if (problem := client_key_problem(admin.cert_file, admin.key_file, password)) is not None:
                    problems.append(f"clusters.{index}.admin.key_file: {problem}")
            if secret is not None and any(c in secret.get_secret_value() for c in "\r\n"):
                # Kafka's JAAS parser ends a quoted value at a line break (JaasConfig: a StreamTokenizer)
                problems.append(f"clusters.{index}.admin (cluster {cluster.name}): the password holds a line break")
    return problems + kerberos_problems(settings)


def kerberos_problems(settings: Settings) -> list[Problem]:
    """Each GSSAPI cluster's keytab holds its principal's key, its krb5.conf parses, and the krb5.conf files
    agree on every realm they share: the JVM reads one, merged from all (client.use_krb5_conf). The keytab's
    keys are never read into the message, only its principals' names."""
    problems: list[Problem] = []
    confs: list[tuple[str, Krb5Conf]] = []
    for index, cluster in enumerate(settings.clusters):
        kerberos = cluster.admin.kerberos if cluster.admin is not None else None
        if kerberos is None:
            continue
        where = f"clusters.{index}.admin.kerberos"
        if _readable_file(kerberos.keytab_file) is None:  # else said with the other files
            try:
                held = keytab_principals(kerberos.keytab_file)
            except Krb5ConfError as exc:
                problems.append(f"{where}.keytab_file: {exc}")
            else:
                if kerberos.principal not in held:
                    others = ", ".join(sorted(held)[:5]) or "none"
                    problems.append(
                        f"{where}.keytab_file: {kerberos.keytab_file} holds no key for {kerberos.principal} "
                        f"(it holds: {others})"
                    )
        if _readable_file(kerberos.krb5_conf) is None:
            try:
                confs.append((f"cluster {cluster.name}", load_krb5_conf(kerberos.krb5_conf)))
            except Krb5ConfError as exc:
                problems.append(f"{where}.krb5_conf: {exc}")
    problems += [f"clusters (kerberos.krb5_conf): {conflict}" for conflict in merge_krb5_confs(confs).conflicts]
    return problems


def _metrics_problems(where: str, cluster: str, metrics: MetricsEndpointConfig) -> list[Problem]:
    """The endpoints' CA, client certificate, token and password readable (the certificate and its key load
    as a pair), their rules file a jmx_exporter config ctlplane can use."""
    problems: list[Problem] = [
        f"{where}.{name}: {problem}"
        for name in ("ca_file", "cert_file", "key_file", "key_password_file", "bearer_token_file")
        if (file := getattr(metrics, name)) is not None and (problem := _readable_file(file)) is not None
    ]
    if not problems:
        # as the endpoint client loads them (its CA as trust, the certificate and key as a pair)
        ca, cert, key = (
            str(f) if f is not None else None for f in (metrics.ca_file, metrics.cert_file, metrics.key_file)
        )
        try:
            password = key_password(str(metrics.key_password_file) if metrics.key_password_file else None)
            client_tls_context(ca, cert, key, password)
        except (ssl.SSLError, OSError) as exc:
            files = ", ".join(file for file in (ca, cert, key) if file is not None)
            what = (
                "a CA and a certificate with its key" if ca and cert else "a CA" if ca else "a certificate and its key"
            )
            with_password = " (with key_password_file's password)" if metrics.key_password_file else ""
            problems.append(f"{where}: {files} do not load as {what}{with_password}: {exc}")
    try:
        metrics.password()
    except ValueError as exc:
        problems.append(f"{where} (cluster {cluster}): {exc}")
    if metrics.rules_file is not None:
        try:
            naming = naming_from_file(metrics.rules_file)
        except NamingError as exc:
            problems.append(f"{where}.rules_file: {exc}")
        else:
            if (missing := missing_lifecycle_evidence(naming)) is not None:
                problems.append(f"{where}.rules_file: {metrics.rules_file}: {missing}")
    return problems


WEB_CONFIG_KEYS = ("tls_server_config", "basic_auth_users")


def with_web_config(http: HttpConfig, config_path: Path) -> HttpConfig:
    """`http` with the TLS and users of its exporter-toolkit web config. Relative paths in that file are
    relative to it, as exporter-toolkit reads them; keys ctlplane cannot honour are refused by name."""
    assert http.web_config_file is not None
    web_path = http.web_config_file
    where = f"{config_path}: http.web_config_file ({web_path})"
    if http.tls is not None or http.basic_auth_users:
        raise ConfigError(f"{where}: set tls and basic_auth_users in the web config or in http:, not both")
    document = _read_yaml(web_path)
    if document is None:
        document = {}
    if not isinstance(document, dict):
        raise ConfigError(f"{where}: expected a mapping with {' and/or '.join(WEB_CONFIG_KEYS)}")
    unknown = sorted(str(key) for key in document if key not in WEB_CONFIG_KEYS)
    if unknown:
        raise ConfigError(f"{where}: {', '.join(unknown)} not supported (ctlplane reads {', '.join(WEB_CONFIG_KEYS)})")
    tls = document.get("tls_server_config")
    if isinstance(tls, dict):
        tls = {
            key: str(web_path.parent / value) if key.endswith("_file") and isinstance(value, str) else value
            for key, value in tls.items()
        }
    fields = {**http.model_dump(exclude={"tls", "basic_auth_users", "web_config_file"}), "web_config_file": web_path}
    try:
        return HttpConfig.model_validate(
            {**fields, "tls": tls, "basic_auth_users": document.get("basic_auth_users") or {}}
        )
    except ValidationError as exc:
        names = {"tls": "tls_server_config"}
        problems = [
            ".".join(names.get(str(part), str(part)) for part in item["loc"]) + f": {item['msg']}"
            for item in exc.errors()
        ]
        raise ConfigError(f"{where}: invalid\n  " + "\n  ".join(problems)) from None


def load_settings(path: Path) -> Settings:
    """Read and validate a YAML config file: the one check `check-config` and `run` share. Raise
    ConfigError naming each offending field path; a config that loads has nothing left for `run` to
    find wrong in itself (files named exist and load, the history directory takes files)."""
    document = _read_yaml(path)
    if not isinstance(document, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level (with a `clusters:` list)")
    settings = parse_settings(document, str(path))
    if settings.http.web_config_file is not None:
        settings = settings.model_copy(update={"http": with_web_config(settings.http, path)})
    problems = _check_files(settings)
    if problems:
        raise ConfigError(f"{path}: invalid configuration\n  " + "\n  ".join(problems))
    return settings
