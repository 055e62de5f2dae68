"""A seeded generator of realistic cluster snapshots, for tests and the benchmark.

What makes it realistic (and worth planning):
- skewed topics: partitions per topic from a Zipf-like choice, inbound rates
  lognormal per topic and per partition (key skew), a few very hot topics
  with short retention (high bytes per second per byte stored);
- sizes follow rates: size = bytes in per second x retention, so big and hot
  are different topics;
- mixed media: every broker has one SSD dir and two HDD dirs; a quarter of
  the brokers are an older generation with half the network capacity;
- history: topics were created while the cluster grew, with Kafka's own
  assignment (cluster/admin/replica_assignment.py) on the brokers that existed
  then, and a log dir chosen as Kafka does (the dir with the fewest
  partitions), blind to sizes and media: old brokers are fuller, SSDs hold
  random data;
- optionally brokers added empty (present in the snapshot, no replicas).

Deterministic: the same arguments give byte-identical files.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kafkactl.cluster.admin.replica_assignment import BrokerInfo, assign_replicas

TB = 10**12
SSD_CAPACITY_BYTES = 3 * TB
HDD_CAPACITY_BYTES = 4 * TB
NETWORK_CAPACITY_BYTES_PER_S = 1_250_000_000       # 10 Gbit/s
PARTITIONS_PER_TOPIC = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)
RETENTION_S = (6 * 3600, 24 * 3600, 3 * 86400, 7 * 86400)
HOT_RETENTION_S = (3600, 3 * 3600)


@dataclass(frozen=True)
class GeneratedSnapshot:
    path: Path
    brokers: int
    added_brokers: tuple[int, ...]
    partitions: int
    replicas: int
    topics: int


def generate(out_dir, *, partitions: int, brokers: int, seed: int = 0,
             replication_factor: int = 3, racks: int = 3, added_brokers: int = 0,
             disk_fill: float = 0.45, network_fill: float = 0.30,
             hot_topic_share: float = 0.01, parquet: bool = False) -> GeneratedSnapshot:
    """Write brokers, log_dirs and partitions (JSON Lines, or Parquet) into out_dir.

    disk_fill: replica bytes over the disk capacity of the brokers holding data;
    network_fill: inbound bytes (all replicas) over their inbound capacity.
    """
    if brokers < replication_factor:
        raise ValueError(f"{brokers} brokers cannot hold replication factor {replication_factor}")
    rng = np.random.default_rng(seed)
    broker_rows = _brokers(rng, brokers + added_brokers, racks)
    dir_rows = _log_dirs(broker_rows)
    topics = _topics(rng, partitions, hot_topic_share)
    sizes, rates_in, rates_out = _loads(rng, topics)
    holders = broker_rows[:brokers]
    _scale(sizes, rates_in, rates_out, holders, dir_rows[:3 * brokers], replication_factor,
           disk_fill, network_fill)
    partition_rows = _assign(topics, sizes, rates_in, rates_out, holders, dir_rows,
                             replication_factor, seed)
    _fill_used_bytes(dir_rows, partition_rows)
    _cap_fullest(dir_rows, partition_rows)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _write(out, "brokers", broker_rows, parquet)
    _write(out, "log_dirs", dir_rows, parquet)
    _write(out, "partitions", partition_rows, parquet)
    return GeneratedSnapshot(out, brokers + added_brokers,
                             tuple(b["broker_id"] for b in broker_rows[brokers:]),
                             len(partition_rows), len(partition_rows) * replication_factor,
                             len(topics))


def _brokers(rng, count, racks):
    rows = []
    for broker_id in range(1, count + 1):
        older = rng.random() < 0.25
        network = NETWORK_CAPACITY_BYTES_PER_S // (2 if older else 1)
        rows.append({"broker_id": broker_id,
                     "rack": f"r{(broker_id - 1) % racks}" if racks else None,
                     "network_in_capacity_bytes_per_s": network,
                     "network_out_capacity_bytes_per_s": network})
    return rows


def _log_dirs(broker_rows):
    rows = []
    for broker in broker_rows:
        for path, media, capacity in (("/data/hdd0", "hdd", HDD_CAPACITY_BYTES),
                                      ("/data/hdd1", "hdd", HDD_CAPACITY_BYTES),
                                      ("/data/ssd0", "ssd", SSD_CAPACITY_BYTES)):
            rows.append({"broker_id": broker["broker_id"], "path": path, "media": media,
                         "capacity_bytes": capacity, "used_bytes": 0})
    return rows


def _topics(rng, partitions, hot_share):
    """[(name, partition_count, hot)] summing to `partitions`."""
    weights = 1.0 / np.arange(1, len(PARTITIONS_PER_TOPIC) + 1) ** 0.6
    weights /= weights.sum()
    topics, left = [], partitions
    while left > 0:
        count = min(left, int(rng.choice(PARTITIONS_PER_TOPIC, p=weights)))
        topics.append([f"topic-{len(topics):06d}", count, False])
        left -= count
    hot = max(1, round(len(topics) * hot_share))
    for index in rng.choice(len(topics), size=min(hot, len(topics)), replace=False):
        topics[int(index)][2] = True
    return topics


def _loads(rng, topics):
    """Per partition, in topic order: size (bytes), bytes in and out per second."""
    sizes, rates_in, rates_out = [], [], []
    for _name, count, hot in topics:
        topic_rate = rng.lognormal(np.log(2e5), 1.2) * (30 if hot else 1)
        retention = rng.choice(HOT_RETENTION_S if hot else RETENTION_S)
        fanout = rng.integers(1, 5)
        skew = rng.lognormal(0.0, 0.6, size=count)
        rate = topic_rate * skew / skew.mean()
        rates_in.append(rate)
        rates_out.append(rate * fanout)
        sizes.append(rate * retention * rng.lognormal(0.0, 0.3, size=count))
    return np.concatenate(sizes), np.concatenate(rates_in), np.concatenate(rates_out)


def _scale(sizes, rates_in, rates_out, holders, holder_dirs, rf, disk_fill, network_fill):
    """Scale sizes and rates in place to the requested fill of the brokers holding data."""
    capacity = sum(d["capacity_bytes"] for d in holder_dirs)
    sizes *= disk_fill * capacity / (rf * sizes.sum())
    inbound = sum(b["network_in_capacity_bytes_per_s"] for b in holders)
    factor = network_fill * inbound / (rf * rates_in.sum())
    rates_in *= factor
    rates_out *= factor


def _assign(topics, sizes, rates_in, rates_out, holders, dir_rows, rf, seed):
    """Kafka's assignment topic by topic on the brokers that existed at creation."""
    infos = [BrokerInfo(b["broker_id"], b["rack"]) for b in holders]
    dirs_of = {}
    for row in dir_rows:
        dirs_of.setdefault(row["broker_id"], []).append(row["path"])
    dir_partitions = {(row["broker_id"], row["path"]): 0 for row in dir_rows}
    first = max(rf, len(holders) // 2)
    rows, offset = [], 0
    for index, (name, count, _hot) in enumerate(topics):
        # the cluster reached its full size when 80 % of today's topics existed
        existing = min(len(holders),
                       first + (len(holders) - first) * index // max(1, int(0.8 * len(topics))))
        replica_sets = assign_replicas(infos[:existing], count, rf,
                                       rng=random.Random(seed * 1_000_003 + index))
        for partition in range(count):
            replicas = replica_sets[partition]
            log_dirs = [_fewest_partitions(dirs_of[b], b, dir_partitions) for b in replicas]
            at = offset + partition
            rows.append({"topic": name, "partition": partition, "replicas": replicas,
                         "leader": replicas[0], "log_dirs": log_dirs,
                         "size_bytes": int(sizes[at]),
                         "bytes_in_per_s": round(float(rates_in[at]), 1),
                         "bytes_out_per_s": round(float(rates_out[at]), 1)})
        offset += count
    return rows


def _fewest_partitions(paths, broker_id, dir_partitions):
    """Kafka puts a new replica in the log dir with the fewest partitions."""
    path = min(paths, key=lambda p: (dir_partitions[(broker_id, p)], p))
    dir_partitions[(broker_id, path)] += 1
    return path


def _fill_used_bytes(dir_rows, partition_rows):
    used = {}
    for row in partition_rows:
        for broker_id, path in zip(row["replicas"], row["log_dirs"]):
            used[(broker_id, path)] = used.get((broker_id, path), 0) + row["size_bytes"]
    for row in dir_rows:
        row["used_bytes"] = used.get((row["broker_id"], row["path"]), 0)


def _cap_fullest(dir_rows, partition_rows, fullest=0.92):
    """Kafka is blind to sizes, so a dir may come out over 100 %: shrink every
    size so that the fullest dir is at `fullest` (disks are never over full)."""
    top = max(row["used_bytes"] / row["capacity_bytes"] for row in dir_rows)
    if top <= fullest:
        return
    for row in partition_rows:
        row["size_bytes"] = int(row["size_bytes"] * fullest / top)
    _fill_used_bytes(dir_rows, partition_rows)


def _write(out: Path, name: str, rows: list[dict], parquet: bool) -> None:
    if parquet:
        import pyarrow as pa
        import pyarrow.parquet as pq
        pq.write_table(pa.Table.from_pylist(rows, schema=_arrow_schema(name)),
                       out / f"{name}.parquet")
        return
    with open(out / f"{name}.jsonl", "w") as handle:
        for row in rows:
            handle.write(json.dumps(row, separators=(",", ":")) + "\n")


def _arrow_schema(name: str):
    """The snapshot's column types (planner/__init__.py), for Parquet."""
    import pyarrow as pa
    fields = {
        "brokers": [("broker_id", pa.int32()), ("rack", pa.string()),
                    ("network_in_capacity_bytes_per_s", pa.int64()),
                    ("network_out_capacity_bytes_per_s", pa.int64())],
        "log_dirs": [("broker_id", pa.int32()), ("path", pa.string()), ("media", pa.string()),
                     ("capacity_bytes", pa.int64()), ("used_bytes", pa.int64())],
        "partitions": [("topic", pa.string()), ("partition", pa.int32()),
                       ("replicas", pa.list_(pa.int32())), ("leader", pa.int32()),
                       ("log_dirs", pa.list_(pa.string())), ("size_bytes", pa.int64()),
                       ("bytes_in_per_s", pa.float64()), ("bytes_out_per_s", pa.float64())],
    }
    return pa.schema(fields[name])


def main(argv=None) -> None:
    import argparse
    parser = argparse.ArgumentParser(description="Write a seeded, realistic cluster snapshot.")
    parser.add_argument("out")
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--brokers", type=int, default=12)
    parser.add_argument("--added-brokers", type=int, default=0)
    parser.add_argument("--racks", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--parquet", action="store_true")
    args = parser.parse_args(argv)
    made = generate(args.out, partitions=args.partitions, brokers=args.brokers, seed=args.seed,
                    racks=args.racks, added_brokers=args.added_brokers, parquet=args.parquet)
    print(made)


if __name__ == "__main__":
    main()
