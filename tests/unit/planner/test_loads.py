"""The benchmark's lower bound on bytes moved (planner/loads.py), as pure
functions over per-dir rows."""

from collections import namedtuple

import pytest

from kafkactl.planner.loads import balance, hot_bytes_leaving, max_over_mean, needed_bytes

DirLoad = namedtuple("DirLoad", "broker_id path media capacity_bytes size_bytes")
BrokerLoad = namedtuple("BrokerLoad", "broker_id bytes_in bytes_out network_in_capacity_bytes_per_s "
                                      "network_out_capacity_bytes_per_s")


def dirs(*sizes):
    """(broker, media, size) -> dirs of 100 bytes each."""
    return [DirLoad(b, f"/{media}", media, 100, size) for b, media, size in sizes]


def test_hot_bytes_leaving_counts_only_what_a_dir_gives_up():
    before = {(1, "/hdd"): 30, (2, "/hdd"): 10, (3, "/hdd"): 5}
    after = {(1, "/hdd"): 10, (2, "/hdd"): 15}
    assert hot_bytes_leaving(before, after) == {(1, "/hdd"): 20, (3, "/hdd"): 5}
    assert hot_bytes_leaving(before, {}) == before


def test_a_balanced_cluster_with_every_hot_byte_on_ssd_needs_nothing():
    same = dirs((1, "ssd", 50), (1, "hdd", 50), (2, "ssd", 50), (2, "hdd", 50))
    assert needed_bytes(same, same, {}, {}) == 0


def test_each_dir_sheds_what_it_holds_above_the_after_maximum_of_its_media():
    before = dirs((1, "hdd", 90), (2, "hdd", 10), (1, "ssd", 40), (2, "ssd", 40))
    after = dirs((1, "hdd", 55), (2, "hdd", 45), (1, "ssd", 40), (2, "ssd", 40))
    # (utilization is a float: the bound may round one byte down, never up)
    assert needed_bytes(before, after, {}, {}) == pytest.approx(90 - 55, abs=1)


def test_hot_bytes_leaving_hdd_need_room_made_on_a_full_ssd_class():
    # Each SSD dir holds 60 and still does after; 20 hot bytes come off broker 1's HDD.
    before = dirs((1, "ssd", 60), (2, "ssd", 60), (1, "hdd", 40), (2, "hdd", 20))
    after = dirs((1, "ssd", 60), (2, "ssd", 60), (1, "hdd", 30), (2, "hdd", 30))
    hot_before = {(1, "/hdd"): 20}
    # 20 hot bytes leave the HDD, and the SSD class must push out 20 cold bytes for them.
    assert needed_bytes(before, after, hot_before, {}) == 40
    # Hot bytes that merely shuffle between HDD dirs bring nothing to the SSD class.
    assert needed_bytes(before, after, hot_before, {(2, "/hdd"): 20}) == 20


def test_an_excluded_broker_gives_up_everything():
    before = dirs((1, "hdd", 30), (2, "hdd", 30), (3, "hdd", 30))
    after = dirs((1, "hdd", 45), (2, "hdd", 45), (3, "hdd", 0))
    assert needed_bytes(before, after, {}, {}, exclude=(3,)) == 30


def test_balance_is_max_over_mean_per_media_and_per_direction():
    assert max_over_mean([1, 1, 4]) == 2.0 and max_over_mean([]) == 0.0
    measured = balance(dirs((1, "ssd", 20), (2, "ssd", 60), (1, "hdd", 50), (2, "hdd", 50)),
                       [BrokerLoad(1, 10, 30, 100, 100), BrokerLoad(2, 30, 10, 100, 100)])
    assert measured.disk == pytest.approx({"hdd": 1.0, "ssd": 1.5})
    assert measured.disk_max == pytest.approx({"hdd": 0.5, "ssd": 0.6})
    assert (measured.network_in, measured.network_out) == pytest.approx((1.5, 1.5))
