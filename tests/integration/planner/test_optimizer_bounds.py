"""Bounds on movement, repair-only runs, and a hard constraint that cannot be
met, with real Spark on small generated snapshots."""

import json

import pytest

from kafkactl.planner.generate import generate
from kafkactl.planner.loads import bytes_moved
from kafkactl.planner.optimizer import optimize
from kafkactl.planner.options import PlannerOptions
from support.plan_checks import violations


@pytest.fixture(scope="module")
def snapshot(read_snapshot, tmp_path_factory):
    made = generate(tmp_path_factory.mktemp("bounds"), partitions=400, brokers=6, seed=21)
    return read_snapshot(made.path)


@pytest.mark.parametrize("bound", [{"max_moves": 7}, {"max_bytes_moved": 2 * 10**11}])
def test_movement_bounds_are_respected(spark, snapshot, bound):
    # a threshold no dir is above: nothing to repair, every move is the disk goal's
    options = PlannerOptions(goals=("disk",), capacity_threshold=0.95, **bound)
    result = optimize(spark, snapshot, options)
    moves, moved = bytes_moved(snapshot.partitions, result.assignment)
    assert moves > 0
    assert moves <= bound.get("max_moves", moves)
    assert moved <= bound.get("max_bytes_moved", moved)
    assert violations(snapshot, result.assignment, options) == []


def test_a_decommissioned_broker_is_emptied_by_repair_alone(spark, read_snapshot, tmp_path):
    made = generate(tmp_path, partitions=300, brokers=9, seed=22)   # 3 brokers per rack
    snapshot = read_snapshot(made.path)
    options = PlannerOptions(goals=(), exclude_brokers=(4,))
    result = optimize(spark, snapshot, options)
    assert result.unsatisfied == []
    assert violations(snapshot, result.assignment, options) == []
    held = [r for r in snapshot.partitions.collect() if 4 in r.replicas]
    moves, _ = bytes_moved(snapshot.partitions, result.assignment)
    assert held and moves >= len(held)
    assert not [r for r in result.assignment.collect() if 4 in r.replicas]


def test_rack_constraint_unsatisfiable_is_reported_not_solved(spark, read_snapshot, tmp_path):
    """RF 3 over 3 racks, and rack r1 left with one broker (2 is decommissioned)
    whose disks, at the capacity threshold, cannot hold a replica of every
    partition: no placement exists, though the cluster as a whole has room."""
    made = generate(tmp_path, partitions=200, brokers=7, seed=23)   # r1: brokers 2 and 5
    per_rack = sum(json.loads(line)["size_bytes"] for line in open(made.path / "partitions.jsonl"))
    broker_5 = sum(json.loads(line)["capacity_bytes"] for line in open(made.path / "log_dirs.jsonl")
                   if json.loads(line)["broker_id"] == 5)
    snapshot = read_snapshot(made.path)
    options = PlannerOptions(exclude_brokers=(2,), capacity_threshold=0.9 * per_rack / broker_5)
    result = optimize(spark, snapshot, options)
    assert len(result.unsatisfied) == 1
    assert result.unsatisfied[0].startswith("rack spread") and "rack r1 " in result.unsatisfied[0]
    assert result.rounds == 0
    assert result.assignment.orderBy("topic", "partition").collect() == \
        snapshot.partitions.orderBy("topic", "partition").collect()
