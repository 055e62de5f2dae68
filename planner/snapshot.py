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
        errors, more = _first_errors(raw, {t: p.name for t, p in files.items()}, max_errors)
    except BaseException:
        _unpersist(raw)
        raise
    if errors:
        _unpersist(raw)
        raise SnapshotError(errors, more=more)
    clean = {t: raw[t].select(*[name for name, _, _ in FIELDS[t]]) for t in TABLES}
    return Snapshot(clean["brokers"], clean["log_dirs"], clean["partitions"], str(directory))


def _unpersist(frames: dict) -> None:
    for frame in frames.values():
        frame.unpersist()


# --- reading: typed columns plus `_line` (JSON Lines) and `_where` (for messages)
#
# Expressions are SQL text: each is one call from Python to Spark's JVM,
# where a tree of Column objects costs a call per node (thousands per
# snapshot, which dominated reading a small one).

def _read_table(spark, table: str, path: Path):
    if path.suffix == ".parquet":
        return _read_parquet(spark, table, path)
    return _read_json_lines(spark, table, path)


def _read_json_lines(spark, table: str, path: Path):
    # zipWithIndex numbers the lines in file order, exactly, across splits.
    numbered = (spark.sparkContext.textFile(str(path.resolve()))
                .zipWithIndex()
                .map(lambda pair: (pair[1] + 1, pair[0])))
    lines = spark.createDataFrame(numbered, "_line long, _text string").where("trim(_text) != ''")
    parsed = lines.selectExpr("_line", "try_parse_json(_text) AS _v")
    columns, checks = [], []
    for name, kind, nullable in FIELDS[table]:
        value, check = _json_field(name, kind, nullable)
        columns.append(f"{value} AS `{name}`")
        checks.append(check)
    not_object = ("CASE WHEN coalesce(NOT startswith(schema_of_variant(_v), 'OBJECT<'), true) "
                  "THEN 'not a JSON object' END")
    # A line that is not an object gets that one error, not one per field.
    type_errors = (f"CASE WHEN ({not_object}) IS NOT NULL THEN array({not_object}) "
                   f"ELSE array_compact(array({', '.join(checks)})) END AS _type_errors")
    return parsed.selectExpr("_line", "concat('line ', CAST(_line AS STRING)) AS _where", *columns, type_errors)


def _json_field(name: str, kind: str, nullable: bool) -> tuple[str, str]:
    """(the typed value, the error message or null) of one field of a parsed line, as SQL."""
    raw = f"variant_get(_v, '$.{name}')"
    json_type = f"schema_of_variant({raw})"
    if kind in ("int", "long"):
        ok = f"{json_type} = 'BIGINT'"
        if kind == "int":
            ok += f" AND try_variant_get(_v, '$.{name}', 'int') IS NOT NULL"
    elif kind == "double":
        ok = f"({json_type} IN ('BIGINT', 'DOUBLE', 'FLOAT') OR startswith({json_type}, 'DECIMAL'))"
    elif kind == "string":
        ok = f"{json_type} = 'STRING'"
    elif kind == "int_array":
        ok = (f"{json_type} IN ('ARRAY<BIGINT>', 'ARRAY<VOID>') AND NOT exists("
              f"try_variant_get(_v, '$.{name}', 'array<bigint>'), x -> x IS NULL OR x < -1 OR x > {INT_MAX})")
    else:
        ok = (f"{json_type} IN ('ARRAY<STRING>', 'ARRAY<VOID>') AND NOT exists("
              f"try_variant_get(_v, '$.{name}', 'array<string>'), x -> x IS NULL)")
    if_null = "NULL" if nullable else f"'{name} is null'"
    error = (f"CASE WHEN {json_type} IS NULL THEN '{name} is missing' WHEN {json_type} = 'VOID' THEN {if_null} "
             f"WHEN NOT ({ok}) THEN concat('{name} must be {_KIND_TEXT[kind]} (got ', to_json({raw}), ')') END")
    value = f"CASE WHEN {ok} THEN try_variant_get(_v, '$.{name}', '{_SQL_TYPES[kind]}') END"
    return value, error


def _read_parquet(spark, table: str, path: Path):
    frame = spark.read.parquet(str(path.resolve()))
    problems = _parquet_schema_problems(frame.schema, table, path.name)
    if problems:
        raise SnapshotError(problems)
    columns, checks = [], []
    for name, kind, nullable in FIELDS[table]:
        columns.append(f"CAST(`{name}` AS {_SQL_TYPES[kind]}) AS `{name}`")
        if not nullable:
            checks.append(f"CASE WHEN `{name}` IS NULL THEN '{name} is null' END")
        if kind.endswith("_array"):
            checks.append(f"CASE WHEN exists(`{name}`, x -> x IS NULL) THEN '{name} has a null entry' END")
    typed = frame.selectExpr(*columns, f"array_compact(array({', '.join(checks)})) AS _type_errors")
    return typed.selectExpr("CAST(NULL AS BIGINT) AS _line", f"{_parquet_where(table)} AS _where",
                            *[f"`{name}`" for name, _, _ in FIELDS[table]], "_type_errors")


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


def _parquet_where(table: str) -> str:
    """Parquet has no lines: a row is named by its key."""
    if table == "partitions":
        return ("format_string('row (topic %s partition %s)', coalesce(" + _quoted("topic") + ", '?'), "
                "coalesce(CAST(`partition` AS STRING), '?'))")
    if table == "log_dirs":
        return ("format_string('row (broker_id %s path %s)', coalesce(CAST(broker_id AS STRING), '?'), "
                "coalesce(path, '?'))")
    return "format_string('row (broker_id %s)', coalesce(CAST(broker_id AS STRING), '?'))"


# --- validation: every check yields (where, message) rows; the first few are collected

def _first_errors(raw: dict, names: dict[str, str], max_errors: int) -> tuple[list[str], bool]:
    """The first errors in file order, and whether there are more; one Spark job
    (the empty-table checks ride along, ranked after every other error)."""
    from functools import reduce

    from pyspark.sql import functions as F

    found = []
    for rank, table in enumerate(TABLES):
        for frame in _checks(table, raw):
            found.append(frame.selectExpr(f"{rank} AS _rank", f"'{names[table]}' AS _file",
                                          "_line", "_where", "_seq", "_message"))
    for rank, table in enumerate(TABLES):
        # one row when the table has none (an anti join of a single row against at most one)
        empty = raw[table].sparkSession.range(1).join(raw[table].limit(1), how="left_anti")
        found.append(empty.selectExpr(f"{len(TABLES) + rank} AS _rank", f"'{names[table]}' AS _file",
                                      "CAST(NULL AS BIGINT) AS _line", "'' AS _where", "0 AS _seq",
                                      "'no rows; a snapshot needs at least one' AS _message"))
    errors = reduce(lambda a, b: a.unionByName(b), found)
    first = (errors.orderBy("_rank", F.col("_line").asc_nulls_last(), "_where", "_seq", "_message")
             .limit(max_errors + 1).collect())
    messages = [f"{r._file} {r._where}: {r._message}" for r in first if r._rank < len(TABLES)]
    if len(messages) >= max_errors:
        return messages[:max_errors], len(messages) > max_errors
    # as many empty tables as there is room for, never counted as "more"
    room = max_errors - len(messages)
    return messages + [f"{r._file}: {r._message}" for r in first if r._rank >= len(TABLES)][:room], False


def _checks(table: str, raw: dict):
    """DataFrames of (_line, _where, _seq, _message) for one table."""
    frame = raw[table]
    row_errors = frame.selectExpr(
        "_line", "_where", f"concat(_type_errors, array_compact(array({', '.join(_row_checks(table))}))) AS _all")
    yield row_errors.selectExpr("_line", "_where", "posexplode(_all) AS (_seq, _message)")
    yield _duplicates(frame, _KEYS[table], _describe_key(table))
    if table == "log_dirs":
        yield _unknown_brokers_of_dirs(frame, raw["brokers"])
    if table == "partitions":
        yield from _unknown_replicas(frame, raw["brokers"], raw["log_dirs"])


_KEYS = {"brokers": ("broker_id",), "log_dirs": ("broker_id", "path"), "partitions": ("topic", "partition")}


def _describe_key(table: str) -> str:
    if table == "brokers":
        return "format_string('duplicate broker %d', broker_id)"
    if table == "log_dirs":
        return f"format_string('duplicate log dir %s of broker %d', {_quoted('path')}, broker_id)"
    return "format_string('duplicate partition %s-%d', topic, `partition`)"


def _quoted(column: str) -> str:
    """A string column as a JSON string literal (quotes and escapes), for messages."""
    return f"regexp_replace(to_json(array(`{column}`)), '^\\\\[|\\\\]$', '')"


def _negative(name: str) -> str:
    return f"CASE WHEN `{name}` < 0 THEN format_string('{name} is negative (%s)', CAST(`{name}` AS STRING)) END"


def _row_checks(table: str) -> list[str]:
    """Checks of one row's values (null when a value is missing or mistyped), as SQL."""
    if table == "brokers":
        return [_negative("broker_id"),
                *[check for name in ("network_in_capacity_bytes_per_s", "network_out_capacity_bytes_per_s")
                  for check in (_negative(name),
                                f"CASE WHEN {name} = 0 THEN '{name} is zero; a capacity must be positive' END")]]
    if table == "log_dirs":
        media = ", ".join(f"'{m}'" for m in MEDIA)
        return [_negative("broker_id"),
                "CASE WHEN NOT startswith(path, '/') THEN "
                f"format_string('path must be an absolute path (got %s)', {_quoted('path')}) END",
                f"CASE WHEN NOT media IN ({media}) THEN "
                f"format_string('media must be \"ssd\" or \"hdd\" (got %s)', {_quoted('media')}) END",
                _negative("capacity_bytes"),
                "CASE WHEN capacity_bytes = 0 THEN 'capacity_bytes is zero; a capacity must be positive' END",
                _negative("used_bytes")]
    return ["CASE WHEN topic = '' THEN 'topic is empty' END",
            _negative("partition"),
            "CASE WHEN size(replicas) = 0 THEN 'replicas is empty; a partition needs at least one replica' END",
            "CASE WHEN exists(replicas, b -> b < 0) THEN "
            "format_string('replicas has a negative broker id (%s)', to_json(replicas)) END",
            "CASE WHEN size(array_distinct(replicas)) != size(replicas) THEN "
            "format_string('replicas lists a broker more than once (%s)', to_json(replicas)) END",
            "CASE WHEN size(log_dirs) != size(replicas) THEN "
            "format_string('log_dirs has %d entries for %d replicas', size(log_dirs), size(replicas)) END",
            "CASE WHEN leader != -1 AND NOT array_contains(replicas, leader) THEN "
            "format_string('leader %d is not one of the replicas %s (use -1 for no leader)', leader, "
            "to_json(replicas)) END",
            _negative("size_bytes"), _negative("bytes_in_per_s"), _negative("bytes_out_per_s")]


def _duplicates(frame, keys: tuple[str, ...], describe: str):
    """Every row whose key an earlier row has (the first stays unflagged)."""
    window = (f"(PARTITION BY {', '.join(f'`{k}`' for k in keys)} "
              f"ORDER BY _line ASC NULLS LAST, _where)")
    complete = " AND ".join(f"`{k}` IS NOT NULL" for k in keys)
    ranked = frame.where(complete).selectExpr(
        "*", f"row_number() OVER {window} AS _rank", f"first(_where) OVER {window} AS _first")
    return ranked.where("_rank > 1").selectExpr(
        "_line", "_where", "100 AS _seq", f"concat({describe}, ' (first at ', _first, ')') AS _message")


def _unknown_brokers_of_dirs(log_dirs, brokers):
    from pyspark.sql import functions as F

    known = F.broadcast(brokers.where("broker_id IS NOT NULL").select("broker_id").distinct())
    unknown = log_dirs.where("broker_id IS NOT NULL").join(known, "broker_id", "left_anti")
    return unknown.selectExpr("_line", "_where", "101 AS _seq",
                              "format_string('broker_id %d is not a broker in the brokers table', broker_id) "
                              "AS _message")


def _unknown_replicas(partitions, brokers, log_dirs):
    """Replicas on brokers the snapshot lacks, and dirs that are not their broker's."""
    from pyspark.sql import functions as F

    replicas = (partitions.where("replicas IS NOT NULL")
                .selectExpr("_line", "_where", "log_dirs", "posexplode(replicas) AS (_index, broker_id)"))
    # Brokers and dirs are few (thousands at most): broadcast, no shuffle of the replicas.
    known = F.broadcast(brokers.where("broker_id IS NOT NULL").select("broker_id").distinct())
    unknown = replicas.join(known, "broker_id", "left_anti")
    yield unknown.selectExpr(
        "_line", "_where", "200 + _index AS _seq",
        "format_string('replicas[%d] = %d is not a broker in the brokers table', _index, broker_id) AS _message")
    dirs = F.broadcast(log_dirs.where("path IS NOT NULL AND broker_id IS NOT NULL")
                       .selectExpr("broker_id", "path AS _path").distinct())
    placed = (replicas.join(known, "broker_id", "left_semi")
              .where("size(log_dirs) > _index")
              .selectExpr("*", "get(log_dirs, _index) AS _path"))
    misplaced = placed.join(dirs, ["broker_id", "_path"], "left_anti")
    yield misplaced.selectExpr(
        "_line", "_where", "300 + _index AS _seq",
        "format_string('log_dirs[%d] = %s is not a log dir of broker %d in the log_dirs table', _index, "
        f"{_quoted('_path')}, broker_id) AS _message")
