"""Pure views: observations, alerts and pipeline outputs in; Dash component trees and figure dicts out.

Nothing here reads a clock, a socket or a file: `now` and the link prefix are arguments, so every view is
tested by comparing the tree it builds.

One module per page (fleet, cluster, broker, alerts, history), what they share (common) and the frame."""

from __future__ import annotations

from ctlplane.dashboard.views.alerts import ALERT_COLUMNS, CONNECT_ALERTS, WAITING_NOTICE_SECONDS, alerts_view
from ctlplane.dashboard.views.broker import RUN_COLUMNS, broker_view, evidence_runs
from ctlplane.dashboard.views.cluster import (
    CP_TWINS,
    GRAPH_TYPE,
    NODE_COLUMNS,
    cluster_figures,
    cluster_view,
    control_plane_value,
    controller_card,
    event_queue_figure,
    graphs_view,
    idle_figure,
    lag_figure,
    node_table,
    queue_figure,
    timeline_view,
    watch_gaps,
)
from ctlplane.dashboard.views.common import (
    DASH,
    LEVEL_COLOURS,
    LIFECYCLE_ORDER,
    MODE_NAMES,
    PAGING_SEVERITIES,
    SIMULATED_SERIES,
    STATE_LEVELS,
    Assessment,
    Figure,
    Level,
    assess_cluster,
    badge,
    format_duration,
    format_number,
    format_ratio,
    format_time,
    iso,
    lag_cell,
    simulated_scenarios,
    simulation_banner,
    worst,
)
from ctlplane.dashboard.views.fleet import FLEET_COLUMNS, fleet_view
from ctlplane.dashboard.views.frame import nav_links, status_line
from ctlplane.dashboard.views.history import PIPELINE_COMMANDS, history_view

__all__ = [
    "ALERT_COLUMNS",
    "CONNECT_ALERTS",
    "CP_TWINS",
    "DASH",
    "FLEET_COLUMNS",
    "GRAPH_TYPE",
    "LEVEL_COLOURS",
    "LIFECYCLE_ORDER",
    "MODE_NAMES",
    "NODE_COLUMNS",
    "PAGING_SEVERITIES",
    "PIPELINE_COMMANDS",
    "RUN_COLUMNS",
    "SIMULATED_SERIES",
    "STATE_LEVELS",
    "WAITING_NOTICE_SECONDS",
    "Assessment",
    "Figure",
    "Level",
    "alerts_view",
    "assess_cluster",
    "badge",
    "broker_view",
    "cluster_figures",
    "cluster_view",
    "control_plane_value",
    "controller_card",
    "event_queue_figure",
    "evidence_runs",
    "fleet_view",
    "format_duration",
    "format_number",
    "format_ratio",
    "format_time",
    "graphs_view",
    "history_view",
    "idle_figure",
    "iso",
    "lag_cell",
    "lag_figure",
    "nav_links",
    "node_table",
    "queue_figure",
    "simulated_scenarios",
    "simulation_banner",
    "status_line",
    "timeline_view",
    "watch_gaps",
    "worst",
]
