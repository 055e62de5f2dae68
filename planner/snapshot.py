"""Reading a checked cluster snapshot into three Spark DataFrames.

A snapshot is a directory with three tables (see docs/planner.md), each as
JSON Lines (`brokers.jsonl`) or Parquet (`brokers.parquet`, a file or a
Spark output directory). Every check runs before Spark starts, in plain
Python (planner/snapshot_check.py, which names the file, the line or the
Parquet row's key, and the field of each error); Spark then reads the
partitions' file with the documented schema and nothing to check: one
scan, cached, so the job's many passes over it do not parse JSON again.
The brokers and log dirs (a row per broker and per dir) are the rows the
check kept, handed to Spark as they are: no file scan and no job for them.

A table's values are typed as the check found them: JSON Lines through
Spark's JSON reader with the schema given (no inference pass), Parquet
columns cast to the schema's types (a narrower integer or a float widened).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kafkactl.planner.snapshot_check import (  # noqa: F401  (the snapshot's names, for the job and tests)
    FIELDS, INT_MAX, MAX_ERRORS, MEDIA, TABLES, CheckedSnapshot, SnapshotError, check_snapshot, table_files)

_SQL_TYPES = {"int": "int", "long": "bigint", "double": "double", "string": "string",
              "int_array": "array<int>", "string_array": "array<string>"}


@dataclass
class Snapshot:
    """The checked tables (schemas in planner/__init__.py), cached in Spark."""

    brokers: object      # pyspark DataFrame
    log_dirs: object
    partitions: object
    directory: str | None = None
    checked: CheckedSnapshot | None = None

    def unpersist(self) -> None:
        for frame in (self.brokers, self.log_dirs, self.partitions):
            frame.unpersist()


def schema(table: str):
    from pyspark.sql import types as T

    spark_types = {"int": T.IntegerType(), "long": T.LongType(), "double": T.DoubleType(),
                   "string": T.StringType(), "int_array": T.ArrayType(T.IntegerType(), False),
                   "string_array": T.ArrayType(T.StringType(), False)}
    return T.StructType([T.StructField(name, spark_types[kind], nullable)
                         for name, kind, nullable in FIELDS[table]])


def read_snapshot(spark, directory, max_errors: int = MAX_ERRORS,
                  checked: CheckedSnapshot | None = None) -> Snapshot:
    """The snapshot's three tables, cached (SnapshotError if invalid; `checked`: already checked)."""
    from pyspark import StorageLevel

    checked = checked or check_snapshot(directory, max_errors)
    frames = {table: (spark.createDataFrame(list(checked.small_tables[table]), schema(table))
                      if table in checked.small_tables else _read_table(spark, table, path))
              for table, path in checked.files.items()}
    for frame in frames.values():
        frame.persist(StorageLevel.MEMORY_AND_DISK)
    return Snapshot(frames["brokers"], frames["log_dirs"], frames["partitions"], str(directory), checked)


def _read_table(spark, table: str, path: Path):
    if path.suffix == ".parquet":
        columns = [f"CAST(`{name}` AS {_SQL_TYPES[kind]}) AS `{name}`" for name, kind, _ in FIELDS[table]]
        return spark.read.parquet(str(path.resolve())).selectExpr(*columns)
    # Checked: every line a JSON object with these fields, typed; blank lines are skipped by the reader.
    frame = spark.read.schema(_ddl(table)).option("mode", "FAILFAST").json(str(path.resolve()))
    return frame.select(*[name for name, _, _ in FIELDS[table]])


def _ddl(table: str) -> str:
    return ", ".join(f"`{name}` {_SQL_TYPES[kind]}" for name, kind, _ in FIELDS[table])
