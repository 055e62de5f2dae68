"""The hard constraints, as an independent checker of any assignment.

`violations(assignment, snapshot, options)` is a DataFrame of (kind, subject,
detail), one row per violation, computed with Spark aggregations; `check`
collects the counts per kind and a few examples of each. The optimizer's
results are checked with it before a plan is written, so a proposal that
breaks a hard constraint is never written, whoever made it.

Kinds:
- partition_missing / unknown_partition: the assignment lacks a partition of
  the snapshot, or has one the snapshot does not;
- replication_factor: the number of replicas changed;
- duplicate_broker: a partition lists a broker twice;
- log_dirs_length: not one log dir per replica;
- unknown_broker / unknown_log_dir: a replica on a broker the snapshot lacks,
  or in a dir that is not one of its broker's;
- excluded_broker: a broker given with --exclude-brokers still holds replicas;
- rack_spread: a partition spans fewer racks than it could: min(replication
  factor, racks of the eligible brokers). It applies when every eligible
  broker has a rack, as Kafka's rack-aware assignment does;
- log_dir_capacity: a dir's projected used bytes above the capacity threshold;
- network_in / network_out: a broker above its threshold of inbound/outbound
  capacity.

`infeasible(snapshot, options)` finds, before any optimizing, the hard
constraints that no assignment can meet (necessary conditions only), each
with why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import reduce

from .usage import broker_load, dir_usage, human_bytes, human_rate, replicas

KINDS = ("partition_missing", "unknown_partition", "replication_factor", "duplicate_broker", "log_dirs_length",
         "unknown_broker", "unknown_log_dir", "excluded_broker", "rack_spread", "log_dir_capacity", "network_in",
         "network_out")
EXAMPLES_PER_KIND = 5


@dataclass
class ConstraintCheck:
    counts: dict[str, int] = field(default_factory=dict)     # kind -> violations (kinds with none omitted)
    examples: list[dict] = field(default_factory=list)       # a few {kind, subject, detail} per kind

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def to_dict(self) -> dict:
        return {"total": self.total, "counts": dict(self.counts), "examples": list(self.examples)}

    def describe(self) -> list[str]:
        """One line per example, then how many more of each kind."""
        lines = [f"{e['kind']}: {e['subject']}: {e['detail']}" for e in self.examples]
        shown: dict[str, int] = {}
        for e in self.examples:
            shown[e["kind"]] = shown.get(e["kind"], 0) + 1
        lines += [f"{kind}: {count - shown.get(kind, 0)} more" for kind, count in self.counts.items()
                  if count > shown.get(kind, 0)]
        return lines


def check(assignment, snapshot, options, examples_per_kind: int = EXAMPLES_PER_KIND) -> ConstraintCheck:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    # One Spark job: each kind's count rides along with its first few examples.
    by_kind = Window.partitionBy("kind")
    rows = (violations(assignment, snapshot, options)
            .withColumn("_count", F.count("*").over(by_kind))
            .withColumn("_n", F.row_number().over(by_kind.orderBy("subject", "detail")))
            .where(F.col("_n") <= max(examples_per_kind, 1)).collect())
    counts = {r.kind: r["_count"] for r in rows}
    rows = [r for r in rows if r["_n"] <= examples_per_kind]
    ordered = {kind: counts[kind] for kind in KINDS if kind in counts}
    examples = sorted(({"kind": r.kind, "subject": r.subject, "detail": r.detail} for r in rows),
                      key=lambda e: (KINDS.index(e["kind"]), e["subject"], e["detail"]))
    return ConstraintCheck(ordered, examples)


def violations(assignment, snapshot, options):
    """Every violation of a hard constraint: a DataFrame (kind, subject, detail)."""
    frames = [*_partition_violations(assignment, snapshot), *_replica_violations(assignment, snapshot, options),
              _rack_violations(assignment, snapshot, options), *_load_violations(assignment, snapshot, options)]
    return reduce(lambda a, b: a.unionByName(b), frames)


def _violation(frame, kind: str, subject, detail):
    from pyspark.sql import functions as F

    return frame.select(F.lit(kind).alias("kind"), subject.alias("subject"), detail.alias("detail"))


def _partition_name(prefix: str = ""):
    from pyspark.sql import functions as F

    return F.concat_ws("-", F.col(f"{prefix}topic"), F.col(f"{prefix}partition").cast("string"))


def _partition_violations(assignment, snapshot):
    from pyspark.sql import functions as F

    current = snapshot.partitions.select("topic", "partition", F.size("replicas").alias("current_rf"))
    joined = assignment.join(current, ["topic", "partition"], "full_outer")
    name = _partition_name()
    yield _violation(joined.where(F.col("replicas").isNull() & F.col("current_rf").isNotNull()),
                     "partition_missing", name, F.lit("the assignment has no replicas for it"))
    yield _violation(joined.where(F.col("current_rf").isNull()), "unknown_partition", name,
                     F.lit("not a partition of the snapshot"))
    yield _violation(joined.where(F.size("replicas") != F.col("current_rf")), "replication_factor", name,
                     F.format_string("%d replicas %s, had %d", F.size("replicas"), F.to_json("replicas"),
                                     F.col("current_rf")))
    yield _violation(assignment.where(F.size(F.array_distinct("replicas")) != F.size("replicas")),
                     "duplicate_broker", name,
                     F.format_string("replicas %s list a broker more than once", F.to_json("replicas")))
    yield _violation(assignment.where(F.size("log_dirs") != F.size("replicas")), "log_dirs_length", name,
                     F.format_string("%d log dirs for %d replicas", F.size("log_dirs"), F.size("replicas")))


def _replica_violations(assignment, snapshot, options):
    from pyspark.sql import functions as F

    placed = replicas(assignment)
    known = F.broadcast(snapshot.brokers.select("broker_id"))
    dirs = F.broadcast(snapshot.log_dirs.select("broker_id", "path"))
    name = _partition_name()
    yield _violation(placed.join(known, "broker_id", "left_anti"), "unknown_broker", name,
                     F.format_string("a replica on broker %d, which is not in the snapshot", "broker_id"))
    yield _violation(placed.join(known, "broker_id", "left_semi").join(dirs, ["broker_id", "path"], "left_anti"),
                     "unknown_log_dir", name,
                     F.format_string("log dir %s is not a log dir of broker %d", F.coalesce("path", F.lit("(none)")),
                                     "broker_id"))
    excluded = list(options.exclude_brokers)
    held = placed.where(F.col("broker_id").isin(excluded)).groupBy("broker_id").count()
    yield _violation(held, "excluded_broker", F.format_string("broker %d", "broker_id"),
                     F.format_string("holds %d replicas; --exclude-brokers asks for none", "count"))


def eligible_brokers(snapshot, options):
    """The brokers that may hold replicas: the snapshot's, less the excluded."""
    from pyspark.sql import functions as F

    return snapshot.brokers.where(~F.col("broker_id").isin(list(options.exclude_brokers)))


def rack_count(snapshot, options) -> int | None:
    """Racks of the eligible brokers; None when one has no rack (no rack constraint then)."""
    from pyspark.sql import functions as F

    row = eligible_brokers(snapshot, options).agg(
        F.countDistinct("rack").alias("racks"), F.sum(F.col("rack").isNull().cast("int")).alias("rackless")).first()
    return None if (row.rackless or 0) > 0 or not row.racks else row.racks


def _rack_violations(assignment, snapshot, options):
    from pyspark.sql import functions as F

    racks = rack_count(snapshot, options)
    spark = assignment.sparkSession
    if racks is None:
        return spark.createDataFrame([], "kind string, subject string, detail string")
    rack_of = F.broadcast(snapshot.brokers.select("broker_id", "rack"))
    spread = (replicas(assignment).join(rack_of, "broker_id", "left")
              .groupBy("topic", "partition")
              .agg(F.count("*").alias("rf"), F.countDistinct("rack").alias("spanned"),
                   F.array_sort(F.collect_set("rack")).alias("racks_used")))
    short = spread.where(F.col("spanned") < F.least(F.col("rf"), F.lit(racks)))
    return _violation(short, "rack_spread", _partition_name(),
                      F.format_string(f"%d replicas on %d racks (%s); {racks} racks allow %d", "rf", "spanned",
                                      F.array_join("racks_used", ","), F.least(F.col("rf"), F.lit(racks))))


def _load_violations(assignment, snapshot, options):
    from pyspark.sql import functions as F

    dirs = dir_usage(assignment, snapshot)
    yield _violation(dirs.where(F.col("utilization") > options.capacity_threshold), "log_dir_capacity",
                     F.format_string("broker %d %s", "broker_id", "path"),
                     F.format_string(f"%d of %d bytes used (%.3f > {options.capacity_threshold})", "used_bytes",
                                     "capacity_bytes", "utilization"))
    brokers = broker_load(assignment, snapshot)
    for direction, threshold in (("in", options.network_in_threshold), ("out", options.network_out_threshold)):
        yield _violation(brokers.where(F.col(f"network_{direction}_utilization") > threshold),
                         f"network_{direction}", F.format_string("broker %d", "broker_id"),
                         F.format_string(f"%.0f bytes/s {direction} (%.3f of capacity > {threshold})",
                                         f"network_{direction}_bytes_per_s", f"network_{direction}_utilization"))


# --- feasibility: necessary conditions, before optimizing

def infeasible(snapshot, options) -> list[str]:
    """Hard constraints no assignment can meet, each with why (empty: no proof
    of infeasibility; the optimizer may still find none)."""
    reasons = _replication_reasons(snapshot, options)
    if reasons:
        return reasons  # the load checks below assume every partition can be placed
    return _capacity_reasons(snapshot, options) + _rack_reasons(snapshot, options)


def _replication_reasons(snapshot, options) -> list[str]:
    from pyspark.sql import functions as F

    eligible = eligible_brokers(snapshot, options).count()
    widest = (snapshot.partitions.select("topic", "partition", F.size("replicas").alias("rf"))
              .orderBy(F.desc("rf"), "topic", "partition").first())
    if widest is not None and widest.rf > eligible:
        excluded = f" (excluded: {','.join(map(str, options.exclude_brokers))})" if options.exclude_brokers else ""
        return [f"replication factor: partition {widest.topic}-{widest.partition} has {widest.rf} replicas but only "
                f"{eligible} brokers may hold replicas{excluded}"]
    return []


def _capacity_reasons(snapshot, options) -> list[str]:
    from pyspark.sql import functions as F

    eligible = eligible_brokers(snapshot, options).select("broker_id")
    fixed = _fixed_bytes(snapshot).join(eligible, "broker_id", "left_semi")
    room = fixed.select((F.col("capacity_bytes") * options.capacity_threshold - F.col("used_bytes")).alias("room"))
    totals = snapshot.partitions.agg(
        F.sum(F.col("size_bytes") * F.size("replicas")).alias("bytes"),
        F.sum(F.col("bytes_in_per_s") * F.size("replicas")).alias("in"),
        F.sum("bytes_out_per_s").alias("out"),
        F.max("size_bytes").alias("largest")).first()
    capacity = eligible_brokers(snapshot, options).agg(
        F.sum("network_in_capacity_bytes_per_s").alias("in"), F.sum("network_out_capacity_bytes_per_s").alias("out")
    ).first()
    space = room.agg(F.sum(F.greatest("room", F.lit(0.0))).alias("total"), F.max("room").alias("largest")).first()
    reasons = []
    if (totals.bytes or 0) > (space.total or 0):
        reasons.append(f"log dir capacity: the replicas take {human_bytes(totals.bytes)} but the eligible brokers' "
                       f"log dirs have {human_bytes(space.total or 0)} free under the {options.capacity_threshold} "
                       f"capacity threshold")
    elif (totals.largest or 0) > (space.largest or 0):
        reasons.append(f"log dir capacity: the largest partition ({human_bytes(totals.largest)}) fits in no "
                       f"eligible log dir under the {options.capacity_threshold} capacity threshold")
    for direction, need, have, threshold in (("in", totals["in"], capacity["in"], options.network_in_threshold),
                                             ("out", totals.out, capacity.out, options.network_out_threshold)):
        if (need or 0) > (have or 0) * threshold:
            reasons.append(f"network {direction}: the partitions need {human_rate(need)} but the eligible brokers "
                           f"carry at most {human_rate((have or 0) * threshold)} under the {threshold} threshold")
    return reasons


def _fixed_bytes(snapshot):
    """Per dir, what stays whatever moves: its bytes of no partition in the snapshot (as `used_bytes`)."""
    return dir_usage(snapshot.partitions.limit(0), snapshot)


def _rack_reasons(snapshot, options) -> list[str]:
    """With R racks, a partition of R or more replicas needs one in every rack:
    each rack must hold all such partitions."""
    from pyspark.sql import functions as F

    racks = rack_count(snapshot, options)
    if racks is None or racks < 2:
        return []
    eligible = eligible_brokers(snapshot, options)
    needed = snapshot.partitions.where(F.size("replicas") >= racks).agg(
        F.count("*").alias("partitions"), F.sum("size_bytes").alias("bytes"),
        F.sum("bytes_in_per_s").alias("in")).first()
    if not needed.partitions:
        return []
    fixed = _fixed_bytes(snapshot).join(eligible.select("broker_id", "rack"), "broker_id")
    per_rack = fixed.groupBy("rack").agg(
        F.sum(F.greatest(F.col("capacity_bytes") * options.capacity_threshold - F.col("used_bytes"), F.lit(0.0)))
        .alias("room"))
    network = eligible.groupBy("rack").agg(
        F.sum("network_in_capacity_bytes_per_s").alias("in_capacity"),
        F.array_sort(F.collect_list("broker_id")).alias("brokers"))
    reasons = []
    for row in per_rack.join(network, "rack").orderBy("rack").collect():
        members = ",".join(map(str, row.brokers))
        if needed.bytes > row.room:
            reasons.append(
                f"rack spread: with {racks} racks, each of the {needed.partitions} partitions with {racks} or more "
                f"replicas needs a replica in rack {row.rack}, {human_bytes(needed.bytes)} in all, but the log dirs "
                f"of rack {row.rack} (brokers {members}) hold at most {human_bytes(row.room)} more under the "
                f"{options.capacity_threshold} capacity threshold")
        if (needed["in"] or 0) > row.in_capacity * options.network_in_threshold:
            reasons.append(
                f"rack spread: with {racks} racks, rack {row.rack} (brokers {members}) must take "
                f"{human_rate(needed['in'])} in, above {human_rate(row.in_capacity * options.network_in_threshold)} "
                f"under the {options.network_in_threshold} network threshold")
    return reasons
