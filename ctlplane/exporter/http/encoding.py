"""The exposition formats (Prometheus text 0.0.4 and OpenMetrics) written directly from Families, with
prometheus_client's own encoder for what the direct writer does not reproduce."""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial

from prometheus_client import exposition
from prometheus_client.core import (
    Metric,
)
from prometheus_client.openmetrics import exposition as om_exposition
from prometheus_client.utils import floatToGoString
from prometheus_client.validation import _is_valid_legacy_labelname, _is_valid_legacy_metric_name

from ctlplane.exporter.families import Family, RenderMemo, Row, TextFormatting
from ctlplane.exporter.model import Sample


class _NeedsEncoder(Exception):
    """Something the direct renderer does not reproduce (UTF-8 names): prometheus_client's encoder renders it."""


def _direct_format(encoder: Callable[..., bytes]) -> tuple[str, str] | None:
    """("text" | "openmetrics", escaping) for the encoders choose_encoder returns; None for anything else."""
    func, args, keywords = encoder, (), {}
    if isinstance(encoder, partial):
        func, args, keywords = encoder.func, encoder.args, dict(encoder.keywords)
    keywords.pop("version", None)  # OpenMetrics 2.0 differs from 1.0 only by native histograms, which we lack
    escaping = keywords.pop("escaping", om_exposition.UNDERSCORES)
    if args or keywords:
        return None
    if func is exposition.generate_latest:
        return "text", escaping
    if func is om_exposition.generate_latest:
        return "openmetrics", escaping
    return None


def encode(families: Sequence[Family], encoder: Callable[..., bytes], memo: RenderMemo | None = None) -> bytes:
    """The bytes `encoder` (from choose_encoder) makes of these families, without its per-sample cost.

    The same rules as prometheus_client's text 0.0.4/1.0.0 and OpenMetrics 1.0 encoders, applied with
    their own helpers (name escaping, floatToGoString, label-value escaping) once per distinct name,
    label set and value rather than once per sample; tests compare the bytes with theirs. `memo`: the
    lines of slow-tier blocks the last page made (RenderMemo).
    """
    direct = _direct_format(encoder)
    if direct is not None:
        try:
            return _encode(families, direct[0] == "openmetrics", direct[1], memo)
        except _NeedsEncoder:
            pass
    return encoder(_Families([family.to_metric() for family in families]))


def _escape_value(value: str) -> str:
    # what both encoders do to label values (openmetrics._escape with ALLOWUTF8)
    return om_exposition._escape(value, om_exposition.ALLOWUTF8, om_exposition._is_legacy_labelname_rune)


# prometheus_client's Go-style float formatting (untyped there)
_go_float: Callable[[float], str] = floatToGoString
_ZERO, _NEGATIVE_ZERO = _go_float(0.0), _go_float(-0.0)


class _LineWriter:
    """One page's sample lines, each distinct name, label set and value formatted once (TextFormatting keeps
    names and label sets from page to page; values change from round to round, so they are kept per page)."""

    def __init__(self, formatting: TextFormatting, openmetrics_format: bool, escaping: str) -> None:
        self.formatting = formatting
        self.openmetrics_format = openmetrics_format
        self.escaping = escaping
        self.utf8 = escaping == om_exposition.ALLOWUTF8
        self.numbers: dict[float, str] = {}

    def sample_name(self, name: str) -> str:
        text = self.formatting.names.get(name)
        if text is None:
            if self.utf8 and not _is_valid_legacy_metric_name(name):
                raise _NeedsEncoder(name)  # the encoders quote such names inside the braces
            if self.openmetrics_format:
                text = om_exposition._escape(name, self.escaping, om_exposition._is_legacy_labelname_rune)
            else:
                text = om_exposition.escape_metric_name(name, self.escaping)
            self.formatting.names[name] = text
        return text

    def label_set(self, labelnames: tuple[str, ...], values: tuple[str, ...]) -> str:
        formatting = self.formatting
        order = formatting.orders.get(labelnames)
        if order is None:
            for name in labelnames:
                if name not in formatting.label_names:
                    if self.utf8 and not _is_valid_legacy_labelname(name):
                        raise _NeedsEncoder(name)
                    formatting.label_names[name] = om_exposition.escape_label_name(name, self.escaping)
            # the encoders sort a sample's labels by name
            order = [(labelnames.index(n), formatting.label_names[n]) for n in sorted(labelnames)]
            formatting.orders[labelnames] = order
        escaped = formatting.escaped
        parts = []
        for i, name in order:
            value = values[i]
            text = escaped.get(value)
            if text is None:
                text = escaped[value] = _escape_value(value)
            parts.append(f'{name}="{text}"')
        return "{" + ",".join(parts) + "}"

    def number(self, value: float) -> str:
        if not value:  # 0.0 == -0.0 would share a cache entry; NaN is truthy
            return _NEGATIVE_ZERO if math.copysign(1.0, value) < 0 else _ZERO
        text = _go_float(value)
        if value == value:  # every NaN would be a new key
            self.numbers[value] = text
        return text

    def lines(self, family: Family, start: int, end: int, append: Callable[[str], None]) -> None:
        # the per-sample loop: everything it calls bound to a local once
        names, numbers, label_sets = self.formatting.names, self.numbers, self.formatting.label_sets
        sample_name, number, label_set = self.sample_name, self.number, self.label_set
        openmetrics_format = self.openmetrics_format
        current_names: tuple[str, ...] | None = None
        sets: dict[tuple[str, ...], str] = {}
        stamps = family.timestamps
        rows = family.rows
        for index in range(start, end):
            name, labelnames, values, value = rows[index]
            if labelnames is not current_names:  # one or two label-name tuples per family (see Row)
                current_names = labelnames
                sets = label_sets.setdefault(labelnames, {})
            labels = sets.get(values)
            if labels is None:
                labels = sets[values] = label_set(labelnames, values) if labelnames else ""
            line = f"{names.get(name) or sample_name(name)}{labels} {numbers.get(value) or number(value)}"
            if stamps and index in stamps:
                # as prometheus_client's encoders write a sample's timestamp: text in whole milliseconds,
                # OpenMetrics in seconds
                stamp = stamps[index]
                line += f" {stamp}" if openmetrics_format else f" {int(stamp * 1000):d}"
            append(line + "\n")

    def blocks(
        self,
        family: Family,
        remembered: Mapping[int, tuple[Sample, Row, str]],
        kept: dict[int, tuple[Sample, Row, str]],
        append: Callable[[str], None],
    ) -> None:
        """A family with slow-tier blocks: a block's lines as one string, kept for the next page (RenderMemo)
        and taken from the last page's where its sample is the same; rows between blocks as usual."""
        index, end, blocks = 0, len(family.rows), family.blocks
        starts = list(blocks)  # ascending: rows are only appended
        while index < end:
            block = blocks.get(index)
            if block is None:
                after = bisect.bisect_right(starts, index)
                following = starts[after] if after < len(starts) else end
                self.lines(family, index, following, append)
                index = following
                continue
            block_end, source = block
            entry = remembered.get(id(source))
            if entry is None or entry[0] is not source or entry[1] is not family.rows[index]:
                block_lines: list[str] = []
                self.lines(family, index, block_end, block_lines.append)
                entry = (source, family.rows[index], "".join(block_lines))
            kept[id(source)] = entry
            append(entry[2])
            index = block_end


def _encode(
    families: Sequence[Family], openmetrics_format: bool, escaping: str, memo: RenderMemo | None = None
) -> bytes:
    # Not reproduced because a Family cannot hold them: exemplars, units, native histograms, and
    # the text encoder's separate blocks for `_created`/`_gsum`/`_gcount` samples (a Family's sample names
    # are its name, `_total`, `_count` and `_sum` only).
    key = (openmetrics_format, escaping)
    formatting = memo.formatting.get(key) if memo is not None else None
    writer = _LineWriter(formatting or TextFormatting(), openmetrics_format, escaping)
    remembered = memo.text.get(key, {}) if memo is not None else {}
    kept: dict[int, tuple[Sample, Row, str]] = {}
    out: list[str] = []
    for family in families:
        out.extend(_header(family, openmetrics_format, escaping))
        if memo is None or not family.blocks:
            writer.lines(family, 0, len(family.rows), out.append)
        else:
            writer.blocks(family, remembered, kept, out.append)
    if memo is not None:
        memo.text[key] = kept
        # kept while it holds about one page's labels; nodes and label values that went away are dropped
        # by starting afresh once it holds twice as many as this page's lines
        rows = sum(len(family.rows) for family in families)
        formatting = writer.formatting
        memo.formatting[key] = formatting if formatting.size() <= 2 * rows + 1000 else TextFormatting()
    if openmetrics_format:
        out.append("# EOF\n")
    return "".join(out).encode("utf-8")


def _header(family: Family, openmetrics_format: bool, escaping: str) -> list[str]:
    if openmetrics_format:
        name = om_exposition.escape_metric_name(family.name, escaping)
        documentation = om_exposition._escape(
            family.documentation, om_exposition.ALLOWUTF8, om_exposition._is_legacy_labelname_rune
        )
        return [f"# HELP {name} {documentation}\n", f"# TYPE {name} {family.type}\n"]
    name = om_exposition.escape_metric_name(
        family.name + "_total" if family.type == "counter" else family.name, escaping
    )
    documentation = family.documentation.replace("\\", r"\\").replace("\n", r"\n")
    return [f"# HELP {name} {documentation}\n", f"# TYPE {name} {family.type}\n"]


class _Families:
    """The minimal registry the prometheus_client encoders accept."""

    def __init__(self, families: Iterable[Metric]) -> None:
        self._families = list(families)

    def collect(self) -> Iterable[Metric]:
        return self._families
