"""The /metrics page: made once per round for each format a scraper asked for lately, its gzip made
beside it, and served in slices."""

from __future__ import annotations

import struct
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from prometheus_client.exposition import choose_encoder

from ctlplane.exporter.families import Family, RenderMemo, collect_families, snapshot_age_family
from ctlplane.exporter.health import FleetHealth
from ctlplane.exporter.http.encoding import encode
from ctlplane.exporter.model import FleetSnapshot


def accepts_gzip(accept_encoding: str | None) -> bool:
    """Whether an Accept-Encoding header takes gzip (RFC 9110 12.5.3: a coding with q=0 is refused).
    Prometheus asks for gzip on every scrape unless its scrape config turns compression off."""
    for item in (accept_encoding or "").split(","):
        coding, *params = (part.strip().lower() for part in item.split(";"))
        if coding not in ("gzip", "x-gzip"):
            continue
        q = next((param[2:] for param in params if param.startswith("q=")), "1")
        try:
            return float(q) > 0
        except ValueError:
            return False
    return False


# Fast compression: the page is label-heavy text that level 1 already shrinks many times over (22x, 1.66 MB
# to 73 KB in 4 ms, for the health series of 1,000 synthetic nodes), and it is compressed once per round.
GZIP_LEVEL = 1
# RFC 1952 2.3: magic, CM=8 (deflate), no flags, MTIME 0 (none), XFL 0, OS 255 (unknown)
GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"


@dataclass(frozen=True)
class Deflated:
    """Raw deflate of a page, ended by a sync flush (byte-aligned, not the final block), with the CRC-32 and
    length of what it holds: the front of a gzip body any tail can follow (`gzip_tail`)."""

    data: bytes
    crc: int
    size: int

    @classmethod
    def of(cls, page: bytes) -> Deflated:
        compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS)
        return cls(compressor.compress(page) + compressor.flush(zlib.Z_SYNC_FLUSH), zlib.crc32(page), len(page))


def gzip_tail(front: Deflated, tail: bytes) -> bytes:
    """The rest of one gzip member whose body is GZIP_HEADER + front.data: the tail, deflated by a fresh
    compressor as the final blocks (deflate blocks need not share a compressor, RFC 1951 3.2.3), and the
    trailer: CRC-32 and length of front + tail (RFC 1952 2.3.1). One member, so every gzip reader takes it,
    and the page itself is compressed once per round, not per scrape."""
    compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS)
    crc = zlib.crc32(tail, front.crc)
    size = (front.size + len(tail)) & 0xFFFFFFFF
    return compressor.compress(tail) + compressor.flush(zlib.Z_FINISH) + struct.pack("<II", crc, size)


# A form of the page (content type, gzip) is made ahead for each new snapshot while a scraper asked for it
# this recently: a few of Prometheus' scrape intervals.
ASKED_SECONDS = 300.0


@dataclass
class _CachedPage:
    """One snapshot's page in one content type, and its deflate once a scraper has asked for gzip."""

    text: bytes
    deflated: Deflated | None = None


class MetricsPage:
    """Renders /metrics for the latest snapshot once per content type (and deflates it once, when a
    scraper asks for gzip), then serves the cached bytes.

    Only the tail - the snapshot age, the history writer's self-metrics and OpenMetrics' `# EOF` - is
    made per request, so a scrape of /metrics does no JMX I/O and, after the first request for a
    snapshot, almost no work.
    """

    def __init__(self, version: str = "dev", clock: Callable[[], float] = time.monotonic) -> None:
        self.version = version
        self.clock = clock
        self._lock = threading.Lock()
        self._pages: dict[tuple[int, float, str], _CachedPage] = {}
        self._memo = RenderMemo()
        # (content type, gzipped) -> an Accept header that chose it, and when it was last asked for
        self._asked: dict[tuple[str, bool], tuple[str | None, float]] = {}

    def prepare(self, snapshot: FleetSnapshot, health: FleetHealth | None) -> None:
        """Make this snapshot's page in each form scrapers asked for in the last ASKED_SECONDS, when the
        snapshot is made (in the scrape thread) rather than at the first scrape after it: a scrape is then
        served from the cache (a 1,000-node page took ~250 ms to make, docs/demo.md)."""
        with self._lock:
            now = self.clock()
            self._asked = {key: asked for key, asked in self._asked.items() if now - asked[1] <= ASKED_SECONDS}
            wanted = [(accept, gzipped) for (_, gzipped), (accept, _) in self._asked.items()]
        for accept, gzipped in wanted:
            self._page(snapshot, health, accept, gzipped)

    def render(
        self, snapshot: FleetSnapshot, health: FleetHealth | None, accept: str | None, now: float
    ) -> tuple[bytes, str]:
        """The whole page and its content type."""
        parts, content_type = self.render_parts(snapshot, health, accept, now)
        return b"".join(parts), content_type

    def render_parts(
        self,
        snapshot: FleetSnapshot,
        health: FleetHealth | None,
        accept: str | None,
        now: float,
        per_request: Sequence[Family] = (),
        gzipped: bool = False,
    ) -> tuple[tuple[bytes, ...], str]:
        """The body's parts, to be sent one after the other without joining them into a copy of the page
        per request, and the content type: the page cached for the snapshot, then the tail made for this
        request (`per_request` families go there with the snapshot age). `gzipped`: one gzip member, the
        page's deflate cached too."""
        encoder, content_type, cached, front = self._page(snapshot, health, accept, gzipped)
        with self._lock:
            self._asked[(content_type, gzipped)] = (accept, self.clock())
        tail = encode([snapshot_age_family(max(0.0, now - snapshot.taken_at)), *per_request], encoder)
        if front is None:
            return (cached.text, tail), content_type
        return (GZIP_HEADER, front.data, gzip_tail(front, tail)), content_type

    def _page(
        self, snapshot: FleetSnapshot, health: FleetHealth | None, accept: str | None, gzipped: bool
    ) -> tuple[Callable[..., bytes], str, _CachedPage, Deflated | None]:
        """The snapshot's page for this Accept header, made once (under the lock, so two requests or a
        request and prepare() never make the same page twice)."""
        encoder, content_type = choose_encoder(accept or "")
        key = (snapshot.sequence, snapshot.taken_at, content_type)
        with self._lock:
            cached = self._pages.get(key)
            if cached is None:
                # the page ends before OpenMetrics' `# EOF`: the tail closes it
                families = collect_families(snapshot, health, self.version, self._memo)
                text = encode(families, encoder, self._memo).removesuffix(b"# EOF\n")
                # keep only the newest snapshot's pages (one per content type)
                self._pages = {k: v for k, v in self._pages.items() if k[:2] == key[:2]}
                cached = self._pages[key] = _CachedPage(text)
            if gzipped and cached.deflated is None:
                cached.deflated = Deflated.of(cached.text)
            return encoder, content_type, cached, cached.deflated if gzipped else None
