"""Every ctlplane config a user page shows is one ctlplane accepts: each YAML block of the manual that is a
config file, a section of one or a cluster's entry is checked by the model `check-config` and `run` load
(parse_settings), so an example cannot name a key that is gone or a value out of its bounds."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from ctlplane.exporter.config import ClusterConfig, Settings
from ctlplane.exporter.config.file import parse_settings
from ctlplane.exporter.thresholds import PROMETHEUS_SCRAPE_SECONDS
from tools.manual_lint import pages

ROOT = Path(__file__).resolve().parents[3]
BLOCK = re.compile(r"^```ya?ml\n(.*?)^```", re.MULTILINE | re.DOTALL)
INDENTED_BLOCK = re.compile(r"^( *)```ya?ml\n(.*?)^\1```", re.MULTILINE | re.DOTALL)  # also in a list item
# a cluster that can be read, for a block that shows only some other section
LISTED = {"name": "example", "nodes": [{"name": "broker-1", "address": "kafka-1:9999"}]}
# what a reader writes for a placeholder (`<PROMETHEUS_SERVICE_PORT>`): a port for a port, a word otherwise
PLACEHOLDER = re.compile(r"<([A-Za-z_-]+)>")


def filled(text: str) -> str:
    return PLACEHOLDER.sub(lambda m: "9999" if m.group(1).upper().endswith("PORT") else "placeholder", text)


def config_blocks() -> list[tuple[str, str]]:
    """(page:line, text) of every YAML block on the manual's pages."""
    found = []
    for page in pages():
        text = page.read_text()
        for match in BLOCK.finditer(text):
            line = text.count("\n", 0, match.start()) + 2
            found.append((f"{page.relative_to(ROOT)}:{line}", match.group(1)))
    return found


def as_config(document: Any) -> dict[str, Any] | None:
    """The whole config a block stands for: itself where it is one, else its section or cluster keys set into a
    config with one listed cluster; None for a block that is no ctlplane config (Prometheus', Strimzi's)."""
    if not isinstance(document, dict) or not document:
        return None
    keys = set(document)
    if keys <= set(Settings.model_fields):
        return {"clusters": [LISTED], **document}
    if keys <= set(ClusterConfig.model_fields) - {"name"}:
        return {"clusters": [{**LISTED, **document}]}
    return None


def configs() -> list[tuple[str, dict[str, Any]]]:
    """(page:line, whole config) of every block that is a ctlplane config."""
    found = [(where, as_config(yaml.safe_load(filled(text)))) for where, text in config_blocks()]
    return [(where, config) for where, config in found if config is not None]


def test_the_examples_found_are_the_manuals_configs() -> None:
    pages_with_one = {where.split(":")[0] for where, _ in configs()}
    assert {"docs/configuration.md", "docs/install.md", "docs/sources.md", "docs/pipeline.md"} <= pages_with_one
    # a Prometheus scrape config, a web config, Kubernetes objects and chart values are not ctlplane's
    assert as_config({"scrape_configs": []}) is None and as_config({"apiVersion": "v1", "kind": "x"}) is None


@pytest.mark.parametrize(("where", "config"), configs(), ids=[where for where, _ in configs()])
def test_every_config_example_loads(where: str, config: dict[str, Any]) -> None:
    parse_settings(config, where)


def test_the_manuals_prometheus_configs_scrape_ctlplane_as_shipped() -> None:
    """Every scrape config the manual shows for ctlplane's own job (`job_name: ctlplane`) says the shipped
    interval (thresholds.PROMETHEUS_SCRAPE_SECONDS, which the PodMonitor and the paging test use), or none
    where it defers to the global one."""
    said = {}
    for page in pages():
        for match in INDENTED_BLOCK.finditer(page.read_text()):
            where = f"{page.relative_to(ROOT)}:{page.read_text().count(chr(10), 0, match.start()) + 2}"
            document = yaml.safe_load(filled(textwrap.dedent(match.group(2))))
            jobs = document.get("scrape_configs") or [] if isinstance(document, dict) else []
            for job in jobs:
                if job.get("job_name") == "ctlplane" and "scrape_interval" in job:
                    said[where] = job["scrape_interval"]
    assert len(said) >= 2, said  # docs/alerts.md and docs/configuration.md show one each
    assert set(said.values()) == {f"{PROMETHEUS_SCRAPE_SECONDS:g}s"}, said
