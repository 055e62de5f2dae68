"""Loads of an assignment per log dir and per broker, their balance, and the
bytes a plan moves against the bytes its balance needs (Spark jobs; only
per-dir and per-broker rows reach the driver).

Loads: a dir holds the sizes of its replicas; every replica carries its
partition's bytes in; the leader (replicas[0]) serves its bytes out.
Balance of a resource: max / mean over brokers (network, as a fraction of
capacity) or over the dirs of a media class (disk, fraction of capacity).
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkactl.planner.goals.base import HOT_BUDGET_SHARE


def replica_rows(assignment):
    """One row per replica: topic, partition, replica_index, broker_id, path, ..."""
    from pyspark.sql import functions as F

    return (assignment.select("topic", "partition", "size_bytes", "bytes_in_per_s",
                              "bytes_out_per_s", "log_dirs",
                              F.posexplode("replicas").alias("replica_index", "broker_id"))
            .withColumn("path", F.element_at("log_dirs", F.col("replica_index") + 1))
            .drop("log_dirs"))


def dir_loads(assignment, log_dirs) -> list:
    """(broker_id, path, media, capacity_bytes, size_bytes) per dir, sorted."""
    from pyspark.sql import functions as F

    sums = replica_rows(assignment).groupBy("broker_id", "path").agg(
        F.sum("size_bytes").alias("size_bytes"))
    return (log_dirs.select("broker_id", "path", "media", "capacity_bytes")
            .join(sums, ["broker_id", "path"], "left").fillna(0, ["size_bytes"])
            .orderBy("broker_id", "path").collect())


def broker_loads(assignment, brokers) -> list:
    """(broker_id, bytes_in, bytes_out, replicas, leaders, capacities) per broker, sorted."""
    from pyspark.sql import functions as F

    leader = F.col("replica_index") == 0
    sums = replica_rows(assignment).groupBy("broker_id").agg(
        F.sum("bytes_in_per_s").alias("bytes_in"),
        F.sum(F.when(leader, F.col("bytes_out_per_s")).otherwise(0.0)).alias("bytes_out"),
        F.count(F.lit(1)).alias("replicas"),
        F.sum(F.when(leader, 1).otherwise(0)).alias("leaders"))
    return (brokers.join(sums, "broker_id", "left")
            .fillna(0, ["bytes_in", "bytes_out", "replicas", "leaders"])
            .orderBy("broker_id").collect())


def max_over_mean(values: list[float]) -> float:
    mean = sum(values) / len(values) if values else 0.0
    return max(values) / mean if mean > 0 else 0.0


@dataclass(frozen=True)
class Balance:
    disk: dict[str, float]          # media -> max/mean utilization
    disk_max: dict[str, float]      # media -> max utilization
    network_in: float               # max/mean of bytes in / capacity
    network_out: float


def balance(dirs: list, brokers: list, exclude: tuple[int, ...] = ()) -> Balance:
    """Balance of per-dir and per-broker loads over the brokers that stay."""
    dirs = [d for d in dirs if d.broker_id not in exclude]
    brokers = [b for b in brokers if b.broker_id not in exclude]
    disk, top = {}, {}
    for media in sorted({d.media for d in dirs}):
        used = [d.size_bytes / d.capacity_bytes for d in dirs if d.media == media]
        disk[media], top[media] = max_over_mean(used), max(used)
    return Balance(disk, top,
                   max_over_mean([b.bytes_in / b.network_in_capacity_bytes_per_s for b in brokers]),
                   max_over_mean([b.bytes_out / b.network_out_capacity_bytes_per_s for b in brokers]))


def bytes_moved(before, after) -> tuple[int, int]:
    """(replica moves, bytes): replicas whose (broker, dir) is new to their partition."""
    from pyspark.sql import functions as F

    keys = ["topic", "partition", "broker_id", "path"]
    new = replica_rows(after).join(replica_rows(before).select(*keys), keys, "left_anti")
    r = new.agg(F.count(F.lit(1)).alias("moves"), F.sum("size_bytes").alias("bytes")).collect()[0]
    return r.moves, int(r.bytes or 0)


def hot_bytes_off_ssd(assignment, log_dirs, capacity_threshold: float,
                      exclude: tuple[int, ...] = ()) -> dict[tuple[int, str], int]:
    """Per dir, the bytes of hot partitions (the optimizer's hot set: budget
    from the SSD capacity of the brokers that stay) not on SSD."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    staying = log_dirs.where("media = 'ssd'")
    if exclude:
        staying = staying.where(~F.col("broker_id").isin(list(exclude)))
    ssd = staying.agg(F.sum("capacity_bytes")).collect()[0][0] or 0
    budget = int(ssd * capacity_threshold * HOT_BUDGET_SHARE)
    heat = (F.col("bytes_in_per_s") + F.col("bytes_out_per_s")) / F.greatest("size_bytes", F.lit(1))
    order = Window.orderBy(heat.desc(), "topic", "partition")
    hot = (assignment.withColumn("bytes", F.col("size_bytes") * F.size("replicas"))
           .withColumn("cumulative", F.sum("bytes").over(order))
           .where(F.col("cumulative") <= budget).select("topic", "partition"))
    rows = (replica_rows(assignment).join(hot, ["topic", "partition"])
            .join(log_dirs.select("broker_id", "path", "media"), ["broker_id", "path"])
            .where("media != 'ssd'").groupBy("broker_id", "path")
            .agg(F.sum("size_bytes").alias("bytes")).collect())
    return {(r.broker_id, r.path): r.bytes for r in rows}


def hot_bytes_leaving(before: dict, after: dict) -> dict:
    """Per dir, the hot bytes off SSD before that are not there after: hot
    bytes only leave a dir by moving, so any plan whose dirs end with at most
    `after`'s hot bytes off SSD moves at least these. (Against "every hot
    byte on SSD" this stays a lower bound for a plan that stops short.)"""
    return {key: held - after.get(key, 0) for key, held in before.items() if held > after.get(key, 0)}


def needed_bytes(before_dirs: list, after_dirs: list, hot_before: dict, hot_after: dict,
                 exclude=()) -> int:
    """A lower bound on the bytes any plan moves to reach the same state:
    every dir sheds at least what it holds above the after state's largest
    utilization of its media class (all of it on an excluded broker), and at
    least the hot bytes it holds off SSD before and not after
    (hot_bytes_leaving; hot_before and hot_after as hot_bytes_off_ssd gives
    them); and the SSD class as a whole sheds at least what it held plus the
    hot bytes that must come in (off SSD before less off SSD after) minus
    what it holds after."""
    must_leave = hot_bytes_leaving(hot_before, hot_after)
    arriving_ssd_bytes = max(0, sum(hot_before.values()) - sum(hot_after.values()))
    top = {}
    for d in after_dirs:
        if d.broker_id not in exclude:
            top[d.media] = max(top.get(d.media, 0.0), d.size_bytes / d.capacity_bytes)
    per_dir = {}
    for d in before_dirs:
        limit = 0 if d.broker_id in exclude else top.get(d.media, 0.0) * d.capacity_bytes
        per_dir[(d.broker_id, d.path)] = max(must_leave.get((d.broker_id, d.path), 0),
                                             int(d.size_bytes - limit), 0)
    ssd_before = sum(d.size_bytes for d in before_dirs if d.media == "ssd")
    ssd_after = sum(d.size_bytes for d in after_dirs if d.media == "ssd")
    media = {(d.broker_id, d.path): d.media for d in before_dirs}
    ssd_shed = sum(v for key, v in per_dir.items() if media[key] == "ssd")
    return sum(per_dir.values()) + max(0, ssd_before + arriving_ssd_bytes - ssd_after - ssd_shed)
