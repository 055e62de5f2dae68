"""Opening a partition dir (log_loader.py): a new one, and one after a crash: torn tails, bad indexes,
epochs, leftovers."""

import os

import pytest

from kafkactl.cluster.log import segment as segment_module
from kafkactl.cluster.log.config import LogConfig
from kafkactl.cluster.log.errors import LogClosedError
from kafkactl.cluster.log.leader_epoch import EpochEntry
from kafkactl.cluster.protocol.record_batch import HEADER_SIZE, validate_batches

LOG = "00000000000000000000.log"
INDEX = "00000000000000000000.index"
TIME_INDEX = "00000000000000000000.timeindex"


def write_file(path, data):
    with open(path, "wb") as file:
        file.write(data)


def written_log(open_log, make_batch, config=None, batches=10):
    log = open_log(config or LogConfig(index_interval_bytes=1))
    for i in range(batches):
        log.append_as_leader(make_batch(2, timestamp_ms=1_000 + 10 * i), leader_epoch=i // 4)
    log.flush()
    sizes = [len(make_batch(2, timestamp_ms=1_000 + 10 * i)) for i in range(batches)]
    log.close()
    return log.dir_path, sizes


def all_offsets(log):
    collected, offset = [], log.log_start_offset
    while (fetch := log.read(offset, 1 << 20)) is not None:
        for header in validate_batches(fetch.region.read_bytes(), 1 << 30):
            collected.extend(range(header.base_offset, header.next_offset))
        offset = collected[-1] + 1
    return collected


def truncate_file(path, size):
    with open(path, "r+b") as file:
        file.truncate(size)


@pytest.mark.parametrize("clean_shutdown", [True, False])
@pytest.mark.parametrize("extra_bytes", [0, 7, HEADER_SIZE + 3])
def test_torn_active_segment_keeps_whole_batches(open_log, make_batch, clean_shutdown, extra_bytes):
    dir_path, sizes = written_log(open_log, make_batch)
    keep = sum(sizes[:6])
    truncate_file(os.path.join(dir_path, LOG), keep + extra_bytes)  # cut inside batch 6, or at its start
    log = open_log(recovery_point=20, clean_shutdown=clean_shutdown)
    assert log.log_end_offset == 12
    assert os.path.getsize(os.path.join(dir_path, LOG)) == keep
    assert all_offsets(log) == list(range(12))
    assert log.leader_epoch_cache.entries == [EpochEntry(0, 0), EpochEntry(1, 8)]
    assert log.append_as_leader(make_batch(1), 1).first_offset == 12


def test_flipped_byte_in_the_last_batch_drops_it(open_log, make_batch):
    dir_path, sizes = written_log(open_log, make_batch)
    path = os.path.join(dir_path, LOG)
    with open(path, "r+b") as file:
        file.seek(sum(sizes) - 5)
        byte = file.read(1)
        file.seek(-1, os.SEEK_CUR)
        file.write(bytes([byte[0] ^ 0xFF]))
    log = open_log(recovery_point=20, clean_shutdown=True)
    assert log.log_end_offset == 18
    assert all_offsets(log) == list(range(18))
    assert log.offset_for_timestamp(1_090) is None


@pytest.mark.parametrize("damage", ["delete", "garbage", "positions beyond the log",
                                    "time offsets beyond the segment"])
def test_bad_index_files_are_rebuilt(open_log, make_batch, damage):
    batch_size = len(make_batch(2, timestamp_ms=1_000))
    config = LogConfig(segment_bytes=batch_size * 4, index_interval_bytes=1)
    dir_path, _ = written_log(open_log, make_batch, config)
    index, time_index = os.path.join(dir_path, INDEX), os.path.join(dir_path, TIME_INDEX)
    with open(index, "rb") as file:
        original_index = file.read()
    with open(time_index, "rb") as file:
        original_time_index = file.read()
    if damage == "delete":
        os.unlink(index)
        os.unlink(time_index)
    elif damage == "garbage":
        write_file(index, b"\x01\x02\x03")
        write_file(time_index, original_time_index[::-1])
    elif damage == "positions beyond the log":
        write_file(index, original_index + (99).to_bytes(4, "big") + (1 << 30).to_bytes(4, "big"))
    else:
        write_file(time_index, original_time_index + (1 << 40).to_bytes(8, "big") + (99).to_bytes(4, "big"))
    log = open_log(config, recovery_point=20, clean_shutdown=True)  # first segment is not active
    assert log.segment_base_offsets == [0, 8, 16]
    with open(index, "rb") as file:
        assert file.read() == original_index
    with open(time_index, "rb") as file:
        assert file.read() == original_time_index
    assert all_offsets(log) == list(range(20))
    assert log.offset_for_timestamp(1_031) == (7, 1_031)


def test_rebuilt_older_segment_keeps_its_largest_timestamp(open_log, make_batch):
    batch_size = len(make_batch(2, timestamp_ms=1_000))
    config = LogConfig(segment_bytes=batch_size * 4)  # sparse: no index entries at all
    dir_path, _ = written_log(open_log, make_batch, config)
    os.unlink(os.path.join(dir_path, TIME_INDEX))
    open_log(config, recovery_point=20, clean_shutdown=True)  # rebuilds segment 0, then "crashes"
    log = open_log(config, recovery_point=20, clean_shutdown=True)  # trusts the rebuilt files
    assert log.offset_for_timestamp(1_031) == (7, 1_031)


def test_corruption_in_an_older_segment_drops_later_segments(open_log, make_batch):
    batch_size = len(make_batch(2, timestamp_ms=1_000))
    config = LogConfig(segment_bytes=batch_size * 4, index_interval_bytes=1)
    dir_path, _ = written_log(open_log, make_batch, config)
    truncate_file(os.path.join(dir_path, "00000000000000000008.log"), batch_size + 10)
    log = open_log(config, recovery_point=0, clean_shutdown=False)
    assert log.segment_base_offsets == [0, 8]
    assert log.log_end_offset == 10
    assert not os.path.exists(os.path.join(dir_path, "00000000000000000016.log"))
    assert all_offsets(log) == list(range(10))


def test_which_segments_are_scanned(open_log, make_batch, monkeypatch):
    batch_size = len(make_batch(2, timestamp_ms=1_000))
    config = LogConfig(segment_bytes=batch_size * 4, index_interval_bytes=1)
    written_log(open_log, make_batch, config)  # segments 0, 8, 16
    scanned = []
    real = segment_module.scan_log_file
    monkeypatch.setattr(segment_module, "scan_log_file",
                        lambda path, base, cb: scanned.append(base) or real(path, base, cb))

    def reopen(**kwargs):
        scanned.clear()
        open_log(config, **kwargs).close()
        return list(scanned)

    assert reopen(recovery_point=0, clean_shutdown=True) == [16]  # only the active segment
    assert reopen(recovery_point=0, clean_shutdown=False) == [0, 8, 16]
    assert reopen(recovery_point=8, clean_shutdown=False) == [8, 16]
    assert reopen(recovery_point=9, clean_shutdown=False) == [8, 16]
    assert reopen(recovery_point=16, clean_shutdown=False) == [16]


def test_missing_or_bad_epoch_checkpoint_is_rebuilt_from_batches(open_log, make_batch):
    dir_path, _ = written_log(open_log, make_batch)
    path = os.path.join(dir_path, "leader-epoch-checkpoint")
    expected = [EpochEntry(0, 0), EpochEntry(1, 8), EpochEntry(2, 16)]
    os.unlink(path)
    log = open_log(recovery_point=20, clean_shutdown=True)
    assert log.leader_epoch_cache.entries == expected
    log.close()
    write_file(path, b"0\n5\nnonsense\n")
    log = open_log(recovery_point=20, clean_shutdown=True)
    assert log.leader_epoch_cache.entries == expected
    with open(path) as file:
        assert file.read() == "0\n3\n0 0\n1 8\n2 16\n"


def test_leftover_files_are_removed(open_log, make_batch, partition_dir):
    dir_path, _ = written_log(open_log, make_batch)
    for name in ("00000000000000000050.log.deleted", "00000000000000000050.index",
                 "00000000000000000060.timeindex", "leader-epoch-checkpoint.tmp"):
        write_file(os.path.join(dir_path, name), b"x")
    open_log(recovery_point=20, clean_shutdown=True)
    assert sorted(os.listdir(dir_path)) == [INDEX, LOG, TIME_INDEX, "leader-epoch-checkpoint"]


def test_reopen_continues_offsets_without_gaps(open_log, make_batch, fill, offsets_of):
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


def test_a_new_log_is_created_without_fsync_and_made_durable_by_its_first_flush(
        open_log, partition_dir, monkeypatch):
    synced = []
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(os.readlink(f"/proc/self/fd/{fd}")))
    log = open_log()
    assert synced == [] and log.log_end_offset == 0 and os.path.isdir(partition_dir)
    log.flush()
    assert partition_dir in synced and os.path.dirname(partition_dir) in synced


def test_empty_partition_dir_starts_at_the_log_start_offset(open_log):
    log = open_log(log_start_offset=42)
    assert (log.log_start_offset, log.log_end_offset, log.segment_base_offsets) == (42, 42, [42])
