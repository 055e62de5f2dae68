import os
import struct
from array import array

import pytest

from kafkactl.cluster.invariant import InvariantViolation
from kafkactl.cluster.log.errors import CorruptIndexError
from kafkactl.cluster.log.index import OffsetIndex, OffsetPosition, check_offset_entries, floor_entry
from kafkactl.cluster.log.time_index import TimeIndex, TimestampOffset, check_time_entries


def test_floor_entry():
    keys = array("i", [3, 8, 20])
    assert [floor_entry(keys, t) for t in (0, 3, 7, 8, 19, 20, 99)] == [-1, 0, 0, 1, 1, 2, 2]
    assert floor_entry(keys, 99, count=1) == 0


def test_offset_index_lookup_and_file_format(tmp_path):
    path = os.path.join(tmp_path, "00000000000000000100.index")
    index = OffsetIndex(path, 100, 1024)
    for offset, position in ((110, 4096), (125, 8200), (140, 12_500)):
        index.append(offset, position)
    index.flush()
    assert index.lookup(99) == OffsetPosition(100, 0)  # before any entry: segment start
    assert index.lookup(110) == OffsetPosition(110, 4096)
    assert index.lookup(124) == OffsetPosition(110, 4096)
    assert index.lookup(10_000) == OffsetPosition(140, 12_500)
    with open(path, "rb") as file:
        assert file.read() == struct.pack(">iiiiii", 10, 4096, 25, 8200, 40, 12_500)
    index.release()
    loaded = OffsetIndex.load(path, 100, 1024)
    assert loaded.entries() == index.entries()
    loaded.sanity_check(log_size_bytes=20_000)
    with pytest.raises(CorruptIndexError, match="beyond the log"):
        loaded.sanity_check(log_size_bytes=12_500)
    loaded.release()


def test_offset_index_rejects_non_increasing_entries(tmp_path):
    index = OffsetIndex(None, 0, 1024)
    index.append(5, 100)
    with pytest.raises(InvariantViolation):
        index.append(5, 200)
    with pytest.raises(InvariantViolation):
        index.append(6, 100)


def test_offset_index_truncation_and_jump(tmp_path):
    index = OffsetIndex(os.path.join(tmp_path, "x.index"), 0, 1024)
    for i in range(1, 6):
        index.append(i * 10, i * 1000)
    assert index.last_entry_within(max_position=3500, max_offset=1_000) == OffsetPosition(30, 3000)
    assert index.last_entry_within(max_position=9999, max_offset=21) == OffsetPosition(20, 2000)
    assert index.last_entry_within(max_position=999, max_offset=1_000) is None
    index.truncate_to_position(3000)
    assert [e.offset for e in index.entries()] == [10, 20]
    index.flush()
    assert os.path.getsize(index.path) == 16
    index.release()


def test_offset_index_fullness():
    index = OffsetIndex(None, 0, 16)
    index.append(1, 10)
    assert not index.is_full
    index.append(2, 20)
    assert index.is_full


def test_check_offset_entries():
    good = (array("i", [1, 2]), array("i", [10, 20]))
    assert check_offset_entries(*good, log_size_bytes=21) is None
    assert "offset" in check_offset_entries(array("i", [2, 2]), array("i", [10, 20]), 100)
    assert "position" in check_offset_entries(array("i", [1, 2]), array("i", [20, 20]), 100)


def test_time_index_appends_only_when_timestamp_grows(tmp_path):
    path = os.path.join(tmp_path, "00000000000000000050.timeindex")
    index = TimeIndex(path, 50, 1024)
    assert index.maybe_append(1_000, 55)
    assert not index.maybe_append(1_000, 60)
    assert not index.maybe_append(900, 61)
    assert index.maybe_append(2_000, 70)
    assert index.lookup(999) == TimestampOffset(-1, 50)
    assert index.lookup(1_500) == TimestampOffset(1_000, 55)
    assert index.lookup(5_000) == TimestampOffset(2_000, 70)
    assert index.last_entry() == TimestampOffset(2_000, 70)
    index.flush()
    with open(path, "rb") as file:
        assert file.read() == struct.pack(">qiqi", 1_000, 5, 2_000, 20)
    index.truncate_to_offset(70)
    assert index.entries() == [TimestampOffset(1_000, 55)]
    index.release()
    assert TimeIndex.load(path, 50, 1024).entries() == [TimestampOffset(1_000, 55)]


def test_check_time_entries():
    assert check_time_entries(array("q", [1, 2]), array("i", [0, 0])) is None
    assert "timestamp" in check_time_entries(array("q", [2, 2]), array("i", [0, 1]))
    assert "offset" in check_time_entries(array("q", [1, 2]), array("i", [3, 1]))


def test_index_files_with_partial_entries_are_corrupt(tmp_path):
    path = os.path.join(tmp_path, "bad.index")
    with open(path, "wb") as file:
        file.write(b"\x00" * 9)
    with pytest.raises(CorruptIndexError):
        OffsetIndex.load(path, 0, 1024)
    with pytest.raises(CorruptIndexError):
        TimeIndex.load(path, 0, 1024)
