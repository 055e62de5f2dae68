"""What a plan achieves, in figures, and the files `kafkactl plan` writes.

For an assignment: per resource, statistics over the eligible brokers (or
their log dirs) — min, max, mean, population standard deviation and
max/mean; the hard constraints' violations (constraints.check); and the
moves against the snapshot's assignment. Only per-broker and per-dir
aggregates reach the driver; plan.json and rollback.json are streamed from
Spark in (topic, partition) order, so the same input gives the same bytes.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

from kafkactl.planner.constraints import check_states
from kafkactl.planner.usage import human_bytes, state_loads, tagged

# Utilizations are fractions of capacity; counts are replicas and leaders per broker.
RESOURCES = ("disk_utilization_ssd", "disk_utilization_hdd", "log_dir_utilization_ssd", "log_dir_utilization_hdd",
             "network_in_utilization", "network_out_utilization", "potential_network_out_utilization",
             "replica_count", "leader_count")
STATES = ("before", "after", "kafka_baseline", "lower_bound")
BROKER_FIGURES = ("replica_count", "leader_count", "network_in_bytes_per_s", "network_out_bytes_per_s",
                  "network_in_utilization", "network_out_utilization", "potential_network_out_utilization")


def summarize(values: list[float]) -> dict | None:
    """min, max, mean, population std and max/mean of some brokers' figures (None if there are none)."""
    if not values:
        return None
    mean = statistics.fmean(values)
    return {"min": float(min(values)), "max": float(max(values)), "mean": mean,
            "std": statistics.pstdev(values) if len(values) > 1 else 0.0,
            "max_mean": float(max(values)) / mean if mean else None}


def evaluate(assignment, snapshot, options, throttle_bytes_per_s: int | None = None) -> dict:
    """Statistics, violations and moves of one assignment (the snapshot's own for `before`)."""
    return evaluate_states([assignment], snapshot, options, throttle_bytes_per_s)[0]


def evaluate_states(states: list, snapshot, options, throttle_bytes_per_s: int | None = None) -> list[dict]:
    """evaluate() of several assignments in one pass: they are tagged and
    persisted together, so loads, violations and moves are three Spark jobs
    whatever their number, and each assignment is computed once."""
    frame = tagged(states, snapshot)
    try:
        current = next((i for i, s in enumerate(states) if s is snapshot.partitions), None)
        loads = state_loads(frame.sparkSession, frame, len(states), snapshot, current)
        checks = check_states(frame, len(states), snapshot, options, loads)
        moved = _moves_of_states(frame, len(states), snapshot, throttle_bytes_per_s)
    finally:
        frame.unpersist()
    excluded = set(options.exclude_brokers)
    results = []
    for (brokers, dirs), found, move in zip(loads, checks, moved):
        for row in brokers:
            row.update(_disk_per_media(dirs, row["broker_id"]))
        results.append({"resources": resource_stats([b for b in brokers if b["broker_id"] not in excluded],
                                                    [d for d in dirs if d["broker_id"] not in excluded]),
                        "violations": found.to_dict(), "moves": move, "brokers": brokers, "log_dirs": dirs})
    return results


def _disk_per_media(dirs: list[dict], broker_id: int) -> dict:
    figures = {}
    for medium in ("ssd", "hdd"):
        own = [d for d in dirs if d["broker_id"] == broker_id and d["media"] == medium]
        capacity = sum(d["capacity_bytes"] for d in own)
        figures[f"disk_utilization_{medium}"] = sum(d["used_bytes"] for d in own) / capacity if capacity else None
    return figures


def resource_stats(brokers: list[dict], dirs: list[dict]) -> dict:
    stats = {}
    for medium in ("ssd", "hdd"):
        stats[f"disk_utilization_{medium}"] = summarize(
            [b[f"disk_utilization_{medium}"] for b in brokers if b[f"disk_utilization_{medium}"] is not None])
        stats[f"log_dir_utilization_{medium}"] = summarize([d["utilization"] for d in dirs if d["media"] == medium])
    for name in ("network_in_utilization", "network_out_utilization", "potential_network_out_utilization",
                 "replica_count", "leader_count"):
        stats[name] = summarize([float(b[name]) for b in brokers])
    return stats


def moves(assignment, snapshot, throttle_bytes_per_s: int | None) -> dict:
    """The moves of one assignment (see _moves_of_states)."""
    frame = tagged([assignment], snapshot)
    try:
        return _moves_of_states(frame, 1, snapshot, throttle_bytes_per_s)[0]
    finally:
        frame.unpersist()


_MOVE_TOTALS = ("partitions_changed", "replica_moves", "bytes_moved", "dir_moves", "dir_bytes_moved",
                "leader_changes")


def _moves_of_states(tagged_frame, count: int, snapshot, throttle_bytes_per_s: int | None) -> list[dict]:
    """Per state: replica moves (a replica on a broker that had none of the
    partition), bytes moved (their sizes), moves between dirs of one broker,
    leader changes, and the duration at a throttle: the busiest broker's
    bytes to send (as leader) or to receive (as new replica) over the
    throttle, which Kafka applies per broker. One Spark job: the totals and
    the busiest broker's bytes as rows of one union."""
    query = (
        "WITH joined AS (" + _AGAINST_CURRENT + "), "
        "moving AS (SELECT state, size_bytes, added, CASE WHEN current_leader >= 0 THEN current_leader "
        "  ELSE current_replicas[0] END AS source FROM joined WHERE size(added) > 0), "
        "per_broker AS ("
        "  SELECT state, broker_id, sum(size_bytes) AS bytes FROM "
        "    (SELECT state, explode(added) AS broker_id, size_bytes FROM moving) GROUP BY state, broker_id "
        "  UNION ALL SELECT state, source, sum(size_bytes * size(added)) FROM moving GROUP BY state, source) "
        "SELECT state, sum(CAST(changed AS INT)) AS partitions_changed, sum(size(added)) AS replica_moves, "
        "  sum(size(added) * size_bytes) AS bytes_moved, sum(dir_moves) AS dir_moves, "
        "  sum(dir_moves * size_bytes) AS dir_bytes_moved, sum(CAST(leader_changed AS INT)) AS leader_changes, "
        "  CAST(NULL AS BIGINT) AS busiest FROM joined GROUP BY state "
        "UNION ALL SELECT state, NULL, NULL, NULL, NULL, NULL, NULL, max(bytes) FROM per_broker GROUP BY state")
    rows = tagged_frame.sparkSession.sql(query, t=tagged_frame, p=snapshot.partitions).collect()
    results = [dict.fromkeys(_MOVE_TOTALS, 0) | {"busiest_broker_bytes": 0} for _ in range(count)]
    for r in rows:
        if r.busiest is not None:
            results[r.state]["busiest_broker_bytes"] = int(r.busiest)
        else:
            results[r.state].update({k: int(r[k] or 0) for k in _MOVE_TOTALS})
    for result in results:
        busiest = result["busiest_broker_bytes"]
        result["estimated_duration_s"] = busiest / throttle_bytes_per_s if throttle_bytes_per_s else None
    return results


# Each partition of a tagged assignment ({t}) with its current replicas
# ({p}, the snapshot's) and what changed.
_AGAINST_CURRENT = (
    "SELECT state, topic, `partition`, size_bytes, current_replicas, current_leader, "
    "  array_except(replicas, current_replicas) AS added, "
    "  size(filter(array_intersect(replicas, current_replicas), "
    "    b -> get(log_dirs, CAST(array_position(replicas, b) - 1 AS INT)) "
    "      != get(current_log_dirs, CAST(array_position(current_replicas, b) - 1 AS INT)))) AS dir_moves, "
    "  replicas[0] != current_leader AS leader_changed, "
    "  replicas != current_replicas OR log_dirs != current_log_dirs AS changed "
    "FROM (SELECT a.state, a.topic, a.`partition`, a.replicas, a.log_dirs, c.replicas AS current_replicas, "
    "  c.log_dirs AS current_log_dirs, c.leader AS current_leader, c.size_bytes "
    "  FROM {t} a JOIN {p} c ON a.topic = c.topic AND a.`partition` = c.`partition`)")


def _against_current(assignment, snapshot):
    """Each partition with its current and proposed replicas and what changed."""
    from pyspark.sql import functions as F

    current = snapshot.partitions.select("topic", "partition", F.col("replicas").alias("current_replicas"),
                                         F.col("log_dirs").alias("current_log_dirs"),
                                         F.col("leader").alias("current_leader"), "size_bytes")
    proposed = assignment.select("topic", "partition", "replicas", "log_dirs")
    joined = current.join(proposed, ["topic", "partition"])
    kept = F.array_intersect("replicas", "current_replicas")
    dir_of = lambda replicas, dirs, b: F.get(dirs, (F.array_position(replicas, b) - 1).cast("int"))  # noqa: E731
    return joined.select(
        "*",
        F.array_except("replicas", "current_replicas").alias("added"),
        F.size(F.filter(kept, lambda b: dir_of("replicas", "log_dirs", b)
                        != dir_of("current_replicas", "current_log_dirs", b))).alias("dir_moves"),
        (F.col("replicas")[0] != F.col("current_leader")).alias("leader_changed"),
        ((F.col("replicas") != F.col("current_replicas")) | (F.col("log_dirs") != F.col("current_log_dirs")))
        .alias("changed"))


# --- the report as data, markdown and a chart

def build(snapshot_dir: str, options, counts: dict, before: dict, after: dict, baseline: dict, bound: dict,
          optimizer: dict, compute_time_s: dict) -> dict:
    """The report as data. bound: bounds.lower_bound's figures; optimizer:
    {"rounds": int, "goals": [goal report dicts]} (goals may be absent)."""
    from dataclasses import asdict

    resources = {name: {"before": before["resources"].get(name), "after": after["resources"].get(name),
                        "kafka_baseline": baseline["resources"].get(name), "lower_bound": bound.get(name)}
                 for name in RESOURCES}
    after_brokers = {b["broker_id"]: b for b in after["brokers"]}
    brokers = [{"broker_id": b["broker_id"], "rack": b["rack"], "excluded": b["broker_id"] in options.exclude_brokers,
                "before": _broker_figures(b), "after": _broker_figures(after_brokers[b["broker_id"]])}
               for b in before["brokers"]]
    after_dirs = {(d["broker_id"], d["path"]): d for d in after["log_dirs"]}
    dirs = [{"broker_id": d["broker_id"], "path": d["path"], "media": d["media"],
             "capacity_bytes": d["capacity_bytes"], "before_used_bytes": d["used_bytes"],
             "after_used_bytes": after_dirs[(d["broker_id"], d["path"])]["used_bytes"]} for d in before["log_dirs"]]
    gaps = against_bound(after, bound, options)
    return {"snapshot": snapshot_dir, "options": {k: list(v) if isinstance(v, tuple) else v
                                                  for k, v in asdict(options).items()},
            "summary": counts, "resources": resources, "against_lower_bound": gaps,
            "violations": {"before": before["violations"], "after": after["violations"],
                           "kafka_baseline": baseline["violations"]},
            "moves": {"after": after["moves"], "kafka_baseline": baseline["moves"]},
            "optimizer": goal_reports(optimizer, bound),
            "compute_time_s": compute_time_s, "brokers": brokers, "log_dirs": dirs}


def goal_reports(optimizer: dict, bound: dict) -> dict:
    """The optimizer's goal reports, in priority order, each figure not met
    checked against the lower bound (when no assignment can meet the target,
    the hard constraints hold the goal back whatever it does); and `bugs`:
    goals that ended worse than they started, or that a lower goal undid."""
    goals, bugs = [], []
    for found in optimizer.get("goals", []):
        goal = dict(found, held_back=list(found.get("held_back", [])))
        for figure in goal.get("figures", []):
            least = bound.get(figure.get("resource") or "")
            if figure["met"] or not least:
                continue
            value = least["max"] if figure["resource"].endswith("_count") else least["max_mean"]
            if value is not None and value > figure["target"]:
                limits = ", ".join(least.get("limited_by", [])) or "the partitions' sizes"
                goal["held_back"].insert(0, f"hard constraints: no assignment meets the target of {figure['name']} "
                                            f"({_plain(figure['target'])}); the lower bound is {_plain(value)} "
                                            f"(held up by {limits})")
        bugs += [f"goal {goal['goal']} ended worse than it started: {w}" for w in goal.get("worsened", [])]
        bugs += [f"goal {goal['goal']} was met and a lower goal undid it: {u}" for u in goal.get("undone", [])]
        goals.append(goal)
    return {"rounds": optimizer.get("rounds", 0), "goals": goals, "bugs": bugs}


def _plain(value: float) -> str:
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.3f}"


def against_bound(after: dict, bound: dict, options) -> dict:
    """Per resource, the plan's largest figure over the bound (>= 1; 1.000:
    no assignment meeting the hard constraints does better), with what lifts
    the bound above perfect balance; and disk_worst_media: the worst of the
    media classes' max over mean, for dirs and for brokers, against the
    least any assignment with the same bytes per media class reaches."""
    gaps = {}
    for name in RESOURCES:
        plan, least = after["resources"].get(name), bound.get(name)
        if plan is None or least is None:
            continue
        gaps[name] = {"plan_max": plan["max"], "bound_max": least["max"],
                      "ratio": plan["max"] / least["max"] if least["max"] else None,
                      "bound_max_mean": least["max_mean"], "limited_by": list(least.get("limited_by", []))}
    worst = bound.get("disk_worst_media") or {}
    plan_worst = worst_media(after, options)
    for kind, least in sorted(worst.items()):
        if plan_worst.get(kind) is None:
            continue
        gaps[f"disk_worst_media_{kind}"] = {
            "plan_max": plan_worst[kind], "bound_max": least["max"],
            "ratio": plan_worst[kind] / least["max"] if least["max"] else None,
            "bound_max_mean": least["max_mean"], "limited_by": list(least.get("limited_by", []))}
    return gaps


def worst_media(state: dict, options) -> dict:
    """Of an evaluated state: over the media classes, the largest utilization
    over the class's mean (its bytes over its capacity, eligible brokers),
    per log dir and per broker."""
    excluded = set(options.exclude_brokers)
    dirs = [d for d in state["log_dirs"] if d["broker_id"] not in excluded]
    worst: dict[str, float | None] = {"log_dir": None, "broker": None}
    for medium in sorted({d["media"] for d in dirs}):
        mine = [d for d in dirs if d["media"] == medium]
        mean = sum(d["used_bytes"] for d in mine) / sum(d["capacity_bytes"] for d in mine)
        if mean <= 0:
            continue
        per_broker: dict[int, list[int]] = {}
        for d in mine:
            held = per_broker.setdefault(d["broker_id"], [0, 0])
            held[0] += d["used_bytes"]
            held[1] += d["capacity_bytes"]
        for kind, value in (("log_dir", max(d["utilization"] for d in mine) / mean),
                            ("broker", max(u / c for u, c in per_broker.values()) / mean)):
            worst[kind] = value if worst[kind] is None else max(worst[kind], value)
    return worst


def _broker_figures(row: dict) -> dict:
    return {k: row[k] for k in (*BROKER_FIGURES, "disk_utilization_ssd", "disk_utilization_hdd")}


def snapshot_counts(snapshot, options) -> dict:
    from kafkactl.planner.usage import snapshot_tables

    totals = snapshot.partitions.selectExpr("count(*) AS partitions", "sum(size(replicas)) AS replicas",
                                            "sum(size_bytes * size(replicas)) AS bytes").first()
    broker_rows, dir_rows = snapshot_tables(snapshot)
    brokers = len(broker_rows)
    return {"brokers": brokers, "eligible_brokers": brokers - len(options.exclude_brokers),
            "log_dirs": len(dir_rows), "partitions": int(totals.partitions),
            "replicas": int(totals.replicas or 0), "replica_bytes": int(totals.bytes or 0)}


def _number(value, resource: str) -> str:
    if value is None:
        return "-"
    if resource.endswith("_count"):
        return f"{value:.1f}"
    return f"{value:.3f}"


def render_markdown(report: dict) -> str:
    summary = report["summary"]
    lines = ["# Placement plan", "",
             f"Snapshot `{report['snapshot']}`: {summary['brokers']} brokers ({summary['eligible_brokers']} eligible), "
             f"{summary['log_dirs']} log dirs, {summary['partitions']} partitions, {summary['replicas']} replicas "
             f"({human_bytes(summary['replica_bytes'])}).", "",
             *_bug_lines(report["optimizer"].get("bugs", [])),
             "## Balance", "",
             "Over the eligible brokers (log dirs for `log_dir_*`); utilization is a fraction of capacity. "
             "`before`: the snapshot; `after`: this plan; `kafka_baseline`: Kafka's default assignment; "
             "`lower_bound`: its max is the least max any assignment meeting the hard constraints reaches "
             "(disk: with this plan's bytes per media class), its mean perfect balance.", "",
             "| resource | state | min | max | mean | std | max/mean |", "|---|---|---|---|---|---|---|"]
    for name, states in report["resources"].items():
        for state in STATES:
            stats = states[state]
            if stats is None:
                continue
            lines.append(f"| {name} | {state} | " + " | ".join(_number(stats[k], name) for k in
                                                               ("min", "max", "mean", "std")) +
                         f" | {_number(stats['max_mean'], 'ratio')} |")
    lines += _bound_lines(report.get("against_lower_bound", {}))
    lines += _goal_lines(report["optimizer"].get("goals", []))
    lines += ["", "## Moves", "", "| | partitions changed | replica moves | bytes moved | moves between dirs "
              "| leader changes | estimated duration |", "|---|---|---|---|---|---|---|"]
    for label, key in (("plan", "after"), ("kafka_baseline", "kafka_baseline")):
        m = report["moves"][key]
        duration = "-" if m["estimated_duration_s"] is None else _duration(m["estimated_duration_s"])
        lines.append(f"| {label} | {m['partitions_changed']} | {m['replica_moves']} | {human_bytes(m['bytes_moved'])} "
                     f"| {m['dir_moves']} | {m['leader_changes']} | {duration} |")
    throttle = report["options"]["throttle_bytes_per_s"]
    lines += ["", f"Duration: the busiest broker's bytes to send or receive over --throttle "
              f"({'not given' if throttle is None else human_bytes(throttle) + '/s'})."]
    lines += _violation_lines(report["violations"])
    times = report["compute_time_s"]
    lines += ["", "## Compute time", "", "| step | seconds |", "|---|---|"]
    lines += [f"| {step} | {seconds:.1f} |" for step, seconds in times.items()]
    lines += ["", f"Optimizer rounds: {report['optimizer']['rounds']}.", ""]
    return "\n".join(lines)


def _bug_lines(bugs: list[str]) -> list[str]:
    if not bugs:
        return []
    return (["**BUG in the optimizer: a goal made its own aim worse, or a lower goal undid a higher one. "
             "The plan meets every hard constraint, but report this.**", ""]
            + [f"- **{bug}**" for bug in bugs] + [""])


def _goal_lines(goals: list[dict]) -> list[str]:
    if not goals:
        return []
    lines = ["", "## Goals", "",
             "In priority order (0: the repair of the hard constraints). Figures as the optimizer measures "
             "them (the partitions' bytes, over the eligible brokers); lower is better.", "",
             "| # | goal | met | figure | at start | at end | plan | target | moves | leader changes | rounds |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for goal in goals:
        figures = goal.get("figures") or [None]
        for i, figure in enumerate(figures):
            head = (f"| {goal['priority']} | {goal['goal']} | {'yes' if goal['met'] else '**no**'} |" if i == 0
                    else "| | | |")
            if figure is None:
                cells = "does not apply | - | - | - | - |"
            else:
                start = next((f["value"] for f in goal["at_start"] if f["name"] == figure["name"]), None)
                end = next((f["value"] for f in goal["at_end"] if f["name"] == figure["name"]), None)
                cells = " | ".join(_plain(v) if v is not None else "-" for v in
                                   (start, end, figure["value"], figure["target"]))
                cells = f"{figure['name']} | {cells} |"
            tail = (f" {goal['moves']} | {goal['leader_changes']} | {goal['rounds']} of {goal['round_bound']} |"
                    if i == 0 else " | | |")
            lines.append(f"{head} {cells}{tail}")
    held = [(g["goal"], reason) for g in goals if not g["met"] for reason in g["held_back"]]
    if held:
        lines += ["", "What held the goals not met back:", ""] + [f"- {goal}: {reason}" for goal, reason in held]
    return lines


def _bound_lines(gaps: dict) -> list[str]:
    if not gaps:
        return []
    lines = ["", "## Against the lower bound", "",
             "The plan's max over the least max any assignment meeting the hard constraints reaches (1.000: "
             "none does better); `limited by`: the constraints that hold the bound above perfect balance. "
             "`disk_worst_media_*`: the worst media class's max/mean (SSD and HDD trade off when racks pin "
             "a rack's bytes).", "",
             "| resource | plan max | bound | plan / bound | bound max/mean | limited by |",
             "|---|---|---|---|---|---|"]
    for name, gap in gaps.items():
        unit = name if name.endswith("_count") else "ratio"
        lines.append(f"| {name} | {_number(gap['plan_max'], unit)} | {_number(gap['bound_max'], unit)} | "
                     f"{_number(gap['ratio'], 'ratio')} | {_number(gap['bound_max_mean'], 'ratio')} | "
                     f"{', '.join(gap['limited_by']) or '-'} |")
    return lines


def _violation_lines(violations: dict) -> list[str]:
    kinds = sorted({k for v in violations.values() for k in v["counts"]})
    lines = ["", "## Hard constraints", ""]
    if not kinds:
        return lines + ["No violations before, after, or with Kafka's assignment."]
    lines += ["| violation | before | after | kafka_baseline |", "|---|---|---|---|"]
    lines += [f"| {k} | " + " | ".join(str(violations[s]["counts"].get(k, 0)) for s in
                                      ("before", "after", "kafka_baseline")) + " |" for k in kinds]
    examples = violations["before"]["examples"]
    if examples:
        lines += ["", "Before (examples):", ""] + [f"- {e['kind']}: {e['subject']}: {e['detail']}" for e in examples]
    return lines


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def write_plan_files(assignment, snapshot, directory: Path) -> int:
    """plan.json (the partitions that change) and rollback.json (their current
    assignment), streamed in (topic, partition) order; returns how many."""
    changed = (_against_current(assignment, snapshot).where("changed")
               .select("topic", "partition", "replicas", "log_dirs", "current_replicas", "current_log_dirs")
               .orderBy("topic", "partition"))
    count = 0
    with open(directory / "plan.json", "w") as plan, open(directory / "rollback.json", "w") as rollback:
        for out in (plan, rollback):
            out.write('{"version":1,"partitions":[')
        for row in changed.toLocalIterator():
            separator = "," if count else ""
            plan.write(separator + "\n" + _entry(row.topic, row.partition, row.replicas, row.log_dirs))
            rollback.write(separator + "\n" + _entry(row.topic, row.partition, row.current_replicas,
                                                     row.current_log_dirs))
            count += 1
        for out in (plan, rollback):
            out.write("\n]}\n")
    return count


def _entry(topic: str, partition: int, replicas, log_dirs) -> str:
    return json.dumps({"topic": topic, "partition": partition, "replicas": list(replicas),
                       "log_dirs": list(log_dirs)}, separators=(",", ":"))


def write_report(report: dict, directory: Path) -> None:
    (directory / "report.json").write_text(json.dumps(report, indent=2, allow_nan=False, default=_json_default) + "\n")
    (directory / "report.md").write_text(render_markdown(report))
    plot_utilization(report, directory / "utilization.png")


def _json_default(value):
    raise TypeError(f"not JSON: {value!r}")


def plot_utilization(report: dict, path: Path) -> None:
    """Per broker, before and after: disk utilization per media class and network in/out."""
    from matplotlib import pyplot as plt

    figure = utilization_figure(report)
    figure.savefig(path, dpi=100)
    plt.close(figure)


# The y axis fits the data, not a fixed 0-0.8: a test cluster at 0.1 % of its
# disks would show empty panels. A threshold more than this many times the
# tallest bar would squash the bars to nothing, so it is named, not drawn.
_THRESHOLD_SPAN = 3.0
_HEADROOM = 1.15  # room above the tallest bar for the legend and labels


def utilization_top(values: list[float], threshold: float) -> tuple[float, bool]:
    """The y axis's upper limit for bars of these values (NaN: no bar) and
    whether the threshold is drawn within it."""
    peak = max((v for v in values if not math.isnan(v)), default=0.0)
    if peak <= 0:
        return threshold * _HEADROOM, True
    if threshold <= peak * _THRESHOLD_SPAN:
        return max(peak, threshold) * _HEADROOM, True
    return peak * _HEADROOM, False


def utilization_figure(report: dict):
    """The chart as a matplotlib Figure, one panel per resource (the caller closes it)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    brokers = report["brokers"]
    panels = [("disk_utilization_ssd", "disk (SSD)", report["options"]["capacity_threshold"]),
              ("disk_utilization_hdd", "disk (HDD)", report["options"]["capacity_threshold"]),
              ("network_in_utilization", "network in", report["options"]["network_in_threshold"]),
              ("network_out_utilization", "network out", report["options"]["network_out_threshold"])]
    width = min(40.0, max(8.0, 0.07 * len(brokers) + 3))  # readable bars up to a few hundred brokers
    figure, axes = plt.subplots(len(panels), 1, figsize=(width, 2.6 * len(panels)), sharex=True)
    positions = list(range(len(brokers)))
    for axis, (key, title, threshold) in zip(axes, panels):
        before = [_or_nan(b["before"][key]) for b in brokers]
        after = [_or_nan(b["after"][key]) for b in brokers]
        axis.bar([p - 0.2 for p in positions], before, width=0.4, color="#b0b0b0", label="before")
        axis.bar([p + 0.2 for p in positions], after, width=0.4, color="#1f77b4", label="after")
        bound = report["resources"][key]["lower_bound"]
        shown = before + after + ([] if bound is None else [bound["mean"]])
        top, threshold_within = utilization_top(shown, threshold)
        axis.set_ylim(0, top)
        _mark_threshold(axis, threshold, threshold_within)
        if bound is not None:
            axis.axhline(bound["mean"], color="#2ca02c", linestyle=":", linewidth=1, label="perfect balance")
        axis.set_ylabel("fraction of capacity")
        axis.set_title(title, loc="left", fontsize=10)
        axis.grid(axis="y", alpha=0.3)
    # Above the top panel, right of its title: inside, it would cover bars that reach the top.
    axes[0].legend(loc="lower right", bbox_to_anchor=(1, 1), fontsize=8, ncol=4, frameon=False)
    step = max(1, math.ceil(len(brokers) / 50))  # at most ~50 tick labels
    axes[-1].set_xticks(positions[::step], [str(b["broker_id"]) for b in brokers][::step],
                        rotation=90 if len(brokers) > 20 else 0, fontsize=8)
    axes[-1].set_xlabel("broker")
    figure.tight_layout()
    return figure


def _mark_threshold(axis, threshold: float, within: bool) -> None:
    """A dashed line labelled with its value, or, above the axis, the value named in the corner."""
    if within:
        axis.axhline(threshold, color="#d62728", linestyle="--", linewidth=1, label="threshold")
        axis.annotate(f"threshold {threshold:g}", xy=(0, threshold), xycoords=("axes fraction", "data"),
                      xytext=(2, 2), textcoords="offset points", color="#d62728", fontsize=8, va="bottom")
    else:
        axis.annotate(f"threshold {threshold:g} (above the axis)", xy=(0, 1), xycoords="axes fraction",
                      xytext=(2, -2), textcoords="offset points", color="#d62728", fontsize=8, va="top")


def _or_nan(value):
    return math.nan if value is None else value
