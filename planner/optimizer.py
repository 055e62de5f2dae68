"""From the current assignment to the proposed one, as Spark jobs.

The state is one DataFrame, the replica view: a row per replica with its
partition's replicas and their log dirs (as dense dir ids) and the flags
selections use, checkpointed after every round; the partitions are its rows
of replica index 0. The driver holds the per-dir and per-broker aggregates
(goals/base.py) and, each round, a bounded batch of candidate replicas:

1. a goal says which sources (dirs or brokers) carry too much and by how much;
2. one Spark job keeps, for each of the round's selections, the replicas on
   these sources that the goal wants to move (window by source, ordered by
   the goal's preference, cumulative weight up to twice the excess: a spare
   for candidates the driver refuses), and collects at most a batch of them
   (batch_size: a share of all replicas, within BATCH_MIN..BATCH_MAX),
   interleaved across sources (a goal's pool of swap partners with them when
   the snapshot has at most POOLS_WITH_ROUND_REPLICAS replicas, else only when the goal first
   asks for it);
3. the driver places each candidate on the best destination that meets every
   hard constraint and keeps every higher-priority goal within its tolerance,
   updating the aggregates as it goes; at most one change per partition per
   round;
4. a Spark job applies the moves and leader changes and the result is
   checkpointed, which cuts the lineage.

A selection's sources (step 2) and a round's actions (step 4) reach Spark as
SQL literals when there are at most LITERAL_ROWS of them, else as a
broadcast join: a small snapshot's round then costs one Spark job fewer per
selection and per change, and a large one keeps a hash lookup per row.

Rounds repeat per goal until the goal is met, nothing moves, or a bound
(MAX_ROUNDS_PER_GOAL, max_moves, max_bytes_moved) stops it; a bound that
stops a goal is logged.

Each goal is measured (its figures against its targets, goals/status.py)
before its rounds, after them and in the final state; while it places
candidates, what refuses a destination (a hard constraint, a higher goal's
guard) is counted. A goal that ends worse than it started, or a met goal a
lower one undoes, is logged as an error and reported (Proposal.goals).

Every order is total (ties broken by topic, partition, replica index, dir
id, broker id) and loads are summed as integers, so the same input and
options give the same plan.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Callable

from kafkactl.planner.goals import SOFT_GOALS, Repair
from kafkactl.planner.goals.base import SAME_DIR, Broker, Cluster, Dir, Replica
from kafkactl.planner.goals.hot_on_ssd import HotOnSsd, hot_budget_bytes
from kafkactl.planner.goals.repair import PartitionTotals, infeasible, violations
from kafkactl.planner.goals.status import GoalStatus
from kafkactl.planner.goals.topic_spread import TopicSpread, enrich, surplus_sql
from kafkactl.planner.proposal import Proposal
from kafkactl.planner.session import SMALL_REPLICAS
from kafkactl.planner.usage import snapshot_tables

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from kafkactl.planner.options import PlannerOptions
    from kafkactl.planner.snapshot import Snapshot

log = logging.getLogger(__name__)

MAX_ROUNDS_PER_GOAL = 6
REPAIR_ROUNDS = 12
BATCH_MIN = 20_000             # candidates collected per selection and round, at least
BATCH_MAX = 200_000            # and at most: what the driver holds at once
BATCH_SHARE = 8                # one replica in this many
# At most this many sources of a selection, or actions of a round, go to Spark
# as a SQL literal (a map looked up per row: no Spark job); more go as a
# broadcast join (a Spark job of its own to build the broadcast, but a hash
# lookup per row where a map literal's is a scan of its keys).
LITERAL_ROWS = 64
# Up to this many replicas a round's pool selections (swap partners) run in
# the round's one query: the scan is cheap and a swap round saves a Spark job.
POOLS_WITH_ROUND_REPLICAS = BATCH_MIN


def batch_size(replicas: int) -> int:
    """Candidates per selection and round: a fixed share of the replicas, so
    that a goal needs about as many rounds (each a few Spark jobs) at any
    scale, bounded because the driver holds every candidate."""
    return min(BATCH_MAX, max(BATCH_MIN, replicas // BATCH_SHARE))


def optimize(spark: "SparkSession", snapshot: "Snapshot", options: "PlannerOptions") -> Proposal:
    unknown = [g for g in options.goals if g not in SOFT_GOALS]
    if unknown:
        raise ValueError(f"unknown goals {unknown}; known: {sorted(SOFT_GOALS)}")
    model = _Model(spark, snapshot, options)
    totals = model.totals()
    model.batch = batch_size(totals.replicas)
    model.pools_with_round = totals.replicas <= POOLS_WITH_ROUND_REPLICAS
    model.cluster.pin_racks(totals.min_rf)
    problems = infeasible(model.cluster, totals)
    if problems:
        model.release()
        return Proposal(snapshot.partitions, problems, 0)
    goals = [Repair()] + [SOFT_GOALS[name]() for name in options.goals]
    for goal in goals:
        if isinstance(goal, HotOnSsd):
            goal.prepare(model.cluster)   # the media classes' targets, which repair places by
    rounds, statuses = 0, []
    for position, goal in enumerate(goals):
        statuses.append(model.run_goal(goal, goals[1:position], position))
        rounds += statuses[-1].rounds
        if isinstance(goal, Repair):
            left = violations(model.cluster, model.cluster.rack_violations)
            if left:
                why = ("max_moves / max_bytes_moved reached" if model.budget_hit
                       else f"no placement found in {rounds} rounds")
                model.finish(goals[:1], statuses)
                model.release()
                return Proposal(snapshot.partitions, [f"{v} ({why})" for v in left], rounds,
                                [s.to_dict() for s in statuses])
    model.finish(goals, statuses)
    return Proposal(model.assignment(), [], rounds, [s.to_dict() for s in statuses])


def _totals(rows, racks: bool) -> PartitionTotals:
    """The partitions' totals from the per-dir rows of _aggregate."""
    def total(name):
        return sum(getattr(r, name) or 0 for r in rows)

    def extreme(pick, name):
        return pick((v for r in rows if (v := getattr(r, name)) is not None), default=0)

    return PartitionTotals(total("leaders"), total("replica_bytes"), extreme(max, "max_rf"),
                           extreme(max, "max_size_bytes"), total("replica_bytes_in"), total("bytes_out"),
                           total("per_rack_bytes") if racks else 0, extreme(min, "min_rf"), total("replicas"))


class _Model:
    """The partitions DataFrame, the driver's aggregates, and the Spark jobs."""

    def __init__(self, spark, snapshot, options):
        from pyspark.sql import functions as F

        self.spark, self.options = spark, options
        self.excluded = sorted(set(options.exclude_brokers))
        self.budget_hit = False
        self.batch = BATCH_MIN
        self.pools_with_round = True            # pool selections in the round's query (small snapshots)
        self.status = GoalStatus("", 0, [])     # the goal running now
        self._counted_at: dict[str, int] = {}   # Spark-counted figure -> moves + leader changes when counted
        broker_rows, dir_rows = snapshot_tables(snapshot)   # sorted by broker (and path)
        self.paths = [r.path for r in dir_rows]
        self.media = [r.media for r in dir_rows]
        self.racks = {r.broker_id: r.rack for r in broker_rows}
        dirs = [Dir(i, r.broker_id, r.path, r.media, r.capacity_bytes) for i, r in enumerate(dir_rows)]
        brokers = [Broker(r.broker_id, r.rack, r.network_in_capacity_bytes_per_s,
                          r.network_out_capacity_bytes_per_s, r.broker_id not in self.excluded)
                   for r in broker_rows]
        self.cluster = Cluster(dirs, brokers, options)
        self._replica_columns = None
        replicas = sum(snapshot.checked.replicas_per_broker.values()) if snapshot.checked else None
        self.small = replicas is not None and replicas <= SMALL_REPLICAS
        state = self._initial(snapshot.partitions, F)
        self.partition_columns = state.columns
        self.view = self._replica_view("SELECT * FROM {state}", state=state)
        self._aggregate()

    # ---- building the state ------------------------------------------------

    def _initial(self, partitions, F):
        dir_id = "map(" + ", ".join(f"{_sql_string(f'{self.cluster.dirs[i].broker_id}/{path}')}, {i}"
                                    for i, path in enumerate(self.paths)) + ")"
        # Every column a new attribute ("topic AS topic" too): the checkpoint below keeps its
        # input's attribute ids, and one shared with the snapshot's table would make Spark
        # refuse the report's join of the plan against that table (conflicting references,
        # seen when no round changes the state).
        state = partitions.selectExpr(
            "topic AS topic", "CAST(`partition` AS INT) AS `partition`", "CAST(replicas AS ARRAY<INT>) AS replicas",
            f"transform(arrays_zip(replicas, log_dirs), z -> element_at({dir_id}, "
            f"concat_ws('/', CAST(z.replicas AS STRING), z.log_dirs))) AS dirs",
            "CAST(size_bytes AS BIGINT) AS size_bytes",
            "CAST(round(bytes_in_per_s) AS BIGINT) AS bytes_in",
            "CAST(round(bytes_out_per_s) AS BIGINT) AS bytes_out",
            "CAST(bytes_in_per_s AS DOUBLE) AS bytes_in_per_s",
            "CAST(bytes_out_per_s AS DOUBLE) AS bytes_out_per_s",
            "(bytes_in_per_s + bytes_out_per_s) / greatest(size_bytes, 1) AS heat")
        state = state.repartition(self._slices(), "topic", "partition")
        return state.withColumn("hot", self._hot(state, F))

    def _slices(self) -> int:
        return max(2, int(self.spark.conf.get("spark.sql.shuffle.partitions", "4")))

    def _hot(self, state, F):
        """The hot set: the hottest partitions (ties by topic and partition)
        while their replicas' bytes add up to at most the hot budget. The
        running sum rises along that order, so the set is its prefix."""
        from pyspark.sql import Window

        ssd = sum(d.capacity_bytes for d in self.cluster.eligible_dirs() if d.media == "ssd")
        budget = hot_budget_bytes(ssd, self.options.capacity_threshold)
        ranked = Window.orderBy(F.col("heat").desc(), "topic", "partition")
        running = F.sum(F.col("size_bytes") * F.size("replicas")).over(ranked)
        if self.small:
            return running <= budget      # in the view's query: one partition's window, no job of its own
        return self._hot_from_coldest(state, F, running, budget)

    @staticmethod
    def _hot_from_coldest(state, F, running, budget):
        """The hot set as a comparison with its coldest member, found by a
        job of its own: no window over every partition in one task."""
        last = (state.select("topic", "partition", "heat", running.alias("cumulative"))
                .where(F.col("cumulative") <= budget)
                .orderBy(F.col("heat").asc(), F.col("topic").desc(), F.col("partition").desc())
                .limit(1).collect())
        if not last:
            return F.lit(False)
        h, t, p = last[0].heat, last[0].topic, last[0].partition
        return ((F.col("heat") > h) | ((F.col("heat") == h) & (
            (F.col("topic") < t) | ((F.col("topic") == t) & (F.col("partition") <= p)))))

    def _replica_view(self, source: str, **frames):
        """The replica view of a state (`source`: SQL over `frames`), checkpointed:
        one row per replica, with its partition's columns and the flags and
        columns selections use. The state itself is read back from it
        (replica_index 0), so each round's selections and the next round's
        changes start from one checkpoint, each as one SQL text."""
        if self._replica_columns is None:
            self._replica_columns = self._replica_sql()
        return self.spark.sql(
            f"SELECT *, {', '.join(self._replica_columns)} FROM ("
            f"SELECT *, element_at(dirs, replica_index + 1) AS dir_id FROM ("
            f"SELECT *, posexplode(replicas) AS (replica_index, broker_id) FROM ({source})))",
            **frames).localCheckpoint()

    def _state_sql(self) -> str:
        """SQL of the state, one row per partition, over `{replicas}` (the view)."""
        return f"SELECT {', '.join(f'`{c}`' for c in self.partition_columns)} FROM {{replicas}} WHERE replica_index = 0"

    @property
    def state(self):
        """One row per partition (the current assignment)."""
        return self.spark.sql(self._state_sql(), replicas=self.view)

    def _replica_sql(self) -> list[str]:
        """media, eligible and rack_violation as SQL text, built once: every
        round's selections use them, and SQL text is one call from Python to
        Spark where Column objects cost one per node (per dir and broker)."""
        media = "array(" + ", ".join(_sql_string(m) for m in self.media) + ")"
        eligible = (f"NOT broker_id IN ({', '.join(str(b) for b in self.excluded)})" if self.excluded
                    else "true")
        return [f"element_at({media}, dir_id + 1) AS media", f"{eligible} AS eligible",
                f"{self._rack_violation()} AS rack_violation"]

    def _rack_violation(self) -> str:
        """This replica shares a rack with an earlier one of its partition,
        and the partition spans fewer racks than it could."""
        count = self.cluster.rack_count
        if not count:
            return "false"
        racks = "map(" + ", ".join(f"{b}, {'NULL' if rack is None else _sql_string(rack)}"
                                   for b, rack in sorted(self.racks.items())) + ")"
        racks = f"transform(replicas, b -> element_at({racks}, b))"
        return (f"(replica_index > 0 AND array_contains(slice({racks}, 1, greatest(replica_index, 1)), "
                f"element_at({racks}, replica_index + 1)) "
                f"AND size(array_distinct({racks})) < least(size({racks}), {count}))")

    def _aggregate(self) -> None:
        """Per-dir sums into the driver's aggregates, the partitions' totals
        and the rack violations: the only full pass, one Spark job. A
        partition's own figures are summed on its leader's row (replica
        index 0), which every partition has once."""
        lead, rf = "replica_index = 0", "size(replicas)"
        per_rack = f"{rf} >= {max(self.cluster.rack_count, 1)}"
        rows = self.spark.sql(
            "SELECT dir_id, sum(size_bytes) AS size_bytes, sum(IF(hot, size_bytes, 0)) AS hot_bytes, "
            f"count(*) AS replicas, sum(bytes_in) AS bytes_in, sum(IF({lead}, bytes_out, 0)) AS bytes_out, "
            f"sum(bytes_out) AS potential_out, count_if({lead}) AS leaders, "
            "count_if(rack_violation) AS rack_violations, "
            f"sum(IF({lead}, size_bytes * {rf}, 0)) AS replica_bytes, max(IF({lead}, {rf}, NULL)) AS max_rf, "
            f"min(IF({lead}, {rf}, NULL)) AS min_rf, max(IF({lead}, size_bytes, NULL)) AS max_size_bytes, "
            f"sum(IF({lead}, bytes_in * {rf}, 0)) AS replica_bytes_in, "
            f"sum(IF({lead} AND {per_rack}, size_bytes, 0)) AS per_rack_bytes "
            "FROM {replicas} GROUP BY dir_id ORDER BY dir_id", replicas=self.view).collect()
        for r in rows:
            if r.dir_id is None:
                raise ValueError("an assignment names a log dir that is not in log_dirs")
            d = self.cluster.dirs[r.dir_id]
            d.size_bytes, d.hot_bytes, d.replicas = r.size_bytes, r.hot_bytes, r.replicas
            b = self.cluster.brokers[d.broker_id]
            b.bytes_in += r.bytes_in
            b.bytes_out += r.bytes_out
            b.potential_out += r.potential_out
            b.replicas += r.replicas
            b.leaders += r.leaders
        self.cluster.util_target = self.cluster._media_targets()
        self.cluster.rack_violations = sum(r.rack_violations for r in rows) if self.cluster.rack_count else 0
        self._totals = _totals(rows, bool(self.cluster.rack_count))

    def totals(self) -> PartitionTotals:
        return self._totals

    # ---- rounds -------------------------------------------------------------

    def run_goal(self, goal, higher, priority: int) -> GoalStatus:
        """Rounds of one goal, measured before and after (goals/status.py)."""
        goal.prepare(self.cluster)
        cluster = self.cluster
        self._count_for(goal)
        limit = REPAIR_ROUNDS if isinstance(goal, Repair) else MAX_ROUNDS_PER_GOAL
        status = GoalStatus(goal.name, priority, goal.measure(cluster), round_bound=limit)
        done = (cluster.moves, cluster.bytes_moved, cluster.leader_changes)
        self.status, budget_before = status, self.budget_hit
        try:
            status.rounds = self._rounds(goal, higher, limit)
        finally:
            log.info("after %s: %s", goal.name, self._balance())
        status.moves, status.bytes_moved, status.leader_changes = (
            cluster.moves - done[0], cluster.bytes_moved - done[1], cluster.leader_changes - done[2])
        status.budget_hit = self.budget_hit and not budget_before or status.refusals.counts.get("budget", 0) > 0
        self._count_for(goal)
        status.end = goal.measure(cluster)
        for problem in status.worsened():
            log.error("BUG: goal %s ended worse than it started: %s", goal.name, problem)
        return status

    def finish(self, goals, statuses) -> None:
        """Every goal's figures in the final state, and whether a lower goal undid one."""
        moved = self.cluster.moves + self.cluster.leader_changes
        for goal, status in zip(goals, statuses):
            if isinstance(goal, TopicSpread) and moved != self._counted_at.get("topic_surplus"):
                self._count_for(goal)
            status.final = goal.measure(self.cluster)
            for problem in status.undone():
                log.error("BUG: goal %s was met and a lower goal undid it: %s", goal.name, problem)

    def _count_for(self, goal) -> None:
        """The figure a goal's measure needs from Spark: topic_spread's
        movable topic surplus (the rack violations are kept by the cluster's
        apply_move)."""
        if isinstance(goal, TopicSpread):
            view = enrich("SELECT * FROM {replicas}", len(self.cluster.eligible_brokers()))
            self.cluster.topic_surplus = self.spark.sql(
                f"SELECT count(*) AS n FROM ({view}) WHERE {surplus_sql(self.cluster)}",
                replicas=self.view).first().n
            self._counted_at["topic_surplus"] = self.cluster.moves + self.cluster.leader_changes

    def _balance(self) -> str:
        """Per media class, the least and most utilized dir over target."""
        parts = []
        for media in sorted({d.media for d in self.cluster.dirs.values()}):
            ratios = [d.size_bytes / t for d in self.cluster.eligible_dirs()
                      if d.media == media and (t := self.cluster.dir_target(d)) > 0]
            if ratios:
                parts.append(f"{media} {min(ratios):.3f}..{max(ratios):.3f} of target")
        return ", ".join(parts)

    def _rounds(self, goal, higher, limit: int) -> int:
        for round_number in range(limit):
            selections = goal.selections(self.cluster)
            if not selections:
                return round_number
            started = time.monotonic()
            acted = self._round(goal, selections, higher)
            log.info("goal %s round %d: %s in %.1f s (so far %d moves, %d bytes, %d leader changes)",
                     goal.name, round_number + 1, acted, time.monotonic() - started,
                     self.cluster.moves, self.cluster.bytes_moved, self.cluster.leader_changes)
            if not acted and not goal.stuck(self.cluster):
                return round_number + 1
        if goal.selections(self.cluster):    # (met by its last round: no warning)
            log.warning("goal %s stopped by its bound of %d rounds", goal.name, limit)
            self.status.stopped_by_round_bound = True
        return limit

    def _round(self, goal, selections, higher) -> dict:
        cluster = self.cluster
        goal.start_round(cluster)
        touched, moves, leads = set(), [], []
        # The round's selections read the state as the round found it: one Spark query for them all.
        # A small snapshot's pools come with the round's query (a Spark job
        # fewer per round that swaps, for a cheap scan); a large one's are
        # selected when the goal first asks for them.
        now = [i for i, s in enumerate(selections) if not s.pool or self.pools_with_round]
        found = dict(zip(now, self.select_all([selections[i] for i in now])))
        for i, selection in enumerate(selections):
            if selection.pool:
                goal.offer(cluster, self._pool(selection, found.get(i)))
                continue
            remaining = dict(selection.excess)
            for source, rep in goal.arrange(cluster, selection, found[i]):
                if rep.key in touched or remaining.get(source, 0) <= 0:
                    continue
                if selection.leaders_only:
                    done = self._lead(goal, selection, rep, higher, leads)
                else:
                    done = self._move(goal, selection, rep, higher, moves, touched)
                if done:
                    touched.add(rep.key)
                    remaining[source] -= rep.weight(selection.weight)
        if moves or leads:
            self.apply(moves, leads)
        return {"moves": len(moves), "leader_changes": len(leads)} if moves or leads else {}

    def _pool(self, selection, found) -> Callable[[], list[Replica]]:
        """A pool selection's candidates, as goal.offer takes them."""
        if found is None:
            return lambda: [rep for _, rep in self.select(selection)]
        return lambda: [rep for _, rep in found]

    def _move(self, goal, selection, rep: Replica, higher, moves, touched) -> bool:
        cluster = self.cluster
        if not cluster.within_budget(rep):
            if not self.budget_hit:
                log.warning("max_moves / max_bytes_moved reached: later moves are left out")
            self.budget_hit = True
            self.status.refusals.counts["budget"] += 1
            return False
        seen = self.status.refusals.candidate()

        def accept(to_dir):
            return _accepted(cluster.hard_reason(rep, to_dir), seen, higher,
                             lambda g: g.guard(cluster, rep, to_dir))

        to_dir = goal.choose(cluster, rep, selection, accept)
        if to_dir is not None:
            moves.append(cluster.apply_move(rep, to_dir))
            goal.landed(cluster, {rep.broker_id, cluster.dirs[to_dir].broker_id})
            return True

        def accept_swap(partner):
            return (partner.key not in touched and partner.key != rep.key
                    and cluster.within_budget(rep, moves=2, extra_bytes=partner.size_bytes)
                    and cluster.swap_ok(rep, partner, lambda r, d: all(g.guard(cluster, r, d)
                                                                       for g in higher)))

        partner = goal.choose_swap(cluster, rep, selection, accept_swap)
        if partner is None:
            seen.left()
            return False
        to_dir, back_dir = partner.dir_id, rep.dir_id
        moves.append(cluster.apply_move(rep, to_dir))
        moves.append(cluster.apply_move(partner, back_dir))
        touched.add(partner.key)
        goal.landed(cluster, {rep.broker_id, partner.broker_id})
        return True

    def _lead(self, goal, selection, rep: Replica, higher, leads) -> bool:
        cluster = self.cluster
        seen = self.status.refusals.candidate()

        def accept(index):
            return _accepted(cluster.leader_reason(rep, index), seen, higher,
                             lambda g: g.guard_leader(cluster, rep, index))

        index = goal.choose_leader(cluster, rep, selection, accept)
        if index is None:
            seen.left()
            return False
        leads.append(cluster.apply_leader(rep, index))
        return True

    def select(self, selection) -> list[tuple[int, Replica]]:
        """The candidates of one selection (see select_all)."""
        return self.select_all([selection])[0]

    def select_all(self, selections) -> list[list[tuple[int, Replica]]]:
        """The candidates of each selection: a window per source, ranked,
        sources interleaved. One SQL text and one Spark job for them all
        (a branch per selection), so one call to Spark and one analysis."""
        if not selections:
            return []
        branches, arguments = [], {"replicas": self.view}
        for number, selection in enumerate(selections):
            branch, frames = self._selection_sql(number, selection)
            branches.append(branch)
            arguments.update(frames)
        found: list[list] = [[] for _ in selections]
        for r in self.spark.sql(" UNION ALL ".join(branches), **arguments).collect():
            found[r.selection].append((r.rank, r.source, Replica(
                r.topic, r.partition, r.replica_index, r.size_bytes, r.bytes_in, r.bytes_out, r.hot,
                tuple(r.replicas), tuple(r.dirs), tuple(r.full_brokers or ()))))
        return [[(source, replica) for _, source, replica in sorted(rows, key=lambda x: x[:2])]
                for rows in found]

    def _selection_sql(self, number: int, selection) -> tuple[str, dict]:
        """One selection's branch of select_all, and the DataFrames it names."""
        view = "SELECT * FROM {replicas}"
        if selection.enrich is not None:
            view = selection.enrich(view)
        else:
            view = f"SELECT *, CAST(NULL AS ARRAY<INT>) AS full_brokers FROM ({view})"
        weight = "CAST(1 AS BIGINT)" if selection.weight == "one" else f"`{selection.weight}`"
        on_sources, frames = self._on_sources(number, view, selection)
        window = (f"(PARTITION BY source ORDER BY "
                  f"{', '.join([*selection.order, 'topic', '`partition`', 'replica_index'])})")
        fit = f" AND {weight} <= excess" if selection.fit else ""
        return (
            f"SELECT * FROM (SELECT {number} AS selection, rank, source, topic, `partition`, replica_index, "
            f"size_bytes, bytes_in, bytes_out, hot, replicas, dirs, full_brokers FROM ("
            f"  SELECT *, sum({weight}) OVER {window} AS cumulative, row_number() OVER {window} AS rank "
            f"  FROM ({on_sources}) WHERE ({selection.where}) AND {weight} > 0{fit} AND {weight} <= largest) "
            f"WHERE cumulative - {weight} < excess * 2 ORDER BY rank, source LIMIT {int(self.batch)})"), frames

    def _on_sources(self, number: int, view: str, selection) -> tuple[str, dict]:
        """SQL of the replicas on the selection's sources, each with its
        source's `source`, `excess` and `largest` (LITERAL_ROWS says how),
        and the DataFrames it names."""
        largest = selection.largest or {}
        items = [(int(k), int(v), int(largest.get(k, v))) for k, v in sorted(selection.excess.items())]
        key = f"`{selection.key}`"
        if len(items) <= LITERAL_ROWS:
            table = "map(" + ", ".join(f"{k}, named_struct('excess', CAST({v} AS BIGINT), "
                                       f"'largest', CAST({most} AS BIGINT))" for k, v, most in items) + ")"
            keys = ", ".join(str(k) for k, _, _ in items)
            return (f"SELECT * EXCEPT (_source), {key} AS source, _source.excess AS excess, "
                    f"_source.largest AS largest FROM ("
                    f"SELECT *, {table}[{key}] AS _source FROM ({view}) WHERE {key} IN ({keys}))"), {}
        sources = self.spark.createDataFrame(items, "source int, excess long, largest long")
        return (f"SELECT /*+ BROADCAST(s) */ v.*, s.source, s.excess, s.largest "
                f"FROM ({view}) v JOIN {{sources_{number}}} s ON v.{key} = s.source"), {f"sources_{number}": sources}

    def apply(self, moves, leads) -> None:
        """Moves and leader changes into the state, then cut the lineage."""
        actions = ([(m.topic, m.partition, "move", m.replica_index, m.to_broker, m.to_dir)
                    for m in moves]
                   + [(c.topic, c.partition, "lead", c.new_index, None, None) for c in leads])
        joined, frames = self._with_actions(actions)

        def changed(column, new_value):
            moved = f"transform({column}, (x, i) -> CASE WHEN i = act_index THEN {new_value} ELSE x END)"
            led = f"concat(array(element_at({column}, act_index + 1)), filter({column}, (x, i) -> i != act_index))"
            return (f"CASE WHEN kind = 'move' THEN {moved} WHEN kind = 'lead' THEN {led} "
                    f"ELSE {column} END AS {column}")

        columns = [changed("replicas", "to_broker") if c == "replicas"
                   else changed("dirs", "to_dir") if c == "dirs" else f"`{c}`"
                   for c in self.partition_columns]
        previous = self.view
        self.view = self._replica_view(f"SELECT {', '.join(columns)} FROM ({joined})", replicas=previous, **frames)
        previous.unpersist()

    def _with_actions(self, actions) -> tuple[str, dict]:
        """SQL of the state, each partition with its action's kind,
        act_index, to_broker and to_dir (NULL: none; LITERAL_ROWS says how),
        and the DataFrames it names besides `{replicas}`."""
        state = self._state_sql()
        if len(actions) > LITERAL_ROWS:
            frame = self.spark.createDataFrame(
                actions, "topic string, partition int, kind string, act_index int, to_broker int, to_dir int")
            return (f"SELECT /*+ BROADCAST(a) */ s.*, a.kind, a.act_index, a.to_broker, a.to_dir "
                    f"FROM ({state}) s LEFT JOIN {{actions}} a ON s.topic = a.topic AND s.`partition` = a.`partition`",
                    {"actions": frame})

        def number(value):
            return "CAST(NULL AS INT)" if value is None else f"CAST({int(value)} AS INT)"

        table = "map(" + ", ".join(
            f"named_struct('topic', {_sql_string(topic)}, 'partition', {int(partition)}), "
            f"named_struct('kind', {_sql_string(kind)}, 'act_index', {number(index)}, "
            f"'to_broker', {number(broker)}, 'to_dir', {number(to_dir)})"
            for topic, partition, kind, index, broker, to_dir in actions) + ")"
        return (f"SELECT * EXCEPT (_act), _act.kind AS kind, _act.act_index AS act_index, "
                f"_act.to_broker AS to_broker, _act.to_dir AS to_dir FROM ("
                f"SELECT *, {table}[named_struct('topic', topic, 'partition', `partition`)] AS _act FROM ({state}))"), {}

    # ---- the result -----------------------------------------------------------

    def assignment(self):
        from pyspark.sql import functions as F

        paths = F.array(*[F.lit(p) for p in self.paths])
        return self.state.select(
            "topic", "partition", "replicas",
            F.element_at("replicas", 1).alias("leader"),
            F.transform("dirs", lambda d: F.element_at(paths, d + 1)).alias("log_dirs"),
            "size_bytes", "bytes_in_per_s", "bytes_out_per_s")

    def release(self) -> None:
        self.view.unpersist()


def _accepted(hard_reason, seen, higher, guard) -> bool:
    """A destination meets every hard constraint and every higher goal's
    guard; what refused it is noted for the goal report."""
    if hard_reason is not None:
        if hard_reason != SAME_DIR:
            seen.hard(hard_reason)
        return False
    for g in higher:
        if not guard(g):
            seen.veto(g.name)
            return False
    return True


def _sql_string(value: str) -> str:
    """A SQL string literal (Spark's escapes: backslash and quote)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
