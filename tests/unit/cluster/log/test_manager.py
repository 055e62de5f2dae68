"""The LogManager: which log lives where, checkpoints per dir, deletion, config changes."""

import os

import pytest

from kafkactl.cluster.log.checkpoint import OffsetCheckpointFile
from kafkactl.cluster.log.config import LogConfig
from kafkactl.cluster.log.errors import KafkaStorageError


def test_recovery_points_checkpoint_drives_recovery(make_manager, dirs, make_batch, monkeypatch, append):
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


def test_delete_log_renames_and_purges_after_the_delay(make_manager, dirs, make_batch, clock, append):
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


def test_retention_flush_and_config_updates(make_manager, dirs, make_batch, clock, append):
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


def test_the_same_partition_in_two_dirs_is_refused(make_manager, dirs):
    for d in dirs[:2]:
        os.makedirs(os.path.join(d.path, "t-0"))
    with pytest.raises(KafkaStorageError, match="both"):
        make_manager(dirs[:2]).startup()
