"""Where an assignment puts the load: per log dir and per broker, as Spark
aggregations (shared by the constraints checker and the report).

Disk: a log dir's projected used bytes are what it holds besides the
snapshot's partitions (its used bytes minus the sizes of the replicas it
holds now, at least 0) plus the sizes of the replicas the assignment puts
there. Network: every replica takes its partition's bytes in (the leader
from producers, a follower fetching them); only the leader sends bytes out.
"""

from __future__ import annotations

REPLICA_COLUMNS = ("topic", "partition", "broker_id", "path", "is_leader", "size_bytes", "bytes_in_per_s",
                   "bytes_out_per_s")


def replicas(assignment):
    """One row per replica: the partition's load on its broker and dir."""
    from pyspark.sql import functions as F

    exploded = assignment.select("topic", "partition", "leader", "log_dirs", "size_bytes", "bytes_in_per_s",
                                 "bytes_out_per_s", F.posexplode("replicas").alias("index", "broker_id"))
    return exploded.select("topic", "partition", "broker_id", F.get("log_dirs", F.col("index")).alias("path"),
                           (F.col("broker_id") == F.col("leader")).alias("is_leader"), "size_bytes",
                           "bytes_in_per_s", "bytes_out_per_s")


def dir_usage(assignment, snapshot):
    """Per log dir of the snapshot: broker_id, path, media, capacity_bytes,
    used_bytes (projected), replica_count, utilization."""
    from pyspark.sql import functions as F

    def held(frame, prefix):
        return (replicas(frame).groupBy("broker_id", "path")
                .agg(F.sum("size_bytes").alias(f"{prefix}_bytes"), F.count("*").alias(f"{prefix}_count")))

    dirs = (snapshot.log_dirs
            .join(held(snapshot.partitions, "current"), ["broker_id", "path"], "left")
            .join(held(assignment, "assigned"), ["broker_id", "path"], "left")
            .na.fill(0, ["current_bytes", "current_count", "assigned_bytes", "assigned_count"]))
    other = F.greatest(F.col("used_bytes") - F.col("current_bytes"), F.lit(0))
    return dirs.select("broker_id", "path", "media", "capacity_bytes",
                       (other + F.col("assigned_bytes")).alias("used_bytes"),
                       F.col("assigned_count").alias("replica_count"),
                       ((other + F.col("assigned_bytes")) / F.col("capacity_bytes")).alias("utilization"))


def broker_load(assignment, snapshot):
    """Per broker of the snapshot (zero when it holds nothing): rack, replica and
    leader counts, network in/out bytes per second and their utilization, and
    the outbound it would carry if all its replicas led."""
    from pyspark.sql import functions as F

    per_broker = replicas(assignment).groupBy("broker_id").agg(
        F.count("*").alias("replica_count"),
        F.sum(F.col("is_leader").cast("int")).alias("leader_count"),
        F.sum("bytes_in_per_s").alias("network_in_bytes_per_s"),
        F.sum(F.when(F.col("is_leader"), F.col("bytes_out_per_s")).otherwise(0.0)).alias("network_out_bytes_per_s"),
        F.sum("bytes_out_per_s").alias("potential_network_out_bytes_per_s"))
    counts = ["replica_count", "leader_count"]
    rates = ["network_in_bytes_per_s", "network_out_bytes_per_s", "potential_network_out_bytes_per_s"]
    brokers = (snapshot.brokers.join(per_broker, "broker_id", "left")
               .na.fill(0, counts).na.fill(0.0, rates))
    return brokers.select(
        "broker_id", "rack", *counts, *rates,
        (F.col("network_in_bytes_per_s") / F.col("network_in_capacity_bytes_per_s")).alias("network_in_utilization"),
        (F.col("network_out_bytes_per_s") / F.col("network_out_capacity_bytes_per_s"))
        .alias("network_out_utilization"),
        (F.col("potential_network_out_bytes_per_s") / F.col("network_out_capacity_bytes_per_s"))
        .alias("potential_network_out_utilization"))


def human_bytes(value: float) -> str:
    """Decimal units, as disks are sold: 30000000000 -> '30.0 GB'."""
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(value) < 1000 or unit == "TB":
            return f"{value:.0f} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")


def human_rate(value: float) -> str:
    return human_bytes(value) + "/s"


def human_duration(seconds: float) -> str:
    """As report.md's moves table shows it: 90 -> '90 s', 600 -> '10 min', 9000 -> '2.5 h'."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


# --- several assignments at once: one Spark job, per-dir and per-broker rows on the driver

def tagged(states: list, snapshot):
    """The assignments as one DataFrame with a `state` column (its index in
    `states`), persisted: the loads, the checker and the moves each read it,
    and an assignment (Kafka's, through a pandas UDF) is computed once."""
    from functools import reduce

    from pyspark import StorageLevel

    columns = ("topic", "`partition`", "replicas", "leader", "log_dirs", "size_bytes", "bytes_in_per_s",
               "bytes_out_per_s")
    frames = [frame.selectExpr(f"{i} AS state", *columns) for i, frame in enumerate(states)]
    return reduce(lambda a, b: a.unionByName(b), frames).persist(StorageLevel.MEMORY_AND_DISK)


def state_loads(spark, tagged_frame, count: int, snapshot, current: int | None = None) -> list[tuple[list, list]]:
    """Per state, (brokers, dirs): the rows of broker_load and dir_usage as
    dicts, sorted by broker (and path). `current`: the state that is the
    snapshot's own assignment, if any (its per-dir bytes tell what else a
    dir holds); otherwise the snapshot's partitions are summed alongside."""
    frame = tagged_frame
    if current is None:
        current = -1
        frame = tagged_frame.unionByName(snapshot.partitions.selectExpr(
            "-1 AS state", "topic", "`partition`", "replicas", "leader", "log_dirs", "size_bytes",
            "bytes_in_per_s", "bytes_out_per_s"))
    # Summed per (state, broker, dir, leader or not): few rows, from which the
    # per-dir and per-broker figures follow exactly.
    rows = spark.sql(
        "SELECT state, broker_id, path, is_leader, sum(size_bytes) AS size_bytes, count(*) AS replicas, "
        "sum(bytes_in_per_s) AS bytes_in, sum(bytes_out_per_s) AS bytes_out FROM ("
        "  SELECT state, broker_id, get(log_dirs, i) AS path, broker_id = leader AS is_leader, size_bytes, "
        "  bytes_in_per_s, bytes_out_per_s FROM ("
        "    SELECT state, leader, log_dirs, size_bytes, bytes_in_per_s, bytes_out_per_s, "
        "    posexplode(replicas) AS (i, broker_id) FROM {frame})) "
        "GROUP BY state, broker_id, path, is_leader", frame=frame).collect()
    groups: dict[int, list] = {}
    for r in rows:
        groups.setdefault(r.state, []).append(r)
    for group in groups.values():   # a fixed order of float sums: the same figures every run
        group.sort(key=lambda r: (r.broker_id, r.path is None, r.path or "", r.is_leader))
    broker_rows, dir_rows = snapshot_tables(snapshot)
    held_now: dict[tuple, int] = {}
    for r in groups.get(current, []):
        held_now[(r.broker_id, r.path)] = held_now.get((r.broker_id, r.path), 0) + r.size_bytes
    result = []
    for state in range(count):
        per_dir: dict[tuple, list[int]] = {}
        per_broker: dict[int, dict] = {}
        for r in groups.get(state, []):
            held = per_dir.setdefault((r.broker_id, r.path), [0, 0])
            held[0] += r.size_bytes
            held[1] += r.replicas
            b = per_broker.setdefault(r.broker_id, {"replica_count": 0, "leader_count": 0, "in": 0.0,
                                                    "out": 0.0, "potential": 0.0})
            b["replica_count"] += r.replicas
            b["in"] += r.bytes_in
            b["potential"] += r.bytes_out
            if r.is_leader:
                b["leader_count"] += r.replicas
                b["out"] += r.bytes_out
        brokers = []
        for row in broker_rows:
            b = per_broker.get(row.broker_id, {"replica_count": 0, "leader_count": 0, "in": 0.0, "out": 0.0,
                                               "potential": 0.0})
            brokers.append({
                "broker_id": row.broker_id, "rack": row.rack, "replica_count": b["replica_count"],
                "leader_count": b["leader_count"], "network_in_bytes_per_s": float(b["in"]),
                "network_out_bytes_per_s": float(b["out"]),
                "potential_network_out_bytes_per_s": float(b["potential"]),
                "network_in_utilization": b["in"] / row.network_in_capacity_bytes_per_s,
                "network_out_utilization": b["out"] / row.network_out_capacity_bytes_per_s,
                "potential_network_out_utilization": b["potential"] / row.network_out_capacity_bytes_per_s})
        dirs = []
        for row in dir_rows:
            key = (row.broker_id, row.path)
            assigned, count_here = per_dir.get(key, (0, 0))
            used = max(row.used_bytes - held_now.get(key, 0), 0) + assigned
            dirs.append({"broker_id": row.broker_id, "path": row.path, "media": row.media,
                         "capacity_bytes": row.capacity_bytes, "used_bytes": used,
                         "replica_count": count_here, "utilization": used / row.capacity_bytes})
        result.append((brokers, dirs))
    return result


def snapshot_tables(snapshot) -> tuple[list, list]:
    """The brokers and log_dirs rows, sorted: the rows the snapshot's check
    kept (small tables; no Spark job), as Rows, built once per snapshot."""
    cached = getattr(snapshot, "_rows", None)
    if cached is None:
        small = snapshot.checked.small_tables
        cached = tuple(sorted((_row(table, values) for values in small[table]),
                              key=lambda r: (r.broker_id, getattr(r, "path", "")))
                       for table in ("brokers", "log_dirs"))
        snapshot._rows = cached
    return cached


def _row(table: str, values: tuple):
    """A pyspark Row, as collect() would give it."""
    from pyspark.sql import Row

    from kafkactl.planner.snapshot_check import FIELDS

    return Row(**{name: value for (name, _, _), value in zip(FIELDS[table], values)})


def held_bytes(snapshot) -> dict[tuple[int, str], int]:
    """Per (broker_id, path), the bytes of the snapshot's replicas there now
    (one Spark job, memoized per snapshot: feasibility and the lower bound
    both need it)."""
    cached = getattr(snapshot, "_held", None)
    if cached is None:
        rows = (snapshot.partitions
                .selectExpr("posexplode(replicas) AS (i, broker_id)", "get(log_dirs, i) AS path", "size_bytes")
                .groupBy("broker_id", "path").agg({"size_bytes": "sum"}).collect())
        cached = {(r.broker_id, r.path): r["sum(size_bytes)"] for r in rows}
        snapshot._held = cached
    return cached
