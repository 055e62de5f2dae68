"""The hard constraints, as an independent checker of any assignment.

`check(assignment, snapshot, options)` counts the violations per kind and
keeps a few examples (kind, subject, detail) of each; `check_states` does
the same for several assignments at once (the report's before, after and
Kafka's), with the per-partition kinds as one Spark job and the load kinds
from the per-dir and per-broker aggregates (usage.state_loads). The
optimizer's results are checked with it before a plan is written, so a
proposal that breaks a hard constraint is never written, whoever made it.

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

from kafkactl.planner.usage import held_bytes, human_bytes, human_rate, snapshot_tables, state_loads, tagged

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
    """The violations of one assignment (see check_states)."""
    frame = tagged([assignment], snapshot)
    try:
        loads = state_loads(frame.sparkSession, frame, 1, snapshot)
        return check_states(frame, 1, snapshot, options, loads, examples_per_kind)[0]
    finally:
        frame.unpersist()


def check_states(tagged_frame, count: int, snapshot, options, loads: list,
                 examples_per_kind: int = EXAMPLES_PER_KIND) -> list[ConstraintCheck]:
    """The violations of several assignments (usage.tagged), per state: the
    per-partition and per-replica kinds in one Spark job (each kind's count
    rides along with its first few examples), the load kinds from the
    per-dir and per-broker rows of usage.state_loads."""
    rows = _partition_rows(tagged_frame, count, snapshot, options, max(examples_per_kind, 1))
    results = []
    for state in range(count):
        mine = [r for r in rows if r.state == state]
        counts = {r.kind: r["_count"] for r in mine}
        examples = [{"kind": r.kind, "subject": r.subject, "detail": r.detail}
                    for r in mine if r["_n"] <= examples_per_kind]
        for kind, found in _load_violations(*loads[state], options).items():
            counts[kind] = len(found)
            examples += found[:examples_per_kind]
        ordered = {kind: counts[kind] for kind in KINDS if kind in counts}
        examples.sort(key=lambda e: (KINDS.index(e["kind"]), e["subject"], e["detail"]))
        results.append(ConstraintCheck(ordered, examples))
    return results


def _partition_rows(tagged_frame, count: int, snapshot, options, examples: int) -> list:
    """(state, kind, subject, detail, _count, _n) of the kinds that need the
    partitions, at most `examples` per state and kind. SQL text: one call to
    Spark for the whole query."""
    spark = tagged_frame.sparkSession
    states = ", ".join(f"({i})" for i in range(count))
    name = "concat_ws('-', topic, CAST(`partition` AS STRING))"
    parts = [
        f"SELECT s.state, 'partition_missing' AS kind, concat_ws('-', c.topic, CAST(c.`partition` AS STRING)) "
        f"AS subject, 'the assignment has no replicas for it' AS detail "
        f"FROM current c CROSS JOIN (SELECT * FROM VALUES {states} AS v(state)) s "
        f"LEFT JOIN {{t}} a ON a.state = s.state AND a.topic = c.topic AND a.`partition` = c.`partition` "
        f"WHERE a.replicas IS NULL",
        f"SELECT a.state, 'unknown_partition', {name}, 'not a partition of the snapshot' "
        f"FROM {{t}} a LEFT ANTI JOIN current c ON a.topic = c.topic AND a.`partition` = c.`partition`",
        f"SELECT a.state, 'replication_factor', concat_ws('-', a.topic, CAST(a.`partition` AS STRING)), "
        f"format_string('%d replicas %s, had %d', size(a.replicas), to_json(a.replicas), c.current_rf) "
        f"FROM {{t}} a JOIN current c ON a.topic = c.topic AND a.`partition` = c.`partition` "
        f"WHERE size(a.replicas) != c.current_rf",
        f"SELECT state, 'duplicate_broker', {name}, "
        f"format_string('replicas %s list a broker more than once', to_json(replicas)) "
        f"FROM {{t}} WHERE size(array_distinct(replicas)) != size(replicas)",
        f"SELECT state, 'log_dirs_length', {name}, "
        f"format_string('%d log dirs for %d replicas', size(log_dirs), size(replicas)) "
        f"FROM {{t}} WHERE size(log_dirs) != size(replicas)",
        f"SELECT state, 'unknown_broker', {name}, "
        f"format_string('a replica on broker %d, which is not in the snapshot', broker_id) "
        f"FROM placed LEFT ANTI JOIN {{b}} USING (broker_id)",
        f"SELECT state, 'unknown_log_dir', {name}, "
        f"format_string('log dir %s is not a log dir of broker %d', coalesce(path, '(none)'), broker_id) "
        f"FROM (SELECT * FROM placed LEFT SEMI JOIN {{b}} USING (broker_id)) p "
        f"LEFT ANTI JOIN {{d}} d ON p.broker_id = d.broker_id AND p.path = d.path",
    ]
    if options.exclude_brokers:
        excluded = ", ".join(str(int(b)) for b in options.exclude_brokers)
        parts.append("SELECT state, 'excluded_broker', format_string('broker %d', broker_id), "
                     "format_string('holds %d replicas; --exclude-brokers asks for none', count(*)) "
                     f"FROM placed WHERE broker_id IN ({excluded}) GROUP BY state, broker_id")
    racks = _rack_count(snapshot, options)
    if racks is not None:
        # a partition spans fewer racks than it could: min(replication factor, racks)
        parts.append(
            f"SELECT state, 'rack_spread', {name}, format_string('%d replicas on %d racks (%s); {racks} racks "
            f"allow %d', rf, spanned, array_join(racks_used, ','), least(rf, {racks})) FROM ("
            f"  SELECT state, topic, `partition`, count(*) AS rf, count(DISTINCT rack) AS spanned, "
            f"  array_sort(collect_set(rack)) AS racks_used "
            f"  FROM placed LEFT JOIN (SELECT broker_id, rack FROM {{b}}) USING (broker_id) "
            f"  GROUP BY state, topic, `partition`) WHERE spanned < least(rf, {racks})")
    query = (
        "WITH current AS (SELECT topic, `partition`, size(replicas) AS current_rf FROM {p}), "
        "placed AS (SELECT state, topic, `partition`, broker_id, get(log_dirs, i) AS path "
        "  FROM (SELECT state, topic, `partition`, log_dirs, posexplode(replicas) AS (i, broker_id) FROM {t})), "
        "found AS (" + " UNION ALL ".join(parts) + ") "
        "SELECT * FROM (SELECT *, count(*) OVER (PARTITION BY state, kind) AS _count, "
        "row_number() OVER (PARTITION BY state, kind ORDER BY subject, detail) AS _n FROM found) "
        f"WHERE _n <= {examples}")
    return spark.sql(query, t=tagged_frame, p=snapshot.partitions, b=snapshot.brokers,
                     d=snapshot.log_dirs).collect()


def _rack_count(snapshot, options) -> int | None:
    """rack_count from the collected brokers rows (no Spark job)."""
    excluded = set(options.exclude_brokers)
    racks = [r.rack for r in snapshot_tables(snapshot)[0] if r.broker_id not in excluded]
    if not racks or any(rack is None for rack in racks):
        return None
    return len(set(racks))


def _load_violations(brokers: list, dirs: list, options) -> dict[str, list[dict]]:
    """log_dir_capacity, network_in and network_out, from the per-dir and
    per-broker rows: every example, sorted, per kind with any."""
    found: dict[str, list[dict]] = {}
    threshold = options.capacity_threshold
    for d in dirs:
        if d["utilization"] > threshold:
            found.setdefault("log_dir_capacity", []).append({
                "kind": "log_dir_capacity", "subject": f"broker {d['broker_id']} {d['path']}",
                "detail": "%d of %d bytes used (%.3f > %s)" % (d["used_bytes"], d["capacity_bytes"],
                                                              d["utilization"], threshold)})
    for direction, threshold in (("in", options.network_in_threshold), ("out", options.network_out_threshold)):
        for b in brokers:
            if b[f"network_{direction}_utilization"] > threshold:
                found.setdefault(f"network_{direction}", []).append({
                    "kind": f"network_{direction}", "subject": f"broker {b['broker_id']}",
                    "detail": "%.0f bytes/s %s (%.3f of capacity > %s)" % (
                        b[f"network_{direction}_bytes_per_s"], direction, b[f"network_{direction}_utilization"],
                        threshold)})
    for examples in found.values():
        examples.sort(key=lambda e: (e["subject"], e["detail"]))
    return found


# --- feasibility: necessary conditions, before optimizing
#
# From the brokers and log_dirs rows (small, collected once per snapshot)
# and two Spark jobs over the partitions: their totals, and the bytes each
# dir holds of them now.

def infeasible(snapshot, options) -> list[str]:
    """Hard constraints no assignment can meet, each with why (empty: no proof
    of infeasibility; the optimizer may still find none)."""
    brokers, _ = snapshot_tables(snapshot)
    excluded = set(options.exclude_brokers)
    eligible = [b for b in brokers if b.broker_id not in excluded]
    racks = _rack_count(snapshot, options)
    totals = _partition_totals(snapshot, racks if racks is not None and racks >= 2 else None)
    reasons = _replication_reasons(totals, len(eligible), options)
    if reasons:
        return reasons  # the load checks below assume every partition can be placed
    room = _room(snapshot, options, {b.broker_id for b in eligible})
    return _capacity_reasons(totals, eligible, room, options) + _rack_reasons(totals, racks, eligible, room,
                                                                             options)


def _partition_totals(snapshot, racks: int | None):
    """One Spark job: the widest partition (most replicas, then by topic and
    partition), the replicas' bytes and rates, and the partitions that need
    a replica in every rack."""
    every_rack = f"size(replicas) >= {racks}" if racks else "false"
    return snapshot.partitions.selectExpr(
        "min(named_struct('rf', -size(replicas), 'topic', topic, 'partition', `partition`)) AS widest",
        "sum(size_bytes * size(replicas)) AS bytes", "sum(bytes_in_per_s * size(replicas)) AS `in`",
        "sum(bytes_out_per_s) AS out", "max(size_bytes) AS largest",
        f"count_if({every_rack}) AS rack_partitions",
        f"sum(CASE WHEN {every_rack} THEN size_bytes END) AS rack_bytes",
        f"sum(CASE WHEN {every_rack} THEN bytes_in_per_s END) AS rack_in").first()


def _room(snapshot, options, eligible: set) -> dict:
    """Per eligible dir (broker_id, path): capacity x threshold less what
    stays whatever moves (its bytes of no partition in the snapshot)."""
    held = held_bytes(snapshot)
    _, dirs = snapshot_tables(snapshot)
    return {(d.broker_id, d.path): d.capacity_bytes * options.capacity_threshold
            - max(d.used_bytes - held.get((d.broker_id, d.path), 0), 0)
            for d in dirs if d.broker_id in eligible}


def _replication_reasons(totals, eligible: int, options) -> list[str]:
    widest = totals.widest
    if widest is not None and -widest.rf > eligible:
        excluded = f" (excluded: {','.join(map(str, options.exclude_brokers))})" if options.exclude_brokers else ""
        return [f"replication factor: partition {widest.topic}-{widest.partition} has {-widest.rf} replicas but "
                f"only {eligible} brokers may hold replicas{excluded}"]
    return []


def _capacity_reasons(totals, eligible: list, room: dict, options) -> list[str]:
    free = sum(max(r, 0.0) for _, r in sorted(room.items()))
    largest_room = max(room.values(), default=None)
    reasons = []
    if (totals.bytes or 0) > free:
        reasons.append(f"log dir capacity: the replicas take {human_bytes(totals.bytes)} but the eligible brokers' "
                       f"log dirs have {human_bytes(free)} free under the {options.capacity_threshold} "
                       f"capacity threshold")
    elif (totals.largest or 0) > (largest_room or 0):
        reasons.append(f"log dir capacity: the largest partition ({human_bytes(totals.largest)}) fits in no "
                       f"eligible log dir under the {options.capacity_threshold} capacity threshold")
    have_in = sum(b.network_in_capacity_bytes_per_s for b in eligible)
    have_out = sum(b.network_out_capacity_bytes_per_s for b in eligible)
    for direction, need, have, threshold in (("in", totals["in"], have_in, options.network_in_threshold),
                                             ("out", totals.out, have_out, options.network_out_threshold)):
        if (need or 0) > have * threshold:
            reasons.append(f"network {direction}: the partitions need {human_rate(need)} but the eligible brokers "
                           f"carry at most {human_rate(have * threshold)} under the {threshold} threshold")
    return reasons


def _rack_reasons(totals, racks: int | None, eligible: list, room: dict, options) -> list[str]:
    """With R racks, a partition of R or more replicas needs one in every rack:
    each rack must hold all such partitions."""
    if racks is None or racks < 2 or not totals.rack_partitions:
        return []
    rack_of = {b.broker_id: b.rack for b in eligible}
    per_rack: dict[str, float] = {}
    for (broker_id, _), r in sorted(room.items()):
        per_rack[rack_of[broker_id]] = per_rack.get(rack_of[broker_id], 0.0) + max(r, 0.0)
    reasons = []
    for rack in sorted(per_rack):
        members = ",".join(str(b.broker_id) for b in sorted(eligible, key=lambda b: b.broker_id) if b.rack == rack)
        in_capacity = sum(b.network_in_capacity_bytes_per_s for b in eligible if b.rack == rack)
        if totals.rack_bytes > per_rack[rack]:
            reasons.append(
                f"rack spread: with {racks} racks, each of the {totals.rack_partitions} partitions with {racks} or "
                f"more replicas needs a replica in rack {rack}, {human_bytes(totals.rack_bytes)} in all, but the log "
                f"dirs of rack {rack} (brokers {members}) hold at most {human_bytes(per_rack[rack])} more under the "
                f"{options.capacity_threshold} capacity threshold")
        if (totals.rack_in or 0) > in_capacity * options.network_in_threshold:
            reasons.append(
                f"rack spread: with {racks} racks, rack {rack} (brokers {members}) must take "
                f"{human_rate(totals.rack_in)} in, above {human_rate(in_capacity * options.network_in_threshold)} "
                f"under the {options.network_in_threshold} network threshold")
    return reasons
