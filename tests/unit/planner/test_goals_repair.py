"""What no assignment can meet is reported with why (goals/repair.py)."""

from kafkactl.planner.goals.repair import PartitionTotals, infeasible
from kafkactl.planner.options import PlannerOptions
from support.goal_fixtures import cluster


def totals(**changes):
    base = dict(partitions=10, replica_bytes=3000, max_rf=3, max_size_bytes=100,
                replica_bytes_in=30, bytes_out=10, per_rack_bytes=1000)
    base.update(changes)
    return PartitionTotals(**base)


def test_a_feasible_cluster_has_no_problem():
    assert infeasible(cluster(), totals()) == []


def test_replication_factor_above_the_brokers_that_stay():
    problems = infeasible(cluster(excluded=(3,)), totals(per_rack_bytes=0))
    assert any("replication factor" in p and "only 2 brokers" in p for p in problems)


def test_total_size_above_allowed_capacity():
    problems = infeasible(cluster(), totals(replica_bytes=8000))   # 0.8 x 9000 = 7200
    assert any(p.startswith("capacity: the replicas take 8000 bytes") for p in problems)


def test_a_rack_too_small_for_its_replica_of_every_partition():
    # RF 3 over 3 racks: each rack holds a replica of every partition (2500
    # bytes), a rack may hold 0.8 x 3000 = 2400
    problems = infeasible(cluster(), totals(replica_bytes=7500, per_rack_bytes=2500,
                                            max_size_bytes=10))
    assert [p for p in problems if p.startswith("rack spread")] and "rack a" in problems[-3]


def test_unknown_brokers_are_named():
    problems = infeasible(cluster(options=PlannerOptions(exclude_brokers=(9,))), totals())
    assert problems == ["brokers: [9] are not in the snapshot"]
