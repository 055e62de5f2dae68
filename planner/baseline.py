"""The two baselines every report compares the plan with.

Kafka's default assignment: the same partitions placed by Kafka's own
rack-aware round robin (`cluster/admin/replica_assignment.assign_replicas`,
the function `kafkactl reassign generate` uses) over the eligible brokers
(the snapshot's, less --exclude-brokers, so added brokers take part), topic
by topic in a grouped pandas UDF. Each topic draws its random start from
`Random(f"{seed}:{topic}")`: deterministic for a seed, and different per
topic, as Kafka's start differs per topic it creates.

Log dirs the way a Kafka broker picks them: a replica that stays on its
broker keeps its dir (a reassignment does not move it); a new replica goes
to the broker's dir holding the fewest partitions at that moment (Kafka's
LogManager.nextLogDirs), counting the replicas it keeps, new replicas taken
in (topic, partition) order, ties to the lower path. Kafka is blind to size
and media, and so is this.

The lower bound: perfect balance, every broker (or dir) at total load over
total capacity, so max/mean = 1.0; for counts, the even split (each broker
floor or ceil of the mean).
"""

from __future__ import annotations

import math
import random

ASSIGNED_SCHEMA = "topic string, partition int, replicas array<int>"
PLACED_SCHEMA = "topic string, partition int, index int, path string"


def topic_rng(seed: int, topic: str) -> random.Random:
    return random.Random(f"{seed}:{topic}")


def kafka_assignment(snapshot, options):
    """Kafka's default assignment of the snapshot's partitions: a DataFrame with the columns of `partitions`."""
    from pyspark.sql import functions as F

    from kafkactl.planner.constraints import eligible_brokers

    brokers = [(r.broker_id, r.rack) for r in eligible_brokers(snapshot, options).orderBy("broker_id").collect()]
    seed = options.seed

    def assign_topic(frame):
        return _assign_topic(frame, brokers, seed)

    assigned = (snapshot.partitions.select("topic", "partition", "replicas")
                .groupBy("topic").applyInPandas(assign_topic, ASSIGNED_SCHEMA))
    with_dirs = _place_in_dirs(assigned, snapshot)
    return (snapshot.partitions.drop("replicas", "leader", "log_dirs")
            .join(with_dirs, ["topic", "partition"])
            .select("topic", "partition", "replicas", F.col("replicas")[0].alias("leader"), "log_dirs",
                    "size_bytes", "bytes_in_per_s", "bytes_out_per_s"))


def _assign_topic(frame, brokers, seed):
    """One topic's partitions by assign_replicas; runs on the executors."""
    import pandas as pd

    from kafkactl.cluster.admin.replica_assignment import BrokerInfo, assign_replicas

    infos = [BrokerInfo(b, rack) for b, rack in brokers]
    topic = frame["topic"].iloc[0]
    factors = frame["replicas"].map(len)
    count = int(frame["partition"].max()) + 1
    rows = []
    for factor in sorted(set(factors)):
        # As if the topic were created with this replication factor (partitions 0..max).
        assignment = assign_replicas(infos, count, int(factor), 0, topic_rng(seed, topic))
        for partition in frame.loc[factors == factor, "partition"]:
            rows.append((topic, int(partition), assignment[int(partition)]))
    return pd.DataFrame(rows, columns=["topic", "partition", "replicas"])


def _place_in_dirs(assigned, snapshot):
    """(topic, partition, replicas, log_dirs): kept replicas keep their dir, new ones go Kafka's way."""
    from pyspark.sql import functions as F

    current = snapshot.partitions.select("topic", "partition", F.map_from_arrays("replicas", "log_dirs").alias("dirs"))
    replicas = (assigned.join(current, ["topic", "partition"])
                .select("topic", "partition", F.posexplode("replicas").alias("index", "broker_id"), "dirs")
                .select("topic", "partition", "index", "broker_id", F.col("dirs")[F.col("broker_id")].alias("kept")))
    paths = {}
    for row in snapshot.log_dirs.select("broker_id", "path").orderBy("broker_id", "path").collect():
        paths.setdefault(row.broker_id, []).append(row.path)

    def place(frame):
        return _place_on_broker(frame, paths)

    placed = replicas.groupBy("broker_id").applyInPandas(place, PLACED_SCHEMA)
    ordered = placed.groupBy("topic", "partition").agg(
        F.array_sort(F.collect_list(F.struct("index", "path"))).alias("placed"))
    return (assigned.join(ordered, ["topic", "partition"])
            .select("topic", "partition", "replicas", F.transform("placed", lambda p: p["path"]).alias("log_dirs")))


def _place_on_broker(frame, paths):
    """One broker's replicas: new ones to its dir with the fewest partitions, in (topic, partition) order."""
    import pandas as pd

    broker = int(frame["broker_id"].iloc[0])
    dirs = paths[broker]
    counts = {d: 0 for d in dirs}
    for kept in frame["kept"].dropna():
        if kept in counts:
            counts[kept] += 1
    chosen = []
    for row in frame.sort_values(["topic", "partition"]).itertuples(index=False):
        if isinstance(row.kept, str) and row.kept in counts:
            chosen.append((row.topic, row.partition, row.index, row.kept))
            continue
        target = min(dirs, key=lambda d: (counts[d], d))
        counts[target] += 1
        chosen.append((row.topic, row.partition, row.index, target))
    return pd.DataFrame(chosen, columns=["topic", "partition", "index", "path"])


# --- the lower bound

def even_split(total: float, count: int) -> dict:
    """min/max/mean/std/max_mean of `total` whole units split as evenly as can be over `count`."""
    if count == 0:
        return _stats(0.0, 0.0, 0.0, 0.0)
    mean = total / count
    low, high = math.floor(mean), math.ceil(mean)
    share = (total - low * count) / count        # fraction of brokers at `high`
    std = (high - low) * math.sqrt(share * (1 - share))
    return _stats(low if share < 1 else high, high if share > 0 else low, mean, std)


def perfect_balance(load: float, capacity: float) -> dict:
    ratio = load / capacity if capacity else 0.0
    return _stats(ratio, ratio, ratio, 0.0)


def _stats(low: float, high: float, mean: float, std: float) -> dict:
    return {"min": float(low), "max": float(high), "mean": float(mean), "std": float(std),
            "max_mean": float(high / mean) if mean else None}


def lower_bound(snapshot, options) -> dict:
    """Per resource (the report's names), the statistics of perfect balance over the eligible brokers."""
    from kafkactl.planner.usage import held_bytes, snapshot_tables

    broker_rows, dir_rows = snapshot_tables(snapshot)
    excluded = set(options.exclude_brokers)
    eligible = [b for b in broker_rows if b.broker_id not in excluded]
    capacity_in = sum(b.network_in_capacity_bytes_per_s for b in eligible)
    capacity_out = sum(b.network_out_capacity_bytes_per_s for b in eligible)
    load = snapshot.partitions.selectExpr(
        "sum(size(replicas)) AS replicas", "count(*) AS partitions",
        "sum(bytes_in_per_s * size(replicas)) AS `in`", "sum(bytes_out_per_s) AS out",
        "sum(bytes_out_per_s * size(replicas)) AS potential_out").first()
    # Data stays in its media class: each class's bytes over the class's eligible capacity.
    held = held_bytes(snapshot)
    media: dict[str, list] = {}
    for d in dir_rows:
        # a dir's projected used bytes with the current assignment: what else it holds plus its replicas
        here = held.get((d.broker_id, d.path), 0)
        used = max(d.used_bytes - here, 0) + here
        totals = media.setdefault(d.media, [0, 0])
        totals[0] += used
        totals[1] += 0 if d.broker_id in excluded else d.capacity_bytes
    bounds = {}
    for medium, (used, cap) in sorted(media.items()):
        bounds[f"disk_utilization_{medium}"] = perfect_balance(used, cap)
        bounds[f"log_dir_utilization_{medium}"] = perfect_balance(used, cap)
    bounds["network_in_utilization"] = perfect_balance(load["in"] or 0.0, capacity_in)
    bounds["network_out_utilization"] = perfect_balance(load.out or 0.0, capacity_out)
    bounds["potential_network_out_utilization"] = perfect_balance(load.potential_out or 0.0, capacity_out)
    bounds["replica_count"] = even_split(load.replicas or 0, len(eligible))
    bounds["leader_count"] = even_split(load.partitions or 0, len(eligible))
    return bounds
