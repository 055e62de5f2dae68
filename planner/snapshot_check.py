"""Checking a snapshot's files in plain Python, before Spark starts.

A snapshot (docs/planner.md, "The snapshot") is three tables, each JSON
Lines or Parquet, and an optional snapshot.json. `check_snapshot` reads them
once, streaming, and refuses a bad one with its first few errors, each
naming the file, the line (JSON Lines, 1-based, blank lines counted) or the
row's key (Parquet has no lines) and the field. Spark is started only for a
snapshot that passes, and then reads it without checking again
(planner/snapshot.py).

Rules:
- Types are strict, as JSON has them: an integer given as `"5"`, `5.5` or
  `5.0` is refused, not cast (JSON numbers with a fraction or an exponent
  are not integers); booleans are not numbers. A line is a JSON object, with
  no duplicate keys and nothing after it.
- Errors are ordered by table (brokers, log_dirs, partitions), then line
  (JSON Lines) or the row's key text (Parquet), then the order of the
  checks; empty tables come last and fill only the room left.
- Memory: the first max_errors + 1 errors (a bounded heap, however bad the
  file), the broker ids, the (broker, dir) pairs and the table keys seen (for
  duplicates); never the partitions' rows. The brokers' and log dirs' rows
  (one per broker and per dir) are kept, typed: the job takes them from
  here rather than reading those files again (planner/snapshot.py).
- Parquet is read with pyarrow, a batch at a time; its columns are typed as
  Spark would read them (unsigned 64-bit is a decimal, as in Spark).
"""

from __future__ import annotations

import heapq
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

TABLES = ("brokers", "log_dirs", "partitions")
SMALL_TABLES = ("brokers", "log_dirs")     # a row per broker or dir: kept by the check
MEDIA = ("ssd", "hdd")
META_FILE = "snapshot.json"
MAX_ERRORS = 5
INT_MIN, INT_MAX = -2**31, 2**31 - 1
LONG_MIN, LONG_MAX = -2**63, 2**63 - 1
PARQUET_BATCH_ROWS = 65_536

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
KIND_TEXT = {"int": "an integer", "long": "an integer", "double": "a number", "string": "a string",
             "int_array": "a list of integers", "string_array": "a list of strings"}
_KEYS = {"brokers": ("broker_id",), "log_dirs": ("broker_id", "path"), "partitions": ("topic", "partition")}
_NO_LINE = math.inf      # Parquet rows sort by their key text alone


class SnapshotError(ValueError):
    """The snapshot is unreadable or invalid; `errors` are its first few problems."""

    def __init__(self, errors: list[str], more: bool = False):
        self.errors = list(errors)
        self.more = more
        suffix = "\n(more errors not shown)" if more else ""
        super().__init__("\n".join(self.errors) + suffix)


@dataclass(frozen=True)
class CheckedSnapshot:
    """What the check learnt, for the options' checks and the job (no rows)."""

    directory: Path
    files: dict[str, Path]
    rows: dict[str, int]                         # per table
    broker_ids: frozenset[int]
    replicas_per_broker: dict[int, int]
    reassigning_partitions: int = 0              # snapshot.json: recorded mid-reassignment
    small_tables: dict[str, tuple[tuple, ...]] = field(default_factory=dict)  # SMALL_TABLES' rows, FIELDS order


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


def check_snapshot(directory, max_errors: int = MAX_ERRORS) -> CheckedSnapshot:
    """The snapshot's summary when every table is valid; else SnapshotError with the first errors."""
    directory = Path(directory)
    files = table_files(directory)
    reassigning = _read_meta(directory)
    for table, path in files.items():           # a Parquet table of the wrong shape stops here
        if path.suffix == ".parquet":
            problems = _parquet_schema_problems(table, path)
            if problems:
                raise SnapshotError(problems)
    seen = _Seen()
    ranked = (error for rank, table in enumerate(TABLES)
              for error in _table_errors(rank, table, files[table], seen))
    first = heapq.nsmallest(max_errors + 1, ranked)
    messages = [f"{file} {where}: {message}" for _, _, where, _, message, file in first]
    if len(messages) >= max_errors:
        raise SnapshotError(messages[:max_errors], more=len(messages) > max_errors)
    empty = [f"{files[t].name}: no rows; a snapshot needs at least one" for t in TABLES if not seen.rows[t]]
    if messages or empty:     # empty tables fill the room left, never counted as "more"
        raise SnapshotError(messages + empty[:max_errors - len(messages)])
    return CheckedSnapshot(directory, files, dict(seen.rows), frozenset(seen.brokers), dict(seen.replicas),
                           reassigning, {t: tuple(seen.small[t]) for t in SMALL_TABLES})


def _read_meta(directory: Path) -> int:
    """snapshot.json's reassigning_partitions (0 without the file); unknown keys are ignored."""
    path = directory / META_FILE
    if not path.exists():
        return 0
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise SnapshotError([f"{META_FILE}: not readable as JSON ({error})"]) from None
    if not isinstance(meta, dict):
        raise SnapshotError([f"{META_FILE}: not a JSON object"])
    count = meta.get("reassigning_partitions", 0)
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise SnapshotError([f"{META_FILE}: reassigning_partitions must be an integer >= 0 (got "
                             f"{json.dumps(count)})"])
    return count


# --- one table: its rows' errors as sortable tuples (rank, line, where, seq, message, file)

@dataclass
class _Seen:
    """What later tables are checked against, and what the job needs."""

    brokers: set[int] = field(default_factory=set)
    dirs: set[tuple[int, str]] = field(default_factory=set)
    rows: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TABLES, 0))
    replicas: dict[int, int] = field(default_factory=dict)
    small: dict[str, list[tuple]] = field(default_factory=lambda: {t: [] for t in SMALL_TABLES})


@dataclass
class _Row:
    line: int | None          # JSON Lines: 1-based; Parquet: None
    where: str                # "line 7" or "row (broker_id 3)"
    values: dict              # typed values; None when missing, null or mistyped
    type_errors: list[str]


def _table_errors(rank: int, table: str, path: Path, seen: _Seen) -> Iterator[tuple]:
    rows = _parquet_rows(table, path) if path.suffix == ".parquet" else _json_rows(table, path)
    first_at: dict[tuple, str] = {}
    for row in rows:
        seen.rows[table] += 1
        line = _NO_LINE if row.line is None else row.line
        problems = list(enumerate(row.type_errors + _row_checks(table, row.values)))
        problems += _key_problems(table, row, first_at)
        problems += _reference_problems(table, row.values, seen)
        for seq, message in problems:
            yield rank, line, row.where, seq, message, path.name
        _remember(table, row.values, seen)


def _remember(table: str, values: dict, seen: _Seen) -> None:
    if table in seen.small:
        seen.small[table].append(tuple(values[name] for name, _, _ in FIELDS[table]))
    if table == "brokers" and values["broker_id"] is not None:
        seen.brokers.add(values["broker_id"])
    elif table == "log_dirs" and values["broker_id"] is not None and values["path"] is not None:
        seen.dirs.add((values["broker_id"], values["path"]))
    elif table == "partitions" and values["replicas"] is not None:
        for broker_id in values["replicas"]:
            seen.replicas[broker_id] = seen.replicas.get(broker_id, 0) + 1


def _key_problems(table: str, row: _Row, first_at: dict) -> list[tuple[int, str]]:
    """A row whose key an earlier row has (the first stays unflagged)."""
    key = tuple(row.values[k] for k in _KEYS[table])
    if any(k is None for k in key):
        return []
    if key not in first_at:
        first_at[key] = row.where
        return []
    first = first_at[key]
    if table == "brokers":
        described = f"duplicate broker {key[0]}"
    elif table == "log_dirs":
        described = f"duplicate log dir {quoted(key[1])} of broker {key[0]}"
    else:
        described = f"duplicate partition {key[0]}-{key[1]}"
    return [(100, f"{described} (first at {first})")]


def _reference_problems(table: str, values: dict, seen: _Seen) -> list[tuple[int, str]]:
    """Dirs of unknown brokers; replicas on unknown brokers or in dirs that are not their broker's."""
    if table == "log_dirs":
        broker_id = values["broker_id"]
        if broker_id is not None and broker_id not in seen.brokers:
            return [(101, f"broker_id {broker_id} is not a broker in the brokers table")]
        return []
    if table != "partitions" or values["replicas"] is None:
        return []
    problems = []
    dirs = values["log_dirs"]
    for index, broker_id in enumerate(values["replicas"]):
        if broker_id not in seen.brokers:
            problems.append((200 + index, f"replicas[{index}] = {broker_id} is not a broker in the brokers table"))
        elif dirs is not None and index < len(dirs) and (broker_id, dirs[index]) not in seen.dirs:
            problems.append((300 + index, f"log_dirs[{index}] = {quoted(dirs[index])} is not a log dir of broker "
                                          f"{broker_id} in the log_dirs table"))
    return problems


# --- checks of one row's values (a value that is None was missing or mistyped: not checked again)

def _row_checks(table: str, v: dict) -> list[str]:
    if table == "brokers":
        return [*_negative(v, "broker_id"),
                *[m for name in ("network_in_capacity_bytes_per_s", "network_out_capacity_bytes_per_s")
                  for m in (*_negative(v, name), *_zero(v, name))]]
    if table == "log_dirs":
        return [*_negative(v, "broker_id"),
                *([f"path must be an absolute path (got {quoted(v['path'])})"]
                  if v["path"] is not None and not v["path"].startswith("/") else []),
                *([f'media must be "ssd" or "hdd" (got {quoted(v["media"])})']
                  if v["media"] is not None and v["media"] not in MEDIA else []),
                *_negative(v, "capacity_bytes"), *_zero(v, "capacity_bytes"), *_negative(v, "used_bytes")]
    return _partition_checks(v)


def _partition_checks(v: dict) -> list[str]:
    replicas, dirs, leader = v["replicas"], v["log_dirs"], v["leader"]
    found = ["topic is empty"] if v["topic"] == "" else []
    found += _negative(v, "partition")
    if replicas is not None:
        if not replicas:
            found.append("replicas is empty; a partition needs at least one replica")
        if any(b < 0 for b in replicas):
            found.append(f"replicas has a negative broker id ({_compact(replicas)})")
        if len(set(replicas)) != len(replicas):
            found.append(f"replicas lists a broker more than once ({_compact(replicas)})")
        if dirs is not None and len(dirs) != len(replicas):
            found.append(f"log_dirs has {len(dirs)} entries for {len(replicas)} replicas")
        if leader is not None and leader != -1 and leader not in replicas:
            found.append(f"leader {leader} is not one of the replicas {_compact(replicas)} (use -1 for no leader)")
    for name in ("size_bytes", "bytes_in_per_s", "bytes_out_per_s"):
        found += _negative(v, name)
    return found


def _negative(values: dict, name: str) -> list[str]:
    value = values[name]
    if value is None or value >= 0:
        return []
    return [f"{name} is negative ({java_double(value) if isinstance(value, float) else value})"]


def _zero(values: dict, name: str) -> list[str]:
    return [f"{name} is zero; a capacity must be positive"] if values[name] == 0 else []


# --- JSON Lines

class _Number:
    """A JSON number with a fraction or an exponent, as written (never an integer)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def _no_constants(name: str):
    raise ValueError(f"{name} is not JSON")


def _no_duplicate_keys(pairs: list) -> dict:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise ValueError("duplicate key")
    return result


_DECODER = json.JSONDecoder(parse_float=_Number, parse_constant=_no_constants,
                            object_pairs_hook=_no_duplicate_keys)


def _json_rows(table: str, path: Path) -> Iterator[_Row]:
    for number, text in _numbered_lines(path):
        if not text.strip(" "):              # blank lines are counted, and skipped
            continue
        try:
            parsed = _DECODER.decode(text)
        except (ValueError, RecursionError):
            parsed = None
        where = f"line {number}"
        if not isinstance(parsed, dict):
            yield _Row(number, where, dict.fromkeys(name for name, _, _ in FIELDS[table]), ["not a JSON object"])
            continue
        values, errors = {}, []
        for name, kind, nullable in FIELDS[table]:
            values[name], error = _json_field(parsed, name, kind, nullable)
            if error:
                errors.append(error)
        yield _Row(number, where, values, errors)


def _numbered_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(1-based number, text) of each line; \\n, \\r\\n and a lone \\r end a line, as Hadoop's reader has it."""
    number = 0
    try:
        with open(path, "rb") as file:
            for raw in file:
                body = raw[:-1] if raw.endswith(b"\n") else raw
                body = body[:-1] if body.endswith(b"\r") else body
                for piece in body.split(b"\r"):
                    number += 1
                    yield number, piece.decode("utf-8", errors="replace")
    except OSError as error:
        raise SnapshotError([f"{path.name}: cannot read ({error.strerror or error})"]) from None


def _json_field(row: dict, name: str, kind: str, nullable: bool):
    """(typed value or None, error or None) of one field of a parsed line."""
    if name not in row:
        return None, f"{name} is missing"
    value = row[name]
    if value is None:
        return None, None if nullable else f"{name} is null"
    typed = _typed(value, kind)
    if typed is None:
        return None, f"{name} must be {KIND_TEXT[kind]} (got {spark_json(value)})"
    return typed, None


def _is_int(value, low: int, high: int) -> bool:
    return type(value) is int and low <= value <= high


def _typed(value, kind: str):
    """The value as its kind, or None when it is not one."""
    if kind == "int":
        return value if _is_int(value, INT_MIN, INT_MAX) else None
    if kind == "long":
        return value if _is_int(value, LONG_MIN, LONG_MAX) else None
    if kind == "double":
        if type(value) is int:
            return float(value)
        return float(value.text) if isinstance(value, _Number) else None
    if kind == "string":
        return value if isinstance(value, str) else None
    if not isinstance(value, list):
        return None
    if kind == "int_array":
        return value if all(_is_int(x, -1, INT_MAX) for x in value) else None
    return value if all(isinstance(x, str) for x in value) else None


# --- Parquet (pyarrow), typed as Spark reads it

def _parquet_dataset(path: Path):
    import pyarrow.dataset as ds

    try:
        return ds.dataset(str(path), format="parquet")
    except (OSError, ValueError) as error:     # pyarrow's errors derive from these
        raise SnapshotError([f"{path.name}: cannot read as Parquet ({error})"]) from None


def _parquet_schema_problems(table: str, path: Path) -> list[str]:
    schema = _parquet_dataset(path).schema
    problems = []
    for name, kind, nullable in FIELDS[table]:
        if schema.get_field_index(name) < 0:
            problems.append(f"{path.name}: column {name} is missing")
            continue
        spark_type = spark_type_name(schema.field(name).type)
        if not _accepted(spark_type, kind) and not (nullable and spark_type == "void"):   # void: all null
            problems.append(f"{path.name}: column {name} must be {KIND_TEXT[kind]}, is {spark_type}")
    return problems


_INTEGRAL = ("tinyint", "smallint", "int", "bigint")


def _accepted(spark_type: str, kind: str) -> bool:
    if kind in ("int", "long"):
        return spark_type in _INTEGRAL
    if kind == "double":
        return spark_type in (*_INTEGRAL, "float", "double") or spark_type.startswith("decimal(")
    if kind == "string":
        return spark_type == "string"
    element = spark_type[len("array<"):-1] if spark_type.startswith("array<") else None
    return element in (_INTEGRAL if kind == "int_array" else ("string",))


def spark_type_name(arrow_type) -> str:
    """Spark's simpleString of the type it reads an Arrow/Parquet column as (for messages)."""
    import pyarrow as pa
    import pyarrow.types as at

    if at.is_dictionary(arrow_type):
        return spark_type_name(arrow_type.value_type)
    simple = {pa.int8(): "tinyint", pa.int16(): "smallint", pa.int32(): "int", pa.int64(): "bigint",
              pa.uint8(): "smallint", pa.uint16(): "int", pa.uint32(): "bigint", pa.uint64(): "decimal(20,0)",
              pa.float16(): "float", pa.float32(): "float", pa.float64(): "double", pa.bool_(): "boolean",
              pa.string(): "string", pa.large_string(): "string", pa.binary(): "binary",
              pa.large_binary(): "binary", pa.date32(): "date", pa.null(): "void"}
    if arrow_type in simple:
        return simple[arrow_type]
    if at.is_decimal(arrow_type):
        return f"decimal({arrow_type.precision},{arrow_type.scale})"
    if at.is_list(arrow_type) or at.is_large_list(arrow_type) or at.is_fixed_size_list(arrow_type):
        return f"array<{spark_type_name(arrow_type.value_type)}>"
    if at.is_struct(arrow_type):
        return "struct<" + ",".join(f"{f.name}:{spark_type_name(f.type)}" for f in arrow_type) + ">"
    if at.is_map(arrow_type):
        return f"map<{spark_type_name(arrow_type.key_type)},{spark_type_name(arrow_type.item_type)}>"
    if at.is_timestamp(arrow_type):
        return "timestamp"
    return str(arrow_type)


def _parquet_rows(table: str, path: Path) -> Iterator[_Row]:
    names = [name for name, _, _ in FIELDS[table]]
    try:
        for batch in _parquet_dataset(path).to_batches(columns=names, batch_size=PARQUET_BATCH_ROWS):
            for record in batch.to_pylist():
                yield _parquet_row(table, record)
    except (OSError, ValueError) as error:
        raise SnapshotError([f"{path.name}: cannot read as Parquet ({error})"]) from None


def _parquet_row(table: str, record: dict) -> _Row:
    values, errors = {}, []
    for name, kind, nullable in FIELDS[table]:
        value = record[name]
        if value is None:
            values[name] = None
            if not nullable:
                errors.append(f"{name} is null")
            continue
        if kind.endswith("_array") and any(x is None for x in value):
            values[name] = None
            errors.append(f"{name} has a null entry")
            continue
        values[name] = _parquet_value(value, kind)
        if values[name] is None:                 # beyond a 32-bit integer
            errors.append(f"{name} must be {KIND_TEXT[kind]} (got {spark_json(value)})")
    return _Row(None, _parquet_where(table, values), values, errors)


def _parquet_value(value, kind: str):
    if kind == "double":
        return float(value)
    if kind == "int":
        return value if INT_MIN <= value <= INT_MAX else None
    if kind == "int_array":
        return value if all(INT_MIN <= x <= INT_MAX for x in value) else None
    return value


def _parquet_where(table: str, v: dict) -> str:
    """Parquet has no lines: a row is named by its key."""
    if table == "partitions":
        partition = "?" if v["partition"] is None else v["partition"]
        return f"row (topic {quoted(v['topic'])} partition {partition})"
    broker_id = "?" if v["broker_id"] is None else v["broker_id"]
    if table == "log_dirs":
        return f"row (broker_id {broker_id} path {'?' if v['path'] is None else v['path']})"
    return f"row (broker_id {broker_id})"


# --- values in messages, written as Spark writes them

_UNICODE_ESCAPE = re.compile(r"(\\\\)|\\u([0-9a-f]{4})")


def quoted(text: str | None) -> str:
    """A string as a JSON literal, escaped as Spark's JSON writer does (upper-case \\u escapes)."""
    literal = json.dumps(text, ensure_ascii=False)
    return _UNICODE_ESCAPE.sub(lambda m: m.group(1) or "\\u" + m.group(2).upper(), literal)


def _compact(values: list) -> str:
    return json.dumps(values, separators=(",", ":"))


def spark_json(value) -> str:
    """A parsed JSON value as Spark's to_json of its variant: compact, keys sorted, a number with a
    fraction as a decimal without trailing zeros, one with an exponent as a Java double."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int):
        return str(value) if len(str(abs(value))) <= 38 else java_double(float(value))
    if isinstance(value, _Number):
        return _spark_number(value.text)
    if isinstance(value, float):
        return java_double(value)
    if isinstance(value, str):
        return quoted(value)
    if isinstance(value, list):
        return "[" + ",".join(spark_json(x) for x in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{quoted(k)}:{spark_json(value[k])}" for k in sorted(value)) + "}"
    return str(value)          # a Parquet decimal


def _spark_number(text: str) -> str:
    from decimal import Decimal

    if "e" in text or "E" in text:
        return java_double(float(text))
    number = Decimal(text)
    if len(number.as_tuple().digits) > 38:
        return java_double(float(text))
    plain = format(number, "f")
    plain = plain.rstrip("0").rstrip(".") if "." in plain else plain
    return "0" if plain in ("-0", "") else plain


def java_double(value: float) -> str:
    """Java's Double.toString (which Spark's CAST(double AS STRING) uses): plain between 1e-3 and
    1e7, else d.dddE±n; always a fraction digit."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1, value) < 0 else "0.0"
    magnitude = abs(value)
    if 1e-3 <= magnitude < 1e7:
        text = repr(value)
        return text if "." in text else text + ".0"
    from decimal import Decimal

    shortest = Decimal(repr(magnitude)).as_tuple()      # Python's repr: the shortest round-trip digits
    digits = "".join(map(str, shortest.digits)).rstrip("0") or "0"
    exponent = len(shortest.digits) + shortest.exponent - 1
    return f"{'-' if value < 0 else ''}{digits[0]}.{digits[1:] or '0'}E{exponent}"
