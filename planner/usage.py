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
