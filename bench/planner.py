"""Benchmark of the placement planner on generated snapshots (issue 5).

For each size (partitions:brokers), on local[2]: compute time of the
optimizer, disk max/mean per media class before and after (over all dirs of
the class, and per rack when RF = racks pins each rack's bytes), network in
and out max/mean (as fractions of capacity), replica moves and bytes moved
against the bytes needed to reach the same balance, and the same figures for
Kafka's default assignment of the same partitions to the same brokers and
for the lower bound (perfect balance, exactly the needed bytes moved).

"Needed" (planner/loads.py needed_bytes): a lower bound on what any plan
moves to reach the planner's result: every dir sheds what it holds above the
largest utilization of its media class after the plan (all of it on an
excluded broker) and at least the hot bytes it holds off SSD before and not
after, and the SSD class as a whole sheds what must make room for them.
"Hot off SSD": bytes of hot partitions' replicas on HDD dirs (the hot set of
planner/goals/hot_on_ssd.py). "Topic surplus": replicas beyond their
broker's share of their topic, ceil(topic replicas / brokers) (the
topic_spread goal; it moves only replicas up to a quarter of the mean size).

    .venv/bin/python bench/planner.py --sizes 10000:12,100000:100,333334:200

The 1,000,000-replica case (333,334 partitions at RF 3 on 200 brokers) is
the aim: under 10 minutes on this 2-core machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import zlib
from pathlib import Path

AIM_SECONDS_1M = 600
SCHEMAS = {
    "brokers": "broker_id int, rack string, network_in_capacity_bytes_per_s long, "
               "network_out_capacity_bytes_per_s long",
    "log_dirs": "broker_id int, path string, media string, capacity_bytes long, used_bytes long",
    "partitions": "topic string, partition int, replicas array<int>, leader int, "
                  "log_dirs array<string>, size_bytes long, bytes_in_per_s double, "
                  "bytes_out_per_s double",
}


class Snapshot:
    def __init__(self, spark, directory: Path, parquet: bool):
        for name, schema in SCHEMAS.items():
            if parquet:
                frame = spark.read.parquet(str(directory / f"{name}.parquet"))
            else:
                frame = spark.read.schema(schema).json(str(directory / f"{name}.jsonl"))
            setattr(self, name, frame)


def kafka_default(spark, snapshot, seed: int):
    """Kafka's assignment (cluster/admin/replica_assignment.py) per topic on the
    same brokers; a new replica's log dir by partition number among the
    broker's dirs (Kafka picks the dir with the fewest partitions)."""
    import pandas as pd

    from kafkactl.cluster.admin.replica_assignment import BrokerInfo, assign_replicas

    brokers = [BrokerInfo(r.broker_id, r.rack) for r in snapshot.brokers.orderBy("broker_id").collect()]
    dirs: dict[int, list[str]] = {}
    for r in snapshot.log_dirs.orderBy("broker_id", "path").collect():
        dirs.setdefault(r.broker_id, []).append(r.path)

    def assign(frame: pd.DataFrame) -> pd.DataFrame:
        import random
        frame = frame.sort_values("partition").reset_index(drop=True)
        topic = frame["topic"].iloc[0]
        rf = len(frame["replicas"].iloc[0])
        rng = random.Random(seed * 1_000_003 + zlib.crc32(topic.encode()))
        placed = assign_replicas(brokers, len(frame), rf, rng=rng)
        replicas = [placed[i] for i in range(len(frame))]
        frame["replicas"] = replicas
        frame["leader"] = [r[0] for r in replicas]
        frame["log_dirs"] = [[dirs[b][(p + k) % len(dirs[b])] for k, b in enumerate(r)]
                             for p, r in zip(frame["partition"], replicas)]
        return frame

    return snapshot.partitions.groupBy("topic").applyInPandas(assign, snapshot.partitions.schema)


def figures(spark, snapshot, assignment, loads, capacity_threshold, before=None):
    dirs = loads.dir_loads(assignment, snapshot.log_dirs)
    brokers = loads.broker_loads(assignment, snapshot.brokers)
    hot = loads.hot_bytes_off_ssd(assignment, snapshot.log_dirs, capacity_threshold)
    result = {"balance": loads.balance(dirs, brokers), "dirs": dirs, "hot_off_ssd": hot,
              "racks": rack_balance(snapshot, dirs), "surplus": topic_surplus(assignment, len(brokers))}
    if before is not None:
        moves, moved = loads.bytes_moved(snapshot.partitions, assignment)
        needed = loads.needed_bytes(before["dirs"], dirs, before["hot_off_ssd"], hot)
        result.update(moves=moves, moved=moved, needed=needed)
    return result


def topic_surplus(assignment, brokers: int) -> int:
    """Replicas beyond their broker's share of their topic, ceil(topic
    replicas / brokers): what the topic_spread goal evens."""
    from pyspark.sql import functions as F

    replicas = assignment.select("topic", F.explode("replicas").alias("broker_id"))
    held = replicas.groupBy("topic", "broker_id").agg(F.count(F.lit(1)).alias("held"))
    total = replicas.groupBy("topic").agg(F.count(F.lit(1)).alias("total"))
    return (held.join(total, "topic").selectExpr(f"greatest(0, held - ceil(total / {brokers})) AS surplus")
            .agg(F.sum("surplus")).collect()[0][0] or 0)


def rack_balance(snapshot, dirs) -> dict[str, float]:
    """Per media, the worst max/mean over (rack, media) groups."""
    racks = {r.broker_id: r.rack for r in snapshot.brokers.collect()}
    groups: dict[tuple, list[float]] = {}
    for d in dirs:
        groups.setdefault((racks[d.broker_id], d.media), []).append(d.size_bytes / d.capacity_bytes)
    worst: dict[str, float] = {}
    for (_, media), used in groups.items():
        mean = sum(used) / len(used)
        worst[media] = max(worst.get(media, 0.0), max(used) / mean if mean else 0.0)
    return worst


def run_size(partitions: int, brokers: int, runs: int, seed: int, workdir: Path) -> dict:
    from pyspark.sql import SparkSession

    from kafkactl.planner import loads
    from kafkactl.planner.generate import generate
    from kafkactl.planner.optimizer import optimize
    from kafkactl.planner.options import PlannerOptions

    parquet = partitions >= 100_000
    started = time.monotonic()
    made = generate(workdir / f"{partitions}-{brokers}", partitions=partitions, brokers=brokers,
                    seed=seed, parquet=parquet)
    generated = time.monotonic() - started
    spark = (SparkSession.builder.master("local[2]").appName("bench-planner")
             .config("spark.sql.shuffle.partitions", "8")
             .config("spark.driver.memory", "6g")
             .config("spark.ui.enabled", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        snapshot = Snapshot(spark, made.path, parquet)
        options = PlannerOptions(seed=seed)
        times, result = [], None
        for _ in range(runs):
            started = time.monotonic()
            result = optimize(spark, snapshot, options)
            result.assignment.count()
            times.append(time.monotonic() - started)
        if result.unsatisfied:
            raise SystemExit(f"unsatisfied: {result.unsatisfied}")
        threshold = options.capacity_threshold
        before = figures(spark, snapshot, snapshot.partitions, loads, threshold)
        after = figures(spark, snapshot, result.assignment, loads, threshold, before)
        kafka = figures(spark, snapshot, kafka_default(spark, snapshot, seed), loads, threshold, before)
        return {"partitions": partitions, "brokers": brokers, "replicas": made.replicas,
                "generate_s": generated, "times": times, "rounds": result.rounds,
                "before": before, "after": after, "kafka": kafka}
    finally:
        spark.stop()


def report(r: dict) -> str:
    lines = [f"## {r['partitions']:,} partitions ({r['replicas']:,} replicas) on {r['brokers']} brokers",
             "",
             f"compute time: median {statistics.median(r['times']):.0f} s of {len(r['times'])} run(s) "
             f"({', '.join(f'{t:.0f}' for t in r['times'])} s), {r['rounds']} rounds; "
             f"snapshot generated in {r['generate_s']:.0f} s",
             "",
             "| assignment | disk ssd max/mean | disk hdd max/mean | worst rack ssd | worst rack hdd "
             "| net in max/mean | net out max/mean | hot off SSD (TB) | topic surplus | moves | bytes moved (TB) "
             "| needed (TB) | moved/needed |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, key in (("current", "before"), ("planner", "after"), ("Kafka default", "kafka")):
        f = r[key]
        b = f["balance"]
        moved = (f"{f['moves']:,} | {f['moved'] / 1e12:.2f} | {f['needed'] / 1e12:.2f} | "
                 f"{f['moved'] / f['needed']:.2f}" if "moved" in f and f["needed"] else " | | | ")
        lines.append(f"| {name} | {b.disk.get('ssd', 0):.3f} | {b.disk.get('hdd', 0):.3f} | "
                     f"{f['racks'].get('ssd', 0):.3f} | {f['racks'].get('hdd', 0):.3f} | "
                     f"{b.network_in:.3f} | {b.network_out:.3f} | {sum(f['hot_off_ssd'].values()) / 1e12:.2f} | "
                     f"{f['surplus']:,} | {moved} |")
    needed = r["after"]["needed"]
    lines.append(f"| lower bound | 1.000 | 1.000 | 1.000 | 1.000 | 1.000 | 1.000 | 0.00 | 0 | | "
                 f"{needed / 1e12:.2f} | {needed / 1e12:.2f} | 1.00 |")
    if r["replicas"] >= 900_000:
        median = statistics.median(r["times"])
        lines += ["", f"aim: {AIM_SECONDS_1M} s for 1,000,000 replicas on local[2]; measured "
                      f"{median:.0f} s, ratio measured/aim {median / AIM_SECONDS_1M:.2f}"]
    return "\n".join(lines)


def main(argv=None) -> None:
    import logging
    import os

    # Python workers (Kafka's assignment in a pandas UDF) run this interpreter
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("kafkactl.planner.optimizer").setLevel(logging.INFO)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000:12,100000:100,333334:200",
                        help="partitions:brokers, comma separated")
    parser.add_argument("--runs", type=int, default=1, help="optimizer runs per size (median)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    sizes = [tuple(int(x) for x in s.split(":")) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-planner-") as workdir:
        for partitions, brokers in sizes:
            print(report(run_size(partitions, brokers, args.runs, args.seed, Path(workdir))), flush=True)
            print(flush=True)


if __name__ == "__main__":
    sys.exit(main())
