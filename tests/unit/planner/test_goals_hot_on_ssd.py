"""Heat ranking and the SSD volume (goals/hot_on_ssd.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # goal_fixtures

from goal_fixtures import cluster, replica

from kafkactl.planner.goals.hot_on_ssd import HotOnSsd, heat, hot_set, ssd_volume_bytes


def test_heat_is_traffic_per_byte_stored():
    assert heat(100, 30.0, 70.0) == 1.0
    assert heat(0, 1.0, 0.0) == 1.0                  # empty counts as one byte


def test_the_hottest_fill_the_budget_in_order_ties_by_key():
    partitions = [(("a", 0), 100, 3, 5.0), (("b", 0), 100, 3, 9.0),
                  (("c", 0), 100, 3, 5.0), (("d", 0), 10, 3, 1.0)]
    assert hot_set(partitions, 600) == {("b", 0), ("a", 0)}
    assert hot_set(partitions, 599) == {("b", 0)}
    assert hot_set(partitions, 299) == set()


def test_ssd_keeps_its_volume_unless_the_hot_set_needs_more():
    assert ssd_volume_bytes(hot_bytes=100, ssd_bytes=500, ssd_allowed_bytes=800) == 500
    assert ssd_volume_bytes(hot_bytes=600, ssd_bytes=500, ssd_allowed_bytes=800) == 600
    assert ssd_volume_bytes(hot_bytes=100, ssd_bytes=900, ssd_allowed_bytes=800) == 800


def test_a_hot_replica_never_leaves_ssd_for_a_lower_goal():
    c = cluster()
    goal = HotOnSsd()
    assert not goal.guard(c, replica(index=0, brokers=(1, 2), dirs=(0, 2), hot=True), 5)
    assert goal.guard(c, replica(index=0, brokers=(1, 2), dirs=(0, 2), hot=True), 4)
    assert goal.guard(c, replica(index=0, brokers=(1, 2), dirs=(0, 2), hot=False), 5)


def test_evictions_make_room_for_the_hot_bytes_of_the_same_broker():
    # broker 1: SSD 700/1000 bytes, its HDD holds 300 hot bytes; class targets 0.5
    c = cluster(sizes={0: 700, 1: 1000, 2: 300, 3: 800, 4: 500, 5: 1200})
    c.dirs[1].hot_bytes = 300
    goal = HotOnSsd()
    goal.prepare(c)
    assert c.util_target[(None, "ssd")] == 0.5               # 1500 of 3000, kept
    evict = goal._evictions(c)
    # fill level 525 (0.5 x 1000 x 1.025): 700 + 300 - 525 = 475, at most the 300 coming in
    assert evict == {0: 300}
