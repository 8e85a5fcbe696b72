"""One local SparkSession for every pipeline test (JVM start-up costs ~10 s; tests then take 1-2 s each)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from pipeline.session import build_session


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = build_session(
        "local[2]",
        "ctlplane-tests",
        {"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"},
        progress=False,
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
