"""The Log itself (log.py): truncation, flush and the recovery point, leader epochs, a new log."""

import os

import pytest

from kafkactl.cluster.log.config import LogConfig
from kafkactl.cluster.log.errors import OffsetOutOfRangeError
from kafkactl.cluster.log.leader_epoch import EpochEntry


def test_truncate_to(open_log, make_batch, offsets_of):
    batch_size = len(make_batch(2))
    log = open_log(LogConfig(segment_bytes=batch_size * 3, index_interval_bytes=1))
    for epoch in range(6):
        log.append_as_leader(make_batch(2, timestamp_ms=epoch), leader_epoch=epoch)
    assert log.segment_base_offsets == [0, 6]
    assert log.truncate_to(4)
    assert (log.log_end_offset, log.segment_base_offsets) == (4, [0])
    assert log.leader_epoch_cache.entries == [EpochEntry(0, 0), EpochEntry(1, 2)]
    assert offsets_of(log.read(0, 1 << 20)) == [0, 1, 2, 3]
    assert not log.truncate_to(10)
    assert log.offset_for_timestamp(3) is None  # the largest timestamp went with the cut batches
    info = log.append_as_leader(make_batch(1, timestamp_ms=50), leader_epoch=9)
    assert info.first_offset == 4
    assert log.offset_for_timestamp(3) == (4, 50)


def test_truncate_to_a_segment_base(open_log, make_batch, fill):
    batch_size = len(make_batch(2))
    log = open_log(LogConfig(segment_bytes=batch_size * 2))
    fill(log, make_batch, 6)
    assert log.segment_base_offsets == [0, 4, 8]
    log.truncate_to(4)
    assert log.segment_base_offsets == [0, 4]
    assert log.log_end_offset == 4
    assert log.read(4, 100) is None
    assert log.append_as_leader(make_batch(2), 0).first_offset == 4


def test_truncate_fully_and_start_at(open_log, make_batch, fill):
    log = open_log()
    fill(log, make_batch, 3, epoch=2)
    log.truncate_fully_and_start_at(100)
    assert (log.log_start_offset, log.log_end_offset, log.segment_base_offsets) == (100, 100, [100])
    assert log.leader_epoch_cache.entries == []
    assert log.append_as_leader(make_batch(1), 3).first_offset == 100
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 100)


def test_flush_messages_advances_the_recovery_point(open_log, make_batch, fill):
    log = open_log(LogConfig(flush_messages=4))
    fill(log, make_batch, 1)
    assert log.recovery_point == 0
    fill(log, make_batch, 1)
    assert log.recovery_point == 4


def test_epoch_start_assigned_on_becoming_leader(open_log, make_batch, fill):
    log = open_log()
    fill(log, make_batch, 2, epoch=1)
    assert log.maybe_assign_epoch_start_offset(2, log.log_end_offset)
    assert not log.maybe_assign_epoch_start_offset(2, log.log_end_offset)
    fill(log, make_batch, 1, epoch=2)
    assert log.leader_epoch_cache.entries == [EpochEntry(1, 0), EpochEntry(2, 4)]
    assert log.end_offset_for_epoch(1) == (1, 4)
    assert log.end_offset_for_epoch(2) == (2, 6)


def test_a_new_epoch_is_durable_by_the_flush_that_passes_it(open_log, make_batch, partition_dir, fill):
    """Becoming leader writes the epoch checkpoint without fsync; the flush
    that moves the recovery point past the epoch's batches makes it durable,
    and a crash before that flush rebuilds the entry from the batches."""
    log = open_log()
    fill(log, make_batch, 2, epoch=0)
    log.flush()
    durable_point = log.recovery_point
    checkpoint = os.path.join(partition_dir, "leader-epoch-checkpoint")
    with open(checkpoint, "rb") as file:
        on_disk = file.read()                     # what a crash would leave
    assert log.maybe_assign_epoch_start_offset(3, log.log_end_offset)
    assert log.leader_epoch_cache.take_unsynced() == checkpoint
    log.maybe_assign_epoch_start_offset(5, log.log_end_offset)
    fill(log, make_batch, 2, epoch=5)
    log.close()                                   # no flush: a crash
    with open(checkpoint, "wb") as file:
        file.write(on_disk)
    reopened = open_log(recovery_point=durable_point, clean_shutdown=False)
    # Epoch 3 never wrote a batch: its entry may go; epoch 5's comes back from the log.
    assert reopened.leader_epoch_cache.entries == [EpochEntry(0, 0), EpochEntry(5, durable_point)]
    reopened.maybe_assign_epoch_start_offset(6, reopened.log_end_offset)
    reopened.flush()
    assert reopened.leader_epoch_cache.take_unsynced() is None
