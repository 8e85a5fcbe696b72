"""Generated text inside a hand-written page: what stands between a begin and an end marker is replaced,
the rest of the page is left as the person wrote it."""

from __future__ import annotations


class MissingMarkers(ValueError):
    pass


def between(text: str, begin: str, end: str, body: str, page: str) -> str:
    """`text` with what stands between the line `begin` and `end` replaced by `body` (which ends in a newline).
    Markers missing or out of order are one error that names the page and the markers."""
    head, found, rest = text.partition(begin + "\n")
    _, closed, tail = rest.partition(end)
    if not found or not closed:
        raise MissingMarkers(f"{page}: the markers {begin!r} and {end!r} are missing")
    return head + begin + "\n" + body + end + tail
