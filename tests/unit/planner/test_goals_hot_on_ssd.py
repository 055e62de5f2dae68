"""Heat ranking and the SSD volume (goals/hot_on_ssd.py)."""

from kafkactl.planner.goals.hot_on_ssd import HotOnSsd, heat, hot_set, shed_to_level, ssd_volume_bytes
from support.goal_fixtures import cluster, replica


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


def test_evictions_take_from_the_fullest_ssd_dirs_what_the_hot_bytes_need():
    # SSD dirs 700, 300, 500 bytes (targets 500 each, the 1,500 kept); 300 hot
    # bytes on broker 1's HDD must come in, so the SSD class gives 300, from
    # the dirs above target first, down to one level (0.9 x target): the
    # over-full dir 0 gives what it would have to shed anyway, dir 2 (under
    # target) none, and the hot bytes may fill it
    c = cluster(sizes={0: 700, 1: 1000, 2: 300, 3: 800, 4: 500, 5: 1200})
    c.dirs[1].hot_bytes = 300
    goal = HotOnSsd()
    goal.prepare(c)
    assert c.util_target[(None, "ssd")] == 0.5               # 1500 of 3000, kept
    assert goal._evictions(c) == {0: 250, 4: 50}


def test_shedding_to_a_level_never_gives_more_than_a_dir_can_move():
    # dir 0 holds 900 of which only 100 may move (the rest is hot)
    assert shed_to_level([100, 600], [900, 600], [500.0, 500.0], 300) == [100, 200]
    assert shed_to_level([100, 600], [900, 600], [500.0, 500.0], 0) == [0, 0]
