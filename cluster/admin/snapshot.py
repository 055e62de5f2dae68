"""Cluster snapshots for the placement planner: scrape, build, check, write.

A snapshot is a directory of three JSON Lines files (docs/snapshot.md):
brokers.jsonl, log_dirs.jsonl and partitions.jsonl, and snapshot.json saying
how it was taken (mid-reassignment or not: snapshot_moves.py). It is built from
ZooKeeper (assignment, leaders, live brokers and racks) and from every live
broker's GET /metrics (log sizes and dirs, byte rates, log dir capacity and
use). Every row is checked before anything is written, and the directory
appears whole or not at all (written under a temporary name, then renamed).
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from kafkactl.cluster.log.durable import fsync_dir

BROKERS_FILE = "brokers.jsonl"
LOG_DIRS_FILE = "log_dirs.jsonl"
PARTITIONS_FILE = "partitions.jsonl"
FILES = (BROKERS_FILE, LOG_DIRS_FILE, PARTITIONS_FILE)
META_FILE = "snapshot.json"      # how the snapshot was taken (docs/snapshot.md)
MEDIA = ("ssd", "hdd")
SCRAPE_TIMEOUT_S = 10.0
MAX_SCRAPE_BYTES = 512 * 1024 * 1024   # about 5 million partition series
MAX_SCRAPE_THREADS = 16
RATE_DECIMALS = 3


class SnapshotError(Exception):
    """The snapshot cannot be built or written; the message says why."""


class CapacityFileError(SnapshotError):
    """The capacities are malformed or missing; the message names the file
    and field, or the option to pass."""


# --- one broker's metrics ------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class DirMetrics:
    path: str
    media: str
    capacity_bytes: int
    used_bytes: int


@dataclass(slots=True)
class ReplicaMetrics:
    size_bytes: int
    log_dir: str
    bytes_in_per_s: float = 0.0
    bytes_out_per_s: float = 0.0


@dataclass(slots=True)
class BrokerMetrics:
    """What a snapshot needs from one broker's /metrics page."""

    broker_id: int
    dirs: dict[str, DirMetrics] = field(default_factory=dict)
    replicas: dict[tuple[str, int], ReplicaMetrics] = field(default_factory=dict)


_WANTED = ("kafka_log_size_bytes{", "kafka_partition_bytes_in_per_second{",
           "kafka_partition_bytes_out_per_second{", "kafka_log_dir_capacity_bytes{", "kafka_log_dir_used_bytes{")
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\} (\S+)(?: \S+)?$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?')
_ESCAPE = re.compile(r"\\(.)")


def _unescape(value: str) -> str:
    if "\\" not in value:
        return value
    return _ESCAPE.sub(lambda m: "\n" if m.group(1) == "n" else m.group(1), value)


def _labels(text: str) -> dict[str, str]:
    return {name: _unescape(value) for name, value in _LABEL.findall(text)}


def parse_metrics(broker_id: int, page: str) -> BrokerMetrics:
    """The families a snapshot uses, from a Prometheus text page (others are skipped)."""
    result = BrokerMetrics(broker_id)
    capacity: dict[str, tuple[str, int]] = {}
    used: dict[str, int] = {}
    rates: list[tuple[str, tuple[str, int], float]] = []
    for line in page.splitlines():
        if not line.startswith(_WANTED):
            continue
        match = _SAMPLE.match(line)
        if match is None:
            raise SnapshotError(f"broker {broker_id}: cannot read metrics line {line[:200]!r}")
        name, labels, value = match.group(1), _labels(match.group(2)), _number(broker_id, line, match.group(3))
        try:
            if name == "kafka_log_size_bytes":
                key = (labels["topic"], int(labels["partition"]))
                result.replicas[key] = ReplicaMetrics(int(value), labels["log_dir"])
            elif name == "kafka_log_dir_capacity_bytes":
                capacity[labels["path"]] = (labels["media"], int(value))
            elif name == "kafka_log_dir_used_bytes":
                used[labels["path"]] = int(value)
            else:
                rates.append((name, (labels["topic"], int(labels["partition"])), value))
        except (KeyError, ValueError) as error:
            raise SnapshotError(f"broker {broker_id}: metrics line lacks {error}: {line[:200]!r}") from None
    for name, key, value in rates:
        replica = result.replicas.get(key)
        if replica is not None:
            if name == "kafka_partition_bytes_in_per_second":
                replica.bytes_in_per_s = value
            else:
                replica.bytes_out_per_s = value
    for path, (media, capacity_bytes) in capacity.items():
        result.dirs[path] = DirMetrics(path, media, capacity_bytes, used.get(path, 0))
    return result


def _number(broker_id: int, line: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise SnapshotError(f"broker {broker_id}: not a number in metrics line {line[:200]!r}") from None
    if not math.isfinite(value):
        raise SnapshotError(f"broker {broker_id}: {text} in metrics line {line[:200]!r}")
    return value


# --- scraping ----------------------------------------------------------------------------

def fetch_page(url: str, timeout_s: float, max_bytes: int = MAX_SCRAPE_BYTES) -> str:
    """GET url within timeout_s per socket operation; raises OSError (URLError) on failure."""
    with urllib.request.urlopen(url, timeout=timeout_s) as response:
        body = response.read(max_bytes + 1)
    if len(body) > max_bytes:
        raise OSError(f"answer larger than {max_bytes} bytes")
    return body.decode("utf-8")


def scrape_brokers(endpoints: Mapping[int, str], timeout_s: float = SCRAPE_TIMEOUT_S,
                   fetch=None) -> dict[int, BrokerMetrics]:
    """Every broker's metrics, fetched concurrently; SnapshotError naming every
    broker that did not answer (or answered something unreadable)."""
    if not endpoints:
        return {}
    fetch = fetch or fetch_page

    def one(item):
        broker_id, url = item
        try:
            return broker_id, parse_metrics(broker_id, fetch(url, timeout_s)), None
        except (OSError, UnicodeDecodeError, SnapshotError) as error:
            return broker_id, None, f"broker {broker_id} ({url}): {_reason(error)}"

    with ThreadPoolExecutor(max_workers=min(MAX_SCRAPE_THREADS, len(endpoints))) as pool:
        results = list(pool.map(one, sorted(endpoints.items())))
    failures = [failure for _, _, failure in results if failure]
    if failures:
        raise SnapshotError("no answer from the metrics endpoint of " + "; ".join(failures))
    return {broker_id: metrics for broker_id, metrics, _ in results}


def _reason(error: Exception) -> str:
    if isinstance(error, urllib.error.HTTPError):
        return f"HTTP {error.code} {error.reason}"
    if isinstance(error, urllib.error.URLError):
        return str(error.reason)
    return str(error)


# --- capacities --------------------------------------------------------------------------

NETWORK_IN = "network_in_capacity_bytes_per_s"
NETWORK_OUT = "network_out_capacity_bytes_per_s"


@dataclass(frozen=True, slots=True)
class Capacities:
    """Network capacities per broker (bytes/s) and log dir capacity overrides.

    A broker's network capacity: its entry in the capacity file, else the
    command-line value, else the file's default.
    """

    network_in_bytes_per_s: int | None = None        # from the command line
    network_out_bytes_per_s: int | None = None
    file_default: dict[str, int] = field(default_factory=dict)
    file_brokers: dict[int, dict[str, int]] = field(default_factory=dict)
    dir_capacity_bytes: dict[tuple[int, str], int] = field(default_factory=dict)

    def network(self, broker_id: int, key: str) -> int | None:
        own = self.file_brokers.get(broker_id, {}).get(key)
        if own is not None:
            return own
        option = self.network_in_bytes_per_s if key == NETWORK_IN else self.network_out_bytes_per_s
        return option if option is not None else self.file_default.get(key)


def load_capacity_file(path: str | os.PathLike, network_in_bytes_per_s: int | None = None,
                       network_out_bytes_per_s: int | None = None) -> Capacities:
    """Read a capacity file (format in docs/snapshot.md)."""
    try:
        data = json.loads(Path(path).read_text())
    except OSError as error:
        raise CapacityFileError(f"cannot read capacity file {path}: {error.strerror or error}") from None
    except ValueError as error:
        raise CapacityFileError(f"capacity file {path} is not JSON: {error}") from None
    return parse_capacities(data, str(path), network_in_bytes_per_s, network_out_bytes_per_s)


def parse_capacities(data, source: str, network_in_bytes_per_s: int | None = None,
                     network_out_bytes_per_s: int | None = None) -> Capacities:
    where = f"capacity file {source}"
    _object(data, where, "(top level)", ("default", "brokers"))
    default = _network(data.get("default", {}), where, "default")
    brokers: dict[int, dict[str, int]] = {}
    dirs: dict[tuple[int, str], int] = {}
    _object(data.get("brokers", {}), where, "brokers", None)
    for key, entry in data.get("brokers", {}).items():
        if not key.isdigit():
            raise CapacityFileError(f"{where}: brokers.{key}: a broker id must be a number")
        broker_id = int(key)
        _object(entry, where, f"brokers.{key}", (NETWORK_IN, NETWORK_OUT, "log_dirs"))
        brokers[broker_id] = _network({k: v for k, v in entry.items() if k != "log_dirs"}, where, f"brokers.{key}")
        log_dirs = entry.get("log_dirs", {})
        _object(log_dirs, where, f"brokers.{key}.log_dirs", None)
        for dir_path, dir_entry in log_dirs.items():
            name = f"brokers.{key}.log_dirs.{dir_path}"
            _object(dir_entry, where, name, ("capacity_bytes",))
            if "capacity_bytes" not in dir_entry:
                raise CapacityFileError(f"{where}: {name}: capacity_bytes is missing")
            dirs[(broker_id, dir_path)] = _positive(dir_entry["capacity_bytes"], where, f"{name}.capacity_bytes")
    return Capacities(network_in_bytes_per_s, network_out_bytes_per_s, default, brokers, dirs)


def _object(value, where: str, name: str, allowed: tuple[str, ...] | None) -> None:
    if not isinstance(value, dict):
        raise CapacityFileError(f"{where}: {name}: expected an object")
    unknown = sorted(set(value) - set(allowed)) if allowed is not None else []
    if unknown:
        raise CapacityFileError(f"{where}: {name}: unknown key {unknown[0]!r} (known: {', '.join(allowed)})")


def _network(entry: dict, where: str, name: str) -> dict[str, int]:
    _object(entry, where, name, (NETWORK_IN, NETWORK_OUT))
    return {key: _positive(value, where, f"{name}.{key}") for key, value in entry.items()}


def _positive(value, where: str, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise CapacityFileError(f"{where}: {name}: expected a whole number of bytes > 0, not {value!r}")
    return value


# --- ZooKeeper ---------------------------------------------------------------------------

def read_cluster(client, timeout_s: float = SCRAPE_TIMEOUT_S) -> tuple[list, list]:
    """(live broker registrations, PartitionInfo of every topic not queued for
    deletion), with pipelined reads."""
    from kafkactl.cluster.admin.backend import ZooKeeperBackend

    return read_cluster_via(ZooKeeperBackend(client, timeout_s))


def read_cluster_via(backend) -> tuple[list, list]:
    """read_cluster through either back end (cluster/admin/backend.py)."""
    brokers = backend.brokers()
    deleting = set(backend.marked_for_deletion())
    topics = [t for t in backend.topic_names() if t not in deleting]
    described = backend.describe_topics(topics)
    partitions = [p for infos in described.values() if infos is not None for p in infos]
    return brokers, partitions


# --- building ----------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Snapshot:
    brokers: list[dict]
    log_dirs: list[dict]
    partitions: list[dict]
    reassigning_partitions: int = 0    # recorded at their targets, mid-reassignment (snapshot_moves.py)

    def meta(self) -> dict:
        """snapshot.json's content."""
        return {"reassigning_partitions": self.reassigning_partitions}

    def rows(self) -> dict[str, list[dict]]:
        return {BROKERS_FILE: self.brokers, LOG_DIRS_FILE: self.log_dirs, PARTITIONS_FILE: self.partitions}


def build_snapshot(brokers: Iterable, partitions: Iterable, metrics: Mapping[int, BrokerMetrics],
                   capacities: Capacities, reassigning_partitions: int = 0) -> Snapshot:
    """The snapshot's rows.

    `brokers`: live broker registrations (broker_id, rack); `partitions`:
    PartitionInfo (topic, partition, replicas, leader); `metrics`: each live
    broker's scrape. Raises SnapshotError when a replica's broker is not
    live, reports no log for it, or a partition has no leader.
    `reassigning_partitions`: how many of `partitions` are recorded at the
    target of a running reassignment (snapshot_moves.settle), for snapshot.json.
    """
    live = sorted(brokers, key=lambda b: b.broker_id)
    broker_rows = [_broker_row(b, capacities) for b in live]
    dir_rows = [row for b in live for row in _dir_rows(b.broker_id, metrics[b.broker_id], capacities)]
    partition_rows = [_partition_row(p, metrics) for p in sorted(partitions, key=lambda p: (p.topic, p.partition))]
    return Snapshot(broker_rows, dir_rows, partition_rows, reassigning_partitions)


def _broker_row(broker, capacities: Capacities) -> dict:
    row = {"broker_id": broker.broker_id, "rack": broker.rack}
    for key, option in ((NETWORK_IN, "--network-in-capacity"), (NETWORK_OUT, "--network-out-capacity")):
        value = capacities.network(broker.broker_id, key)
        if value is None:
            raise CapacityFileError(f"no {key} for broker {broker.broker_id}: pass {option} "
                                f"or give it in a --capacity-file")
        row[key] = value
    return row


def _dir_rows(broker_id: int, metrics: BrokerMetrics, capacities: Capacities) -> list[dict]:
    unknown = sorted(path for b, path in capacities.dir_capacity_bytes if b == broker_id and path not in metrics.dirs)
    if unknown:
        raise CapacityFileError(f"the capacity file gives a capacity for {unknown[0]} on broker {broker_id}, "
                            f"which reports log dirs {', '.join(sorted(metrics.dirs)) or '(none)'}")
    return [
        {"broker_id": broker_id, "path": d.path, "media": d.media,
         "capacity_bytes": capacities.dir_capacity_bytes.get((broker_id, d.path), d.capacity_bytes),
         "used_bytes": d.used_bytes}
        for d in sorted(metrics.dirs.values(), key=lambda d: d.path)
    ]


def _partition_row(partition, metrics: Mapping[int, BrokerMetrics]) -> dict:
    name = f"{partition.topic}-{partition.partition}"
    key = (partition.topic, partition.partition)
    down = [b for b in partition.replicas if b not in metrics]
    if down:
        raise SnapshotError(f"{name}: replica on broker {down[0]}, which is not registered (down?); "
                            f"a snapshot needs every replica's broker")
    replicas = []
    for broker_id in partition.replicas:
        replica = metrics[broker_id].replicas.get(key)
        if replica is None:
            raise SnapshotError(f"{name}: broker {broker_id} reports no log for it "
                                f"(a replica still being created?); try again")
        replicas.append(replica)
    if partition.leader not in partition.replicas:
        raise SnapshotError(f"{name} has no leader (leader {partition.leader}); a snapshot needs every "
                            f"partition online")
    leader = metrics[partition.leader].replicas[key]
    return {
        "topic": partition.topic, "partition": partition.partition, "replicas": list(partition.replicas),
        "leader": partition.leader, "log_dirs": [r.log_dir for r in replicas],
        "size_bytes": max(r.size_bytes for r in replicas),
        "bytes_in_per_s": round(float(leader.bytes_in_per_s), RATE_DECIMALS),
        "bytes_out_per_s": round(float(leader.bytes_out_per_s), RATE_DECIMALS),
    }


# --- checking ----------------------------------------------------------------------------

_INT, _FLOAT, _STR, _OPT_STR, _INTS, _STRS = "int", "number", "string", "string or null", "ints", "strings"
_FIELDS = {
    BROKERS_FILE: {"broker_id": _INT, "rack": _OPT_STR, NETWORK_IN: _INT, NETWORK_OUT: _INT},
    LOG_DIRS_FILE: {"broker_id": _INT, "path": _STR, "media": _STR, "capacity_bytes": _INT, "used_bytes": _INT},
    PARTITIONS_FILE: {"topic": _STR, "partition": _INT, "replicas": _INTS, "leader": _INT, "log_dirs": _STRS,
                      "size_bytes": _INT, "bytes_in_per_s": _FLOAT, "bytes_out_per_s": _FLOAT},
}


def _has_type(value, kind: str) -> bool:
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if kind == _INT:
        return is_int
    if kind == _FLOAT:
        return (is_int or isinstance(value, float)) and math.isfinite(value)
    if kind == _STR:
        return isinstance(value, str) and value != ""
    if kind == _OPT_STR:
        return value is None or isinstance(value, str)
    inner = _INT if kind == _INTS else _STR
    return isinstance(value, list) and bool(value) and all(_has_type(v, inner) for v in value)


class _Checker:
    def __init__(self, file: str) -> None:
        self.file = file
        self.line = 0

    def fail(self, field_name: str, message: str) -> None:
        raise SnapshotError(f"{self.file} line {self.line}: {field_name}: {message}")

    def fields(self, row: dict) -> None:
        spec = _FIELDS[self.file]
        for name, kind in spec.items():
            if name not in row:
                self.fail(name, "missing")
            if not _has_type(row[name], kind):
                self.fail(name, f"expected {kind}, not {row[name]!r}")
        extra = sorted(set(row) - set(spec))
        if extra:
            self.fail(extra[0], "unknown field")
        for name, kind in spec.items():
            if kind in (_INT, _FLOAT) and name not in ("broker_id", "leader") and row[name] < 0:
                self.fail(name, f"must not be negative, not {row[name]}")


def validate_snapshot(snapshot: Snapshot) -> None:
    """Check every row against the snapshot's rules; SnapshotError names the
    file, line and field of the first problem."""
    count = snapshot.reassigning_partitions
    if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= len(snapshot.partitions):
        raise SnapshotError(f"{META_FILE}: reassigning_partitions: expected 0 to {len(snapshot.partitions)}, "
                            f"not {count!r}")
    broker_ids = _check_brokers(snapshot.brokers)
    dirs = _check_log_dirs(snapshot.log_dirs, broker_ids)
    _check_partitions(snapshot.partitions, broker_ids, dirs)


def _check_brokers(rows: list[dict]) -> set[int]:
    check, seen = _Checker(BROKERS_FILE), set()
    for check.line, row in enumerate(rows, start=1):
        check.fields(row)
        for key in (NETWORK_IN, NETWORK_OUT):
            if row[key] <= 0:
                check.fail(key, "must be > 0")
        if row["broker_id"] in seen:
            check.fail("broker_id", f"broker {row['broker_id']} appears twice")
        seen.add(row["broker_id"])
    return seen


def _check_log_dirs(rows: list[dict], broker_ids: set[int]) -> set[tuple[int, str]]:
    check, seen = _Checker(LOG_DIRS_FILE), set()
    for check.line, row in enumerate(rows, start=1):
        check.fields(row)
        if row["broker_id"] not in broker_ids:
            check.fail("broker_id", f"broker {row['broker_id']} is not in {BROKERS_FILE}")
        if row["media"] not in MEDIA:
            check.fail("media", f"expected ssd or hdd, not {row['media']!r}")
        key = (row["broker_id"], row["path"])
        if key in seen:
            check.fail("path", f"{row['path']} appears twice for broker {row['broker_id']}")
        seen.add(key)
    return seen


def _check_partitions(rows: list[dict], broker_ids: set[int], dirs: set[tuple[int, str]]) -> None:
    check, seen = _Checker(PARTITIONS_FILE), set()
    for check.line, row in enumerate(rows, start=1):
        check.fields(row)
        replicas, log_dirs = row["replicas"], row["log_dirs"]
        if len(set(replicas)) != len(replicas):
            check.fail("replicas", f"a broker appears twice in {replicas}")
        unknown = [b for b in replicas if b not in broker_ids]
        if unknown:
            check.fail("replicas", f"broker {unknown[0]} is not in {BROKERS_FILE}")
        if row["leader"] not in replicas:
            check.fail("leader", f"{row['leader']} is not one of the replicas {replicas}")
        if len(log_dirs) != len(replicas):
            check.fail("log_dirs", f"{len(log_dirs)} dirs for {len(replicas)} replicas")
        for position, (broker_id, path) in enumerate(zip(replicas, log_dirs)):
            if (broker_id, path) not in dirs:
                check.fail(f"log_dirs[{position}]", f"{path} is not a log dir of broker {broker_id} "
                                                    f"in {LOG_DIRS_FILE}")
        key = (row["topic"], row["partition"])
        if key in seen:
            check.fail("partition", f"{row['topic']}-{row['partition']} appears twice")
        seen.add(key)


# --- writing -----------------------------------------------------------------------------

def out_dir_problem(out_dir: str | os.PathLike) -> str | None:
    """Why `out_dir` cannot receive a snapshot (it must be new, or an empty dir), or None."""
    out = Path(out_dir).absolute()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        return f"{out}: exists and is not an empty directory; give a new one"
    return None


def write_snapshot(snapshot: Snapshot, out_dir: str | os.PathLike) -> Path:
    """Check the snapshot, then write it to out_dir (new, or an empty dir)
    under a temporary name renamed into place: all three files or nothing."""
    validate_snapshot(snapshot)
    out = Path(out_dir).absolute()
    problem = out_dir_problem(out)
    if problem:   # checked again here: the directory may have changed since the command began
        raise SnapshotError(problem)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        for name, rows in snapshot.rows().items():
            _write_rows(staging / name, rows)
        _write_rows(staging / META_FILE, [snapshot.meta()])
        os.chmod(staging, 0o755)   # mkdtemp makes it private; a snapshot is shared with a Spark job
        if out.exists():
            out.rmdir()
        os.rename(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    fsync_dir(out.parent)
    return out


def _write_rows(path: Path, rows: list[dict]) -> None:
    with open(path, "w", encoding="utf-8") as file:
        for row in rows:
            file.write(json.dumps(row, ensure_ascii=False) + "\n")
        file.flush()
        os.fsync(file.fileno())
