"""Where a new log goes, and how full each dir is (placement.py), through the LogManager."""

import os

import pytest

from kafkactl.cluster.log.manager import LogDir
from kafkactl.cluster.log.placement import PLACEMENT_USAGE_MAX_AGE_MS


def test_new_partitions_go_to_the_least_used_dir_of_the_preferred_class(make_manager, dirs,
                                                                       make_batch, clock, append):
    manager = make_manager()
    manager.startup()
    first = manager.get_or_create_log("t", 0, preferred_media="ssd")
    assert manager.dir_of("t", 0) == dirs[0].path  # all empty: dir order
    append(first, make_batch, batches=3)
    clock.advance(PLACEMENT_USAGE_MAX_AGE_MS)   # sizes are read again at most once a second
    manager.get_or_create_log("t", 1, preferred_media="ssd")
    assert manager.dir_of("t", 1) == dirs[1].path  # fewer bytes
    manager.get_or_create_log("t", 2, preferred_media="ssd")
    assert manager.dir_of("t", 2) == dirs[1].path  # still fewer bytes (both empty logs)
    append(manager.get_log("t", 1), make_batch, batches=3)
    append(manager.get_log("t", 2), make_batch, batches=3)
    clock.advance(PLACEMENT_USAGE_MAX_AGE_MS)
    manager.get_or_create_log("t", 3, preferred_media="ssd")
    assert manager.dir_of("t", 3) == dirs[0].path
    manager.get_or_create_log("t", 4, preferred_media="hdd")
    assert manager.dir_of("t", 4) == dirs[2].path
    assert manager.get_or_create_log("t", 0, preferred_media="hdd") is first  # existing stays


def test_ties_in_bytes_go_to_the_dir_with_fewer_partitions(make_manager, dirs):
    manager = make_manager()
    manager.startup()
    manager.get_or_create_log("t", 0, preferred_media="ssd")
    manager.get_or_create_log("t", 1, preferred_media="ssd")
    manager.get_or_create_log("t", 2, preferred_media="ssd")
    usage = {u.path: u for u in manager.dir_usage()}
    assert usage[dirs[0].path].partition_count == 2 and usage[dirs[1].path].partition_count == 1


def test_many_new_partitions_between_two_size_readings_spread_by_count(make_manager, dirs):
    manager = make_manager()
    manager.startup()
    for partition in range(10):
        manager.get_or_create_log("t", partition, preferred_media="ssd")
    usage = {u.path: u.partition_count for u in manager.dir_usage()}
    assert (usage[dirs[0].path], usage[dirs[1].path], usage[dirs[2].path]) == (5, 5, 0)


def test_without_a_dir_of_the_class_any_dir_is_used(make_manager, tmp_path):
    only_hdd = [LogDir(os.path.join(tmp_path, "h1"), "hdd"), LogDir(os.path.join(tmp_path, "h2"), "hdd")]
    manager = make_manager(only_hdd)
    manager.startup()
    manager.get_or_create_log("t", 0, preferred_media="ssd")
    manager.get_or_create_log("t", 1)
    assert {manager.dir_of("t", 0), manager.dir_of("t", 1)} == {d.path for d in only_hdd}
    with pytest.raises(ValueError):
        manager.get_or_create_log("t", 2, preferred_media="tape")
    with pytest.raises(ValueError):
        manager.get_or_create_log("bad topic", 0)


def test_dir_usage(make_manager, dirs, make_batch, append):
    manager = make_manager()
    manager.startup()
    log = manager.get_or_create_log("t", 0, preferred_media="hdd")
    append(log, make_batch, batches=2)
    usage = {u.path: u for u in manager.dir_usage()}
    hdd = usage[dirs[2].path]
    assert (hdd.media, hdd.used_bytes, hdd.partition_count) == ("hdd", log.size_bytes, 1)
    assert hdd.capacity_bytes > 0
    assert usage[dirs[0].path].used_bytes == 0
