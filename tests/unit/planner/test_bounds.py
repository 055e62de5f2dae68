"""The constraint-aware lower bound's linear program on literal clusters,
against what can be worked out by hand (planner/bounds.py)."""

import pytest

from kafkactl.planner.bounds import (Bin, BrokerSpec, DirSpec, PartitionClass, Relaxed, Unit, figures,
                                     min_max_utilization)
from kafkactl.planner.options import PlannerOptions

RACKS_5_4_3 = {b: "a" if b <= 5 else "b" if b <= 9 else "c" for b in range(1, 13)}


def brokers(racks=RACKS_5_4_3, capacity=100.0):
    return [BrokerSpec(b, rack, capacity, capacity) for b, rack in sorted(racks.items())]


def ssd_dirs(racks=RACKS_5_4_3, capacity=1000, other=0):
    return [DirSpec(b, "/ssd", "ssd", capacity, other) for b in sorted(racks)]


def test_one_replica_per_rack_puts_4_3_of_the_mean_on_the_smallest_rack():
    # 100 partitions of RF 3, 1,200 bytes in all: each rack holds 1,200 bytes; rack c over 3 brokers.
    classes = [PartitionClass(3, 100, 1200, 30.0, 60.0, 0.5, 1.0)]
    bound = figures(classes, brokers(), ssd_dirs(), PlannerOptions(), {"ssd": 3600})
    disk = bound["log_dir_utilization_ssd"]
    assert disk["mean"] == pytest.approx(0.3)                 # 3,600 over 12 x 1,000
    assert disk["max"] == pytest.approx(0.4, rel=1e-5)        # 1,200 over 3 x 1,000
    assert disk["max_mean"] == pytest.approx(4 / 3, rel=1e-5)
    assert disk["limited_by"] == ["rack spread"]
    assert bound["disk_utilization_ssd"]["max"] == pytest.approx(0.4, rel=1e-5)
    assert bound["network_in_utilization"]["max"] == pytest.approx(30.0 / 300.0, rel=1e-5)
    # 100 replicas over rack c's 3 brokers: 33.3, so 34 whole
    assert bound["replica_count"]["max"] == 34.0
    assert bound["replica_count"]["limited_by"] == ["rack spread", "whole counts"]
    # any replica may lead: 100 leaders over 12 brokers
    assert bound["leader_count"]["max"] == 9.0
    assert bound["network_out_utilization"]["max"] == pytest.approx(60.0 / 1200.0)


def test_equal_racks_give_perfect_balance():
    racks = {b: "abc"[(b - 1) % 3] for b in range(1, 13)}
    classes = [PartitionClass(3, 120, 1200, 36.0, 36.0)]
    bound = figures(classes, brokers(racks), ssd_dirs(racks), PlannerOptions(), {"ssd": 3600})
    assert bound["log_dir_utilization_ssd"]["max_mean"] == pytest.approx(1.0, abs=1e-5)
    assert bound["log_dir_utilization_ssd"]["limited_by"] == []
    assert bound["replica_count"] == {"min": None, "max": 30.0, "mean": 30.0, "std": None, "max_mean": 1.0,
                                      "limited_by": []}


def test_two_media_trade_off_where_racks_pin_the_bytes():
    # with an HDD dir beside every SSD, rack c can keep its SSDs at the mean and put the rest
    # on HDD (and the reverse): each class alone reaches perfect balance, both at once 4/3
    dirs = ssd_dirs() + [DirSpec(b, "/hdd", "hdd", 1000, 0) for b in sorted(RACKS_5_4_3)]
    classes = [PartitionClass(3, 100, 1200, 30.0, 60.0)]
    bound = figures(classes, brokers(), dirs, PlannerOptions(), {"ssd": 2400, "hdd": 1200})
    assert bound["log_dir_utilization_ssd"]["max_mean"] == pytest.approx(1.0, abs=1e-5)
    assert bound["log_dir_utilization_hdd"]["max_mean"] == pytest.approx(1.0, abs=1e-5)
    worst = bound["disk_worst_media"]["log_dir"]
    assert worst["max"] == pytest.approx(4 / 3, rel=1e-5) and worst["limited_by"] == ["rack spread"]


def test_excluded_brokers_hold_nothing_and_other_bytes_stay():
    racks = {b: None for b in range(1, 5)}
    dirs = [DirSpec(b, "/ssd", "ssd", 1000, 300 if b == 1 else 0) for b in range(1, 5)]
    classes = [PartitionClass(2, 10, 600, 0.0, 0.0)]
    # 1,200 replica bytes over brokers 1-3 (4 excluded); broker 1 already holds 300 others
    bound = figures(classes, brokers(racks), dirs, PlannerOptions(exclude_brokers=(4,)), {"ssd": 1200})
    assert bound["log_dir_utilization_ssd"]["mean"] == pytest.approx(1500 / 3000)
    assert bound["log_dir_utilization_ssd"]["max"] == pytest.approx(0.5, rel=1e-5)
    # RF 2 on 2 of... each broker at most 600 (one replica per partition): 300 + 600 > 500 is avoidable
    assert bound["replica_count"]["max"] == 7.0                  # 20 replicas over 3 brokers


def test_a_partition_has_at_most_one_replica_per_broker():
    # RF 2 on 2 brokers of unequal dirs: each broker holds every partition once
    bins = [Bin(1, None), Bin(2, None)]
    units = [Unit((0,), 100.0), Unit((1,), 300.0)]
    # 100 bytes at RF 2: 100 on each broker; broker 1's utilization is 1.0 (perfect balance: 0.5)
    assert min_max_utilization([(2, 100.0)], bins, units) == pytest.approx(1.0, rel=1e-5)
    without = min_max_utilization([(2, 100.0)], bins, units, keep=Relaxed(distinct=False))
    assert without == pytest.approx(0.5, rel=1e-5)


def test_thresholds_push_load_onto_other_bins():
    # broker 1 may carry at most 50 (a threshold): the rest goes to broker 2
    bins = [Bin(1, None, limit=50.0), Bin(2, None)]
    units = [Unit((1,), 100.0)]                    # only broker 2 measured
    assert min_max_utilization([(1, 120.0)], bins, units) == pytest.approx(0.7, rel=1e-5)
    assert min_max_utilization([(1, 120.0)], bins, units, keep=Relaxed(limits=False)) == pytest.approx(0.0, abs=1e-9)


def test_more_replicas_than_racks_need_every_rack():
    # RF 3 over 2 racks: each rack at least one replica, at most 2 (rf - racks + 1)
    bins = [Bin(1, "a"), Bin(2, "a"), Bin(3, "b")]
    units = [Unit((i,), 100.0) for i in range(3)]
    # every partition on all 3 brokers: 90 bytes each
    assert min_max_utilization([(3, 90.0)], bins, units) == pytest.approx(0.9, rel=1e-5)
    # RF 2 over the same: rack b (broker 3) holds every partition once
    assert min_max_utilization([(2, 90.0)], bins, units) == pytest.approx(0.9, rel=1e-5)
    assert min_max_utilization([(2, 90.0)], bins, units, keep=Relaxed(racks=False)) == pytest.approx(0.6, rel=1e-5)


def test_the_largest_partition_lands_whole():
    classes = [PartitionClass(1, 2, 100, 90.0, 90.0, 80.0, 80.0)]
    racks = {1: None, 2: None}
    bound = figures(classes, brokers(racks), ssd_dirs(racks), PlannerOptions(), {"ssd": 100})
    assert bound["network_in_utilization"]["max"] == pytest.approx(0.8)
    assert bound["network_in_utilization"]["limited_by"] == ["largest partition"]
    assert bound["network_out_utilization"]["max"] == pytest.approx(0.8)


def test_no_partitions_no_load():
    bins = [Bin(1, None, fixed=20.0)]
    assert min_max_utilization([], bins, [Unit((0,), 100.0)]) == pytest.approx(0.2)
    assert min_max_utilization([(3, 10.0)], bins, []) is None
