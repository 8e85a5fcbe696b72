"""jmx_exporter's naming, forward and back.

Forward: what series prometheus/jmx_exporter makes of one MBean attribute under a config (its `rules`,
`lowercaseOutputName`, `lowercaseOutputLabelNames`, `includeObjectNames`/`excludeObjectNames`). Checked
against the real javaagent 1.0.1 serving real Kafka MBeans (tests/integration/test_endpoint_source.py); the
semantics, as JmxCollector implements them:
- an attribute is matched as the text `domain<key1=value1, key2=value2><>attribute: value`, the keys in the
  ObjectName's own order, against each rule's `pattern` anywhere in it (`^.*(?:pattern).*$`); the first rule
  that matches decides, and with rules configured an attribute no rule matches is not served;
- no rules at all is one rule with no name: the default naming `domain_<first key's value>_attribute`, the
  other keys as labels (`kafka.controller:type=KafkaController,name=ActiveControllerCount` Value ->
  `kafka_controller_KafkaController_Value{name="ActiveControllerCount"}`);
- names and label names keep `[a-zA-Z0-9:_]`, every other run of characters (and of `_`) becomes one `_`;
- a String attribute is served only by a rule that sets `value:` (Strimzi's raft `current-state` rule): the
  default naming drops it (ZooKeeper mode's SessionState, raft current-state, app-info Version);
- jmx_exporter 1.x serves every name without the Prometheus client 1.x's reserved suffixes (`_total`,
  `_created`, `_bucket`, `_info`), a COUNTER's with `_total` added back; two samples that would share a name
  and labels both get an `_objectname` label, the attribute's match text, which tells them apart.

Back: for every MBean attribute the catalogue reads, the config is run on a probe (the attribute with the
MBean's wildcard key values and string value replaced by markers), and where the markers land says how a
served sample maps back to the MBean reading: which labels carry which keys, which fixed labels select it,
which label carries a string value, and the value's factor. An attribute whose series cannot be mapped back
(dropped, or a key folded into the name) is absent, as an MBean the node does not register.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ctlplane.exporter.model import MBeanQuery
from ctlplane.exporter.readings import parse_object_name


class NamingError(ValueError):
    """A jmx_exporter config ctlplane cannot use (one line: what and where)."""


@dataclass(frozen=True)
class Rule:
    pattern: re.Pattern[str]
    name: str | None  # None: the default naming for what the pattern matches
    value: str | None
    value_factor: float
    labels: tuple[tuple[str, str], ...]
    counter: bool
    snake_case: bool


@dataclass(frozen=True)
class ObjectNamePattern:
    """A JMX ObjectName pattern as includeObjectNames takes it: `*`/`?` in the domain and in key values; a
    trailing `*` in the key list lets other keys be present (ObjectName.apply)."""

    domain: re.Pattern[str]
    keys: tuple[tuple[str, re.Pattern[str]], ...]
    open_keys: bool
    text: str  # as the config wrote it

    def matches(self, domain: str, keys: Mapping[str, str]) -> bool:
        if not self.domain.fullmatch(domain):
            return False
        if not self.open_keys and len(keys) != len(self.keys):
            return False
        return all(key in keys and value.fullmatch(keys[key]) for key, value in self.keys)


@dataclass(frozen=True)
class Naming:
    """One jmx_exporter config, as far as it decides names."""

    rules: tuple[Rule, ...]
    lowercase_names: bool = False
    lowercase_label_names: bool = False
    include: tuple[ObjectNamePattern, ...] = ()
    exclude: tuple[ObjectNamePattern, ...] = ()
    # served beside the rules by jmx_exporter's agent (profiles.AGENT_ALIASES); not by an agent of another make
    agent_series: bool = True


@dataclass(frozen=True)
class Exported:
    name: str
    labels: tuple[tuple[str, str], ...]
    value: float


_SAFE = re.compile(r"[^a-zA-Z0-9:_]")
_UNDERSCORES = re.compile(r"__+")
_GROUP = re.compile(r"\$(\d+)")
# Keys of a jmx_exporter config that do not change names: accepted and ignored
_NAMELESS_KEYS = frozenset(
    {
        "startDelaySeconds",
        "hostPort",
        "jmxUrl",
        "username",
        "password",
        "ssl",
        "httpServer",
        "help",
        "cache",
        "cacheRules",
        "autoExcludeObjectNameAttributes",
        "excludeJvmMetrics",
        "metricCustomizers",
    }
)
_RULE_KEYS = frozenset(
    {"pattern", "name", "value", "valueFactor", "labels", "help", "type", "attrNameSnakeCase", "cache"}
)


# Suffixes the Prometheus Java client 1.x reserves (PrometheusNaming): jmx_exporter 1.x serves a name without
# them, a COUNTER's with `_total` added back (seen on 1.0.1: a GAUGE rule named ..._total is served without it)
_RESERVED_SUFFIXES = ("_total", "_created", "_bucket", "_info")


def unreserved(name: str) -> str:
    """`name` without the suffixes the Prometheus Java client 1.x reserves (PrometheusNaming.prometheusName)."""
    while name.endswith(_RESERVED_SUFFIXES) and name not in _RESERVED_SUFFIXES:
        name = next(name.removesuffix(s) for s in _RESERVED_SUFFIXES if name.endswith(s))
    return name


def safe_name(name: str) -> str:
    """jmx_exporter's safeName: illegal characters and runs of `_` become one `_`; no leading digit."""
    safe = _UNDERSCORES.sub("_", _SAFE.sub("_", name))
    return "_" + safe if safe[:1].isdigit() else safe


def _snake_case(attribute: str) -> str:
    out: list[str] = []
    for i, char in enumerate(attribute):
        if char.isupper() and i > 0 and (attribute[i - 1].islower() or attribute[i - 1].isdigit()):
            out.append("_")
        out.append(char.lower())
    return "".join(out)


def _java_template(template: str) -> str:
    """A Java replacement (`$1`) as Python's Match.expand takes it (`\\g<1>`); a literal backslash kept."""
    return _GROUP.sub(r"\\g<\1>", template.replace("\\", "\\\\"))


def _object_name_pattern(text: str) -> ObjectNamePattern:
    def glob(value: str) -> re.Pattern[str]:
        return re.compile("".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in value))

    domain, _, props = text.partition(":")
    keys: list[tuple[str, re.Pattern[str]]] = []
    open_keys = False
    for prop in props.split(","):
        if prop.strip() == "*":
            open_keys = True
            continue
        key, sep, value = prop.partition("=")
        if not sep:
            raise NamingError(f"object name pattern {text!r}: {prop!r} is not key=value")
        keys.append((key, glob(value)))
    return ObjectNamePattern(glob(domain), tuple(keys), open_keys, text)


def _rule(index: int, raw: Any) -> Rule:
    where = f"rules[{index}]"
    if not isinstance(raw, dict):
        raise NamingError(f"{where}: a rule is a mapping with a pattern")
    unknown = sorted(set(raw) - _RULE_KEYS)
    if unknown:
        raise NamingError(
            f"{where}: unknown key {unknown[0]!r} (jmx_exporter rules take {', '.join(sorted(_RULE_KEYS))})"
        )
    try:
        pattern = re.compile(f"^.*(?:{raw.get('pattern', '.*')}).*$", re.DOTALL)
    except re.error as exc:
        raise NamingError(f"{where}: pattern {raw.get('pattern')!r} is not a regular expression: {exc}") from exc
    labels = raw.get("labels") or {}
    if not isinstance(labels, dict):
        raise NamingError(f"{where}: labels is a mapping of label name to value")
    if labels and raw.get("name") is None:
        raise NamingError(f"{where}: labels need a name (jmx_exporter refuses them on the default naming)")
    kind = str(raw.get("type", "UNTYPED")).upper()
    if kind not in {"UNTYPED", "UNKNOWN", "GAUGE", "COUNTER"}:
        raise NamingError(f"{where}: type {kind} (UNTYPED, GAUGE or COUNTER)")
    try:
        factor = float(raw.get("valueFactor", 1.0))
    except (TypeError, ValueError) as exc:
        raise NamingError(f"{where}: valueFactor {raw.get('valueFactor')!r} is not a number") from exc
    return Rule(
        pattern=pattern,
        name=None if raw.get("name") is None else str(raw["name"]),
        value=None if raw.get("value") is None else str(raw["value"]),
        value_factor=factor,
        labels=tuple((str(k), str(v)) for k, v in labels.items()),
        counter=kind == "COUNTER",
        snake_case=bool(raw.get("attrNameSnakeCase", False)),
    )


def parse_naming(config: Any) -> Naming:
    """A jmx_exporter config (its parsed YAML) as a Naming; NamingError names the first problem."""
    if config is None:
        config = {}
    if not isinstance(config, dict):
        raise NamingError("a jmx_exporter config is a mapping (rules:, lowercaseOutputName:, ...)")
    known = _NAMELESS_KEYS | {
        "rules",
        "lowercaseOutputName",
        "lowercaseOutputLabelNames",
        "includeObjectNames",
        "whitelistObjectNames",
        "excludeObjectNames",
        "blacklistObjectNames",
    }
    unknown = sorted(set(config) - known)
    if unknown:
        raise NamingError(f"unknown key {unknown[0]!r} in the jmx_exporter config")
    raw_rules = config.get("rules") or []
    if not isinstance(raw_rules, list):
        raise NamingError("rules: a list of rules")
    rules = tuple(_rule(i, raw) for i, raw in enumerate(raw_rules))

    def patterns(*keys: str) -> tuple[ObjectNamePattern, ...]:
        texts = [text for key in keys for text in (config.get(key) or [])]
        return tuple(_object_name_pattern(str(text)) for text in texts)

    return Naming(
        # no rules is jmx_exporter's one default rule: everything, default naming
        rules=rules or (Rule(re.compile(r"^.*$", re.DOTALL), None, None, 1.0, (), False, False),),
        lowercase_names=bool(config.get("lowercaseOutputName", False)),
        lowercase_label_names=bool(config.get("lowercaseOutputLabelNames", False)),
        include=patterns("includeObjectNames", "whitelistObjectNames"),
        exclude=patterns("excludeObjectNames", "blacklistObjectNames"),
    )


def _value_text(value: float | str) -> str:
    if isinstance(value, str):
        return value
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def export(
    naming: Naming, domain: str, keys: Sequence[tuple[str, str]], attribute: str, value: float | str
) -> Exported | None:
    """The sample jmx_exporter serves for one MBean attribute, or None if it serves none."""
    key_map = dict(keys)
    if naming.include and not any(p.matches(domain, key_map) for p in naming.include):
        return None
    if any(p.matches(domain, key_map) for p in naming.exclude):
        return None
    bean = f"{domain}<{', '.join(f'{k}={v}' for k, v in keys)}><>"
    for rule in naming.rules:
        text = f"{bean}{_snake_case(attribute) if rule.snake_case else attribute}: {_value_text(value)}"
        match = rule.pattern.fullmatch(text)
        if match is None:
            continue
        if rule.name is None:
            return _default_export(naming, domain, keys, attribute, value, rule.value_factor)
        name = safe_name(match.expand(_java_template(rule.name)))
        if not name:
            return None
        if naming.lowercase_names:
            name = name.lower()
        name = unreserved(name)
        if rule.counter:
            name += "_total"
        if rule.value is not None:
            try:
                number = float(match.expand(_java_template(rule.value)))
            except ValueError:
                return None
        elif isinstance(value, str):
            return None  # a String attribute without `value:` (jmx_exporter: "Ignoring unsupported bean")
        else:
            number = float(value)
        labels = []
        for label_template, value_template in rule.labels:
            label = safe_name(match.expand(_java_template(label_template)))
            labels.append(
                (label.lower() if naming.lowercase_label_names else label, match.expand(_java_template(value_template)))
            )
        return Exported(name, tuple(sorted(labels)), number * rule.value_factor)
    return None


def _default_export(
    naming: Naming, domain: str, keys: Sequence[tuple[str, str]], attribute: str, value: float | str, factor: float
) -> Exported | None:
    if isinstance(value, str):
        return None
    first = keys[0][1] if keys else None
    name = safe_name("_".join(part for part in (domain, first, attribute) if part is not None))
    if naming.lowercase_names:
        name = name.lower()
    name = unreserved(name)
    labels = []
    for key, key_value in keys[1:]:
        label = safe_name(key)
        labels.append((label.lower() if naming.lowercase_label_names else label, key_value))
    return Exported(name, tuple(sorted(labels)), float(value) * factor)


# --------------------------------------------------------------------------- back: samples -> readings


@dataclass(frozen=True)
class Inverse:
    """How one served sample maps back to one MBean attribute."""

    pattern: str  # the MBeanQuery.pattern
    domain: str
    attribute: str
    fixed_keys: tuple[tuple[str, str], ...]  # the MBean's keys known without the sample (in ObjectName order)
    key_labels: tuple[tuple[str, str], ...]  # (label, key): labels that carry a wildcard key's value
    required: tuple[tuple[str, str], ...]  # (label, value) the sample must have
    value_label: str | None  # the label carrying a String attribute's value (the sample's value is 1)
    factor: float  # served value = attribute value * factor
    # A String attribute the naming does not serve, read as this text from a sample of a numeric attribute of
    # the same MBean (carriers in invert): the MBean's keys without its value
    text: str | None = None
    # The sample is the attribute's sum, read as sum / Count (a summary's `_sum`: Yammer's Mean is that ratio)
    per_count: bool = False


KEY_MARK = "ctlplanekey{}"
_VALUE_MARK = "ctlplanevalue"
_PROBES = (7.0, 11.0)  # two values: a rule that sets a constant `value:` is not a reading of the attribute


def probe_keys(pattern: str, only: Mapping[str, frozenset[str]]) -> Iterable[tuple[str, list[tuple[str, str]]]]:
    """(domain, keys) of each probe of an MBean pattern: wildcard values as markers, or, for keys the
    query restricts (`only`), each allowed value in turn."""
    domain, keys = parse_object_name(pattern)
    choices: list[list[tuple[str, str]]] = [[]]
    for i, (key, value) in enumerate(keys.items()):
        if value != "*":
            values = [value]
        elif key in only:
            values = sorted(only[key])
        else:
            values = [KEY_MARK.format(i)]
        choices = [[*chosen, (key, v)] for chosen in choices for v in values]
    for chosen in choices:
        yield domain, chosen


def _inverse(
    naming: Naming, pattern: str, domain: str, keys: list[tuple[str, str]], attribute: str, string: bool
) -> tuple[str, Inverse] | None:
    markers = {value: key for key, value in keys if value.startswith("ctlplanekey")}
    fixed = tuple((key, value) for key, value in keys if value not in markers)
    if string:
        served = export(naming, domain, keys, attribute, _VALUE_MARK)
        if served is None:
            return None
        others = [served]
    else:
        first, second = (export(naming, domain, keys, attribute, probe) for probe in _PROBES)
        if first is None or second is None or (first.name, first.labels) != (second.name, second.labels):
            return None
        if not math.isclose(first.value * _PROBES[1], second.value * _PROBES[0]) or first.value == 0:
            return None  # the served value is not the attribute's (a constant `value:`)
        served, others = first, [first]
    if any(mark in served.name.lower() for mark in [*markers, _VALUE_MARK]):
        return None  # a key's value folded into the name: not a series of fixed name
    key_labels, required = [], []
    value_label = None
    for label, label_value in served.labels:
        if label_value in markers:
            key_labels.append((label, markers[label_value]))
        elif string and label_value == _VALUE_MARK:
            value_label = label
        elif "ctlplane" in label_value:
            return None  # a marker inside a longer value: cannot be split back
        else:
            required.append((label, label_value))
    if string and value_label is None:
        return None  # a String attribute served as a number cannot be read back
    if len(key_labels) != len(markers):
        return None  # a wildcard key the sample does not carry
    factor = 1.0 if string else others[0].value / _PROBES[0]
    return served.name, Inverse(
        pattern, domain, attribute, fixed, tuple(key_labels), tuple(required), value_label, factor
    )


@dataclass(frozen=True)
class Inversion:
    """Served sample name -> the MBean attributes it may be (told apart by their required labels)."""

    by_name: Mapping[str, tuple[Inverse, ...]]

    def mapped(self) -> frozenset[tuple[str, str]]:
        """(pattern, attribute) pairs some served sample maps back to."""
        return frozenset((inv.pattern, inv.attribute) for inverses in self.by_name.values() for inv in inverses)


def invert(
    naming: Naming,
    queries: Sequence[MBeanQuery],
    string_attributes: frozenset[tuple[str, str]],
    aliases: Sequence[tuple[str, Inverse]] = (),
    carriers: Mapping[tuple[str, str], str] | None = None,
) -> Inversion:
    """The map back for every attribute the queries read. `aliases` (sample name, Inverse) are other series
    the endpoint serves for an attribute (the agent's own JVM series). `carriers` ((pattern, String
    attribute) -> a numeric attribute of the same MBean): where the naming drops the String, the numeric
    attribute's sample still says the MBean's keys (app-info's id, the node id), the String read as ""."""
    by_name: dict[str, list[Inverse]] = {}
    for query in queries:
        only = dict(query.only)
        for domain, keys in probe_keys(query.pattern, only):
            for attribute in query.attributes:
                found = _inverse(
                    naming, query.pattern, domain, keys, attribute, (query.pattern, attribute) in string_attributes
                )
                if found is not None:
                    by_name.setdefault(found[0], []).append(found[1])
    mapped = {(inv.pattern, inv.attribute) for inverses in by_name.values() for inv in inverses}
    wanted = {query.pattern for query in queries}
    for name, alias in aliases:
        if alias.pattern in wanted:
            by_name.setdefault(name, []).append(alias)
    for query in queries:
        for (pattern, attribute), numeric in (carriers or {}).items():
            if pattern != query.pattern or attribute not in query.attributes or (pattern, attribute) in mapped:
                continue
            for domain, keys in probe_keys(pattern, dict(query.only)):
                found = _inverse(naming, pattern, domain, keys, numeric, False)
                if found is not None:
                    carrier = dataclasses.replace(found[1], attribute=attribute, text="")
                    by_name.setdefault(found[0], []).append(carrier)
    return Inversion({name: tuple(inverses) for name, inverses in by_name.items()})
