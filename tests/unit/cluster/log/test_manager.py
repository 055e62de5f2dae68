import os

import pytest

from kafkactl.cluster.log import log as log_module
from kafkactl.cluster.log.checkpoint import OffsetCheckpointFile
from kafkactl.cluster.log.config import LogConfig
from kafkactl.cluster.log.errors import KafkaStorageError, LogDirLockedError
from kafkactl.cluster.log.manager import (
    CLEAN_SHUTDOWN_FILE,
    LogDir,
    PLACEMENT_USAGE_MAX_AGE_MS,
    LogManager,
    parse_partition_dir_name,
)


@pytest.fixture
def dirs(tmp_path):
    return [LogDir(os.path.join(tmp_path, name), media)
            for name, media in (("ssd-a", "ssd"), ("ssd-b", "ssd"), ("hdd-a", "hdd"))]


@pytest.fixture
def make_manager(dirs, clock):
    managers = []

    def make(log_dirs=None, config=None):
        manager = LogManager(log_dirs or dirs, config or LogConfig(), clock)
        managers.append(manager)
        return manager

    yield make
    for manager in managers:
        if manager._lock_files:
            manager.shutdown()


def append(log, make_batch, batches=1, records=2, timestamp_ms=0):
    for _ in range(batches):
        log.append_as_leader(make_batch(records, timestamp_ms=timestamp_ms), 0)


def test_parse_partition_dir_name():
    assert parse_partition_dir_name("orders-3") == ("orders", 3)
    assert parse_partition_dir_name("my-topic.v2-10") == ("my-topic.v2", 10)
    assert parse_partition_dir_name("orders-3.abc-delete") is None
    assert parse_partition_dir_name("orders") is None
    assert parse_partition_dir_name("-3") is None


def test_new_partitions_go_to_the_least_used_dir_of_the_preferred_class(make_manager, dirs,
                                                                       make_batch, clock):
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


def test_dir_usage(make_manager, dirs, make_batch):
    manager = make_manager()
    manager.startup()
    log = manager.get_or_create_log("t", 0, preferred_media="hdd")
    append(log, make_batch, batches=2)
    usage = {u.path: u for u in manager.dir_usage()}
    hdd = usage[dirs[2].path]
    assert (hdd.media, hdd.used_bytes, hdd.partition_count) == ("hdd", log.size_bytes, 1)
    assert hdd.capacity_bytes > 0
    assert usage[dirs[0].path].used_bytes == 0


def test_clean_shutdown_marker_round_trip(make_manager, dirs, make_batch, monkeypatch):
    manager = make_manager()
    manager.startup()
    append(manager.get_or_create_log("t", 0, preferred_media="ssd"), make_batch, batches=3)
    manager.shutdown()
    assert all(os.path.exists(os.path.join(d.path, CLEAN_SHUTDOWN_FILE)) for d in dirs)
    assert OffsetCheckpointFile(
        os.path.join(dirs[0].path, "recovery-point-offset-checkpoint")).read() == {("t", 0): 6}

    opened = []
    real_open = log_module.Log.open.__func__
    monkeypatch.setattr(log_module.Log, "open", classmethod(
        lambda cls, *args: opened.append(args[6]) or real_open(cls, *args)))
    manager = make_manager()
    manager.startup()
    assert opened == [True]  # the marker meant a clean shutdown
    assert not any(os.path.exists(os.path.join(d.path, CLEAN_SHUTDOWN_FILE)) for d in dirs)
    log = manager.get_log("t", 0)
    assert log.log_end_offset == 6
    append(log, make_batch)
    # Simulate a crash: drop the manager without shutdown (release the dir locks only).
    for fd in manager._lock_files.values():
        os.close(fd)
    manager._lock_files.clear()
    opened.clear()
    manager = make_manager()
    manager.startup()
    assert opened == [False]
    assert manager.get_log("t", 0).log_end_offset == 8


def test_recovery_points_checkpoint_drives_recovery(make_manager, dirs, make_batch, monkeypatch):
    manager = make_manager([dirs[0]])
    manager.startup()
    log = manager.get_or_create_log("t", 0)
    append(log, make_batch, batches=2)
    log.flush()
    manager.checkpoint_recovery_points()
    manager.checkpoint_log_start_offsets()
    assert OffsetCheckpointFile(
        os.path.join(dirs[0].path, "recovery-point-offset-checkpoint")).read() == {("t", 0): 4}
    assert OffsetCheckpointFile(
        os.path.join(dirs[0].path, "log-start-offset-checkpoint")).read() == {("t", 0): 0}


def test_high_watermarks_are_written_per_dir(make_manager, dirs):
    manager = make_manager()
    manager.startup()
    manager.get_or_create_log("a", 0, preferred_media="ssd")
    manager.get_or_create_log("b", 0, preferred_media="hdd")
    manager.write_high_watermarks({("a", 0): 5, ("b", 0): 7, ("gone", 0): 9})
    read = lambda d: OffsetCheckpointFile(os.path.join(d.path, "replication-offset-checkpoint")).read()
    assert read(dirs[0]) == {("a", 0): 5}
    assert read(dirs[1]) == {}
    assert read(dirs[2]) == {("b", 0): 7}
    assert manager.read_high_watermarks() == {("a", 0): 5, ("b", 0): 7}


def test_malformed_recovery_checkpoint_means_full_recovery(make_manager, dirs, make_batch):
    manager = make_manager([dirs[0]])
    manager.startup()
    append(manager.get_or_create_log("t", 0), make_batch, batches=2)
    manager.shutdown()
    with open(os.path.join(dirs[0].path, "recovery-point-offset-checkpoint"), "w") as file:
        file.write("0\n7\n")
    manager = make_manager([dirs[0]])
    manager.startup()
    assert manager.get_log("t", 0).log_end_offset == 4


def test_delete_log_renames_and_purges_after_the_delay(make_manager, dirs, make_batch, clock):
    manager = make_manager([dirs[0]], LogConfig(file_delete_delay_ms=1_000))
    manager.startup()
    log = manager.get_or_create_log("t", 0)
    append(log, make_batch)
    in_flight = log.read(0, 1 << 20)
    assert manager.delete_log("t", 0)
    assert not manager.delete_log("t", 0)
    assert manager.get_log("t", 0) is None
    [deleted] = [n for n in os.listdir(dirs[0].path) if n.endswith("-delete")]
    assert deleted.startswith("t-0.")
    assert manager.purge_deleted() == 0
    clock.advance(1_000)
    assert manager.purge_deleted() == 1
    assert not os.path.exists(os.path.join(dirs[0].path, deleted))
    assert len(in_flight.region.read_bytes()) == in_flight.size_bytes


def test_startup_removes_leftover_deleted_dirs(make_manager, dirs):
    os.makedirs(os.path.join(dirs[0].path, "t-0.abc-delete"))
    manager = make_manager([dirs[0]])
    manager.startup()
    assert os.listdir(dirs[0].path) == [".lock"]


def test_retention_flush_and_config_updates(make_manager, dirs, make_batch, clock):
    batch_size = len(make_batch(2))
    config = LogConfig(segment_bytes=batch_size * 2, retention_ms=1_000, flush_ms=500)
    manager = make_manager([dirs[0]], config)
    manager.startup()
    log = manager.get_or_create_log("t", 0)
    append(log, make_batch, batches=5, timestamp_ms=clock.now_ms)
    clock.advance(400)
    assert manager.flush_due() == 0
    assert log.recovery_point == 8  # rolled segments were flushed
    clock.advance(100)
    assert manager.flush_due() == 1
    assert log.recovery_point == 10
    assert manager.run_retention() == 0
    clock.advance(1_001)
    assert manager.run_retention() == 2
    assert log.log_start_offset == 8
    manager.update_config("t", LogConfig(segment_bytes=1 << 20, retention_ms=-1))
    assert log.config.segment_bytes == 1 << 20
    clock.advance(10_000)
    manager.purge_deleted()
    assert sorted(n for n in os.listdir(log.dir_path) if n.endswith(".log")) == [
        "00000000000000000008.log"]


def test_a_locked_dir_refuses_a_second_manager(make_manager, dirs):
    make_manager([dirs[0]]).startup()
    with pytest.raises(LogDirLockedError):
        make_manager([dirs[0]]).startup()


def test_the_same_partition_in_two_dirs_is_refused(make_manager, dirs):
    for d in dirs[:2]:
        os.makedirs(os.path.join(d.path, "t-0"))
    with pytest.raises(KafkaStorageError, match="both"):
        make_manager(dirs[:2]).startup()


def test_periodic_work_visits_only_the_logs_that_asked_for_it(make_manager, dirs, make_batch, clock,
                                                             monkeypatch):
    batch_size = len(make_batch(2))
    manager = make_manager([dirs[0]], LogConfig(segment_bytes=batch_size * 2, retention_ms=1_000,
                                                file_delete_delay_ms=1_000))
    manager.startup()
    logs = [manager.get_or_create_log("t", p) for p in range(50)]
    manager.flush_due()                                # new logs: nothing rolled yet
    visited = []
    original = log_module.Log.flush_rolled_segments
    monkeypatch.setattr(log_module.Log, "flush_rolled_segments",
                        lambda self: (visited.append(self.partition), original(self))[1])
    manager.flush_due()
    assert visited == []                               # nobody asked
    append(logs[7], make_batch, batches=5, timestamp_ms=clock.now_ms)
    manager.flush_due()
    assert visited == [7] and logs[7].recovery_point == 8   # the rolled segments, fsynced
    clock.advance(1_002)
    assert manager.run_retention() == 2
    assert manager.purge_deleted() == 0                # not due yet, and still remembered
    clock.advance(1_000)
    assert manager.purge_deleted() == 2
    assert sorted(n for n in os.listdir(logs[7].dir_path) if n.endswith(".log")) == ["00000000000000000008.log"]
