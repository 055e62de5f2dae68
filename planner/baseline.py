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

The other baseline, the lower bound, is planner/bounds.py.
"""

from __future__ import annotations

import random

from kafkactl.planner.usage import snapshot_tables

ASSIGNED_SCHEMA = "topic string, partition int, replicas array<int>"
PLACED_SCHEMA = "topic string, partition int, index int, path string"


def topic_rng(seed: int, topic: str) -> random.Random:
    return random.Random(f"{seed}:{topic}")


def kafka_assignment(snapshot, options):
    """Kafka's default assignment of the snapshot's partitions: a DataFrame with the columns of `partitions`."""
    from pyspark.sql import functions as F

    excluded = set(options.exclude_brokers)
    brokers = [(r.broker_id, r.rack) for r in snapshot_tables(snapshot)[0] if r.broker_id not in excluded]
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
    for row in snapshot_tables(snapshot)[1]:   # sorted by broker and path
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
