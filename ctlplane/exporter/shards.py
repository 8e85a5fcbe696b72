"""Which exporter replica serves which cluster, when a fleet is split over N replicas (`--shard I/N`).

Rendezvous (highest-random-weight) hashing: each cluster goes to the shard whose hash of (cluster, shard)
is highest. Every replica computes the same answer from the cluster names alone, with no coordination, so
a cluster is served by exactly one of N replicas. When N changes, only the clusters that must move do: going
from N to N+1 replicas moves about 1/(N+1) of the clusters, all of them to the new shard, and going back
moves exactly those (a modulo split would move most of the fleet). A whole cluster stays on one replica:
its health (one active controller, fencing, quorum views) needs every node of it in one snapshot.
"""

from __future__ import annotations

import hashlib
import os
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass

# a StatefulSet pod's hostname is <statefulset name>-<ordinal>
_ORDINAL = re.compile(r"-(\d+)$")


@dataclass(frozen=True)
class Shard:
    index: int
    count: int

    def __post_init__(self) -> None:
        if not 0 <= self.index < self.count:
            raise ValueError(f"shard {self.index}/{self.count}: the index must be in 0..{self.count - 1}")

    def serves(self, cluster: str) -> bool:
        return shard_of(cluster, self.count) == self.index

    def select(self, clusters: Iterable[str]) -> list[str]:
        return [cluster for cluster in clusters if self.serves(cluster)]


def _weight(cluster: str, index: int) -> int:
    digest = hashlib.sha256(f"{cluster}\x00{index}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def shard_of(cluster: str, count: int) -> int:
    """The shard (0..count-1) that serves `cluster` among `count`."""
    if count < 1:
        raise ValueError(f"shard count must be at least 1, not {count}")
    return max(range(count), key=lambda index: (_weight(cluster, index), -index))


def parse_shard(text: str) -> tuple[int | None, int]:
    """`I/N` -> (I, N); `auto/N` -> (None, N), the index to come from the pod's hostname (resolve_shard)."""
    index_text, sep, count_text = (part.strip() for part in text.partition("/"))
    if not sep or not count_text.isdigit() or int(count_text) < 1:
        raise ValueError(f"shard {text!r}: expected INDEX/COUNT with COUNT >= 1, e.g. 0/3 or auto/3")
    count = int(count_text)
    if index_text == "auto":
        return None, count
    if not index_text.isdigit() or int(index_text) >= count:
        raise ValueError(f"shard {text!r}: the index is `auto` or a number in 0..{count - 1}")
    return int(index_text), count


def resolve_shard(text: str, hostname: str | None = None) -> Shard:
    """The shard `text` names; `auto` takes the index from a StatefulSet pod's hostname (`ctlplane-2` -> 2)."""
    index, count = parse_shard(text)
    if index is None:
        name = hostname if hostname is not None else os.environ.get("HOSTNAME") or socket.gethostname()
        match = _ORDINAL.search(name)
        if match is None:
            raise ValueError(f"shard {text!r}: hostname {name!r} does not end in -<ordinal>, as a StatefulSet pod's")
        index = int(match.group(1))
    return Shard(index, count)
