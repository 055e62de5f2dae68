import os
import struct
import threading

import pytest

from kafkactl.cluster.log.config import LogConfig
from kafkactl.cluster.log.errors import (
    LogClosedError,
    OffsetOutOfRangeError,
    OffsetsOutOfOrderError,
    UnexpectedAppendOffsetError,
)
from kafkactl.cluster.log.leader_epoch import EpochEntry
from kafkactl.cluster.protocol import record_batch
from kafkactl.cluster.protocol.record_batch import (
    CODEC_GZIP,
    CorruptRecordError,
    InvalidRecordError,
    RecordTooLargeError,
    build_batch,
    decode_records,
    validate_batches,
)


def offsets_of(fetch):
    """Every record offset in a FetchSlice, checking the bytes are whole valid batches."""
    data = fetch.region.read_bytes()
    result = []
    for header in validate_batches(data, 1 << 30, strict_counts=False):
        result.extend(range(header.base_offset, header.next_offset))
    return result


def fill(log, make_batch, batches, records_per_batch=2, timestamp_ms=0, epoch=0):
    infos = []
    for i in range(batches):
        infos.append(log.append_as_leader(
            make_batch(records_per_batch, timestamp_ms + i * records_per_batch), epoch))
    return infos


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


def test_a_bad_batch_rejects_the_whole_payload(open_log, make_batch):
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


def test_roll_by_size(open_log, make_batch):
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


def test_read_at_any_offset_returns_the_batch_holding_it(open_log, make_batch):
    log = open_log(LogConfig(index_interval_bytes=100))
    fill(log, make_batch, 30, records_per_batch=3)
    for offset in (0, 1, 2, 3, 44, 89):
        fetch = log.read(offset, 1)  # min_one_batch: exactly one batch
        assert fetch.first_offset == offset - offset % 3
        assert offsets_of(fetch) == [fetch.first_offset + i for i in range(3)]
        assert fetch.fetch_offset == offset


def test_read_across_segments(open_log, make_batch):
    batch_size = len(make_batch(2))
    log = open_log(LogConfig(segment_bytes=batch_size * 4, index_interval_bytes=1))
    fill(log, make_batch, 12)
    assert log.segment_base_offsets == [0, 8, 16]
    # One segment per read, as Kafka does; the consumer continues from the end.
    assert offsets_of(log.read(0, 1 << 20)) == list(range(8))
    assert offsets_of(log.read(8, 1 << 20)) == list(range(8, 16))
    assert offsets_of(log.read(13, 1 << 20)) == list(range(12, 16))
    assert offsets_of(log.read(23, 1 << 20)) == [22, 23]
    collected, offset = [], 0
    while (fetch := log.read(offset, 3 * batch_size)) is not None:
        got = offsets_of(fetch)
        collected.extend(got)
        offset = got[-1] + 1
    assert collected == list(range(24))


def test_read_at_log_end_is_empty_and_outside_the_log_is_out_of_range(open_log, make_batch):
    log = open_log()
    assert log.read(0, 100) is None  # empty log
    fill(log, make_batch, 2)
    assert log.read(4, 100) is None
    with pytest.raises(OffsetOutOfRangeError) as error:
        log.read(5, 100)
    assert (error.value.error_code, error.value.log_start_offset, error.value.log_end_offset) == (1, 0, 4)
    log.maybe_increment_log_start_offset(2)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(1, 100)


def test_max_bytes_returns_whole_batches(open_log, make_batch):
    log = open_log(LogConfig(index_interval_bytes=150))
    fill(log, make_batch, 20)
    batch_size = len(make_batch(2))
    fetch = log.read(0, batch_size * 5 + batch_size // 2)
    assert fetch.size_bytes == batch_size * 5
    assert offsets_of(fetch) == list(range(10))
    assert log.read(0, batch_size - 1, min_one_batch=False) is None
    assert log.read(0, batch_size - 1, min_one_batch=True).size_bytes == batch_size


def test_max_offset_caps_at_whole_batches(open_log, make_batch):
    log = open_log(LogConfig(index_interval_bytes=1))
    fill(log, make_batch, 10, records_per_batch=3)  # batches 0-2, 3-5, ...
    assert offsets_of(log.read(0, 1 << 20, max_offset=9)) == list(range(9))
    assert offsets_of(log.read(0, 1 << 20, max_offset=10)) == list(range(9))  # 9-11 not whole
    assert log.read(9, 1 << 20, max_offset=10) is None
    assert log.read(10, 1 << 20, max_offset=10) is None
    assert offsets_of(log.read(3, 1 << 20, max_offset=1_000)) == list(range(3, 30))


def test_offset_for_timestamp(open_log, make_batch):
    batch_size = len(make_batch(2))
    log = open_log(LogConfig(segment_bytes=batch_size * 4, index_interval_bytes=1))
    for i in range(10):  # records at timestamps 1000 + 10*i and 1000 + 10*i + 1
        log.append_as_leader(make_batch(2, timestamp_ms=1_000 + 10 * i), 0)
    assert log.offset_for_timestamp(0) == (0, 1_000)
    assert log.offset_for_timestamp(1_001) == (1, 1_001)
    assert log.offset_for_timestamp(1_002) == (2, 1_010)
    assert log.offset_for_timestamp(1_051) == (11, 1_051)
    assert log.offset_for_timestamp(1_091) == (19, 1_091)
    assert log.offset_for_timestamp(1_092) is None
    log.append_as_leader(build_batch([(None, b"a", None, 5_000), (None, b"b", None, 6_000)],
                                     codec=CODEC_GZIP), 0)
    assert log.offset_for_timestamp(5_500) == (21, 6_000)


def test_offset_for_timestamp_with_out_of_order_timestamps(open_log):
    log = open_log(LogConfig(index_interval_bytes=1))
    log.append_as_leader(build_batch([(None, b"a", None, 3_000), (None, b"b", None, 1_000)]), 0)
    log.append_as_leader(build_batch([(None, b"c", None, 2_000)]), 0)
    assert log.offset_for_timestamp(1_500) == (0, 3_000)
    assert log.offset_for_timestamp(3_000) == (0, 3_000)
    assert log.offset_for_timestamp(500) == (0, 3_000)


def test_offset_for_timestamp_in_undecodable_batches_answers_the_batch(open_log, make_batch):
    log = open_log()
    data = bytearray(make_batch(3, timestamp_ms=100))
    struct.pack_into(">h", data, 21, 3)  # claims lz4: its records cannot be read
    struct.pack_into(">I", data, 17, record_batch._crc32c(bytes(data[21:])))
    struct.pack_into(">q", data, 0, 2)   # its offset in the log
    log.append_as_leader(make_batch(2, timestamp_ms=0), 0)
    # A leader refuses it now (record_validation.py); one that did not
    # validate records (before issue 11) may have replicated it here.
    log.append_as_follower(bytes(data))
    assert log.offset_for_timestamp(101) == (2, 102)  # batch base offset, batch max timestamp


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


def test_retention_by_bytes(open_log, make_batch):
    batch_size = len(make_batch(2))
    log = open_log(LogConfig(segment_bytes=batch_size * 2, retention_bytes=batch_size * 5,
                             retention_ms=-1))
    fill(log, make_batch, 9)  # segments of 2, 2, 2, 2, 1 batches
    assert log.delete_retained_segments() == 2
    assert log.size_bytes == batch_size * 5
    assert log.log_start_offset == 8
    assert log.delete_retained_segments() == 0


def test_log_start_offset_beyond_a_segment_deletes_it(open_log, make_batch):
    batch_size = len(make_batch(2))
    log = open_log(LogConfig(segment_bytes=batch_size * 2, retention_ms=-1))
    fill(log, make_batch, 5)
    log.maybe_increment_log_start_offset(9)
    assert log.delete_retained_segments() == 2
    assert log.segment_base_offsets == [8]
    assert log.log_start_offset == 9


def test_deleted_segments_stay_readable_until_purged(open_log, make_batch, clock):
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


def test_truncate_to(open_log, make_batch):
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


def test_truncate_to_a_segment_base(open_log, make_batch):
    batch_size = len(make_batch(2))
    log = open_log(LogConfig(segment_bytes=batch_size * 2))
    fill(log, make_batch, 6)
    assert log.segment_base_offsets == [0, 4, 8]
    log.truncate_to(4)
    assert log.segment_base_offsets == [0, 4]
    assert log.log_end_offset == 4
    assert log.read(4, 100) is None
    assert log.append_as_leader(make_batch(2), 0).first_offset == 4


def test_truncate_fully_and_start_at(open_log, make_batch):
    log = open_log()
    fill(log, make_batch, 3, epoch=2)
    log.truncate_fully_and_start_at(100)
    assert (log.log_start_offset, log.log_end_offset, log.segment_base_offsets) == (100, 100, [100])
    assert log.leader_epoch_cache.entries == []
    assert log.append_as_leader(make_batch(1), 3).first_offset == 100
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 100)


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


def test_flush_messages_advances_the_recovery_point(open_log, make_batch):
    log = open_log(LogConfig(flush_messages=4))
    fill(log, make_batch, 1)
    assert log.recovery_point == 0
    fill(log, make_batch, 1)
    assert log.recovery_point == 4


def test_reopen_continues_offsets_without_gaps(open_log, make_batch):
    batch_size = len(make_batch(2))
    config = LogConfig(segment_bytes=batch_size * 3, index_interval_bytes=1)
    log = open_log(config)
    fill(log, make_batch, 7, epoch=1)
    log.flush()
    log.close()
    with pytest.raises(LogClosedError):
        log.append_as_leader(make_batch(1), 1)
    log = open_log(config, recovery_point=14, clean_shutdown=True)
    assert (log.log_end_offset, log.segment_base_offsets) == (14, [0, 6, 12])
    assert log.append_as_leader(make_batch(2), 2).first_offset == 14
    assert log.leader_epoch_cache.entries == [EpochEntry(1, 0), EpochEntry(2, 14)]
    log.close()
    log = open_log(config, recovery_point=0, clean_shutdown=False)
    assert log.log_end_offset == 16
    collected, offset = [], 0
    while (fetch := log.read(offset, 1 << 20)) is not None:
        collected.extend(offsets_of(fetch))
        offset = collected[-1] + 1
    assert collected == list(range(16))


def test_reads_run_concurrently_with_appends(open_log, make_batch):
    log = open_log(LogConfig(segment_bytes=4_000, index_interval_bytes=200))
    stop = threading.Event()
    problems = []

    def reader():
        while not stop.is_set():
            end = log.log_end_offset
            try:
                fetch = log.read(max(0, end - 7), 2_000)
                if fetch is not None:
                    offsets_of(fetch)
            except OffsetOutOfRangeError:
                pass
            except Exception as error:  # noqa: BLE001 - report anything else
                problems.append(error)

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        fill(log, make_batch, 300)
    finally:
        stop.set()
        thread.join()
    assert problems == []
    assert log.log_end_offset == 600


def test_a_fetch_slice_goes_out_with_sendfile(open_log, make_batch):
    import socket

    log = open_log()
    fill(log, make_batch, 3)
    fetch = log.read(2, 1 << 20)
    sender, receiver = socket.socketpair()
    with sender, receiver:
        region = fetch.region
        sent = os.sendfile(sender.fileno(), region.file.fileno(), region.position, region.length)
        assert sent == region.length
        assert receiver.recv(1 << 16) == region.read_bytes()


def test_offset_of_max_timestamp(open_log, make_batch):
    batch_size = len(make_batch(2))
    log = open_log(LogConfig(segment_bytes=batch_size * 2))
    assert log.offset_of_max_timestamp() is None
    log.append_as_leader(build_batch([(None, b"a", None, 10), (None, b"b", None, 500)]), 0)
    log.append_as_leader(build_batch([(None, b"c", None, 900), (None, b"d", None, 20)]), 0)
    log.append_as_leader(build_batch([(None, b"e", None, 900)]), 0)
    assert log.segment_base_offsets == [0, 4]
    assert log.offset_of_max_timestamp() == (2, 900)


def test_epoch_start_assigned_on_becoming_leader(open_log, make_batch):
    log = open_log()
    fill(log, make_batch, 2, epoch=1)
    assert log.maybe_assign_epoch_start_offset(2, log.log_end_offset)
    assert not log.maybe_assign_epoch_start_offset(2, log.log_end_offset)
    fill(log, make_batch, 1, epoch=2)
    assert log.leader_epoch_cache.entries == [EpochEntry(1, 0), EpochEntry(2, 4)]
    assert log.end_offset_for_epoch(1) == (1, 4)
    assert log.end_offset_for_epoch(2) == (2, 6)


def test_a_new_epoch_is_durable_by_the_flush_that_passes_it(open_log, make_batch, partition_dir):
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


def test_a_new_log_is_created_without_fsync_and_made_durable_by_its_first_flush(
        open_log, partition_dir, monkeypatch):
    synced = []
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(os.readlink(f"/proc/self/fd/{fd}")))
    log = open_log()
    assert synced == [] and log.log_end_offset == 0 and os.path.isdir(partition_dir)
    log.flush()
    assert partition_dir in synced and os.path.dirname(partition_dir) in synced


# --- the zero-copy append paths ---------------------------------------------------

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


def test_segment_writes_many_buffers_through_short_writes(open_log, make_batch, monkeypatch):
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


def test_follower_append_from_a_view_records_the_batches_epochs(open_log, make_batch, partition_dir):
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
