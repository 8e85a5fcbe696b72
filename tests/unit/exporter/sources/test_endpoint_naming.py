"""jmx_exporter's naming, forward and back (ctlplane/exporter/sources/endpoint/naming.py)."""

from __future__ import annotations

import pytest

from ctlplane.exporter.catalog import CATALOG, SeriesType
from ctlplane.exporter.readings import parse_object_name, plan_queries, samples_from_readings
from ctlplane.exporter.sources.endpoint.client import STRING_ATTRIBUTES, inversion_for
from ctlplane.exporter.sources.endpoint.naming import Naming, NamingError, export, parse_naming, safe_name
from ctlplane.exporter.sources.endpoint.profiles import PROFILES, load_config_text, profile
from ctlplane.exporter.sources.endpoint.readings import lookup, readings_from_samples
from ctlplane.exporter.sources.endpoint.text import Needs, TextError, Wanted, page_samples, samples

DEFAULT = profile("jmx_exporter")
STRIMZI = profile("strimzi")
assert isinstance(DEFAULT, Naming) and isinstance(STRIMZI, Naming)
ACTIVE = ("kafka.controller", [("type", "KafkaController"), ("name", "ActiveControllerCount")])


def test_default_naming_is_domain_first_key_and_attribute_with_the_other_keys_as_labels() -> None:
    served = export(DEFAULT, *ACTIVE, "Value", 1.0)
    assert served is not None
    assert (served.name, served.labels, served.value) == (
        "kafka_controller_KafkaController_Value",
        (("name", "ActiveControllerCount"),),
        1.0,
    )
    raft = export(DEFAULT, "kafka.server", [("type", "raft-metrics")], "current-epoch", 3.0)
    assert raft is not None and raft.name == "kafka_server_raft_metrics_current_epoch"


def test_default_naming_drops_string_attributes() -> None:
    assert export(DEFAULT, "kafka.server", [("type", "raft-metrics")], "current-state", "leader") is None


def test_strimzi_rules_lowercase_and_serve_raft_state_as_a_label() -> None:
    served = export(STRIMZI, *ACTIVE, "Value", 1.0)
    assert served is not None and served.name == "kafka_controller_kafkacontroller_activecontrollercount"
    state = export(STRIMZI, "kafka.server", [("type", "raft-metrics")], "current-state", "follower")
    assert state is not None
    assert (state.name, state.labels, state.value) == (
        "kafka_server_raftmetrics_current_state",
        (("current_state", "follower"),),
        1.0,
    )


def test_a_counter_is_served_with_one_total_suffix() -> None:
    expires = ("kafka.server", [("type", "SessionExpireListener"), ("name", "ZooKeeperExpiresPerSec")])
    served = export(STRIMZI, *expires, "Count", 2.0)
    assert served is not None and served.name == "kafka_server_sessionexpirelistener_zookeeperexpires_total"


def test_safe_name_collapses_runs_of_illegal_characters_and_underscores() -> None:
    assert (
        safe_name("kafka.server_broker-metadata-metrics_last-applied")
        == "kafka_server_broker_metadata_metrics_last_applied"
    )
    assert safe_name("a..__b") == "a_b"
    assert safe_name("1a") == "_1a"


@pytest.mark.parametrize("name", [name for name in PROFILES if name != "strimzi_reporter"])
def test_every_reading_survives_the_round_trip_through_its_served_series(name: str) -> None:
    """Each catalogue MBean attribute exported by the profile's rules and read back from the text is the
    reading it was (where the naming serves it at all). The reporter's naming, which is no jmx_exporter
    config, is read back from real pages (test_reporter_naming.py)."""
    naming = profile(name)
    assert isinstance(naming, Naming)
    queries = plan_queries()
    inversion = inversion_for(naming, queries)
    lines, expected = [], {}
    for number, query in enumerate(queries):
        domain, keys = parse_object_name(query.pattern)
        concrete = [
            (key, sorted(dict(query.only)[key])[0] if key in dict(query.only) else f"v{number}")
            if value == "*"
            else (key, value)
            for key, value in keys.items()
        ]
        for attribute in query.attributes:
            value: float | str = "leader" if (query.pattern, attribute) in STRING_ATTRIBUTES else float(number + 2)
            served = export(naming, domain, concrete, attribute, value)
            if served is None or (query.pattern, attribute) not in inversion.mapped():
                continue
            labels = ",".join(f'{label}="{text}"' for label, text in served.labels)
            lines.append(f"{served.name}{{{labels}}} {served.value}")
            expected[(query.pattern, tuple(concrete), attribute)] = value
    found = lookup(inversion)
    readings = readings_from_samples(samples(lines, found.wanted), found, queries)
    got = {(r.pattern, tuple(r.keys.items()), attribute): v for r in readings for attribute, v in r.values.items()}
    assert {k: v for k, v in got.items() if k in expected} == expected
    assert samples_from_readings(readings)  # and the catalogue maps them


def test_what_each_profile_serves_of_the_catalogue() -> None:
    """The evidence table's facts (docs/sources.md): the default naming serves every numeric attribute and no
    String; Strimzi's rules serve raft current-state but no RequestMetrics histogram."""
    queries = plan_queries()
    numeric = {
        (s.mbean, s.attribute) for s in CATALOG if s.type not in (SeriesType.STATE, SeriesType.INFO, SeriesType.SUMMARY)
    }
    default = inversion_for(DEFAULT, queries).mapped()
    assert not {pair for pair in numeric if not pair[0].startswith("ctlplane.")} - default
    assert ("kafka.server:type=raft-metrics", "current-state") not in default
    strimzi = inversion_for(STRIMZI, queries).mapped()
    assert ("kafka.server:type=raft-metrics", "current-state") in strimzi
    assert not any(pattern.startswith("kafka.network:type=RequestMetrics") for pattern, _ in strimzi)


def test_include_and_exclude_object_names_decide_what_is_served() -> None:
    naming = parse_naming({"excludeObjectNames": ["kafka.server:type=*"]})
    assert export(naming, "kafka.server", [("type", "raft-metrics")], "current-epoch", 1.0) is None
    assert export(naming, "kafka.server", [("type", "KafkaServer"), ("name", "BrokerState")], "Value", 3.0) is not None
    only = parse_naming({"includeObjectNames": ["kafka.controller:*"]})
    assert export(only, *ACTIVE, "Value", 1.0) is not None
    assert export(only, "kafka.server", [("type", "raft-metrics")], "current-epoch", 1.0) is None


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("rules: [{pattern: 'kafka(', name: x}]", "rules[0]: pattern 'kafka(' is not a regular expression"),
        ("rules: [{pattern: x, nmae: y}]", "rules[0]: unknown key 'nmae'"),
        ("lowercaseOutputNames: true", "unknown key 'lowercaseOutputNames'"),
        ("rules: [{pattern: x, labels: {a: b}}]", "rules[0]: labels need a name"),
        ("rules: x", "rules: a list of rules"),
        ("[", "not YAML"),
    ],
)
def test_a_config_ctlplane_cannot_use_is_one_line_naming_the_problem(text: str, says: str) -> None:
    with pytest.raises(NamingError) as error:
        load_config_text(text, "agent.yaml")
    assert says in str(error.value) and str(error.value).startswith("agent.yaml: ")
    assert "\n" not in str(error.value)


def test_the_text_parser_reads_wanted_lines_only_and_names_a_malformed_one() -> None:
    page = [
        "# HELP x y",
        'unwanted{a="b" 1',  # malformed, but not asked for
        'wanted{a="q\\"uote",b="x\\ny"} 2.5 1700000000000',
        "wanted NaN",
        "wanted +Inf",
    ]
    read = list(samples(page, Wanted({"wanted": None})))
    assert read[0].labels == {"a": 'q"uote', "b": "x\ny"} and read[0].value == 2.5
    assert str(read[1].value) == "nan" and read[2].value == float("inf")
    with pytest.raises(TextError, match="line 2: value 'twelve' is not a number"):
        list(samples(["# x", "wanted twelve"], Wanted({"wanted": None})))
    with pytest.raises(TextError, match="line 1: a label value without its closing quote"):
        list(samples(['wanted{a="b} 1'], Wanted({"wanted": None})))


def test_a_line_split_across_chunks_is_read_whole_and_unwanted_requests_are_never_parsed() -> None:
    """The page is read in chunks; a request metric of a request ctlplane does not read is skipped by its
    labels' text before any parsing, however malformed the rest of its line."""
    wanted = Wanted({"m": Needs(("request",), frozenset({("BrokerHeartbeat",)})), "n": None})
    page = b'n 1\nm{request="Fetch",x="unterminated} 2\nm{request="BrokerHeartbeat"} 3\nn{a="b"} 4\n'
    chunks = [page[i : i + 7] for i in range(0, len(page), 7)]
    read = [(s.name, s.labels, s.value) for s in page_samples(chunks, wanted)]
    assert read == [("n", {}, 1.0), ("m", {"request": "BrokerHeartbeat"}, 3.0), ("n", {"a": "b"}, 4.0)]
    with pytest.raises(TextError, match="line 3: value 'x' is not a number"):
        list(page_samples([b"n 1\n# c\nn x"], wanted))


def test_jmx_exporter_1_serves_names_without_the_reserved_suffixes() -> None:
    """Confluent's rule names the idle Meter's rate ..._total as a GAUGE: jmx_exporter 1.0.1 serves it without
    `_total` (seen on a real broker), a COUNTER with one `_total`."""
    idle = ("kafka.server", [("type", "KafkaRequestHandlerPool"), ("name", "RequestHandlerAvgIdlePercent")])
    served = export(profile("confluent"), *idle, "OneMinuteRate", 0.9)
    assert served is not None and served.name == "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent"
    info = parse_naming({"rules": [{"pattern": ".*", "name": "x_info_total", "type": "COUNTER"}]})
    counted = export(info, *ACTIVE, "Value", 1.0)
    assert counted is not None and counted.name == "x_total"


def test_two_samples_jmx_exporter_told_apart_by_their_object_name_map_to_their_own_attribute() -> None:
    """jmx_exporter 1.x gives colliding samples an `_objectname` label (the Meter's Count and its
    OneMinuteRate under Confluent's rules, seen on 4.3.1): each maps back to its own attribute only."""
    queries = plan_queries()
    found = lookup(inversion_for(profile("confluent"), queries))
    name = "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent"
    bean = "kafka.server<type=KafkaRequestHandlerPool, name=RequestHandlerAvgIdlePercent><>"
    page = [f'{name}{{_objectname="{bean}OneMinuteRate"}} 0.75', f'{name}{{_objectname="{bean}Count"}} 3.0E9']
    readings = readings_from_samples(samples(page, found.wanted), found, queries)
    served = {s.series: s.value for s in samples_from_readings(readings)}
    assert served == {"kafka_request_handler_idle_ratio": 0.75}


@pytest.mark.parametrize(
    ("domain", "keys", "attribute", "served"),
    [
        # names from Aiven's published list (aiven/devportal kafka-metrics-prometheus.rst)
        ("kafka.controller", [("type", "KafkaController"), ("name", "ActiveControllerCount")], "Value",
         "kafka_controller_KafkaController_ActiveControllerCount_Value"),
        ("kafka.server", [("type", "KafkaServer"), ("name", "BrokerState")], "Value",
         "kafka_server_KafkaServer_BrokerState_Value"),
        ("kafka.network", [("type", "RequestChannel"), ("name", "RequestQueueSize")], "Value",
         "kafka_network_RequestChannel_RequestQueueSize_Value"),
        ("kafka.server", [("type", "KafkaRequestHandlerPool"), ("name", "RequestHandlerAvgIdlePercent")],
         "OneMinuteRate", "kafka_server_KafkaRequestHandlerPool_RequestHandlerAvgIdlePercent_OneMinuteRate"),
        ("kafka.controller", [("type", "ControllerStats"), ("name", "LeaderElectionRateAndTimeMs")],
         "99thPercentile", "kafka_controller_ControllerStats_LeaderElectionRateAndTimeMs_99thPercentile"),
        ("kafka.server", [("type", "group-coordinator-metrics")], "offset-commit-count",
         "kafka_server_group_coordinator_metrics_offset_commit_count"),
    ],
)  # fmt: skip
def test_the_aiven_naming_serves_the_names_aiven_publishes(
    domain: str, keys: list[tuple[str, str]], attribute: str, served: str
) -> None:
    naming = profile("aiven")
    assert isinstance(naming, Naming)
    exported = export(naming, domain, keys, attribute, 1.0)
    assert exported is not None and exported.name == served
