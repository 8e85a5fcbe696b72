"""One local SparkSession for every pipeline test (JVM start-up costs ~10 s; tests then take 1-2 s each).

The tests' frames are a few rows: compiling Java for each plan (whole-stage code generation, Janino) cost
more CPU than running it, and so did C2 compiling Spark itself. Interpreted expressions and C1 only gave the
same results in half the CPU (145 -> 72 CPU-s for tests/unit/pipeline on 2 cores, 2026-11-26). The product
keeps Spark's defaults; the Spark tests in tests/integration run its generated code.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from ctlplane.pipeline.session import build_session
from tests.background import below_the_other_tests


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    with below_the_other_tests():  # its JVM (tests/background.py)
        session = _build()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def _build() -> SparkSession:
    return build_session(
        "local[2]",
        "ctlplane-tests",
        {
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
            "spark.sql.codegen.wholeStage": "false",
            # SQLConf's own switch to interpreted expressions (an internal setting, meant for tests)
            "spark.sql.codegen.factoryMode": "NO_CODEGEN",
        },
        progress=False,
    )
