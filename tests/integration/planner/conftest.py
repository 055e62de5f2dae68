"""One real Spark session (local[2]) for every planner test in the run: a
session takes seconds to start, so tests share it."""

import os
import sys

import pytest


@pytest.fixture(scope="session")
def spark():
    from pyspark.sql import SparkSession

    from kafkactl.planner.session import SMALL_REPLICAS, session_settings

    # The settings `kafkactl plan` gives a small snapshot's session (one
    # shuffle partition, no adaptive execution, interpreted expressions, the
    # client compiler): test snapshots are small, and tests run what ships.
    builder = SparkSession.builder.master("local[2]").appName("kafkactl-planner-tests")
    for key, value in session_settings("local[2]", SMALL_REPLICAS, None).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


# Spark's Python workers run `python3` from PATH unless told otherwise; pandas
# UDFs that import kafkactl need this interpreter (the venv's).
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def stand_in():
    """TEST ONLY: the stand-in optimizer module (stand_in_optimizer.py), loaded by path."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).with_name("stand_in_optimizer.py")
    spec = importlib.util.spec_from_file_location("stand_in_optimizer", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def read_snapshot(spark):
    """directory -> the validated Snapshot (planner/snapshot.py's reader)."""
    from kafkactl.planner.snapshot import read_snapshot as read

    return lambda directory: read(spark, directory)


@pytest.fixture(scope="session")
def fixture_snapshot(spark, tmp_path_factory):
    """name -> (Fixture, Snapshot, directory): each named fixture written and
    read once per session, for tests that only read it (reading validates
    the snapshot in a few Spark jobs; the Snapshot's frames are cached)."""
    from kafkactl.planner.fixtures import write_fixture
    from kafkactl.planner.snapshot import read_snapshot as read

    done = {}

    def get(name):
        if name not in done:
            directory = tmp_path_factory.mktemp(name)
            fixture = write_fixture(name, directory)
            done[name] = (fixture, read(spark, directory), directory)
        return done[name]

    yield get
    for _, snapshot, _ in done.values():
        snapshot.unpersist()
