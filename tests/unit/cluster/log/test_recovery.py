"""Scans of segment files and checks of index files (recovery.py), over crafted files."""

import os

import pytest

from kafkactl.cluster.log.recovery import check_index_files, scan_log_file
from kafkactl.cluster.protocol.record_batch import HEADER_SIZE

LOG = "00000000000000000000.log"
INDEX = "00000000000000000000.index"
TIME_INDEX = "00000000000000000000.timeindex"


def write_file(path, data):
    with open(path, "wb") as file:
        file.write(data)


def crafted(make_batch, count=5, base_offset=0):
    """`count` two-record batches with consecutive offsets from base_offset."""
    batches = [make_batch(2, timestamp_ms=100 * i, base_offset=base_offset + 2 * i,
                          partition_leader_epoch=i // 2) for i in range(count)]
    return batches


# --- scan_log_file over crafted files -------------------------------------------

def test_scan_accepts_a_whole_file(tmp_path, make_batch):
    path = os.path.join(tmp_path, LOG)
    batches = crafted(make_batch)
    write_file(path, b"".join(batches))
    seen = []
    result = scan_log_file(path, 0, lambda position, header: seen.append((position, header.base_offset)))
    assert result.stop_reason is None and result.truncated_bytes == 0
    assert (result.batch_count, result.next_offset) == (5, 10)
    assert [offset for _, offset in seen] == [0, 2, 4, 6, 8]
    assert seen[1][0] == len(batches[0])


@pytest.mark.parametrize("kept_of_last, reason", [
    (HEADER_SIZE + 3, "runs past the end"),  # mid-batch, after the header
    (HEADER_SIZE - 4, "truncated batch header"),  # inside the header
    (5, "truncated batch header"),  # not even batchLength
])
def test_scan_stops_at_a_torn_tail(tmp_path, make_batch, kept_of_last, reason):
    path = os.path.join(tmp_path, LOG)
    batches = crafted(make_batch)
    whole = b"".join(batches[:4])
    write_file(path, whole + batches[4][:kept_of_last])
    result = scan_log_file(path, 0)
    assert reason in result.stop_reason
    assert (result.valid_bytes, result.next_offset, result.batch_count) == (len(whole), 8, 4)
    assert result.truncated_bytes == kept_of_last


def test_scan_stops_at_crc_mismatch_magic_and_offsets(tmp_path, make_batch):
    path = os.path.join(tmp_path, LOG)
    batches = crafted(make_batch, 3)
    flipped = bytearray(batches[1])
    flipped[-3] ^= 0x40
    write_file(path, batches[0] + bytes(flipped) + batches[2])
    assert "CRC" in scan_log_file(path, 0).stop_reason
    bad_magic = bytearray(batches[1])
    bad_magic[16] = 1
    write_file(path, batches[0] + bytes(bad_magic))
    assert "magic 1" in scan_log_file(path, 0).stop_reason
    write_file(path, batches[1] + batches[0])  # offsets going backwards
    result = scan_log_file(path, 0)
    assert "out of order" in result.stop_reason and result.batch_count == 1
    assert "out of order" in scan_log_file(path, 5).stop_reason  # below the base offset


def test_check_index_files(tmp_path):
    index, time_index = os.path.join(tmp_path, INDEX), os.path.join(tmp_path, TIME_INDEX)
    assert "missing" in check_index_files(index, time_index, 1000)
    write_file(index, (1).to_bytes(4, "big") + (500).to_bytes(4, "big"))
    write_file(time_index, b"")
    assert check_index_files(index, time_index, 1000) is None
    assert "beyond the log" in check_index_files(index, time_index, 400)
    assert "reaches the next segment" in check_index_files(index, time_index, 1000, 1)
    write_file(time_index, (5).to_bytes(8, "big") + (9).to_bytes(4, "big"))
    assert "time index: relative offset 9" in check_index_files(index, time_index, 1000, 9)
    assert check_index_files(index, time_index, 1000, 10) is None
    write_file(time_index, b"\x00" * 13)
    assert "multiple of 12" in check_index_files(index, time_index, 1000)

