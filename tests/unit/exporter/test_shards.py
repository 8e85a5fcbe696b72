"""Splitting a fleet's clusters over N exporter replicas (ctlplane/exporter/shards.py, `--shard`, `shard:`)."""

from __future__ import annotations

import pytest

from ctlplane.exporter.config.file import ConfigError, parse_settings
from ctlplane.exporter.shards import Shard, parse_shard, resolve_shard, shard_of

CLUSTERS = [f"prod-{region}-{i}" for region in ("eu", "us", "ap") for i in range(100)]


@pytest.mark.parametrize("count", range(1, 9))
def test_every_cluster_is_served_by_exactly_one_shard(count: int) -> None:
    shares = [Shard(index, count).select(CLUSTERS) for index in range(count)]
    served = [cluster for share in shares for cluster in share]
    assert sorted(served) == sorted(CLUSTERS)  # none twice, none dropped
    # and about evenly: 300 clusters, each share within 40% of the mean
    assert all(abs(len(share) - 300 / count) <= 0.4 * 300 / count for share in shares), [len(s) for s in shares]


@pytest.mark.parametrize("count", range(1, 8))
def test_adding_a_replica_moves_only_the_clusters_the_new_one_takes(count: int) -> None:
    before = {cluster: shard_of(cluster, count) for cluster in CLUSTERS}
    after = {cluster: shard_of(cluster, count + 1) for cluster in CLUSTERS}
    moved = [cluster for cluster in CLUSTERS if before[cluster] != after[cluster]]
    assert all(after[cluster] == count for cluster in moved)  # to the new replica, nowhere else
    assert abs(len(moved) - 300 / (count + 1)) <= 0.4 * 300 / (count + 1), len(moved)
    # and removing it again moves exactly those back
    assert [cluster for cluster in CLUSTERS if after[cluster] != before[cluster]] == moved


def test_the_split_depends_on_the_names_only() -> None:
    # every replica computes it alone: same answer in any order, in any process (no salted hash())
    assert [shard_of(c, 4) for c in CLUSTERS] == [shard_of(c, 4) for c in CLUSTERS]
    # pinned: a change of the hash would move clusters between running replicas on an upgrade
    assert [shard_of(c, 4) for c in ("prod-eu-1", "prod-eu-2", "prod-us-0", "prod-ap-1")] == [0, 1, 2, 3]


def test_shard_forms() -> None:
    assert parse_shard("2/4") == (2, 4)
    assert parse_shard(" auto / 3 ") == (None, 3)
    assert resolve_shard("auto/3", hostname="ctlplane-exporter-2") == Shard(2, 3)
    assert resolve_shard("0/1") == Shard(0, 1)
    for bad in ("4/4", "-1/4", "1", "1/0", "a/3", "1/x", "/3", ""):
        with pytest.raises(ValueError, match="shard"):
            parse_shard(bad)
    with pytest.raises(ValueError, match="does not end in -<ordinal>"):
        resolve_shard("auto/3", hostname="laptop")
    with pytest.raises(ValueError, match=r"0\.\.2"):
        resolve_shard("auto/3", hostname="ctlplane-3")  # a fourth pod of a StatefulSet sized for 3


def _settings(shard: str | None) -> dict[str, object]:
    document: dict[str, object] = {
        "clusters": [{"name": name, "nodes": [{"address": "127.0.0.1:9999"}]} for name in CLUSTERS[:30]]
    }
    if shard is not None:
        document["shard"] = shard
    return document


def test_a_config_serves_its_shards_clusters() -> None:
    assert parse_settings(_settings(None)).served().clusters == parse_settings(_settings(None)).clusters
    shares = [parse_settings(_settings(f"{i}/3")).served() for i in range(3)]
    assert sorted(c.name for s in shares for c in s.clusters) == sorted(CLUSTERS[:30])
    auto = parse_settings(_settings("auto/3"))  # checked where it is written, resolved where it runs
    assert auto.served(hostname="ctlplane-1").clusters == shares[1].clusters


def test_a_wrong_shard_is_a_config_error_naming_the_field() -> None:
    with pytest.raises(ConfigError, match=r"shard.*expected INDEX/COUNT"):
        parse_settings(_settings("3"))
