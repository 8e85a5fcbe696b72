"""Fixtures of the Spark tests in tests/integration (the Kafka clusters are tests/conftest.py's)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from ctlplane.pipeline.session import build_session
from tests.background import below_the_other_tests


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    """A local[2] session for one module, stopped after it (the JVM stays: the next session starts warm)."""
    # the JVM with C1 only, as the Spark cluster test's (tests/integration/test_spark_cluster.py: JIT); the
    # plans and their code generation are the product's
    settings = {
        "spark.sql.shuffle.partitions": "2",
        "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    }
    with below_the_other_tests():  # its JVM (tests/background.py)
        session = build_session("local[2]", "ctlplane-it", settings, progress=False)
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
