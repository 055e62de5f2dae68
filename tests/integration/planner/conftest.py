"""One real Spark session (local[2]) for every planner test in the run: a
session takes about 10 s to start, so tests share it."""

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


@pytest.fixture(scope="session")
def read_snapshot(spark):
    """A generated snapshot directory as the three DataFrames, read with the
    snapshot's schemas (planner/__init__.py); a stand-in for the pipeline's
    validated reader, which is not in this branch yet."""
    from dataclasses import dataclass

    from pyspark.sql import DataFrame

    @dataclass
    class Snapshot:
        brokers: DataFrame
        log_dirs: DataFrame
        partitions: DataFrame

    schemas = {
        "brokers": "broker_id int, rack string, network_in_capacity_bytes_per_s long, "
                   "network_out_capacity_bytes_per_s long",
        "log_dirs": "broker_id int, path string, media string, capacity_bytes long, used_bytes long",
        "partitions": "topic string, partition int, replicas array<int>, leader int, "
                      "log_dirs array<string>, size_bytes long, bytes_in_per_s double, "
                      "bytes_out_per_s double",
    }

    def read(directory):
        frames = {name: spark.read.schema(schema).json(f"{directory}/{name}.jsonl")
                  for name, schema in schemas.items()}
        return Snapshot(**frames)

    return read
