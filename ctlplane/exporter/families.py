"""Prometheus families as a pure function of a FleetSnapshot (their text: http/encoding.py; the /metrics page
made once per round and gzipped: http/page.py).

Example output (one ZooKeeper-mode broker with the control-plane listener):

    kafka_control_plane_request_queue_size{cluster="zk-3.9",node="broker-1",role="broker"} 0.0
    kafka_control_plane_listener_enabled{cluster="zk-3.9",node="broker-1",role="broker"} 1.0
    ctlplane_up{cluster="zk-3.9",node="broker-1",role="broker"} 1.0
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
    SummaryMetricFamily,
)
from prometheus_client.samples import Sample as PromSample

from ctlplane.exporter.catalog import (
    CANARY_SERIES,
    CATALOG,
    DERIVED_SERIES,
    HEALTH_SERIES,
    QUORUM_SERIES,
    MetricSpec,
    Mode,
    SeriesType,
)
from ctlplane.exporter.health import MIGRATION_PHASES, BrokerHealth, ClusterHealth, FleetHealth, Lifecycle
from ctlplane.exporter.model import (
    CANARY_BUCKETS,
    ClusterSnapshot,
    Failure,
    FleetSnapshot,
    NodeSnapshot,
    Sample,
    member_label,
    merged,
)
from ctlplane.exporter.readings import LISTENER_EVIDENCE
from ctlplane.exporter.releases import CLIENT_VERSION

NODE_LABELS = ("cluster", "node", "role")

# One sample as the renderers see it: (sample name, label names, label values, value). Label names are
# one tuple object per family (two for summaries: with and without `quantile`), so the exposition can
# cache a node's formatted label set instead of sorting and escaping it again for each of its series.
Row = tuple[str, tuple[str, ...], tuple[str, ...], float]


class Family:
    """One metric family in the shape prometheus_client's Metric has, without its per-sample objects.

    A 1,000-node page is ~75,000 samples; building a PromSample and a label dict for each and handing
    them to prometheus_client's encoders was ~2 s. `to_metric()` still gives the prometheus_client form.
    """

    __slots__ = (
        "_quantile_labels",
        "_sample_name",
        "blocks",
        "documentation",
        "labelnames",
        "name",
        "rows",
        "timestamps",
        "type",
    )

    def __init__(self, name: str, documentation: str, type: str, labels: Sequence[str] = ()) -> None:
        if type == "counter" and name.endswith("_total"):
            name = name[:-6]  # as CounterMetricFamily: the family is named without the suffix
        self.name = name
        self.type = type
        self.documentation = documentation
        self.labelnames = tuple(labels)
        self.rows: list[Row] = []
        # row index -> unix seconds, for the rows of a value read earlier than the page (the slow tier,
        # Sample.read_at): exposed with that time, as the exposition formats allow; every other row has none
        self.timestamps: dict[int, float] = {}
        # first row -> (end row, the Sample they come from), for the rows of a slow-tier sample that a
        # RenderMemo may render from the last page's text (see collect_families)
        self.blocks: dict[int, tuple[int, Sample]] = {}
        self._sample_name = name + "_total" if type == "counter" else name
        self._quantile_labels = (*self.labelnames, "quantile")

    def add(self, values: tuple[str, ...], value: float, timestamp: float | None = None) -> None:
        if timestamp is not None:
            self.timestamps[len(self.rows)] = timestamp
        self.rows.append((self._sample_name, self.labelnames, values, value))

    def add_summary(
        self,
        values: tuple[str, ...],
        count: float,
        total: float,
        quantiles: Iterable[tuple[str, float]],
        timestamp: float | None = None,
    ) -> None:
        first = len(self.rows)
        # the order SummaryMetricFamily.add_metric gives (count, sum), then the quantiles
        self.rows.append((self.name + "_count", self.labelnames, values, count))
        self.rows.append((self.name + "_sum", self.labelnames, values, total))
        for quantile, value in quantiles:
            self.rows.append((self.name, self._quantile_labels, (*values, quantile), value))
        if timestamp is not None:
            self.timestamps.update(dict.fromkeys(range(first, len(self.rows)), timestamp))

    def add_histogram(
        self, values: tuple[str, ...], bounds: Sequence[float], cumulative: Sequence[int], total: float
    ) -> None:
        """A histogram's rows: a bucket per bound and +Inf (`cumulative` counts), then count and sum."""
        names = (*self.labelnames, "le")
        for bound, count in zip((*(f"{b:g}" for b in bounds), "+Inf"), cumulative, strict=True):
            self.rows.append((self.name + "_bucket", names, (*values, bound), float(count)))
        self.rows.append((self.name + "_count", self.labelnames, values, float(cumulative[-1])))
        self.rows.append((self.name + "_sum", self.labelnames, values, total))

    def add_block(self, rows: Sequence[Row], timestamp: float | None, source: Sample) -> None:
        """Rows made from one slow-tier sample (the same tuples a page made of it before), marked as a block."""
        first = len(self.rows)
        self.rows.extend(rows)
        if timestamp is not None:
            self.timestamps.update(dict.fromkeys(range(first, len(self.rows)), timestamp))
        self.blocks[first] = (len(self.rows), source)

    def to_metric(self) -> Metric:
        metric: Metric
        if self.type == "counter":
            metric = CounterMetricFamily(self.name, self.documentation, labels=self.labelnames)
        elif self.type == "summary":
            metric = SummaryMetricFamily(self.name, self.documentation, labels=self.labelnames)
        elif self.type == "histogram":
            metric = HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)
        else:
            metric = GaugeMetricFamily(self.name, self.documentation, labels=self.labelnames)
        metric.samples = [
            PromSample(name, dict(zip(names, values, strict=True)), value, self.timestamps.get(index))
            for index, (name, names, values, value) in enumerate(self.rows)
        ]
        return metric


def control_plane_listener_enabled(node: NodeSnapshot) -> bool | None:
    """Whether a ZooKeeper-mode broker has the KIP-291 listener; None where the question is moot.

    The ControlPlane* queue gauges are registered only with `control.plane.listener.name` set, while the
    SocketServer ControlPlane* gauges are registered regardless (NaN / 0), so the queue is the evidence.
    """
    if not node.up or node.mode is not Mode.ZOOKEEPER:
        return None
    return node.has(LISTENER_EVIDENCE)


def _node_labels(node: NodeSnapshot) -> tuple[str, str, str]:
    return (node.cluster, node.node, node.role.value)


def _catalog_family(spec: MetricSpec) -> Family:
    extra = sorted(set(spec.labels.values()))
    if spec.type in (SeriesType.STATE, SeriesType.INFO):
        extra = sorted({*extra, spec.value_label})
    kind = "counter" if spec.type is SeriesType.COUNTER else "summary" if spec.type is SeriesType.SUMMARY else "gauge"
    return Family(spec.series, spec.help_text, kind, [*NODE_LABELS, *extra])


class RenderMemo:
    """What one page lends the next: the rows and text made of each slow-tier sample.

    The scraper serves a node's slow tier (the per-request summaries: ~47,000 of the ~97,000 lines of a
    1,000-simulated-node page) from the same Sample objects until the node's next slow read
    (scraper._with_slow_tier), so three pages in four at the default intervals would format the same
    lines again. An entry is used only for the very same Sample object (`is`, held by the entry, so its
    id is not reused) under the same node labels, so a page made with a memo has the bytes of one made
    without; only the last page's entries are kept. The formatted names and label sets of every line are
    kept too (TextFormatting): a node's labels are the same from round to round.
    """

    def __init__(self) -> None:
        # id(sample) -> (sample, node labels, its rows)
        self.rows: dict[int, tuple[Sample, tuple[str, ...], list[Row]]] = {}
        # (format, escaping) -> id(sample) -> (sample, its first row, its lines)
        self.text: dict[tuple[bool, str], dict[int, tuple[Sample, Row, str]]] = {}
        self.formatting: dict[tuple[bool, str], TextFormatting] = {}


@dataclass
class TextFormatting:
    """The exposition text of names and label sets for one (format, escaping), made once per distinct one."""

    names: dict[str, str] = field(default_factory=dict)
    label_names: dict[str, str] = field(default_factory=dict)
    orders: dict[tuple[str, ...], list[tuple[int, str]]] = field(default_factory=dict)
    label_sets: dict[tuple[str, ...], dict[tuple[str, ...], str]] = field(default_factory=dict)  # names -> values
    escaped: dict[str, str] = field(default_factory=dict)

    def size(self) -> int:
        return len(self.escaped) + sum(len(sets) for sets in self.label_sets.values())


def collect_families(
    snapshot: FleetSnapshot, health: FleetHealth | None = None, version: str = "dev", memo: RenderMemo | None = None
) -> list[Family]:
    """Every family with samples for this snapshot, fresh objects each call (no state shared between
    scrapes, except through `memo`, which changes no byte: RenderMemo)."""
    kept: dict[int, tuple[Sample, tuple[str, ...], list[Row]]] = {}
    remembered = memo.rows if memo is not None else {}
    catalog = [_catalog_family(spec) for spec in CATALOG]
    # series -> (its family, the labels it adds to the node's); one lookup per sample
    by_series = {
        spec.series: (family, family.labelnames[len(NODE_LABELS) :], family.type == "summary")
        for spec, family in zip(CATALOG, catalog, strict=True)
    }
    nodes = [(node, _node_labels(node)) for node in snapshot.nodes()]
    # node by node, each sample to its family: the rows of a family come out in node order, then in the
    # node's sample order, as a scan of every node per catalogue series would give them
    for node, node_labels in nodes:
        if not node.served:
            continue
        for sample in node.samples:
            found = by_series.get(sample.series)
            if found is None:
                continue
            family, extra, summary = found
            if memo is not None and sample.read_at is not None:
                entry = remembered.get(id(sample))
                if entry is None or entry[0] is not sample or entry[1] != node_labels:
                    first = len(family.rows)
                    _add_sample(family, node_labels, extra, summary, sample)
                    entry = (sample, node_labels, family.rows[first:])
                    family.blocks[first] = (len(family.rows), sample)
                else:
                    family.add_block(entry[2], sample.read_at, sample)
                kept[id(sample)] = entry
                continue
            _add_sample(family, node_labels, extra, summary, sample)
    if memo is not None:
        memo.rows = kept
    families = [family for family in catalog if family.rows]
    families.extend(_derived_families(snapshot, nodes, version))
    families.extend(quorum_families(snapshot))
    families.extend(canary_families(snapshot))
    if health is not None:
        families.extend(health_families(health))
    return families


def _add_sample(
    family: Family, node_labels: tuple[str, ...], extra: tuple[str, ...], summary: bool, sample: Sample
) -> None:
    # the node-labels tuple is shared by all of a node's plain samples (see Row)
    values: tuple[str, ...] = node_labels
    if extra:
        labels = dict(sample.labels)
        values = (*node_labels, *[labels.get(name, "") for name in extra])
    if summary:
        parts = dict(sample.parts)
        quantiles = [(q, v) for q, v in sample.parts if q != "count" and q != "sum"]
        family.add_summary(values, parts["count"], parts["sum"], quantiles, sample.read_at)
    else:
        family.add(values, sample.value, sample.read_at)


def render_families(snapshot: FleetSnapshot, health: FleetHealth | None = None, version: str = "dev") -> list[Metric]:
    """collect_families as prometheus_client Metric objects (what its encoders and registries take)."""
    return [family.to_metric() for family in collect_families(snapshot, health, version)]


# The health record's families in the order /metrics serves them: (name, labels), each a gauge but the counter
# of failovers (its help text is HEALTH_SERIES' under the name with `_total`).
_HEALTH_FAMILIES: tuple[tuple[str, Sequence[str]], ...] = (
    ("kafka_cluster_mode_info", ["cluster", "mode"]),
    ("kafka_cluster_migration_phase", ["cluster", "phase"]),
    ("kafka_cluster_active_controllers", ["cluster"]),
    ("kafka_cluster_reachable_controllers", ["cluster"]),
    ("kafka_controller_info", ["cluster", "node", "node_id"]),
    ("kafka_controller_failovers", ["cluster"]),
    ("kafka_controller_last_failover_timestamp_seconds", ["cluster"]),
    ("kafka_broker_lifecycle_state", [*NODE_LABELS, "state"]),
    ("kafka_broker_fenced_unplanned", NODE_LABELS),
    ("kafka_broker_fault_cause", [*NODE_LABELS, "cause"]),
    ("kafka_broker_metadata_lag_records", NODE_LABELS),
    ("kafka_broker_metadata_lag_seconds", NODE_LABELS),
    ("kafka_broker_metadata_lag_source_info", [*NODE_LABELS, "source"]),
    ("kafka_broker_metadata_stale", NODE_LABELS),
    ("kafka_broker_metadata_frozen", NODE_LABELS),
    ("kafka_control_plane_saturated", NODE_LABELS),
    ("kafka_broker_views_disagree", NODE_LABELS),
    ("kafka_cluster_controller_views_disagree", ["cluster"]),
    ("kafka_cluster_fenced_brokers_unnamed", ["cluster"]),
    ("kafka_cluster_reading_unknown", ["cluster", "reading", "lacks"]),
    ("kafka_quorum_voters", ["cluster"]),
    ("kafka_quorum_voters_caught_up", ["cluster"]),
    ("kafka_quorum_spare_voters", ["cluster"]),
    # no state label: an election that moves between candidate and prospective is one series, one alert
    ("kafka_controller_raft_out_of_step_seconds", NODE_LABELS),
    # the voter set as the quorum says it, one series per voter (id, directory id); and per controller process
    # how long it has run outside that set (an observer controller, KIP-853), 0 for a voter
    ("kafka_quorum_voter_info", ["cluster", "node", "node_id", "directory_id"]),
    ("kafka_controller_observer_seconds", NODE_LABELS),
    ("kafka_node_safe_to_restart", NODE_LABELS),
    ("kafka_node_restart_blocked", [*NODE_LABELS, "reason"]),
)
_COUNTERS = frozenset({"kafka_controller_failovers"})


def health_families(health: FleetHealth) -> list[Family]:
    """The health record as series: controller identity and failovers, lifecycle, freshness, saturation, the
    quorum's redundancy and voter set, restart safety."""
    families = {
        name: Family(name, HEALTH_SERIES[f"{name}_total"], "counter", labels)
        if name in _COUNTERS
        else Family(name, HEALTH_SERIES[name], "gauge", labels)
        for name, labels in _HEALTH_FAMILIES
    }
    for cluster in health.clusters:
        _add_quorum(families, cluster)
        _add_controller(families, cluster)
        with_quorum = cluster.quorum_leader_id is not None  # the quorum answered this round
        for broker in cluster.brokers:
            _add_broker(families, broker, with_quorum)
    return [family for family in families.values() if family.rows]


def _add_quorum(families: Mapping[str, Family], cluster: ClusterHealth) -> None:
    """Restart answers, elections, the voter set, redundancy, and what no source let it judge."""
    for answer in cluster.restart:
        node_labels = (cluster.name, answer.node, answer.role.value)
        families["kafka_node_safe_to_restart"].add(node_labels, 1.0 if answer.safe else 0.0)
        if answer.blocker is not None:
            families["kafka_node_restart_blocked"].add((*node_labels, answer.blocker), 1.0)
    for election in cluster.elections:
        labels = (cluster.name, election.node, election.role.value)
        families["kafka_controller_raft_out_of_step_seconds"].add(labels, election.out_of_step_seconds)
    for member in cluster.voter_set.members if cluster.voter_set is not None else ():
        if member.voter:
            node_id = "" if member.node_id is None else str(member.node_id)
            voter = (cluster.name, member.node, node_id, member.directory_id or "")
            families["kafka_quorum_voter_info"].add(voter, 1.0)
        labels = (cluster.name, member.node, member.role.value)
        families["kafka_controller_observer_seconds"].add(labels, member.observer_seconds)
    if cluster.fenced_unnamed is not None:
        families["kafka_cluster_fenced_brokers_unnamed"].add((cluster.name,), float(cluster.fenced_unnamed))
    for reading in cluster.unknown:
        families["kafka_cluster_reading_unknown"].add((cluster.name, reading.reading, reading.lacks), 1.0)
    if (redundancy := cluster.redundancy) is not None:
        families["kafka_quorum_voters"].add((cluster.name,), float(redundancy.voters))
        families["kafka_quorum_voters_caught_up"].add((cluster.name,), float(redundancy.caught_up))
        families["kafka_quorum_spare_voters"].add((cluster.name,), float(redundancy.spare))
    if cluster.quorum_leader_id is not None:
        disagree = 1.0 if cluster.controller_views_disagree else 0.0
        families["kafka_cluster_controller_views_disagree"].add((cluster.name,), disagree)


def _add_controller(families: Mapping[str, Family], cluster: ClusterHealth) -> None:
    """The cluster's mode and migration phase, its active controller and failovers."""
    controller = cluster.controller
    if cluster.mode is not None:
        families["kafka_cluster_mode_info"].add((cluster.name, cluster.mode.value), 1.0)
    if cluster.migration_phase is not None:
        for phase in MIGRATION_PHASES.values():
            value = 1.0 if phase == cluster.migration_phase else 0.0
            families["kafka_cluster_migration_phase"].add((cluster.name, phase), value)
    if controller.known:  # an unanswered round of the Admin API alone says neither 0 nor 1
        families["kafka_cluster_active_controllers"].add((cluster.name,), float(cluster.active_controllers))
    families["kafka_cluster_reachable_controllers"].add((cluster.name,), float(controller.reachable_controllers))
    if controller.node is not None:
        node_id = "" if controller.node_id is None else str(controller.node_id)
        families["kafka_controller_info"].add((cluster.name, controller.node, node_id), 1.0)
    families["kafka_controller_failovers"].add((cluster.name,), float(controller.failovers_total))
    if controller.last_failover_at is not None:
        families["kafka_controller_last_failover_timestamp_seconds"].add((cluster.name,), controller.last_failover_at)


def _add_broker(families: Mapping[str, Family], broker: BrokerHealth, with_quorum: bool) -> None:
    """A broker's lifecycle and cause, metadata freshness, control-plane saturation, the two views' agreement."""
    labels = (broker.cluster, broker.node, broker.role.value)
    for state in Lifecycle:
        families["kafka_broker_lifecycle_state"].add((*labels, state.value), 1.0 if broker.state is state else 0.0)
    families["kafka_broker_fenced_unplanned"].add(labels, 1.0 if broker.fenced_unplanned else 0.0)
    if broker.cause is not None:
        # an info series beside the lifecycle, never a label on it: a cause that changes while the broker stays
        # FENCED must not restart the `for:` of its page
        families["kafka_broker_fault_cause"].add((*labels, broker.cause.value), 1.0)
    if broker.metadata_lag_records is not None:
        families["kafka_broker_metadata_lag_records"].add(labels, broker.metadata_lag_records)
    if broker.metadata_lag_seconds is not None:
        families["kafka_broker_metadata_lag_seconds"].add(labels, broker.metadata_lag_seconds)
    if broker.metadata_lag_source is not None:
        families["kafka_broker_metadata_lag_source_info"].add((*labels, broker.metadata_lag_source), 1.0)
    if broker.up:
        families["kafka_broker_metadata_stale"].add(labels, 1.0 if broker.stale else 0.0)
        families["kafka_broker_metadata_frozen"].add(labels, 1.0 if broker.frozen else 0.0)
    if broker.control_plane_listener:
        families["kafka_control_plane_saturated"].add(labels, 1.0 if broker.control_plane_saturated else 0.0)
    if with_quorum:
        families["kafka_broker_views_disagree"].add(labels, 1.0 if broker.views_disagree else 0.0)


def _gauge(name: str, labels: Sequence[str] = NODE_LABELS) -> Family:
    return Family(name, DERIVED_SERIES[name], "gauge", labels)


def _derived_families(
    snapshot: FleetSnapshot, nodes: Sequence[tuple[NodeSnapshot, tuple[str, str, str]]], version: str
) -> list[Family]:
    up = _gauge("ctlplane_up")
    duration = _gauge("ctlplane_scrape_duration_seconds")
    errors = Family("ctlplane_scrape_errors", DERIVED_SERIES["ctlplane_scrape_errors_total"], "counter", NODE_LABELS)
    age = _gauge("ctlplane_last_read_age_seconds")
    refused = _gauge("ctlplane_credentials_refused")
    listener = _gauge("kafka_control_plane_listener_enabled")
    for node, labels in nodes:
        up.add(labels, 1.0 if node.served else 0.0)
        refused.add(labels, 1.0 if node.failure is Failure.AUTH else 0.0)
        if node.last_read_at is not None:
            age.add(labels, max(0.0, snapshot.taken_at - node.last_read_at))
        duration.add(labels, node.scrape_duration_seconds)
        errors.add(labels, node.errors_total)
        enabled = control_plane_listener_enabled(node)
        if enabled is not None:
            listener.add(labels, 1.0 if enabled else 0.0)
    round_duration = _gauge("ctlplane_round_duration_seconds", ())
    round_duration.add((), snapshot.round_duration_seconds)
    timestamp = _gauge("ctlplane_snapshot_timestamp_seconds", ())
    timestamp.add((), snapshot.taken_at)
    woken = Family("ctlplane_rounds_woken", DERIVED_SERIES["ctlplane_rounds_woken_total"], "counter", ())
    woken.add((), float(snapshot.woken_rounds_total))
    build = _gauge("ctlplane_build_info", ["version", "kafka_client"])
    build.add((version, CLIENT_VERSION), 1.0)
    families = [up, refused, duration, errors, *([age] if age.rows else []), round_duration, timestamp, woken, build]
    if listener.rows:
        families.append(listener)
    return families


def _quorum_gauge(name: str, labels: Sequence[str]) -> Family:
    return Family(name, QUORUM_SERIES[name], "gauge", labels)


def quorum_families(snapshot: FleetSnapshot) -> list[Family]:
    """The quorum's own view of each cluster that has one (ClusterSnapshot.quorum)."""
    up = _quorum_gauge("ctlplane_quorum_up", ["cluster"])
    refused = _quorum_gauge("ctlplane_quorum_refused", ["cluster"])
    leader = _quorum_gauge("kafka_quorum_leader_id", ["cluster"])
    epoch = _quorum_gauge("kafka_quorum_leader_epoch", ["cluster"])
    high_watermark = _quorum_gauge("kafka_quorum_high_watermark", ["cluster"])
    log_end = _quorum_gauge("kafka_quorum_replica_log_end_offset", NODE_LABELS)
    lag = _quorum_gauge("kafka_quorum_replica_lag_records", NODE_LABELS)
    fetch_age = _quorum_gauge("kafka_quorum_replica_last_fetch_age_seconds", NODE_LABELS)
    caught_up_age = _quorum_gauge("kafka_quorum_replica_last_caught_up_age_seconds", NODE_LABELS)
    fenced = _quorum_gauge("kafka_broker_fenced", NODE_LABELS)
    unwatched = _quorum_gauge("kafka_cluster_node_unwatched", ["cluster", "node_id", "role"])
    unknown = _quorum_gauge("kafka_cluster_node_unknown", NODE_LABELS)
    for cluster in snapshot.clusters:
        view = cluster.quorum
        if view is None:
            continue
        for member in cluster.unwatched():
            unwatched.add((cluster.name, str(member.node_id), member.role.value), 1.0)
        for node in cluster.unknown():
            unknown.add(_node_labels(node), 1.0)
        up.add((cluster.name,), 1.0 if view.up else 0.0)
        refused.add((cluster.name,), 1.0 if view.refused else 0.0)
        if not view.up:
            continue
        for family, value in (
            (leader, view.leader_id),
            (epoch, view.leader_epoch),
            (high_watermark, view.high_watermark),
        ):
            if value is not None:
                family.add((cluster.name,), float(value))
        names = _node_names(cluster)
        for replica in view.replicas:
            labels = (
                cluster.name,
                names.get(replica.replica_id, str(replica.replica_id)),
                _replica_role(replica.voter),
            )
            log_end.add(labels, float(replica.log_end_offset))
            replica_lag = view.lag_records(replica)
            if replica_lag is not None:
                lag.add(labels, float(replica_lag))
            for family, at in ((fetch_age, replica.last_fetch_at), (caught_up_age, replica.last_caught_up_at)):
                if (age := view.age(at)) is not None:
                    family.add(labels, age)
        for broker_id, is_fenced in sorted((view.fenced or {}).items()):
            fenced.add((cluster.name, names.get(broker_id, str(broker_id)), "broker"), 1.0 if is_fenced else 0.0)
    families = [
        up, refused, leader, epoch, high_watermark, log_end, lag, fetch_age, caught_up_age, fenced, unwatched, unknown
    ]  # fmt: skip
    return [family for family in families if family.rows]


def canary_families(snapshot: FleetSnapshot) -> list[Family]:
    """The metadata canary of each cluster that has one (ClusterSnapshot.canary)."""
    propagation = Family(
        "kafka_broker_metadata_canary_propagation_seconds",
        CANARY_SERIES["kafka_broker_metadata_canary_propagation_seconds"],
        "histogram",
        NODE_LABELS,
    )
    unserved = Family(
        "kafka_broker_metadata_canary_unserved_seconds",
        CANARY_SERIES["kafka_broker_metadata_canary_unserved_seconds"],
        "gauge",
        NODE_LABELS,
    )
    changes = Family(
        "ctlplane_canary_changes_total", CANARY_SERIES["ctlplane_canary_changes_total"], "counter", ["cluster"]
    )
    errors = Family(
        "ctlplane_canary_errors_total", CANARY_SERIES["ctlplane_canary_errors_total"], "counter", ["cluster", "reason"]
    )
    last = Family(
        "ctlplane_canary_last_change_timestamp_seconds",
        CANARY_SERIES["ctlplane_canary_last_change_timestamp_seconds"],
        "gauge",
        ["cluster"],
    )
    for cluster in snapshot.clusters:
        view = cluster.canary
        if view is None:
            continue
        changes.add((cluster.name,), float(view.changes_total))
        for reason, count in sorted(view.errors_total.items()):
            errors.add((cluster.name, reason), float(count))
        if view.changed_at is not None:
            last.add((cluster.name,), view.changed_at)
        names = _node_names(cluster)
        for broker in view.brokers:
            labels = (cluster.name, names.get(broker.node_id, f"broker-{broker.node_id}"), "broker")
            if broker.buckets:
                propagation.add_histogram(labels, CANARY_BUCKETS, broker.buckets, broker.seconds_total)
            if (seconds := broker.unserved_seconds(snapshot.taken_at)) is not None:
                unserved.add(labels, seconds)
    return [family for family in (propagation, unserved, changes, errors, last) if family.rows]


def _node_names(cluster: ClusterSnapshot) -> dict[int, str]:
    """Node id -> the configured node's name. In a combined-mode cluster a node id is one process, so the
    first node with the id names it. Watched through the Admin API alone, the names its health gives them."""
    if cluster.admin_only and cluster.quorum is not None:
        return {node_id: member_label(member) for node_id, member in merged(cluster.quorum.members).items()}
    names: dict[int, str] = {}
    for node in cluster.nodes:
        if node.node_id is not None:
            names.setdefault(node.node_id, node.node)
    return names


def _replica_role(voter: bool) -> str:
    """Voters are the controllers; observers are the brokers (KIP-595)."""
    return "controller" if voter else "broker"


def dashboard_family(public_url: str) -> Family:
    """ctlplane_dashboard_info: where the alert rules' `dashboard_url` annotation points a page."""
    family = _gauge("ctlplane_dashboard_info", ["url"])
    family.add((public_url,), 1.0)
    return family


def history_families(
    write_errors_total: int,
    rows_dropped_total: int,
    buffered_rows: int,
    last_success: float | None,
    compaction_errors_total: int = 0,
) -> list[Family]:
    """The history writer's self-metrics (ctlplane/exporter/history/ WriterStats), made per request."""
    families = []
    for name, kind, value in (
        ("ctlplane_history_write_errors_total", "counter", float(write_errors_total)),
        ("ctlplane_history_rows_dropped_total", "counter", float(rows_dropped_total)),
        ("ctlplane_history_buffered_rows", "gauge", float(buffered_rows)),
        ("ctlplane_history_last_flush_timestamp_seconds", "gauge", last_success),
        ("ctlplane_history_compaction_errors_total", "counter", float(compaction_errors_total)),
    ):
        if value is None:
            continue  # no flush has written yet: no sample rather than a 0 that reads as 1970
        family = Family(name, DERIVED_SERIES[name], kind)
        family.add((), value)
        families.append(family)
    return families


def reload_families(successful: bool, last_success_at: float, failures_total: int) -> list[Family]:
    """The config reload's self-metrics (ctlplane/reload.py ConfigReload), as Prometheus names its own."""
    families = []
    for name, kind, value in (
        ("ctlplane_config_last_reload_successful", "gauge", 1.0 if successful else 0.0),
        ("ctlplane_config_last_reload_success_timestamp_seconds", "gauge", last_success_at),
        ("ctlplane_config_reload_failures_total", "counter", float(failures_total)),
    ):
        family = Family(name, DERIVED_SERIES[name], kind)
        family.add((), value)
        families.append(family)
    return families


def discovery_families(discovered: Mapping[str, int], forgotten_total: Mapping[tuple[str, str], int]) -> list[Family]:
    """Discovery's self-metrics (ctlplane/exporter/discovery/answers.py NodeDiscovery), made per request."""
    watched = Family("ctlplane_discovered_nodes", DERIVED_SERIES["ctlplane_discovered_nodes"], "gauge", ["cluster"])
    for cluster, count in sorted(discovered.items()):
        watched.add((cluster,), float(count))
    name = "ctlplane_discovery_forgotten_nodes_total"
    forgotten = Family(name, DERIVED_SERIES[name], "counter", ["cluster", "reason"])
    for (cluster, reason), count in sorted(forgotten_total.items()):
        forgotten.add((cluster, reason), float(count))
    return [watched, forgotten]


def snapshot_age_family(age_seconds: float) -> Family:
    family = _gauge("ctlplane_snapshot_age_seconds", ())
    family.add((), age_seconds)
    return family
