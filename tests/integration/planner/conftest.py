"""One real Spark session (local[2]) for every planner test in the run: a
session takes about 10 s to start, so tests share it."""

import os
import sys

import pytest


@pytest.fixture(scope="session")
def spark():
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("kafkactl-planner-tests")
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.session.timeZone", "UTC")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


# Spark's Python workers run `python3` from PATH unless told otherwise; pandas
# UDFs that import kafkactl need this interpreter (the venv's).
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
