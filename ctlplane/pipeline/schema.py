"""The archive's Spark schema, derived from the one definition in `ctlplane.exporter.history.table.HISTORY_SCHEMA`."""

from __future__ import annotations

from pyspark.sql import types as T

from ctlplane.exporter.history.table import HISTORY_SCHEMA

# pyarrow type id (str() of the type) -> Spark type; only the types the archive uses.
_SPARK_TYPES: dict[str, T.DataType] = {
    "timestamp[us, tz=UTC]": T.TimestampType(),
    "string": T.StringType(),
    "double": T.DoubleType(),
    "int64": T.LongType(),
}


def history_struct() -> T.StructType:
    """The archive row as a Spark StructType (partition column `date` not included)."""
    fields = []
    for field in HISTORY_SCHEMA:
        spark_type = _SPARK_TYPES.get(str(field.type))
        if spark_type is None:
            raise TypeError(f"archive column {field.name!r} has type {field.type}, which has no Spark mapping")
        fields.append(T.StructField(field.name, spark_type, nullable=field.nullable))
    return T.StructType(fields)


EPISODE_STRUCT = T.StructType(
    [
        T.StructField("cluster", T.StringType(), False),
        T.StructField("node", T.StringType(), False),  # "" for cluster-wide kinds
        T.StructField("kind", T.StringType(), False),
        T.StructField("start", T.TimestampType(), False),  # first sample in the condition
        T.StructField("end", T.TimestampType(), False),  # last sample in the condition
        T.StructField("duration_seconds", T.DoubleType(), False),  # end - start
        T.StructField("peak", T.DoubleType(), True),  # worst value seen (lag, queue, controller count, ...)
        T.StructField("samples", T.LongType(), False),
    ]
)
