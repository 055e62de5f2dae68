"""A lower bound on the most loaded broker or log dir that holds under the
hard constraints: the report's `lower_bound` row, and what a plan's figures
are compared with.

Perfect balance (every broker at total load over total capacity) is a bound,
but a loose one when the hard constraints forbid it: with racks of 5, 4 and 3
brokers and every partition at replication factor 3, each rack holds one
replica of every partition, so the 3-broker rack's brokers carry 4/3 of the
mean whatever the plan. The bound here is the optimum of a fractional
relaxation of the placement, a small linear program solved with HiGHS
(scipy.optimize.linprog).

Derivation. Partitions are grouped into classes by replication factor r; a
class c has weight W_c, the sum over its partitions of the resource's
weight (size in bytes; bytes in per second; bytes out per second; 1 for
counts). A bin d is a place load goes: a log dir of an eligible broker (disk)
or an eligible broker (network, counts). Any assignment that meets the hard
constraints defines z[c, d], the weight of class c's replicas in bin d, and
these meet:

  (1) sum_d z[c, d] = r_c W_c: every replica is placed, and only on eligible
      brokers (excluded brokers have no bins);
  (2) sum over the bins d of broker b of z[c, d] <= W_c: a partition has at
      most one replica per broker (summed over the class);
  (3) with R racks (when every eligible broker has a rack, as the checker
      requires for the rack rule), over the bins of rack k with n_k brokers:
      r_c <= R: at most W_c (one replica per rack);
      r_c >  R: at least W_c (every rack) and at most min(n_k, r_c - R + 1) W_c;
  (4) fixed_d + sum_c z[c, d] <= threshold x capacity_d, where fixed_d is what
      stays whatever moves (a dir's bytes of no partition of the snapshot):
      the capacity and network-in thresholds;
  (5) disk only: sum over the bins of media m of sum_c z[c, d] = V_m, the
      bytes of replicas the assessed assignment keeps on media m. The hard
      constraints do not pin a replica's media (without (5) the SSD bound
      would be 0: everything on HDD); how much each class holds is the
      hot_on_ssd goal's choice, and the bound answers "how even can any
      assignment with this split between media be".

So for the measured units u (a log dir; a broker's dirs of one media; a
broker), min t subject to fixed_u + sum_{c, d in u} z[c, d] <= t x
capacity_u and (1)-(5) is at most the largest utilization of any such
assignment: a lower bound. It is at least perfect balance (the units cover
the bins). Cheap additions: counts are whole, so the replica count bound is
rounded up; the largest partition's inbound lands whole on some broker (at
least its size over the largest capacity); leaders may sit on any replica,
so leader counts and network out are bounded by the even split and by the
largest partition. The solver's optimum is lowered by one part in a million
against its tolerance. Dropping constraints (a class's per-partition
coupling, the network thresholds in the disk program, media beyond (5))
keeps it a lower bound, only a looser one.

`limited_by` names the constraint families that lift the bound above
perfect balance: each is dropped in turn and the bound re-solved.

Pure decisions (min_max_utilization, figures) take literal inputs; one Spark
job (partition_classes) gathers the classes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

SOLVER_MARGIN = 1e-6      # the optimum is lowered by this share (the solver's tolerance)
LIFT = 1e-6               # a bound this share above perfect balance is "lifted" by a constraint


@dataclass(frozen=True)
class PartitionClass:
    """The partitions of one replication factor, summed."""
    replication_factor: int
    partitions: int
    size_bytes: int
    bytes_in_per_s: float
    bytes_out_per_s: float
    largest_bytes_in_per_s: float = 0.0
    largest_bytes_out_per_s: float = 0.0


@dataclass(frozen=True)
class Bin:
    """A place load can go: a log dir or a broker of an eligible broker."""
    broker_id: int
    rack: str | None
    group: str | None = None       # media class of a dir (disk)
    fixed: float = 0.0             # load that stays whatever moves
    limit: float = math.inf        # the most load it may carry (a hard threshold)


@dataclass(frozen=True)
class Unit:
    """Bins measured together (a dir; a broker's dirs of one media; a broker)."""
    bins: tuple[int, ...]
    capacity: float


@dataclass(frozen=True)
class Relaxed:
    """Constraint families kept in the program (all, except to find what binds)."""
    racks: bool = True
    distinct: bool = True
    limits: bool = True


def min_max_utilization(classes: list[tuple[int, float]], bins: list[Bin], units: list[Unit],
                        volumes: dict[str, float] | None = None, keep: Relaxed = Relaxed()) -> float | None:
    """The least t with every unit's load <= t x its capacity, over the
    relaxation (1)-(5) of the module doc; None when it has no solution.
    classes: (replication factor, weight) pairs."""
    from scipy.optimize import linprog

    classes = [(r, w) for r, w in classes if w > 0]
    units = [u for u in units if u.capacity > 0]
    if not units:
        return None
    if not classes:
        return max(sum(bins[i].fixed for i in u.bins) / u.capacity for u in units)
    scale = max(sum(r * w for r, w in classes), sum(b.fixed for b in bins), 1.0)
    rows = _Rows(len(classes) * len(bins) + 1)
    _placement_rows(rows, classes, bins, volumes, keep, scale)
    t = len(classes) * len(bins)
    for u in units:
        coefficients = {c * len(bins) + i: 1.0 for c in range(len(classes)) for i in u.bins}
        coefficients[t] = -u.capacity / scale
        rows.upper(coefficients, -sum(bins[i].fixed for i in u.bins) / scale)
    cost = [0.0] * t + [1.0]
    # (2) for a broker of one bin, as the variable's bound
    bounds = [(0.0, (w if keep.distinct else r * w) / scale) for r, w in classes for _ in bins] + [(0.0, None)]
    result = linprog(cost, A_ub=rows.matrix("ub"), b_ub=rows.rhs["ub"] or None,
                     A_eq=rows.matrix("eq"), b_eq=rows.rhs["eq"] or None, bounds=bounds, method="highs")
    if result.status != 0:
        return None
    return float(result.x[t]) * (1 - SOLVER_MARGIN)


def _placement_rows(rows: "_Rows", classes, bins: list[Bin], volumes, keep: Relaxed, scale: float) -> None:
    """Constraints (1)-(5) of the module doc, weights divided by `scale`."""
    n = len(bins)
    by_broker: dict[int, list[int]] = {}
    by_rack: dict[str, list[int]] = {}
    for i, b in enumerate(bins):
        by_broker.setdefault(b.broker_id, []).append(i)
    racked = keep.racks and bool(bins) and all(b.rack is not None for b in bins)
    if racked:
        for i, b in enumerate(bins):
            by_rack.setdefault(b.rack, []).append(i)
    brokers_in = {k: len({bins[i].broker_id for i in members}) for k, members in by_rack.items()}
    racks = len(by_rack)
    for c, (rf, weight) in enumerate(classes):
        w = weight / scale
        rows.equal({c * n + i: 1.0 for i in range(n)}, rf * w)                          # (1)
        if keep.distinct:
            for members in by_broker.values():
                if len(members) > 1:
                    rows.upper({c * n + i: 1.0 for i in members}, w)                     # (2)
        for k, members in sorted(by_rack.items()):
            row = {c * n + i: 1.0 for i in members}
            if rf <= racks:
                rows.upper(row, w)                                                       # (3)
            else:
                rows.upper({key: -1.0 for key in row}, -w)
                rows.upper(row, min(brokers_in[k], rf - racks + 1) * w)
    if keep.limits:
        for i, b in enumerate(bins):
            if b.limit != math.inf:
                rows.upper({c * n + i: 1.0 for c in range(len(classes))}, max(b.limit - b.fixed, 0.0) / scale)  # (4)
    for group, volume in sorted((volumes or {}).items()):
        members = [i for i, b in enumerate(bins) if b.group == group]
        rows.equal({c * n + i: 1.0 for c in range(len(classes)) for i in members}, volume / scale)    # (5)


class _Rows:
    """Sparse constraint rows for linprog."""

    def __init__(self, columns: int):
        self.columns = columns
        self.entries: dict[str, list[tuple[int, int, float]]] = {"ub": [], "eq": []}
        self.rhs: dict[str, list[float]] = {"ub": [], "eq": []}

    def upper(self, coefficients: dict[int, float], rhs: float) -> None:
        self._add("ub", coefficients, rhs)

    def equal(self, coefficients: dict[int, float], rhs: float) -> None:
        self._add("eq", coefficients, rhs)

    def _add(self, kind: str, coefficients: dict[int, float], rhs: float) -> None:
        row = len(self.rhs[kind])
        self.entries[kind] += [(row, column, value) for column, value in coefficients.items()]
        self.rhs[kind].append(rhs)

    def matrix(self, kind: str):
        from scipy.sparse import coo_matrix

        if not self.rhs[kind]:
            return None
        rows, columns, values = zip(*self.entries[kind]) if self.entries[kind] else ((), (), ())
        return coo_matrix((values, (rows, columns)), shape=(len(self.rhs[kind]), self.columns)).tocsr()


# --- the report's figures

@dataclass(frozen=True)
class BrokerSpec:
    broker_id: int
    rack: str | None
    network_in_capacity_bytes_per_s: float
    network_out_capacity_bytes_per_s: float


@dataclass(frozen=True)
class DirSpec:
    broker_id: int
    path: str
    media: str
    capacity_bytes: int
    other_bytes: int          # bytes of no partition of the snapshot: they stay


def figures(classes: list[PartitionClass], brokers: list[BrokerSpec], dirs: list[DirSpec], options,
            media_bytes: dict[str, int]) -> dict:
    """Per resource (the report's names): the bound's statistics over the
    eligible brokers (dirs). `max` is the bound, `mean` perfect balance
    (total load over total capacity), `max_mean` their ratio; `limited_by`
    the constraint families that lift it above perfect balance."""
    excluded = set(options.exclude_brokers)
    eligible = [b for b in brokers if b.broker_id not in excluded]
    eligible_dirs = [d for d in dirs if d.broker_id not in excluded]
    rack = {b.broker_id: b.rack for b in eligible}
    result = {}
    if eligible_dirs:
        result.update(_disk(classes, eligible_dirs, rack, options, media_bytes))
    result["network_in_utilization"] = _network_in(classes, eligible, options)
    result["network_out_utilization"] = _leaders(
        sum(c.bytes_out_per_s for c in classes), max((c.largest_bytes_out_per_s for c in classes), default=0.0),
        [b.network_out_capacity_bytes_per_s for b in eligible])
    result["potential_network_out_utilization"] = _spread(
        classes, [Bin(b.broker_id, b.rack) for b in eligible],
        [b.network_out_capacity_bytes_per_s for b in eligible], lambda c: c.bytes_out_per_s,
        max((c.largest_bytes_out_per_s for c in classes), default=0.0))
    result["replica_count"] = _replica_count(classes, eligible)
    partitions = sum(c.partitions for c in classes)
    result["leader_count"] = _stats(math.ceil(partitions / len(eligible)) if eligible else 0.0,
                                    partitions / len(eligible) if eligible else 0.0,
                                    ["whole counts"] if eligible and partitions % len(eligible) else [])
    return result


def _disk(classes, dirs: list[DirSpec], rack: dict, options, media_bytes: dict) -> dict:
    """Per media class, the bounds per dir and per broker (dirs: the eligible
    ones); and `disk_worst_media`: over every media class at once, the
    least worst max/mean (the classes trade off: a rack that must hold a
    share of every partition can put it on SSD or HDD, not on neither)."""
    bins = [Bin(d.broker_id, rack[d.broker_id], d.media, d.other_bytes,
                options.capacity_threshold * d.capacity_bytes) for d in dirs]
    weights = [(c.replication_factor, float(c.size_bytes)) for c in classes]
    volumes = {m: float(v) for m, v in media_bytes.items() if any(d.media == m for d in dirs)}
    result, joint = {}, {"log_dir": [], "broker": []}
    for media in sorted({d.media for d in dirs}):
        mine = [i for i, d in enumerate(dirs) if d.media == media]
        balance = (sum(dirs[i].other_bytes for i in mine) + volumes.get(media, 0.0)) / sum(
            dirs[i].capacity_bytes for i in mine)
        per_broker: dict[int, list[int]] = {}
        for i in mine:
            per_broker.setdefault(dirs[i].broker_id, []).append(i)
        units = {"log_dir": [Unit((i,), dirs[i].capacity_bytes) for i in mine],
                 "broker": [Unit(tuple(ids), sum(dirs[i].capacity_bytes for i in ids))
                            for _, ids in sorted(per_broker.items())]}
        result[f"log_dir_utilization_{media}"] = _solved(weights, bins, units["log_dir"], volumes, balance)
        result[f"disk_utilization_{media}"] = _solved(weights, bins, units["broker"], volumes, balance)
        for kind, found in units.items():
            # capacity x perfect balance: t is then the unit's utilization over its class's mean
            joint[kind] += [Unit(u.bins, u.capacity * balance) for u in found if balance > 0]
    result["disk_worst_media"] = {kind: _solved(weights, bins, found, volumes, 1.0) for kind, found in joint.items()}
    return result


def _network_in(classes, eligible: list[BrokerSpec], options) -> dict:
    bins = [Bin(b.broker_id, b.rack, limit=options.network_in_threshold * b.network_in_capacity_bytes_per_s)
            for b in eligible]
    return _spread(classes, bins, [b.network_in_capacity_bytes_per_s for b in eligible],
                   lambda c: c.bytes_in_per_s, max((c.largest_bytes_in_per_s for c in classes), default=0.0))


def _spread(classes, bins: list[Bin], capacities: list[float], weight, largest: float) -> dict:
    """A per-broker resource every replica carries: the program, and the
    largest partition's load whole on the broker of largest capacity."""
    if not bins:
        return _stats(0.0, 0.0, [])
    weights = [(c.replication_factor, float(weight(c))) for c in classes]
    units = [Unit((i,), capacity) for i, capacity in enumerate(capacities)]
    balance = sum(w * r for r, w in weights) / sum(capacities)
    stats = _solved(weights, bins, units, None, balance)
    whole = largest / max(capacities) if max(capacities) else 0.0
    if whole > stats["max"]:
        return _stats(whole, balance, ["largest partition"])
    return stats


def _leaders(total: float, largest: float, capacities: list[float]) -> dict:
    """Leaders may be any replica: the even split, or the largest partition whole."""
    if not capacities or not sum(capacities):
        return _stats(0.0, 0.0, [])
    balance = total / sum(capacities)
    whole = largest / max(capacities)
    return _stats(max(balance, whole), balance, ["largest partition"] if whole > balance * (1 + LIFT) else [])


def _replica_count(classes, eligible: list[BrokerSpec]) -> dict:
    if not eligible:
        return _stats(0.0, 0.0, [])
    weights = [(c.replication_factor, float(c.partitions)) for c in classes]
    bins = [Bin(b.broker_id, b.rack) for b in eligible]
    balance = sum(r * w for r, w in weights) / len(eligible)
    stats = _solved(weights, bins, [Unit((i,), 1.0) for i in range(len(bins))], None, balance)
    whole = math.ceil(stats["max"] - 1e-6)
    limited = stats["limited_by"] + (["whole counts"] if whole > stats["max"] + 1e-9 else [])
    return _stats(float(whole), balance, limited)


def _solved(weights, bins: list[Bin], units: list[Unit], volumes, balance: float) -> dict:
    """The program's bound (never below perfect balance), with what lifts it."""
    found = min_max_utilization(weights, bins, units, volumes)
    bound = balance if found is None else max(found, balance)
    limited = []
    if found is not None and bound > balance * (1 + LIFT):
        for name, keep in (("rack spread", Relaxed(racks=False)), ("distinct brokers", Relaxed(distinct=False)),
                           ("thresholds", Relaxed(limits=False))):
            without = min_max_utilization(weights, bins, units, volumes, keep)
            if without is not None and without < bound * (1 - LIFT):
                limited.append(name)
    return _stats(bound, balance, limited if found is not None else ["no solution: perfect balance only"])


def _stats(bound: float, balance: float, limited_by: list[str]) -> dict:
    """The report's statistics of a bound: min and std do not apply."""
    return {"min": None, "max": float(bound), "mean": float(balance), "std": None,
            "max_mean": float(bound) / balance if balance else None, "limited_by": list(limited_by)}


# --- from a snapshot (Spark)

def partition_classes(snapshot) -> list[PartitionClass]:
    """The partitions grouped by replication factor (one Spark job, memoized per snapshot)."""
    from pyspark.sql import functions as F

    cached = getattr(snapshot, "_classes", None)
    if cached is not None:
        return cached

    rows = (snapshot.partitions.groupBy(F.size("replicas").alias("rf"))
            .agg(F.count(F.lit(1)).alias("partitions"), F.sum("size_bytes").alias("size_bytes"),
                 F.sum("bytes_in_per_s").alias("bytes_in"), F.sum("bytes_out_per_s").alias("bytes_out"),
                 F.max("bytes_in_per_s").alias("largest_in"), F.max("bytes_out_per_s").alias("largest_out"))
            .orderBy("rf").collect())
    snapshot._classes = [PartitionClass(r.rf, r.partitions, int(r.size_bytes or 0), float(r.bytes_in or 0),
                                        float(r.bytes_out or 0), float(r.largest_in or 0), float(r.largest_out or 0))
                         for r in rows]
    return snapshot._classes


def lower_bound(snapshot, options, dirs: list[dict] | None = None) -> dict:
    """The report's `lower_bound` row: figures() for the snapshot's
    partitions, with each media class holding what `dirs` (an assessed
    assignment's per-dir rows: broker_id, path, media, used_bytes, as
    report.evaluate gives them) hold of the partitions; without `dirs`,
    what the snapshot's assignment holds."""
    from kafkactl.planner.usage import held_bytes, snapshot_tables

    broker_rows, dir_rows = snapshot_tables(snapshot)
    held = held_bytes(snapshot)
    specs = [DirSpec(d.broker_id, d.path, d.media, d.capacity_bytes,
                     max(d.used_bytes - held.get((d.broker_id, d.path), 0), 0)) for d in dir_rows]
    other = {(d.broker_id, d.path): d.other_bytes for d in specs}
    media_bytes: dict[str, int] = {}
    if dirs is None:
        for d in dir_rows:
            media_bytes[d.media] = media_bytes.get(d.media, 0) + held.get((d.broker_id, d.path), 0)
    else:
        for d in dirs:
            media_bytes[d["media"]] = (media_bytes.get(d["media"], 0)
                                       + d["used_bytes"] - other[(d["broker_id"], d["path"])])
    brokers = [BrokerSpec(b.broker_id, b.rack, b.network_in_capacity_bytes_per_s, b.network_out_capacity_bytes_per_s)
               for b in broker_rows]
    return figures(partition_classes(snapshot), brokers, specs, options, media_bytes)
