"""Targets, fill levels and excesses of the disk goal (goals/disk.py)."""

from kafkactl.planner.goals.disk import (Disk, RackVolume, band, excess_above_fill, fill_level,
                                         pull_excess, ssd_volumes)
from kafkactl.planner.options import PlannerOptions
from support.goal_fixtures import cluster, replica


def test_targets_are_per_media_class_over_eligible_capacity():
    c = cluster(sizes={0: 300, 2: 300, 4: 300, 1: 1000, 3: 1000, 5: 1000})
    assert c.util_target == {(None, "ssd"): 0.3, (None, "hdd"): 0.5}
    assert c.dir_target(c.dirs[0]) == 300 and c.dir_target(c.dirs[1]) == 1000


def test_excluded_brokers_have_no_target():
    c = cluster(sizes={0: 300, 2: 300}, excluded=(3,))
    assert c.dir_target(c.dirs[4]) == 0.0
    assert c.util_target[(None, "ssd")] == 0.3               # 600 over the two brokers that stay


def test_fill_level_and_band_follow_the_tolerance():
    c = cluster(sizes={1: 1000, 3: 1000, 5: 1000}, options=PlannerOptions(disk_tolerance=0.10))
    d = c.dirs[1]
    assert fill_level(c, d) == 1050
    assert band(c, d) == (950, 1050)


def test_excess_is_what_lies_above_the_fill_level():
    c = cluster(sizes={1: 1500, 3: 900, 5: 600})
    assert excess_above_fill(c, "hdd") == {1: 1500 - 1025}


def test_pull_fills_dirs_far_below_target_from_those_above():
    c = cluster(sizes={1: 1010, 3: 1010, 5: 980})      # all under the fill level 1025
    assert excess_above_fill(c, "hdd") == {}
    assert pull_excess(c, "hdd") == {}                  # 980 is within 1000 x (1 - 0.025)
    c = cluster(sizes={1: 1020, 3: 1020, 5: 960})
    assert pull_excess(c, "hdd") == {1: 20, 3: 20}


def test_a_lower_goal_keeps_both_dirs_in_the_band():
    c = cluster(sizes={1: 1000, 3: 1000, 5: 1000})
    goal = Disk()
    assert goal.guard(c, replica(index=0, brokers=(1, 2), dirs=(1, 3), size=25), 5)
    assert not goal.guard(c, replica(index=0, brokers=(1, 2), dirs=(1, 3), size=30), 5)
    assert not goal.guard(c, replica(index=0, brokers=(1, 2), dirs=(1, 3), size=10), 4)  # media


def test_targets_are_per_rack_when_every_rack_holds_every_partition():
    # racks a, a, b: with RF 2, rack b (one broker) holds a replica of everything
    c = cluster(sizes={1: 1000, 3: 0, 5: 1000}, racks=("a", "a", "b"))
    c.pin_racks(min_rf=2)
    assert c.dir_target(c.dirs[1]) == 500 and c.dir_target(c.dirs[5]) == 1000
    c.pin_racks(min_rf=1)
    assert c.dir_target(c.dirs[5]) == 2000 / 3


def test_ssd_volume_is_shared_so_every_rack_fills_its_ssd_alike():
    # three pinned racks of equal capacity: rack a holds more of the SSD bytes
    # than b and c; the class keeps its 1,500 bytes, 500 per rack
    racks = [RackVolume(r, 2000, 100, ssd, 1000, 2000) for r, ssd in (("a", 700), ("b", 400), ("c", 400))]
    assert ssd_volumes(racks, [700, 400, 400], 0.8) == [500, 500, 500]


def test_an_uneven_rack_keeps_its_hot_bytes_and_its_hdd_under_the_threshold():
    # rack c has half the capacity and the same bytes (pinned): its HDD may
    # hold 800 at 0.8, so its SSD takes at least 1,200 - 800 = 400
    racks = [RackVolume("a", 1200, 50, 300, 1000, 2000), RackVolume("b", 1200, 250, 300, 1000, 2000),
             RackVolume("c", 1200, 50, 300, 500, 1000)]
    volumes = ssd_volumes(racks, [300, 300, 300], 0.8)
    assert volumes[1] >= 250 and volumes[2] >= 400
    assert all(v <= 0.8 * r.ssd_capacity for v, r in zip(volumes, racks))
    assert all(r.total - v <= 0.8 * r.hdd_capacity for v, r in zip(volumes, racks))


def test_a_broker_over_its_count_sheds_as_many_replicas_as_it_holds_too_many():
    from kafkactl.planner.goals.disk import shed_order

    # 6 replicas of 2 and 6 of 1 in rank order (largest first); 12 bytes to shed with 8 replicas:
    # nearest to 12/8 = 1.5 (ties: the larger), then to what is left over the count left
    reps = [replica(size=2, partition=p) for p in range(6)] + [replica(size=1, partition=6 + p) for p in range(6)]
    order = shed_order(reps, 12, 8)
    assert [r.size_bytes for r in order[:8]] == [2, 1, 2, 1, 2, 1, 2, 1]
    assert sorted(r.partition for r in order) == list(range(12))          # every candidate, once
    # without a count surplus to shed: the largest first
    assert [r.size_bytes for r in shed_order(reps, 12, 0)][:6] == [2] * 6


def test_count_surplus_is_per_rack_when_racks_are_pinned():
    from kafkactl.planner.goals.disk import count_surplus

    c = cluster(racks=("a", "a", "b"))
    for b, held in ((1, 9), (2, 3), (3, 6)):
        c.brokers[b].replicas = held
    assert count_surplus(c) == {1: 3.0, 2: -3.0, 3: 0.0}                  # mean 6 over the three
    c.pin_racks(min_rf=2)
    assert count_surplus(c) == {1: 3.0, 2: -3.0, 3: 0.0}                  # rack a: mean 6; rack b: 6
    c.brokers[3].replicas = 12
    assert count_surplus(c)[3] == 0.0 and count_surplus(c)[1] == 3.0


def test_out_of_the_band_a_lower_goal_may_only_narrow_a_pair():
    # HDD dirs (target 1,000 each): 1,100 on broker 1, 900 on broker 2, 1,000 on broker 3
    c = cluster(sizes={1: 1100, 3: 900, 5: 1000})
    goal = Disk()
    assert not goal.guard(c, replica(index=0, brokers=(1, 2), dirs=(1, 3), size=150), 5)   # 1,150 on dir 5
    # 150 from dir 1 (1,100) to dir 3 (900): out of the band, but 1,050 <= 1,100 and 950 >= 900
    assert goal.guard(c, replica(index=0, brokers=(1, 3), dirs=(1, 5), size=150), 3)
    # 250: dir 3 would end at 1,150, above what dir 1 held
    assert not goal.guard(c, replica(index=0, brokers=(1, 3), dirs=(1, 5), size=250), 3)
