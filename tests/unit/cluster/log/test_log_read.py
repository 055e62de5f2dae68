"""Reads of a log (log_read.py): fetches of whole batches, lookups by timestamp, reads during appends."""

import os
import struct
import threading

import pytest

from kafkactl.cluster.log.config import LogConfig
from kafkactl.cluster.log.errors import OffsetOutOfRangeError
from kafkactl.cluster.protocol import record_batch
from kafkactl.cluster.protocol.record_batch import CODEC_GZIP, build_batch


def test_read_at_any_offset_returns_the_batch_holding_it(open_log, make_batch, fill, offsets_of):
    log = open_log(LogConfig(index_interval_bytes=100))
    fill(log, make_batch, 30, records_per_batch=3)
    for offset in (0, 1, 2, 3, 44, 89):
        fetch = log.read(offset, 1)  # min_one_batch: exactly one batch
        assert fetch.first_offset == offset - offset % 3
        assert offsets_of(fetch) == [fetch.first_offset + i for i in range(3)]
        assert fetch.fetch_offset == offset


def test_read_across_segments(open_log, make_batch, fill, offsets_of):
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


def test_read_at_log_end_is_empty_and_outside_the_log_is_out_of_range(open_log, make_batch, fill):
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


def test_max_bytes_returns_whole_batches(open_log, make_batch, fill, offsets_of):
    log = open_log(LogConfig(index_interval_bytes=150))
    fill(log, make_batch, 20)
    batch_size = len(make_batch(2))
    fetch = log.read(0, batch_size * 5 + batch_size // 2)
    assert fetch.size_bytes == batch_size * 5
    assert offsets_of(fetch) == list(range(10))
    assert log.read(0, batch_size - 1, min_one_batch=False) is None
    assert log.read(0, batch_size - 1, min_one_batch=True).size_bytes == batch_size


def test_max_offset_caps_at_whole_batches(open_log, make_batch, fill, offsets_of):
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


def test_reads_run_concurrently_with_appends(open_log, make_batch, fill, offsets_of):
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


def test_a_fetch_slice_goes_out_with_sendfile(open_log, make_batch, fill):
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
