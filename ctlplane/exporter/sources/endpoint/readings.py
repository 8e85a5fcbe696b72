"""Served samples back to MBean readings: pure, through an Inversion (naming.py)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from ctlplane.exporter.model import MBeanQuery, RawReading
from ctlplane.exporter.sources.base import ReadError
from ctlplane.exporter.sources.endpoint.naming import Inverse, Inversion
from ctlplane.exporter.sources.endpoint.text import Needs, TextSample, Wanted

OBJECT_NAME = "_objectname"
# jmx_exporter's own gauge, on every page its javaagent or standalone server serves. The standalone server
# (jmx_prometheus_httpserver: its WebServer registers the JMX collector and build info only) reads the node over
# remote JMX and still answers 200, with none of the node's MBeans, when the node does not answer; and the
# gauge it serves beside them is its previous scrape's (1.0.1: 0 on the page of the first failed scrape, 1
# on the next; 1 still on the first page that has the MBeans again). So the page's own content decides.
SCRAPE_ERROR = "jmx_scrape_error"
_ABSENT = "\x00absent"  # a label the sample lacks: no text-format value is this
_SUM = "\x00sum:"  # a summary's sum, kept until its Count is read
# (required label names, their values -> the inverses that need exactly those)
_Group = tuple[tuple[str, ...], Mapping[tuple[str, ...], tuple[Inverse, ...]]]


@dataclass(frozen=True)
class Lookup:
    """An Inversion made quick to apply: the lines worth parsing, and each name's inverses by the values of
    the labels they require (a sample finds its inverse in one dictionary look-up per group, not by trying
    every RequestMetrics inverse in turn)."""

    wanted: Wanted
    groups: Mapping[str, tuple[_Group, ...]]


def _plain(value: str) -> bool:
    return not any(c in value for c in '"\\\n')  # written as is in the text format: findable by substring


def lookup(inversion: Inversion) -> Lookup:
    names: dict[str, Needs | None] = {}
    groups: dict[str, tuple[_Group, ...]] = {}
    for name, inverses in inversion.by_name.items():
        by_keys: dict[tuple[str, ...], dict[tuple[str, ...], list[Inverse]]] = {}
        for inv in inverses:
            keys = tuple(label for label, _ in inv.required)
            values = tuple(value for _, value in inv.required)
            by_keys.setdefault(keys, {}).setdefault(values, []).append(inv)
        groups[name] = tuple(
            (keys, {values: tuple(found) for values, found in table.items()}) for keys, table in by_keys.items()
        )
        # one set of required labels, every value plain text: the line's own text says whether it is wanted
        (keys, table), *others = by_keys.items()
        plain = all(_plain(value) for values in table for value in values)
        names[name] = Needs(keys, frozenset(table)) if keys and not others and plain else None
    names[SCRAPE_ERROR] = None
    return Lookup(Wanted(names), groups)


def node_readings(
    samples: Iterable[TextSample], found: Lookup, queries: Sequence[MBeanQuery], url: str
) -> list[RawReading]:
    """readings_from_samples, but a ReadError for a page of jmx_exporter's (it serves SCRAPE_ERROR) that holds
    none of the node's MBeans: the exporter could not read the node, however it answered."""
    served: list[float] = []

    def kafkas(page: Iterable[TextSample]) -> Iterator[TextSample]:
        for sample in page:
            if sample.name == SCRAPE_ERROR:
                served.append(sample.value)
            else:
                yield sample

    readings = readings_from_samples(kafkas(samples), found, queries)
    if not readings and served:
        raise ReadError(f"{url}: the exporter served none of the node's MBeans ({SCRAPE_ERROR} {served[-1]:g})")
    return readings


def readings_from_samples(
    samples: Iterable[TextSample], found: Lookup, queries: Sequence[MBeanQuery]
) -> list[RawReading]:
    """One RawReading per MBean, its attributes gathered from the samples that map back to it; a sample
    that maps to nothing the queries accept is left out."""
    accepts = {query.pattern: query for query in queries}
    gathered: dict[tuple[str, tuple[tuple[str, str], ...]], dict[str, float | str]] = {}
    domains: dict[str, str] = {}
    for sample in samples:
        labels = sample.labels
        for keys, table in found.groups.get(sample.name, ()):
            for inverse in table.get(tuple(labels.get(key, _ABSENT) for key in keys), ()):
                if any(label not in labels for label, _ in inverse.key_labels):
                    continue
                # jmx_exporter 1.x names two colliding samples by their match text (`...><>OneMinuteRate`)
                if OBJECT_NAME in labels and not labels[OBJECT_NAME].endswith(f"><>{inverse.attribute}"):
                    continue
                query = accepts.get(inverse.pattern)
                if query is None:
                    continue
                recovered = dict(inverse.fixed_keys)
                recovered.update((key, labels[label]) for label, key in inverse.key_labels)
                if not query.accepts(recovered):
                    continue
                value: float | str
                attribute = inverse.attribute
                if inverse.per_count:
                    attribute, value = _SUM + attribute, sample.value
                elif inverse.text is not None:
                    value = inverse.text
                elif inverse.value_label is not None:
                    value = labels.get(inverse.value_label, "")
                else:
                    value = sample.value / inverse.factor
                gathered.setdefault((inverse.pattern, tuple(recovered.items())), {})[attribute] = value
                domains[inverse.pattern] = inverse.domain
    return [
        RawReading(pattern, f"{domains[pattern]}:{','.join(f'{k}={v}' for k, v in keys)}", dict(keys), _means(values))
        for (pattern, keys), values in gathered.items()
    ]


def _means(values: dict[str, float | str]) -> dict[str, float | str]:
    """A served sum as the attribute it stands for: sum / Count, 0 before the first event (Yammer's Mean); no
    Count, no Mean."""
    sums = [key for key in values if key.startswith(_SUM)]
    for key in sums:
        total, count = values.pop(key), values.get("Count")
        if isinstance(total, float) and isinstance(count, float):
            values[key.removeprefix(_SUM)] = total / count if count > 0 else 0.0
    return values
