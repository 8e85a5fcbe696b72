"""Fixtures of the Spark tests in tests/integration (the Kafka clusters are tests/conftest.py's)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from pipeline.session import build_session


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    """A local[2] session for one module, stopped after it (the JVM stays: the next session starts warm)."""
    session = build_session("local[2]", "ctlplane-it", {"spark.sql.shuffle.partitions": "2"}, progress=False)
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
