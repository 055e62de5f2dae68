"""What retention deletes (retention.py), and how the Log deletes it."""

import os

import pytest

from kafkactl.cluster.log.config import LogConfig
from kafkactl.cluster.log.errors import OffsetOutOfRangeError


def test_retention_by_time_never_deletes_the_active_segment(open_log, make_batch, clock):
    batch_size = len(make_batch(2))
    log = open_log(LogConfig(segment_bytes=batch_size * 2, retention_ms=10_000,
                             file_delete_delay_ms=5_000))
    now = clock.now_ms
    for i, age in enumerate((30_000, 29_000, 20_000, 19_000, 5_000, 4_000, 3_000)):
        log.append_as_leader(make_batch(2, timestamp_ms=now - age), 0)
    assert log.segment_base_offsets == [0, 4, 8, 12]
    assert log.delete_retained_segments() == 2
    assert log.segment_base_offsets == [8, 12]
    assert log.log_start_offset == 8
    with pytest.raises(OffsetOutOfRangeError):
        log.read(7, 100)
    clock.advance(100_000)  # everything expired: the active segment stays
    assert log.delete_retained_segments() == 1
    assert log.segment_base_offsets == [12]
    assert log.log_start_offset == 12 and log.log_end_offset == 14


def test_retention_by_bytes(open_log, make_batch, fill):
    batch_size = len(make_batch(2))
    log = open_log(LogConfig(segment_bytes=batch_size * 2, retention_bytes=batch_size * 5,
                             retention_ms=-1))
    fill(log, make_batch, 9)  # segments of 2, 2, 2, 2, 1 batches
    assert log.delete_retained_segments() == 2
    assert log.size_bytes == batch_size * 5
    assert log.log_start_offset == 8
    assert log.delete_retained_segments() == 0


def test_log_start_offset_beyond_a_segment_deletes_it(open_log, make_batch, fill):
    batch_size = len(make_batch(2))
    log = open_log(LogConfig(segment_bytes=batch_size * 2, retention_ms=-1))
    fill(log, make_batch, 5)
    log.maybe_increment_log_start_offset(9)
    assert log.delete_retained_segments() == 2
    assert log.segment_base_offsets == [8]
    assert log.log_start_offset == 9


def test_deleted_segments_stay_readable_until_purged(open_log, make_batch, clock, fill, offsets_of):
    batch_size = len(make_batch(2))
    log = open_log(LogConfig(segment_bytes=batch_size * 2, retention_bytes=0, retention_ms=-1,
                             file_delete_delay_ms=60_000))
    fill(log, make_batch, 3)
    in_flight = log.read(0, 1 << 20)
    assert log.delete_retained_segments() == 1
    names = sorted(os.listdir(log.dir_path))
    assert "00000000000000000000.log.deleted" in names
    assert "00000000000000000000.index.deleted" in names
    assert log.purge_deleted() == 0
    clock.advance(60_000)
    assert log.purge_deleted() == 1
    assert not any(n.endswith(".deleted") for n in os.listdir(log.dir_path))
    assert offsets_of(in_flight) == [0, 1, 2, 3]  # the open file outlives its name
    os.fstat(in_flight.region.file.fileno())


@pytest.mark.parametrize("policy, deleted", [("compact", 0), ("compact,delete", 2), ("delete", 2)])
def test_only_the_delete_policy_deletes_by_time_and_size(open_log, make_batch, clock, policy, deleted):
    batch_size = len(make_batch(2))
    log = open_log(LogConfig(segment_bytes=batch_size * 2, retention_ms=10_000, retention_bytes=batch_size * 4,
                             cleanup_policy=policy))
    for age in (30_000, 29_000, 20_000, 19_000, 1_000):
        log.append_as_leader(make_batch(2, timestamp_ms=clock.now_ms - age), 0)
    assert log.delete_retained_segments() == deleted


def test_the_log_start_offset_deletes_segments_of_a_compacted_log_too(open_log, make_batch):
    batch_size = len(make_batch(2))
    log = open_log(LogConfig(segment_bytes=batch_size * 2, cleanup_policy="compact"))
    for _ in range(5):
        log.append_as_leader(make_batch(2), 0)
    log.maybe_increment_log_start_offset(5)
    assert log.delete_retained_segments() == 1
