"""What an append must be (log_append.py), through the Log: checks, offsets and epochs, rolls,
and the zero-copy paths."""

import os

import pytest

from kafkactl.cluster.log.config import LogConfig
from kafkactl.cluster.log.errors import OffsetsOutOfOrderError, UnexpectedAppendOffsetError
from kafkactl.cluster.log.leader_epoch import EpochEntry
from kafkactl.cluster.protocol import record_batch
from kafkactl.cluster.protocol.record_batch import (
    CorruptRecordError,
    InvalidRecordError,
    RecordTooLargeError,
    build_batch,
    decode_records,
    validate_batches,
)


def test_append_assigns_contiguous_offsets_and_stamps_the_epoch(open_log, make_batch):
    log = open_log()
    first = log.append_as_leader(make_batch(3, 100), leader_epoch=4)
    second = log.append_as_leader(make_batch(2, 200) + make_batch(1, 300), leader_epoch=4)
    assert (first.first_offset, first.last_offset, first.record_count, first.max_timestamp) == (0, 2, 3, 102)
    assert (second.first_offset, second.last_offset, second.record_count) == (3, 5, 3)
    assert log.log_end_offset == 6 and log.log_start_offset == 0
    fetch = log.read(0, 1 << 20)
    data = fetch.region.read_bytes()
    headers = validate_batches(data, 1 << 20)
    assert [(h.base_offset, h.partition_leader_epoch) for h in headers] == [(0, 4), (3, 4), (5, 4)]
    assert [r.offset for r in decode_records(data[:headers[0].size_bytes])] == [0, 1, 2]
    assert log.leader_epoch_cache.entries == [EpochEntry(4, 0)]
    assert log.size_bytes == len(data)


def test_a_bad_batch_rejects_the_whole_payload(open_log, make_batch, offsets_of):
    log = open_log()
    log.append_as_leader(make_batch(1), 0)
    corrupt = bytearray(make_batch(2))
    corrupt[-1] ^= 1
    with pytest.raises(CorruptRecordError):
        log.append_as_leader(make_batch(1) + bytes(corrupt), 0)
    with pytest.raises(InvalidRecordError):
        log.append_as_leader(b"", 0)
    log.update_config(LogConfig(max_message_bytes=100))
    with pytest.raises(RecordTooLargeError):
        log.append_as_leader(make_batch(5, size=100), 0)
    assert log.log_end_offset == 1
    assert offsets_of(log.read(0, 1 << 20)) == [0]


def test_append_1mib_batch_is_one_crc_pass_and_no_record_work(open_log, monkeypatch):
    log = open_log(LogConfig(max_message_bytes=2 << 20))
    big = build_batch([(None, bytes(1 << 18), None, 5)] * 4)  # 1 MiB
    calls = []
    real = record_batch._crc32c
    monkeypatch.setattr(record_batch, "_crc32c", lambda data: calls.append(len(data)) or real(data))
    monkeypatch.setattr(record_batch, "_decode_record", None)
    info = log.append_as_leader(big, 0)
    assert calls == [len(big) - 21]
    assert info.record_count == 4


def test_roll_by_size(open_log, make_batch, fill):
    batch_size = len(make_batch(2))
    log = open_log(LogConfig(segment_bytes=batch_size * 3))
    fill(log, make_batch, 10)
    assert log.segment_base_offsets == [0, 6, 12, 18]
    names = sorted(os.listdir(log.dir_path))
    assert "00000000000000000006.log" in names and "00000000000000000006.index" in names
    assert all(os.path.getsize(os.path.join(log.dir_path, n)) <= batch_size * 3
               for n in names if n.endswith(".log"))


def test_oversized_append_goes_into_its_own_segment(open_log, make_batch):
    log = open_log(LogConfig(segment_bytes=200))
    log.append_as_leader(make_batch(1), 0)
    log.append_as_leader(make_batch(20, size=50), 0)
    assert log.segment_base_offsets == [0, 1]
    log.append_as_leader(make_batch(1), 0)
    assert log.segment_base_offsets == [0, 1, 21]


def test_roll_by_time_uses_record_timestamps(open_log, make_batch, clock):
    log = open_log(LogConfig(segment_ms=1_000))
    log.append_as_leader(make_batch(1, timestamp_ms=10_000), 0)
    log.append_as_leader(make_batch(1, timestamp_ms=10_900), 0)
    clock.advance(50_000)  # the wall clock does not matter when records carry timestamps
    log.append_as_leader(make_batch(1, timestamp_ms=11_000), 0)
    assert log.segment_base_offsets == [0]
    log.append_as_leader(make_batch(1, timestamp_ms=11_001), 0)
    assert log.segment_base_offsets == [0, 3]


def test_roll_by_time_falls_back_to_creation_time(open_log, make_batch, clock):
    log = open_log(LogConfig(segment_ms=1_000))
    log.append_as_leader(make_batch(1, timestamp_ms=-1), 0)
    clock.advance(1_000)
    log.append_as_leader(make_batch(1, timestamp_ms=-1), 0)
    assert log.segment_base_offsets == [0]
    clock.advance(1)
    log.append_as_leader(make_batch(1, timestamp_ms=-1), 0)
    assert log.segment_base_offsets == [0, 2]


def test_follower_append_keeps_offsets_and_epochs(open_log, make_batch):
    log = open_log()
    data = (make_batch(2, base_offset=0, partition_leader_epoch=1)
            + make_batch(3, base_offset=2, partition_leader_epoch=3))
    info = log.append_as_follower(data + make_batch(1, base_offset=5)[:30])
    assert (info.first_offset, info.last_offset, info.record_count) == (0, 4, 5)
    assert log.log_end_offset == 5
    assert log.leader_epoch_cache.entries == [EpochEntry(1, 0), EpochEntry(3, 2)]
    assert log.append_as_follower(b"") is None
    with pytest.raises(UnexpectedAppendOffsetError):
        log.append_as_follower(make_batch(1, base_offset=4))
    with pytest.raises(OffsetsOutOfOrderError):
        log.append_as_follower(make_batch(2, base_offset=5) + make_batch(1, base_offset=6))
    assert log.log_end_offset == 5


def test_log_append_time(open_log, make_batch, clock):
    log = open_log(LogConfig(message_timestamp_type="LogAppendTime"))
    info = log.append_as_leader(make_batch(2, timestamp_ms=5), 0)
    assert info.log_append_time_ms == clock.now_ms == info.max_timestamp
    data = log.read(0, 1 << 20).region.read_bytes()
    assert {r.timestamp for r in decode_records(data)} == {clock.now_ms}


def test_leader_append_writes_from_a_read_only_view_without_changing_it(open_log, make_batch):
    """Offsets and the epoch are written into the segment, never into the
    request's buffer (a read-only view of a connection's reused frame)."""
    log = open_log()
    log.append_as_leader(make_batch(2), 1)
    payload = make_batch(3, 100) + make_batch(1, 200)
    frame = bytearray(b"head" + payload + b"tail")
    view = memoryview(frame)[4:4 + len(payload)].toreadonly()
    info = log.append_as_leader(view, 7)
    assert bytes(frame) == b"head" + payload + b"tail"
    assert (info.first_offset, info.last_offset) == (2, 5)
    headers = validate_batches(log.read(2, 1 << 20).region.read_bytes(), 1 << 20)   # CRCs still hold
    assert [(h.base_offset, h.partition_leader_epoch) for h in headers] == [(2, 7), (5, 7)]
    assert log.leader_epoch_cache.entries == [EpochEntry(1, 0), EpochEntry(7, 2)]


def test_segment_writes_many_buffers_through_short_writes(open_log, make_batch, monkeypatch, offsets_of):
    """More batches than one writev takes, and writev stopping mid-buffer."""
    from kafkactl.cluster.log import segment as segment_module

    real = os.writev
    calls = []

    def short_writev(fd, buffers):
        calls.append(len(buffers))
        assert len(buffers) <= segment_module.IOV_MAX
        return real(fd, [memoryview(buffers[0])[:7]] if len(calls) % 2 else buffers[:3])

    monkeypatch.setattr(segment_module.os, "writev", short_writev)
    log = open_log()
    batches = [make_batch(1, i) for i in range(700)]    # 1,400 buffers
    log.append_as_leader(b"".join(batches), 0)
    assert len(calls) > 2 and max(calls) == segment_module.IOV_MAX
    assert offsets_of(log.read(0, 1 << 30)) == list(range(700))


def test_follower_append_of_a_corrupt_batch_stores_nothing(open_log, make_batch):
    log = open_log()
    log.append_as_follower(make_batch(2, base_offset=0, partition_leader_epoch=1))
    good = make_batch(1, base_offset=2, partition_leader_epoch=2)
    corrupt = bytearray(make_batch(2, base_offset=3, partition_leader_epoch=2))
    corrupt[-1] ^= 1
    fetched = bytearray(good + bytes(corrupt))
    with pytest.raises(CorruptRecordError):
        log.append_as_follower(memoryview(fetched).toreadonly())
    assert log.log_end_offset == 2 and log.size_bytes == len(make_batch(2))
    assert log.leader_epoch_cache.entries == [EpochEntry(1, 0)]


def test_follower_append_from_a_view_records_the_batches_epochs(open_log, make_batch, partition_dir,
                                                               offsets_of):
    """A follower appends the fetched bytes as they are (a view of the
    fetcher's receive buffer); the epochs in their headers reach the
    leader-epoch checkpoint."""
    log = open_log()
    fetched = bytearray(make_batch(2, base_offset=0, partition_leader_epoch=1)
                        + make_batch(3, base_offset=2, partition_leader_epoch=4))
    log.append_as_follower(memoryview(fetched).toreadonly())
    fetched[:] = bytes(len(fetched))          # the buffer is reused for the next response
    assert offsets_of(log.read(0, 1 << 20)) == [0, 1, 2, 3, 4]
    log.flush()
    with open(os.path.join(partition_dir, "leader-epoch-checkpoint")) as file:
        assert file.read().split("\n")[2:4] == ["1 0", "4 2"]


def test_a_compacted_log_refuses_a_payload_with_a_keyless_record_and_writes_nothing(open_log):
    from kafkactl.cluster.protocol.record_batch import build_batch
    from kafkactl.cluster.protocol.record_validation import RecordValidationError

    log = open_log(LogConfig(cleanup_policy="compact,delete"))
    keyless = build_batch([(b"k", b"v", None, 0), (None, b"v", None, 0)])
    with pytest.raises(RecordValidationError) as caught:
        log.append_as_leader(keyless, 0)
    assert caught.value.error_code == 87
    assert str(caught.value) == "Compacted topic cannot accept message without key in topic partition orders-0."
    assert [e.batch_index for e in caught.value.record_errors] == [1]
    assert log.log_end_offset == 0
    log.append_as_leader(build_batch([(b"k", None, None, 0)]), 0)   # a tombstone has its key
    assert log.log_end_offset == 1
