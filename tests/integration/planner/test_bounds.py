"""The constraint-aware lower bound from real snapshots (Spark gathers the
partition classes; planner/bounds.py). Its linear program on literal
inputs: tests/unit/planner/test_bounds.py."""

import pytest

from kafkactl.planner.bounds import lower_bound, partition_classes
from kafkactl.planner.options import PlannerOptions


def test_racks_of_5_4_3_hold_the_smallest_rack_at_4_3_of_the_mean(fixture_snapshot):
    # unequal_racks: 30 partitions of RF 3, 1 GB each, on SSD dirs of 100 GB; racks of 5, 4 and 3 brokers
    _, snapshot, _ = fixture_snapshot("unequal_racks")
    bound = lower_bound(snapshot, PlannerOptions())
    ssd = bound["log_dir_utilization_ssd"]
    assert ssd["mean"] == pytest.approx(90e9 / 1200e9)
    assert ssd["max"] == pytest.approx(30e9 / 300e9, rel=1e-5)       # rack r3: 30 GB over 3 x 100 GB
    assert ssd["max_mean"] == pytest.approx(4 / 3, rel=1e-5) and ssd["limited_by"] == ["rack spread"]
    assert bound["replica_count"]["max"] == 10.0                       # 30 replicas over rack r3's 3 brokers
    assert bound["network_in_utilization"]["max"] == pytest.approx(30e6 / 375e6, rel=1e-5)
    assert bound["leader_count"]["max"] == 3.0                         # leaders go anywhere: 30 over 12
    assert "disk_utilization_hdd" not in bound                         # no HDD dirs


def test_excluded_brokers_count_nothing_and_the_bound_is_perfect_balance_without_racks(fixture_snapshot):
    # decommission_one: 5 brokers without racks, RF 3, 10 partitions of 3 GB; broker 5 excluded
    _, snapshot, _ = fixture_snapshot("decommission_one")
    bound = lower_bound(snapshot, PlannerOptions(exclude_brokers=(5,)))
    # SSD: 20 replicas of 3 GB over 4 x 100 GB; HDD: 10 replicas
    assert bound["disk_utilization_ssd"]["max"] == pytest.approx(60e9 / 400e9, rel=1e-5)
    assert bound["log_dir_utilization_hdd"]["mean"] == pytest.approx(30e9 / 400e9)
    assert bound["replica_count"] == {"min": None, "max": 8.0, "mean": 7.5, "std": None, "max_mean": 8 / 7.5,
                                      "limited_by": ["whole counts"]}
    assert bound["network_in_utilization"]["max"] == pytest.approx(30e6 / 500e6, rel=1e-5)


def test_the_media_split_is_the_assessed_assignments(fixture_snapshot):
    # the same partitions with every byte on HDD: the SSD class holds nothing, the HDD class all
    _, snapshot, _ = fixture_snapshot("decommission_one")
    dirs = [{"broker_id": b, "path": path, "media": media, "used_bytes": 90e9 / 4 if media == "hdd" else 0}
            for b in range(1, 5) for path, media in (("/data/ssd0", "ssd"), ("/data/hdd0", "hdd"))]
    bound = lower_bound(snapshot, PlannerOptions(exclude_brokers=(5,)), dirs)
    assert bound["log_dir_utilization_ssd"]["max"] == 0.0
    assert bound["log_dir_utilization_hdd"]["max"] == pytest.approx(90e9 / 400e9, rel=1e-5)


def test_partition_classes_sum_per_replication_factor(fixture_snapshot):
    _, snapshot, _ = fixture_snapshot("skewed")
    (only,) = partition_classes(snapshot)
    # hot: 6 x 1 GB, 4/8 MB/s; archive: 12 x 8 GB, 0.05 MB/s; events: 18 x 3 GB, 1/2 MB/s
    assert (only.replication_factor, only.partitions, only.size_bytes) == (3, 36, 156 * 10**9)
    assert only.bytes_in_per_s == pytest.approx(6 * 4e6 + 12 * 0.05e6 + 18 * 1e6)
    assert (only.largest_bytes_in_per_s, only.largest_bytes_out_per_s) == (4e6, 8e6)
