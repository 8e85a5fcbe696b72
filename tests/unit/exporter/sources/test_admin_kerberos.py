"""SASL GSSAPI (Kerberos) for the Admin client: the `admin.kerberos` config, what `check-config` says of it, the
client properties built from it, the one krb5.conf merged from every cluster's, and a refused login's one-line
reason. Against a real KDC and broker: tests/integration/test_kerberos.py."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest
import yaml

from ctlplane.cli import main
from ctlplane.exporter.config.file import ConfigError, parse_settings
from ctlplane.exporter.sources.admin import client as kafka_admin
from ctlplane.exporter.sources.admin.kerberos import (
    Krb5ConfError,
    keytab_principals,
    load_krb5_conf,
    merge_krb5_confs,
    parse_krb5_conf,
)
from ctlplane.wiring import admin_security
from tests.unit.exporter.sources.test_admin_oauth import _named

KEY = bytes(range(7, 39))  # 32 bytes: an aes256 key, never to be shown
CLUSTER = {"name": "c1", "nodes": [{"address": "127.0.0.1:9999"}], "bootstrap_servers": ["kafka-1.example.com:9092"]}

KRB5_A = """\
# realm A's
[libdefaults]
    default_realm = A.EXAMPLE.COM
    dns_lookup_kdc = false

[realms]
    A.EXAMPLE.COM = {
        kdc = kdc-a.example.com:88
        admin_server = kdc-a.example.com
    }

[domain_realm]
    .a.example.com = A.EXAMPLE.COM
"""

KRB5_B = """\
[libdefaults]
    default_realm = B.EXAMPLE.COM
    ticket_lifetime = 2h
[realms]
B.EXAMPLE.COM =
{
    kdc = kdc-b.example.com
    kdc_timeout = 5s
}
; the shared realm, as A writes it but for its spacing
A.EXAMPLE.COM = {
  kdc=kdc-a.example.com:88
  admin_server =   kdc-a.example.com
}
[domain_realm]
    .b.example.com = B.EXAMPLE.COM
"""


def write_keytab(path: Path, principal: str, key: bytes = KEY, vno: int = 1) -> Path:
    """An MIT keytab (format 0x502) holding one aes256-cts key for `principal`."""
    name, _, realm = principal.rpartition("@")
    parts = name.split("/")

    def counted(text: str) -> bytes:
        return struct.pack(">H", len(text)) + text.encode()

    entry = struct.pack(">H", len(parts)) + counted(realm) + b"".join(counted(p) for p in parts)
    entry += struct.pack(">IIBH", 1, 1700000000, vno, 18) + struct.pack(">H", len(key)) + key
    path.write_bytes(b"\x05\x02" + struct.pack(">i", len(entry)) + entry)
    return path


def _admin(kerberos: dict[str, Any] | None, **admin: Any) -> dict[str, Any]:
    return {"security_protocol": "SASL_SSL", "sasl_mechanism": "GSSAPI", "kerberos": kerberos, **admin}


def _parse(admin: dict[str, Any], **cluster: Any) -> Any:
    return parse_settings({"clusters": [{**CLUSTER, **cluster, "admin": admin}]}, "t")


def test_gssapi_builds_kafkas_keytab_login_with_its_paths_quoted(tmp_path: Path) -> None:
    keytab = tmp_path / 'odd "dir" \\ name' / "ctlplane.keytab"
    login = {"principal": "ctlplane/monitor@A.EXAMPLE.COM", "keytab_file": str(keytab), "krb5_conf": "/k/krb5.conf"}
    cluster = _parse(_admin(login)).clusters[0]
    assert cluster.admin.kerberos.service_name == "kafka"
    assert admin_security(cluster) == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "GSSAPI",
        "sasl.kerberos.service.name": "kafka",
        # Kafka's documented client login (docs/security.html), the path escaped for JaasConfig's StreamTokenizer
        "sasl.jaas.config": "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true "
        f'keyTab="{tmp_path}/odd \\"dir\\" \\\\ name/ctlplane.keytab" principal="ctlplane/monitor@A.EXAMPLE.COM" '
        "refreshKrb5Config=true;",
    }
    other = _parse(_admin({**login, "service_name": "kafka-prod"})).clusters[0]
    assert admin_security(other)["sasl.kerberos.service.name"] == "kafka-prod"  # type: ignore[index]
    assert _parse(_admin(login, security_protocol="SASL_PLAINTEXT")).clusters[0].admin.kerberos is not None
    with pytest.raises(ValueError, match="GSSAPI needs"):
        kafka_admin.security_properties("SASL_SSL", "GSSAPI")
    with pytest.raises(ValueError, match="line break"):
        kafka_admin.kerberos_properties(kafka_admin.KerberosLogin("a@B", "/k\n.keytab"))


LOGIN = {"principal": "ctlplane@A.EXAMPLE.COM", "keytab_file": "/k/ctlplane.keytab"}


@pytest.mark.parametrize(
    ("admin", "message"),
    [
        (_admin({**LOGIN, "principal": "ctlplane"}), "a principal names its realm (name@REALM)"),
        (_admin({**LOGIN, "principal": "ctlplane@"}), "a principal names its realm"),
        (_admin({**LOGIN, "principal": 'ctl"plane@A'}), "one word"),
        (_admin({**LOGIN, "service_name": "kafka/host"}), "a service name is one word"),
        (_admin(None), "sasl_mechanism GSSAPI needs kerberos: {principal, keytab_file}"),
        (_admin(LOGIN, sasl_mechanism="SCRAM-SHA-512"), "kerberos is for sasl_mechanism GSSAPI, not SCRAM-SHA-512"),
        (_admin(LOGIN, username="u", password_env="P"), "not a username and password"),
        (_admin(LOGIN, security_protocol="SSL", sasl_mechanism=None), "kerberos is for sasl_mechanism GSSAPI"),
        (_admin({**LOGIN, "keytab": "/k"}), "Extra inputs are not permitted"),
    ],
)
def test_a_wrong_kerberos_block_is_one_line_naming_the_field(admin: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match="admin") as raised:
        _parse(admin)
    assert message in str(raised.value), raised.value
    problems = str(raised.value).splitlines()[1:]
    assert len(problems) == 1, raised.value


def test_check_config_says_in_one_line_what_is_wrong_with_a_keytab_or_krb5_conf(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("ctlplane.cli.check_java", lambda settings: None)  # no JVM needed to read a config
    (tmp_path / "a.conf").write_text(KRB5_A)
    keytab = write_keytab(tmp_path / "ctlplane.keytab", "ctlplane@A.EXAMPLE.COM")
    good = {"principal": "ctlplane@A.EXAMPLE.COM", "keytab_file": str(keytab), "krb5_conf": str(tmp_path / "a.conf")}

    def check(*logins: dict[str, Any]) -> tuple[int, str]:
        clusters = [{**CLUSTER, "name": f"c{i}", "admin": _admin(login)} for i, login in enumerate(logins)]
        config = tmp_path / "c.yaml"
        config.write_text(yaml.safe_dump({"clusters": clusters}))
        code = main(["check-config", str(config)])
        captured = capsys.readouterr()
        return code, captured.out + captured.err

    assert check(good) == (0, check(good)[1]) and "OK (1 cluster(s)" in check(good)[1]
    (tmp_path / "broken.conf").write_text("[realms]\n  A.EXAMPLE.COM = {\n    kdc = x\n")
    (tmp_path / "differs.conf").write_text(KRB5_A.replace("kdc-a.example.com:88", "kdc-a2.example.com:88"))
    (tmp_path / "garbage.keytab").write_bytes(b"\x01\x02" + KEY)
    cases = [
        ({**good, "keytab_file": str(tmp_path / "absent.keytab")}, "admin.kerberos.keytab_file: ", "no such file"),
        ({**good, "krb5_conf": str(tmp_path / "absent.conf")}, "admin.kerberos.krb5_conf: ", "no such file"),
        ({**good, "principal": "other@A.EXAMPLE.COM"}, "holds no key for other@A.EXAMPLE.COM", "ctlplane@A"),
        ({**good, "keytab_file": str(tmp_path / "garbage.keytab")}, "not a keytab", "keytab_file"),
        ({**good, "krb5_conf": str(tmp_path / "broken.conf")}, "ends inside 'A.EXAMPLE.COM'", "krb5_conf"),
    ]
    for login, message, also in cases:
        code, output = check(login)
        problem = [line for line in output.splitlines() if message in line]
        assert code == 2 and len(problem) == 1 and also in problem[0], output
        assert KEY.hex() not in output and KEY.decode("latin-1") not in output
    # two clusters whose krb5.conf files define one realm differently: one JVM, one krb5.conf
    code, output = check(good, {**good, "krb5_conf": str(tmp_path / "differs.conf")})
    problem = [line for line in output.splitlines() if "realm A.EXAMPLE.COM is defined differently" in line]
    assert code == 2 and len(problem) == 1, output
    assert "a.conf (cluster c0)" in problem[0] and "differs.conf (cluster c1)" in problem[0], problem
    # the same realm written alike (but for spacing), and another realm beside it: no conflict
    (tmp_path / "b.conf").write_text(KRB5_B)
    b_keytab = write_keytab(tmp_path / "b.keytab", "ctlplane@B.EXAMPLE.COM")
    b_login = {**good, "principal": "ctlplane@B.EXAMPLE.COM", "keytab_file": str(b_keytab)}
    b_login["krb5_conf"] = str(tmp_path / "b.conf")
    assert check(good, b_login)[0] == 0


def test_one_krb5_conf_from_every_clusters_first_libdefaults_every_realm(tmp_path: Path) -> None:
    a = parse_krb5_conf(KRB5_A.splitlines(), "/etc/ctlplane/a.conf")
    b = parse_krb5_conf(KRB5_B.splitlines(), "/etc/ctlplane/b.conf")
    merged = merge_krb5_confs([("cluster a1", a), ("cluster b1", b), ("cluster a2", a)])
    assert merged.conflicts == ()
    assert merged.text.startswith("# Written by ctlplane"), merged.text
    assert "/etc/ctlplane/a.conf (cluster a1, cluster a2)" in merged.text
    body = merged.text[merged.text.index("\n[libdefaults]") + 1 :]
    assert body == (
        "[libdefaults]\n"
        "    default_realm = A.EXAMPLE.COM\n"
        "    dns_lookup_kdc = false\n"
        "\n"
        "[realms]\n"
        "    A.EXAMPLE.COM = {\n"
        "        kdc = kdc-a.example.com:88\n"
        "        admin_server = kdc-a.example.com\n"
        "    }\n"
        "    B.EXAMPLE.COM = {\n"
        "        kdc = kdc-b.example.com\n"
        "        kdc_timeout = 5s\n"
        "    }\n"
        "\n"
        "[domain_realm]\n"
        "    .a.example.com = A.EXAMPLE.COM\n"
        "    .b.example.com = B.EXAMPLE.COM\n"
    )
    # what it wrote reads back as the same realms
    again = parse_krb5_conf(merged.text.splitlines(), "merged")
    assert again.realms() == {**a.realms(), **b.realms()}
    assert merge_krb5_confs([]).text == ""


def test_a_realm_defined_differently_or_a_host_mapped_elsewhere_is_a_conflict_and_the_first_wins() -> None:
    a = parse_krb5_conf(KRB5_A.splitlines(), "a.conf")
    other = KRB5_A.replace("kdc-a.example.com:88", "kdc-x.example.com:88").replace(
        ".a.example.com = A.EXAMPLE.COM", ".a.example.com = X.EXAMPLE.COM"
    )
    x = parse_krb5_conf(other.splitlines(), "x.conf")
    merged = merge_krb5_confs([("cluster a", a), ("cluster x", x)])
    assert merged.conflicts == (
        "realm A.EXAMPLE.COM is defined differently in a.conf (cluster a) and x.conf (cluster x): "
        "the JVM has one krb5.conf, so one definition must serve both",
        "[domain_realm] maps .a.example.com to A.EXAMPLE.COM in a.conf (cluster a) and to X.EXAMPLE.COM in x.conf "
        "(cluster x)",
    )
    assert "kdc-a.example.com:88" in merged.text and "kdc-x" not in merged.text


def test_krb5_conf_includes_are_read_as_the_jdk_reads_them(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "realm-b").write_text(KRB5_B.split("; the shared realm")[0])
    (tmp_path / "d" / "skipped.txt").write_text("[realms]\n  SKIPPED = {\n  }\n")
    (tmp_path / "d" / ".hidden.conf").write_text("[realms]\n  HIDDEN = {\n  }\n")
    (tmp_path / "d" / "c.conf").write_text("[realms]\n  C.EXAMPLE.COM = {\n    kdc = c\n  }\n")
    (tmp_path / "main.conf").write_text(f"includedir {tmp_path / 'd'}\n" + KRB5_A)
    conf = load_krb5_conf(tmp_path / "main.conf")
    assert set(conf.realms()) == {"A.EXAMPLE.COM", "B.EXAMPLE.COM", "C.EXAMPLE.COM"}
    (tmp_path / "loop.conf").write_text(f"include {tmp_path / 'loop.conf'}\n")
    with pytest.raises(Krb5ConfError, match="included more than once"):
        load_krb5_conf(tmp_path / "loop.conf")
    for text, why in (
        ("kdc = x\n", "t.conf:1: an entry before the first [section]"),
        ("[realms]\n  A = {\n  }\n}\n", "t.conf:4: a } that closes nothing"),
        ("[realms]\n  just words\n", "t.conf:2: expected name = value"),
        ("[realms]\n  A =\n  kdc = x\n", "t.conf:3: expected { after 'A' ="),
    ):
        with pytest.raises(Krb5ConfError) as raised:
            parse_krb5_conf(text.splitlines(), "t.conf")
        assert str(raised.value).startswith(why), raised.value
    # where an included file is wrong, its own name and line
    (tmp_path / "d" / "bad.conf").write_text("[realms]\n\n  nothing here\n")
    with pytest.raises(Krb5ConfError, match=f"^{tmp_path / 'd' / 'bad.conf'}:3: expected name = value"):
        load_krb5_conf(tmp_path / "main.conf")


def test_a_keytabs_principals_are_read_and_its_keys_never_kept(tmp_path: Path) -> None:
    keytab = write_keytab(tmp_path / "k", "kafka/broker-1.example.com@A.EXAMPLE.COM")
    assert keytab_principals(keytab) == {"kafka/broker-1.example.com@A.EXAMPLE.COM"}
    # a removed entry leaves a hole (a negative size) that is skipped
    data = keytab.read_bytes()
    holed = data[:2] + struct.pack(">i", -6) + b"\0" * 6 + data[2:]
    (tmp_path / "holed").write_bytes(holed)
    assert keytab_principals(tmp_path / "holed") == {"kafka/broker-1.example.com@A.EXAMPLE.COM"}
    (tmp_path / "short").write_bytes(data[:-5])
    with pytest.raises(Krb5ConfError, match="cut short") as raised:
        keytab_principals(tmp_path / "short")
    assert KEY.hex() not in str(raised.value)


def test_a_refused_kerberos_login_is_one_line_saying_authentication_failed_and_why() -> None:
    def created(cause: BaseException) -> BaseException:
        # Admin.create's KafkaException around SaslChannelBuilder.configure's KafkaException(LoginException)
        wrapped = _named("KafkaException", f"javax.security.auth.login.LoginException: {cause}", cause)
        return _named("KafkaException", "Failed to create new KafkaAdminClient", wrapped)

    def login(message: str, root: BaseException) -> BaseException:
        return created(_named("LoginException", message, root))

    # the KDC's words are the KrbException's; the Asn1Exception under it (the KRB-ERROR read as an AS-REP) misleads
    preauth = "Pre-authentication information was invalid (24) - PREAUTH_FAILED"  # the JDK 17's words
    asn1 = _named("Asn1Exception", "Identifier doesn't match expected value (906)")
    assert kafka_admin.admin_reason(login(preauth, _named("KrbException", preauth, asn1)), "GSSAPI") == (
        f"authentication failed: the Kerberos login failed (KrbException: {preauth})"
    )
    # no ticket for <service>/<host>: Kafka's SaslAuthenticationException over the GSS-API's chain
    unknown = "Server not found in Kerberos database (7) - LOOKING_UP_SERVER"
    gss = _named("GSSException", f"No valid credentials provided (Mechanism level: {unknown})")
    gss.cause = _named("KrbException", unknown, asn1)  # type: ignore[attr-defined]
    sasl = _named("SaslAuthenticationException", "An error: (...) occurred when evaluating SASL token", gss)
    assert kafka_admin.admin_reason(_named("ExecutionException", "x", sasl), "GSSAPI") == (
        f"authentication failed: no service ticket for the broker (KrbException: {unknown})"
    )
    timeout = login("Receive timed out", _named("SocketTimeoutException", "Receive timed out"))
    assert kafka_admin.admin_reason(timeout, "GSSAPI") == (
        "authentication failed: no KDC answered the Kerberos login (SocketTimeoutException: Receive timed out)"
    )
    asked = (
        "Could not login: the client is being asked for a password, but the Kafka client code does not currently "
        "support obtaining a password from the user. not available to garner  authentication information from the user"
    )
    assert kafka_admin.admin_reason(login(asked, _named("LoginException", asked)), "GSSAPI") == (
        "authentication failed: the keytab holds no key for the principal (the login asked for a password)"
    )
    # the OAUTHBEARER wording stays where the mechanism is not GSSAPI
    assert "the login got no token" in kafka_admin.admin_reason(login(preauth, _named("KrbException", preauth)))
