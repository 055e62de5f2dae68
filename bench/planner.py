"""Benchmark of the placement planner on generated snapshots (issue 5).

For each size (partitions:brokers), on local[2]: compute time of the
optimizer, disk max/mean per media class before and after (over all dirs of
the class, and per rack when RF = racks pins each rack's bytes), network in
and out max/mean (as fractions of capacity), replica moves and bytes moved
against the bytes needed to reach the same balance, and the same figures for
Kafka's default assignment of the same partitions to the same brokers and
for the lower bound: the least max any assignment meeting the hard
constraints reaches (planner/bounds.py: a fractional relaxation; disk with
the plan's bytes per media class), with the plan's max over it.

"Needed" (planner/loads.py needed_bytes): a lower bound on what any plan
moves to reach the planner's result: every dir sheds what it holds above the
largest utilization of its media class after the plan (all of it on an
excluded broker) and at least the hot bytes it holds off SSD before and not
after, and the SSD class as a whole sheds what must make room for them.
"Hot off SSD": bytes of hot partitions' replicas on HDD dirs (the hot set of
planner/goals/hot_on_ssd.py). "Topic surplus": replicas beyond their
broker's share of their topic, ceil(topic replicas / brokers) (the
topic_spread goal; it moves only replicas up to a quarter of the mean size).

    .venv/bin/python bench/planner.py --sizes 10000:12,100000:100,333334:200 --skewed 20000:24

The skewed snapshot (planner/fixtures.py write_skewed): racks of 5:4:3
brokers with RF 3, a quarter of the brokers HDD only, a sixth new and empty
(--add-brokers), hot topics on HDD dirs.

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
    result = {"balance": loads.balance(dirs, brokers), "dirs": dirs, "brokers": brokers, "hot_off_ssd": hot,
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


def run_size(partitions: int, brokers: int, runs: int, seed: int, workdir: Path, skewed: bool = False) -> dict:
    from kafkactl.planner.fixtures import write_skewed
    from kafkactl.planner.generate import generate
    from kafkactl.planner.options import PlannerOptions

    parquet = partitions >= 100_000 and not skewed
    started = time.monotonic()
    if skewed:
        path = workdir / f"skewed-{partitions}-{brokers}"
        added = write_skewed(path, partitions, brokers, seed=seed)
        replicas = 3 * partitions
    else:
        made = generate(workdir / f"{partitions}-{brokers}", partitions=partitions, brokers=brokers,
                        seed=seed, parquet=parquet)
        path, added, replicas = made.path, made.added_brokers, made.replicas
    generated = time.monotonic() - started
    options = PlannerOptions(seed=seed, add_brokers=tuple(added))
    result = optimize_and_measure(path, options, runs, seed)
    return {"partitions": partitions, "brokers": brokers, "replicas": replicas, "skewed": skewed,
            "generate_s": generated, **result}


def optimize_and_measure(path: Path, options, runs: int, seed: int) -> dict:
    """measure() on a Spark session of its own (each size starts a fresh JVM)."""
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("bench-planner")
             .config("spark.sql.shuffle.partitions", "8")
             .config("spark.driver.memory", "6g")
             .config("spark.ui.enabled", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        return measure(spark, path, options, runs, seed)
    finally:
        spark.stop()


def measure(spark, path: Path, options, runs: int, seed: int) -> dict:
    """The optimizer's compute time (`runs` runs; the snapshot read and
    checked as `kafkactl plan` does, not timed) and the figures of its plan,
    Kafka's assignment and the constraint-aware bound."""
    from kafkactl.planner import loads
    from kafkactl.planner.optimizer import optimize
    from kafkactl.planner.snapshot import read_snapshot

    snapshot = read_snapshot(spark, path)
    try:
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
        bound = constraint_bound(snapshot, options, after["dirs"])
        goals = [(g["goal"], g["met"], g["held_back"][:2], g["worsened"]) for g in result.goals]
        return {"times": times, "rounds": result.rounds, "before": before, "after": after, "kafka": kafka,
                "bound": bound, "goals": goals}
    finally:
        snapshot.unpersist()


def constraint_bound(snapshot, options, dirs) -> dict:
    """planner/bounds.py's figures with each media class holding what the plan puts there."""
    from kafkactl.planner.bounds import lower_bound

    rows = [{"broker_id": d.broker_id, "path": d.path, "media": d.media, "used_bytes": d.size_bytes} for d in dirs]
    return lower_bound(snapshot, options, rows)


def report(r: dict) -> str:
    title = "skewed: " if r["skewed"] else ""
    lines = [f"## {title}{r['partitions']:,} partitions ({r['replicas']:,} replicas) on {r['brokers']} brokers",
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
    bound = r["bound"]
    lines.append(f"| lower bound | {_ratio(bound, 'log_dir_utilization_ssd')} | "
                 f"{_ratio(bound, 'log_dir_utilization_hdd')} | | | {_ratio(bound, 'network_in_utilization')} | "
                 f"{_ratio(bound, 'network_out_utilization')} | 0.00 | 0 | | {needed / 1e12:.2f} | "
                 f"{needed / 1e12:.2f} | 1.00 |")
    lines += ["", bound_line(r), goals_line(r)]
    if r["replicas"] >= 900_000:
        median = statistics.median(r["times"])
        lines += ["", f"aim: {AIM_SECONDS_1M} s for 1,000,000 replicas on local[2]; measured "
                      f"{median:.0f} s, ratio measured/aim {median / AIM_SECONDS_1M:.2f}"]
    return "\n".join(lines)


def _ratio(bound: dict, name: str) -> str:
    found = bound.get(name)
    return "-" if not found or found["max_mean"] is None else f"{found['max_mean']:.3f}"


def bound_line(r: dict) -> str:
    """The plan's max over the constraint-aware bound, per resource, and the
    worst media class's max/mean over the least worst any assignment reaches."""
    bound, balance, dirs = r["bound"], r["after"]["balance"], r["after"]["dirs"]
    parts = []
    for media in ("ssd", "hdd"):
        found = bound.get(f"log_dir_utilization_{media}")
        if found and found["max"]:
            parts.append(f"disk {media} {balance.disk_max[media] / found['max']:.3f}")
    worst = bound["disk_worst_media"]["log_dir"]
    plan_worst = max(_max_over_capacity_mean(dirs, m) for m in ("ssd", "hdd") if any(d.media == m for d in dirs))
    parts.append(f"worst media {plan_worst:.3f} / {worst['max']:.3f} = {plan_worst / worst['max']:.3f}")
    brokers = r["after"]["brokers"]
    for name, key, load, capacity in (
            ("net in", "network_in_utilization", "bytes_in", "network_in_capacity_bytes_per_s"),
            ("net out", "network_out_utilization", "bytes_out", "network_out_capacity_bytes_per_s")):
        plan = max(b[load] / b[capacity] for b in brokers)
        parts.append(f"{name} {plan / bound[key]['max']:.3f}")
    limits = sorted({x for k, v in bound.items() if isinstance(v, dict) and "limited_by" in v for x in v["limited_by"]})
    return (f"plan / constraint-aware bound (max over max): {', '.join(parts)}; "
            f"constraints above perfect balance: {', '.join(limits) or 'none'}")


def _max_over_capacity_mean(dirs, media: str) -> float:
    mine = [d for d in dirs if d.media == media]
    mean = sum(d.size_bytes for d in mine) / sum(d.capacity_bytes for d in mine)
    return max(d.size_bytes / d.capacity_bytes for d in mine) / mean


def goals_line(r: dict) -> str:
    parts = []
    for name, met, held, worsened in r["goals"]:
        text = f"{name} {'met' if met else 'not met'}"
        if not met and held:
            text += f" ({held[0]})"
        if worsened:
            text += f" BUG worsened: {worsened}"
        parts.append(text)
    return "goals: " + "; ".join(parts)


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
    parser.add_argument("--skewed", default="20000:24",
                        help="partitions:brokers of the skewed snapshot (racks 5:4:3, HDD-only and empty brokers, "
                             "hot data on HDD); empty: none")
    parser.add_argument("--runs", type=int, default=1, help="optimizer runs per size (median)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    sizes = [(*(int(x) for x in s.split(":")), False) for s in args.sizes.split(",") if s]
    sizes += [(*(int(x) for x in s.split(":")), True) for s in args.skewed.split(",") if s]
    with tempfile.TemporaryDirectory(prefix="bench-planner-") as workdir:
        for partitions, brokers, skewed in sizes:
            print(report(run_size(partitions, brokers, args.runs, args.seed, Path(workdir), skewed)), flush=True)
            print(flush=True)


if __name__ == "__main__":
    sys.exit(main())
