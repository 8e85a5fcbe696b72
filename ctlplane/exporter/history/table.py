"""The archive's table: its row schema (the one definition: ctlplane/pipeline/schema.py derives the Spark
schema from it, the Prometheus backfill writes the same rows), its partition columns, the health series'
names, and rows kept column-wise. Pyarrow and the standard library only: Spark's driver imports it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date

# pyarrow ships no type information (no py.typed, no stubs on PyPI)
import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type hints

HISTORY_SCHEMA = pa.schema(
    [
        pa.field("timestamp", pa.timestamp("us", tz="UTC"), nullable=False),  # the scrape round's start
        pa.field("cluster", pa.string(), nullable=False),
        pa.field("node", pa.string(), nullable=False),  # "" for cluster-level rows
        pa.field("role", pa.string(), nullable=False),  # broker/controller/combined/unknown; "" for cluster rows
        pa.field("series", pa.string(), nullable=False),  # the Prometheus series name
        pa.field("labels", pa.string(), nullable=False),  # other labels, sorted: "k=v,k2=v2" ("" for none)
        pa.field("value", pa.float64(), nullable=False),
        pa.field("state", pa.string(), nullable=True),  # the broker's lifecycle state; null for non-brokers
    ]
)
COLUMNS: tuple[str, ...] = tuple(HISTORY_SCHEMA.names)
PARTITION_COLUMNS = ("date", "cluster")  # directories; `cluster` is also kept inside the files

# Health series rows (names as on /metrics, see ctlplane/exporter/catalog.py HEALTH_SERIES / DERIVED_SERIES).
LIFECYCLE_SERIES = "kafka_broker_lifecycle_state"  # one row per broker, labels "state=<S>", value 1
# The `state` column's value for a fenced broker: health.Lifecycle.FENCED's (the jobs read it without importing
# the health model; a unit test holds the two equal)
FENCED_STATE = "FENCED"
ACTIVE_CONTROLLERS_SERIES = "kafka_cluster_active_controllers"
UP_SERIES = "ctlplane_up"


def format_labels(labels: Iterable[tuple[str, str]]) -> str:
    """Sorted `k=v,...`; commas and equals signs inside values are backslash-escaped."""

    def escape(text: str) -> str:
        return text.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")

    return ",".join(f"{escape(k)}={escape(v)}" for k, v in sorted(labels))


@dataclass
class RowBuffer:
    """Rows kept column-wise: appending to eight lists is the whole cost of `observe`."""

    timestamp: list[int]  # microseconds since the epoch, UTC
    cluster: list[str]
    node: list[str]
    role: list[str]
    series: list[str]
    labels: list[str]
    value: list[float]
    state: list[str | None]

    @classmethod
    def empty(cls) -> RowBuffer:
        return cls([], [], [], [], [], [], [], [])

    def __len__(self) -> int:
        return len(self.timestamp)

    def add(
        self, ts: int, cluster: str, node: str, role: str, series: str, labels: str, value: float, state: str | None
    ) -> None:
        self.timestamp.append(ts)
        self.cluster.append(cluster)
        self.node.append(node)
        self.role.append(role)
        self.series.append(series)
        self.labels.append(labels)
        self.value.append(value)
        self.state.append(state)

    def prepend(self, older: RowBuffer) -> None:
        """Put `older` (rows a failed flush gave back) in front of these rows."""
        for name in COLUMNS:
            getattr(self, name)[:0] = getattr(older, name)

    def without_partitions(self, partitions: set[tuple[date, str]]) -> RowBuffer:
        """The rows whose (UTC day, cluster) is not in `partitions`."""
        epoch = date(1970, 1, 1).toordinal()
        keep = [
            i
            for i, (ts, cluster) in enumerate(zip(self.timestamp, self.cluster, strict=True))
            if (date.fromordinal(epoch + ts // 86_400_000_000), cluster) not in partitions
        ]
        out = RowBuffer.empty()
        for name in COLUMNS:
            column = getattr(self, name)
            getattr(out, name).extend(column[i] for i in keep)
        return out

    def drop_oldest(self, count: int) -> None:
        for name in COLUMNS:
            del getattr(self, name)[:count]

    def to_table(self) -> pa.Table:
        return pa.table(
            {
                "timestamp": pa.array(self.timestamp, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
                "cluster": pa.array(self.cluster, pa.string()),
                "node": pa.array(self.node, pa.string()),
                "role": pa.array(self.role, pa.string()),
                "series": pa.array(self.series, pa.string()),
                "labels": pa.array(self.labels, pa.string()),
                "value": pa.array(self.value, pa.float64()),
                "state": pa.array(self.state, pa.string()),
            },
            schema=HISTORY_SCHEMA,
        )
