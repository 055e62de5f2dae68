"""Reading and validating a cluster snapshot into three Spark DataFrames.

A snapshot is a directory with three tables (see docs/planner.md), each as
JSON Lines (`brokers.jsonl`) or Parquet (`brokers.parquet`, a file or a
Spark output directory). Validation runs in Spark, so the driver never holds
the replicas: a bad snapshot is refused with its first few errors, each
naming the file, the line (JSON Lines) or the row's key (Parquet, which has
no lines) and the field, e.g. `partitions.jsonl line 17: size_bytes is
negative (-5)`.

JSON Lines are read as text with exact 1-based line numbers (zipWithIndex
over the file's lines, blank lines counted and skipped) and parsed with
Spark's variant type, whose `schema_of_variant` tells the JSON type of each
value exactly: an integer field given `"5"` or `5.5` is refused, not cast.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

TABLES = ("brokers", "log_dirs", "partitions")
MEDIA = ("ssd", "hdd")
MAX_ERRORS = 5
INT_MAX = 2**31 - 1

# (field, kind, nullable) per table, in the documented order. Kinds: int
# (32-bit), long, double (any JSON number), string, int_array, string_array.
FIELDS = {
    "brokers": (("broker_id", "int", False), ("rack", "string", True),
                ("network_in_capacity_bytes_per_s", "long", False),
                ("network_out_capacity_bytes_per_s", "long", False)),
    "log_dirs": (("broker_id", "int", False), ("path", "string", False), ("media", "string", False),
                 ("capacity_bytes", "long", False), ("used_bytes", "long", False)),
    "partitions": (("topic", "string", False), ("partition", "int", False), ("replicas", "int_array", False),
                   ("leader", "int", False), ("log_dirs", "string_array", False), ("size_bytes", "long", False),
                   ("bytes_in_per_s", "double", False), ("bytes_out_per_s", "double", False)),
}
_SQL_TYPES = {"int": "int", "long": "bigint", "double": "double", "string": "string",
              "int_array": "array<int>", "string_array": "array<string>"}
_KIND_TEXT = {"int": "an integer", "long": "an integer", "double": "a number", "string": "a string",
              "int_array": "a list of integers", "string_array": "a list of strings"}


class SnapshotError(ValueError):
    """The snapshot is unreadable or invalid; `errors` are its first few problems."""

    def __init__(self, errors: list[str], more: bool = False):
        self.errors = list(errors)
        self.more = more
        suffix = "\n(more errors not shown)" if more else ""
        super().__init__("\n".join(self.errors) + suffix)


@dataclass
class Snapshot:
    """The validated tables (schemas in planner/__init__.py), cached in Spark."""

    brokers: object      # pyspark DataFrame
    log_dirs: object
    partitions: object
    directory: str | None = None

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


def table_files(directory: Path) -> dict[str, Path]:
    """Where each table is: `<table>.jsonl` or `<table>.parquet` (SnapshotError if neither or both)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise SnapshotError([f"snapshot {directory}: not a directory"])
    found, errors = {}, []
    for table in TABLES:
        candidates = [p for p in (directory / f"{table}.jsonl", directory / f"{table}.parquet") if p.exists()]
        if not candidates:
            errors.append(f"snapshot {directory}: no {table}.jsonl or {table}.parquet")
        elif len(candidates) > 1:
            errors.append(f"snapshot {directory}: both {table}.jsonl and {table}.parquet; keep one")
        else:
            found[table] = candidates[0]
    if errors:
        raise SnapshotError(errors)
    return found


def read_snapshot(spark, directory, max_errors: int = MAX_ERRORS) -> Snapshot:
    """The snapshot's three tables, validated and cached (SnapshotError if invalid)."""
    from pyspark import StorageLevel

    files = table_files(Path(directory))
    raw = {table: _read_table(spark, table, path) for table, path in files.items()}
    for frame in raw.values():
        frame.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        errors = _first_errors(raw, {t: p.name for t, p in files.items()}, max_errors)
    except BaseException:
        _unpersist(raw)
        raise
    if errors:
        _unpersist(raw)
        raise SnapshotError(errors[:max_errors], more=len(errors) > max_errors)
    clean = {t: raw[t].select(*[name for name, _, _ in FIELDS[t]]) for t in TABLES}
    return Snapshot(clean["brokers"], clean["log_dirs"], clean["partitions"], str(directory))


def _unpersist(frames: dict) -> None:
    for frame in frames.values():
        frame.unpersist()


# --- reading: typed columns plus `_line` (JSON Lines) and `_where` (for messages)

def _read_table(spark, table: str, path: Path):
    if path.suffix == ".parquet":
        return _read_parquet(spark, table, path)
    return _read_json_lines(spark, table, path)


def _read_json_lines(spark, table: str, path: Path):
    from pyspark.sql import functions as F

    # zipWithIndex numbers the lines in file order, exactly, across splits.
    numbered = (spark.sparkContext.textFile(str(path.resolve()))
                .zipWithIndex()
                .map(lambda pair: (pair[1] + 1, pair[0])))
    lines = spark.createDataFrame(numbered, "_line long, _text string").where(F.trim("_text") != "")
    parsed = lines.select("_line", F.expr("try_parse_json(_text)").alias("_v"))
    columns, checks = [], []
    for name, kind, nullable in FIELDS[table]:
        value, check = _json_field(name, kind, nullable)
        columns.append(value.alias(name))
        checks.append(check)
    not_object = F.when(F.coalesce(~F.expr("schema_of_variant(_v)").startswith("OBJECT<"), F.lit(True)),
                        F.lit("not a JSON object"))
    # A line that is not an object gets that one error, not one per field.
    type_errors = F.when(not_object.isNotNull(), F.array(not_object)).otherwise(F.array_compact(F.array(*checks)))
    return parsed.select("_line", F.concat(F.lit("line "), F.col("_line").cast("string")).alias("_where"),
                         *columns, type_errors.alias("_type_errors"))


def _json_field(name: str, kind: str, nullable: bool):
    """(the typed value, the error message or null) of one field of a parsed line."""
    from pyspark.sql import functions as F

    raw = f"variant_get(_v, '$.{name}')"
    json_type = F.expr(f"schema_of_variant({raw})")
    as_json = F.expr(f"to_json({raw})")
    if kind in ("int", "long"):
        ok = json_type == "BIGINT"
        if kind == "int":
            ok = ok & F.expr(f"try_variant_get(_v, '$.{name}', 'int')").isNotNull()
    elif kind == "double":
        ok = json_type.isin("BIGINT", "DOUBLE", "FLOAT") | json_type.startswith("DECIMAL")
    elif kind == "string":
        ok = json_type == "STRING"
    elif kind == "int_array":
        as_longs = F.expr(f"try_variant_get(_v, '$.{name}', 'array<bigint>')")
        ok = json_type.isin("ARRAY<BIGINT>", "ARRAY<VOID>") & ~F.exists(
            as_longs, lambda x: x.isNull() | (x < -1) | (x > INT_MAX))
    else:
        ok = json_type.isin("ARRAY<STRING>", "ARRAY<VOID>") & ~F.exists(
            F.expr(f"try_variant_get(_v, '$.{name}', 'array<string>')"), lambda x: x.isNull())
    error = (F.when(json_type.isNull(), F.lit(f"{name} is missing"))
             .when(json_type == "VOID", F.lit(None if nullable else f"{name} is null"))
             .when(~ok, F.concat(F.lit(f"{name} must be {_KIND_TEXT[kind]} (got "), as_json, F.lit(")"))))
    value = F.when(ok, F.expr(f"try_variant_get(_v, '$.{name}', '{_SQL_TYPES[kind]}')"))
    return value, error


def _read_parquet(spark, table: str, path: Path):
    from pyspark.sql import functions as F

    frame = spark.read.parquet(str(path.resolve()))
    problems = _parquet_schema_problems(frame.schema, table, path.name)
    if problems:
        raise SnapshotError(problems)
    columns, checks = [], []
    for name, kind, nullable in FIELDS[table]:
        columns.append(F.col(name).cast(_SQL_TYPES[kind]).alias(name))
        if not nullable:
            checks.append(F.when(F.col(name).isNull(), F.lit(f"{name} is null")))
        if kind.endswith("_array"):
            checks.append(F.when(F.exists(name, lambda x: x.isNull()), F.lit(f"{name} has a null entry")))
    typed = frame.select(*columns, F.array_compact(F.array(*checks)).alias("_type_errors"))
    return typed.select(F.lit(None).cast("long").alias("_line"), _parquet_where(table).alias("_where"),
                        *[name for name, _, _ in FIELDS[table]], "_type_errors")


def _parquet_schema_problems(actual, table: str, file_name: str) -> list[str]:
    from pyspark.sql import types as T

    integral = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
    accepted = {"int": integral, "long": integral, "double": (*integral, T.FloatType, T.DoubleType, T.DecimalType),
                "string": (T.StringType,), "int_array": (T.ArrayType,), "string_array": (T.ArrayType,)}
    by_name = {f.name: f.dataType for f in actual.fields}
    problems = []
    for name, kind, _ in FIELDS[table]:
        if name not in by_name:
            problems.append(f"{file_name}: column {name} is missing")
            continue
        data_type = by_name[name]
        ok = isinstance(data_type, accepted[kind])
        if ok and kind.endswith("_array"):
            element = integral if kind == "int_array" else (T.StringType,)
            ok = isinstance(data_type.elementType, element)
        if not ok:
            problems.append(f"{file_name}: column {name} must be {_KIND_TEXT[kind]}, is {data_type.simpleString()}")
    return problems


def _parquet_where(table: str):
    """Parquet has no lines: a row is named by its key."""
    from pyspark.sql import functions as F

    if table == "partitions":
        return F.format_string("row (topic %s partition %s)", F.coalesce(_quoted("topic"), F.lit("?")),
                               F.coalesce(F.col("partition").cast("string"), F.lit("?")))
    if table == "log_dirs":
        return F.format_string("row (broker_id %s path %s)", F.coalesce(F.col("broker_id").cast("string"),
                                                                        F.lit("?")),
                               F.coalesce(F.col("path"), F.lit("?")))
    return F.format_string("row (broker_id %s)", F.coalesce(F.col("broker_id").cast("string"), F.lit("?")))


# --- validation: every check yields (where, message) rows; the first few are collected

def _first_errors(raw: dict, names: dict[str, str], max_errors: int) -> list[str]:
    from functools import reduce

    from pyspark.sql import functions as F

    found = []
    for rank, table in enumerate(TABLES):
        for frame in _checks(table, raw):
            found.append(frame.select(F.lit(rank).alias("_rank"), F.lit(names[table]).alias("_file"),
                                      "_line", "_where", "_seq", "_message"))
    errors = reduce(lambda a, b: a.unionByName(b), found)
    first = (errors.orderBy("_rank", F.col("_line").asc_nulls_last(), "_where", "_seq", "_message")
             .limit(max_errors + 1).collect())
    messages = [f"{r._file} {r._where}: {r._message}" for r in first]
    return messages + _empty_tables(raw, names, max_errors - len(messages)) if len(messages) < max_errors \
        else messages


def _empty_tables(raw: dict, names: dict[str, str], room: int) -> list[str]:
    if room <= 0:
        return []
    return [f"{names[t]}: no rows; a snapshot needs at least one" for t in TABLES if raw[t].isEmpty()][:room]


def _checks(table: str, raw: dict):
    """DataFrames of (_line, _where, _seq, _message) for one table."""
    from pyspark.sql import functions as F

    frame = raw[table]
    rows = _row_checks(table)
    row_errors = frame.select("_line", "_where", F.concat("_type_errors", F.array_compact(F.array(*rows)))
                              .alias("_all"))
    yield row_errors.select("_line", "_where", F.posexplode("_all").alias("_seq", "_message"))
    yield _duplicates(frame, _KEYS[table], _describe_key(table))
    if table == "log_dirs":
        yield _unknown_brokers_of_dirs(frame, raw["brokers"])
    if table == "partitions":
        yield from _unknown_replicas(frame, raw["brokers"], raw["log_dirs"])


_KEYS = {"brokers": ("broker_id",), "log_dirs": ("broker_id", "path"), "partitions": ("topic", "partition")}


def _describe_key(table: str):
    from pyspark.sql import functions as F

    if table == "brokers":
        return F.format_string("duplicate broker %d", "broker_id")
    if table == "log_dirs":
        return F.format_string("duplicate log dir %s of broker %d", _quoted("path"), "broker_id")
    return F.format_string("duplicate partition %s-%d", "topic", "partition")


def _quoted(column):
    """A string column as a JSON string literal (quotes and escapes), for messages."""
    from pyspark.sql import functions as F

    return F.regexp_replace(F.to_json(F.array(column)), r"^\[|\]$", "")


def _negative(name: str):
    from pyspark.sql import functions as F

    return F.when(F.col(name) < 0, F.format_string(f"{name} is negative (%s)", F.col(name).cast("string")))


def _row_checks(table: str) -> list:
    """Checks of one row's values (null when a value is missing or mistyped)."""
    from pyspark.sql import functions as F

    if table == "brokers":
        return [_negative("broker_id"),
                *[check for name in ("network_in_capacity_bytes_per_s", "network_out_capacity_bytes_per_s")
                  for check in (_negative(name), F.when(F.col(name) == 0, F.lit(f"{name} is zero; a capacity "
                                                                              f"must be positive")))]]
    if table == "log_dirs":
        return [_negative("broker_id"),
                F.when(~F.col("path").startswith("/"), F.format_string("path must be an absolute path (got %s)",
                                                                      _quoted("path"))),
                F.when(~F.col("media").isin(*MEDIA), F.format_string("media must be \"ssd\" or \"hdd\" (got %s)",
                                                                     _quoted("media"))),
                _negative("capacity_bytes"),
                F.when(F.col("capacity_bytes") == 0, F.lit("capacity_bytes is zero; a capacity must be positive")),
                _negative("used_bytes")]
    replicas = F.col("replicas")
    return [F.when(F.col("topic") == "", F.lit("topic is empty")),
            _negative("partition"),
            F.when(F.size(replicas) == 0, F.lit("replicas is empty; a partition needs at least one replica")),
            F.when(F.exists(replicas, lambda b: b < 0), F.format_string("replicas has a negative broker id (%s)",
                                                                       F.to_json(replicas))),
            F.when(F.size(F.array_distinct(replicas)) != F.size(replicas),
                   F.format_string("replicas lists a broker more than once (%s)", F.to_json(replicas))),
            F.when(F.size("log_dirs") != F.size(replicas),
                   F.format_string("log_dirs has %d entries for %d replicas", F.size("log_dirs"), F.size(replicas))),
            F.when((F.col("leader") != -1) & ~F.array_contains(replicas, F.col("leader")),
                   F.format_string("leader %d is not one of the replicas %s (use -1 for no leader)", "leader",
                                   F.to_json(replicas))),
            _negative("size_bytes"), _negative("bytes_in_per_s"), _negative("bytes_out_per_s")]


def _duplicates(frame, keys: tuple[str, ...], describe):
    """Every row whose key an earlier row has (the first stays unflagged)."""
    from functools import reduce

    from pyspark.sql import Window
    from pyspark.sql import functions as F

    order = [F.col("_line").asc_nulls_last(), F.col("_where")]
    window = Window.partitionBy(*keys).orderBy(*order)
    complete = reduce(lambda a, b: a & b, [F.col(k).isNotNull() for k in keys])
    ranked = (frame.where(complete)
              .withColumn("_rank", F.row_number().over(window))
              .withColumn("_first", F.first("_where").over(window)))
    return ranked.where(F.col("_rank") > 1).select(
        "_line", "_where", F.lit(100).alias("_seq"),
        F.concat(describe, F.lit(" (first at "), F.col("_first"), F.lit(")")).alias("_message"))


def _unknown_brokers_of_dirs(log_dirs, brokers):
    from pyspark.sql import functions as F

    known = F.broadcast(brokers.where(F.col("broker_id").isNotNull()).select("broker_id").distinct())
    unknown = log_dirs.where(F.col("broker_id").isNotNull()).join(known, "broker_id", "left_anti")
    return unknown.select("_line", "_where", F.lit(101).alias("_seq"),
                          F.format_string("broker_id %d is not a broker in the brokers table", "broker_id")
                          .alias("_message"))


def _unknown_replicas(partitions, brokers, log_dirs):
    """Replicas on brokers the snapshot lacks, and dirs that are not their broker's."""
    from pyspark.sql import functions as F

    replicas = (partitions.where(F.col("replicas").isNotNull())
                .select("_line", "_where", "log_dirs", F.posexplode("replicas").alias("_index", "broker_id")))
    # Brokers and dirs are few (thousands at most): broadcast, no shuffle of the replicas.
    known = F.broadcast(brokers.where(F.col("broker_id").isNotNull()).select("broker_id").distinct())
    unknown = replicas.join(known, "broker_id", "left_anti")
    yield unknown.select("_line", "_where", (F.lit(200) + F.col("_index")).alias("_seq"),
                         F.format_string("replicas[%d] = %d is not a broker in the brokers table", "_index",
                                         "broker_id").alias("_message"))
    dirs = F.broadcast(log_dirs.where(F.col("path").isNotNull() & F.col("broker_id").isNotNull())
                       .select("broker_id", F.col("path").alias("_path")).distinct())
    placed = (replicas.join(known, "broker_id", "left_semi")
              .where(F.size("log_dirs") > F.col("_index"))
              .withColumn("_path", F.get("log_dirs", F.col("_index"))))
    misplaced = placed.join(dirs, ["broker_id", "_path"], "left_anti")
    yield misplaced.select("_line", "_where", (F.lit(300) + F.col("_index")).alias("_seq"),
                           F.format_string("log_dirs[%d] = %s is not a log dir of broker %d in the log_dirs table",
                                           "_index", _quoted("_path"), "broker_id").alias("_message"))
