"""The optimizer on small generated snapshots with real Spark: every plan
meets every hard constraint, balance improves, hot data lands on SSD, and the
same input gives the same plan. Runs are shared across assertions (each
costs a few seconds of Spark jobs per round)."""

import pytest

from kafkactl.planner.generate import generate
from kafkactl.planner.loads import dir_loads, hot_bytes_off_ssd
from kafkactl.planner import optimizer
from kafkactl.planner.optimizer import optimize
from kafkactl.planner.options import PlannerOptions
from support.plan_checks import violations

# seed -> (brokers, added brokers, excluded brokers)
CASES = {11: (6, 1, ()), 12: (9, 0, (2,)), 13: (7, 0, ())}
GOALS = ("hot_on_ssd", "disk")


@pytest.fixture(scope="module")
def runs(spark, read_snapshot, tmp_path_factory):
    """seed -> (snapshot, options, result), one optimization each."""
    done = {}
    for seed, (brokers, added, excluded) in CASES.items():
        made = generate(tmp_path_factory.mktemp(f"seed{seed}"), partitions=600, brokers=brokers,
                        seed=seed, added_brokers=added)
        snapshot = read_snapshot(made.path)
        options = PlannerOptions(goals=GOALS, add_brokers=made.added_brokers,
                                 exclude_brokers=excluded)
        done[seed] = (snapshot, options, optimize(spark, snapshot, options))
    return done


@pytest.mark.parametrize("seed", sorted(CASES))
def test_every_plan_meets_every_hard_constraint(runs, seed):
    snapshot, options, result = runs[seed]
    assert result.unsatisfied == []
    assert violations(snapshot, result.assignment, options) == []


def rack_media_balance(snapshot, assignment, exclude):
    """max/mean utilization per (rack, media): with RF 3 over 3 racks every
    rack holds one replica of each partition, so racks balance separately."""
    racks = {r.broker_id: r.rack for r in snapshot.brokers.collect()}
    groups = {}
    for d in dir_loads(assignment, snapshot.log_dirs):
        if d.broker_id not in exclude:
            groups.setdefault((racks[d.broker_id], d.media), []).append(d.size_bytes / d.capacity_bytes)
    return {g: max(u) / (sum(u) / len(u)) for g, u in groups.items()}


@pytest.mark.parametrize("seed", sorted(CASES))
def test_disk_balance_improves_to_the_tolerance(runs, seed):
    snapshot, options, result = runs[seed]
    before = rack_media_balance(snapshot, snapshot.partitions, options.exclude_brokers)
    after = rack_media_balance(snapshot, result.assignment, options.exclude_brokers)
    assert max(before.values()) > 1.2
    for group, value in after.items():
        assert value <= 1 + options.disk_tolerance, (group, after)


@pytest.mark.parametrize("seed", sorted(CASES))
def test_hot_partitions_land_on_ssd(runs, seed):
    snapshot, options, result = runs[seed]
    args = (snapshot.log_dirs, options.capacity_threshold, options.exclude_brokers)
    assert sum(hot_bytes_off_ssd(snapshot.partitions, *args).values()) > 0
    assert hot_bytes_off_ssd(result.assignment, *args) == {}


def test_excluded_brokers_end_empty_and_added_ones_are_filled(runs):
    _, _, excluded = runs[12]
    assert not [r for r in excluded.assignment.collect() if 2 in r.replicas]
    snapshot, _, added = runs[11]
    on_new = [r for r in added.assignment.collect() if 7 in r.replicas]
    assert len(on_new) > 600 * 3 / 7 / 2      # at least half its share of replicas


@pytest.mark.parametrize("literal_rows", [optimizer.LITERAL_ROWS, 0, 10**6],
                         ids=["as-shipped", "broadcast-joins-only", "sql-literals-only"])
def test_same_input_same_plan(spark, runs, monkeypatch, literal_rows):
    """Also whichever way a selection's sources and a round's actions reach
    Spark (optimizer.LITERAL_ROWS: SQL literals or broadcast joins)."""
    snapshot, options, result = runs[13]
    monkeypatch.setattr(optimizer, "LITERAL_ROWS", literal_rows)
    again = optimize(spark, snapshot, options)
    order = ["topic", "partition"]
    assert again.assignment.orderBy(*order).collect() == result.assignment.orderBy(*order).collect()
    assert again.rounds == result.rounds


def test_the_rack_violations_kept_by_the_driver_are_what_spark_counts(spark, read_snapshot, tmp_path, monkeypatch):
    """The cluster keeps the rack violation count move by move (Cluster.apply_move);
    after every goal it equals the replica view's rack_violation flags counted by Spark."""
    import json

    made = generate(tmp_path, partitions=120, brokers=6, seed=5, network_fill=0.15, disk_fill=0.3)
    racks = {r["broker_id"]: r["rack"] for r in map(json.loads, (made.path / "brokers.jsonl").open())}
    lines = [json.loads(line) for line in (made.path / "partitions.jsonl").open()]
    for row in lines[::3]:       # a third of the partitions: the second replica in the first's rack
        first = row["replicas"][0]
        row["replicas"][1] = next(b for b in sorted(racks) if racks[b] == racks[first] and b not in row["replicas"])
    (made.path / "partitions.jsonl").write_text("".join(json.dumps(row) + "\n" for row in lines))

    counted = []
    run_goal = optimizer._Model.run_goal

    def checked(model, goal, higher, priority):
        if not counted:
            counted.append((model.cluster.rack_violations, model.view.where("rack_violation").count()))
        status = run_goal(model, goal, higher, priority)
        counted.append((model.cluster.rack_violations, model.view.where("rack_violation").count()))
        return status

    monkeypatch.setattr(optimizer._Model, "run_goal", checked)
    snapshot = read_snapshot(made.path)
    result = optimize(spark, snapshot, PlannerOptions())
    assert result.unsatisfied == []
    assert counted[0][1] == len(lines[::3]), counted      # the hard case happened
    assert all(kept == spark_count for kept, spark_count in counted), counted
    assert counted[-1] == (0, 0)


def test_swap_pools_selected_with_the_round_or_when_asked_give_the_same_plan(spark, read_snapshot, tmp_path,
                                                                              monkeypatch):
    """A small snapshot's swap partners come with the round's query; a large
    one's from a Spark job of their own when a goal first asks. The plan is
    the same either way, and the network goal did swap here."""
    made = generate(tmp_path, partitions=20, brokers=6, seed=1, network_fill=0.15, disk_fill=0.3)
    snapshot = read_snapshot(made.path)
    asked = []
    select = optimizer._Model.select
    monkeypatch.setattr(optimizer._Model, "select", lambda model, s: asked.append(s.name) or select(model, s))
    order = ["topic", "partition"]
    plans = {}
    for replicas in (optimizer.POOLS_WITH_ROUND_REPLICAS, 0):
        monkeypatch.setattr(optimizer, "POOLS_WITH_ROUND_REPLICAS", replicas)
        result = optimize(spark, snapshot, PlannerOptions())
        plans[replicas] = (result.assignment.orderBy(*order).collect(), result.rounds)
        asked.append("--")
    with_round, when_asked = asked[:asked.index("--")], asked[asked.index("--") + 1:-1]
    assert with_round == [] and "network:cold" in when_asked, asked
    assert plans[0] == plans[optimizer.POOLS_WITH_ROUND_REPLICAS]


def test_the_hot_set_is_the_same_from_the_views_query_and_from_a_job_of_its_own(spark, runs, monkeypatch):
    """Small snapshots compute the hot set as a running sum in the replica
    view's query; larger ones compare with its coldest member, found by a
    job of their own. Both give the same partitions."""
    snapshot, options, _ = runs[11]
    hot = {}
    for small_replicas in (optimizer.SMALL_REPLICAS, 0):
        monkeypatch.setattr(optimizer, "SMALL_REPLICAS", small_replicas)
        model = optimizer._Model(spark, snapshot, options)
        assert model.small == bool(small_replicas)
        hot[small_replicas] = {(r.topic, r.partition) for r in
                               model.view.where("replica_index = 0 AND hot").collect()}
        model.release()
    assert 0 < len(hot[0]) < 600
    assert hot[0] == hot[optimizer.SMALL_REPLICAS]
