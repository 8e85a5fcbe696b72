"""The exporter's HTTP server as scrapers meet it: real uvicorn on a loopback port, real sockets."""

from __future__ import annotations

import http.client
import time

from ctlplane.exporter.http.app import create_app
from ctlplane.exporter.model import FleetSnapshot
from ctlplane.exporter.state import ExporterState
from ctlplane.exporter.thresholds import Thresholds
from tests.e2e.browser import serve


def test_a_scraper_keep_alive_connection_survives_the_time_between_scrapes() -> None:
    """A Prometheus scraping every 5-15 s reuses its connection; a server that closes idle connections
    after uvicorn's default 5 s races every scrape at that interval (a reset request is a failed scrape)."""
    state = ExporterState(FleetSnapshot(1, time.time(), 0.1, ()), Thresholds())
    with serve(create_app(state.current, interval_seconds=15)) as base:
        host, port = base.removeprefix("http://").split(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=30)
        try:
            connection.request("GET", "/metrics")
            first = connection.getresponse()
            first.read()
            assert first.status == 200 and first.getheader("connection") != "close"
            time.sleep(6.0)  # idle longer than uvicorn's default keep-alive, less than a 15 s scrape interval
            connection.request("GET", "/metrics")  # the same socket: http.client reconnects only if told to
            second = connection.getresponse()
            second.read()
            assert second.status == 200
            assert connection.sock is not None, "the server closed the idle connection"
        finally:
            connection.close()
