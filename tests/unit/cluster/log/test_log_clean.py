"""One clean of a compacted log (log_clean.py) on real segment files: what
survives, offsets, CRCs, producer state, the high watermark, reads during
the swap, and a crash at every durable step of the swap (segment_swap.py)."""

import os
import struct

import crc32c
import pytest

from kafkactl.cluster.log.config import LogConfig
from kafkactl.cluster.log.log import Log
from kafkactl.cluster.log.log_clean import clean_log
from kafkactl.cluster.log.segment_swap import settle_swaps
from kafkactl.cluster.protocol.record_batch import (
    CODEC_LZ4, HEADER_SIZE, build_batch, decode_records, parse_header, validate_batches,
)
from kafkactl.cluster.protocol.record_filter import split_records

T = 1_000
UNPACED = lambda _size: True   # noqa: E731


def keyed(pairs, **kwargs) -> bytes:
    """A batch of (key, value) records; value None is a tombstone."""
    return build_batch([(k.encode(), None if v is None else v.encode(), None, T) for k, v in pairs], **kwargs)


def compacted(**overrides) -> LogConfig:
    settings = dict(segment_bytes=300, cleanup_policy="compact", file_delete_delay_ms=0)
    settings.update(overrides)
    return LogConfig(**settings)


def contents(log: Log) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every record, read as a consumer does, every batch's frame and CRC checked."""
    found = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        fetched = log.read(offset, 1 << 20)
        if fetched is None:
            break
        data = fetched.region.read_bytes()
        position = 0
        for header in validate_batches(data, 1 << 30, strict_counts=False):
            batch = data[position:position + header.size_bytes]
            found.extend((r.offset, r.key, r.value) for r in decode_records(batch) if r.offset >= offset)
            position += header.size_bytes
            offset = header.next_offset
    return found


def latest_per_key(records):
    latest = {}
    for offset, key, value in records:
        latest[key] = (offset, key, value)
    return sorted(latest.values())


def produce(log: Log, rounds: int = 6, keys: int = 5) -> None:
    """`rounds` batches updating every key, a tombstone for key k0 in the middle, then one more roll."""
    for r in range(rounds):
        pairs = [(f"k{k}", f"v{r}-{k}") for k in range(keys)]
        if r == rounds // 2:
            pairs[0] = ("k0", None)
        log.append_as_leader(keyed(pairs), 0)
    log.append_as_leader(keyed([("last", "x")]), 0)   # the active segment


@pytest.fixture
def log(open_log):
    opened = open_log(compacted())
    produce(opened)
    assert len(opened.segment_base_offsets) > 3
    return opened


def test_a_clean_keeps_the_latest_record_of_each_key_at_its_offset(log):
    before = contents(log)
    result = clean_log(log, 0, log.log_end_offset, T, 1 << 20, UNPACED)
    assert result is not None and result.end_offset == log.active_segment_base_offset
    after = contents(log)
    active = log.active_segment_base_offset
    expected = latest_per_key([r for r in before if r[0] < active]) + [r for r in before if r[0] >= active]
    # k0's tombstone was overwritten by later rounds; every survivor keeps its offset
    assert after == sorted(expected)
    assert log.log_end_offset == before[-1][0] + 1
    assert result.records_kept < result.records_read


def test_a_tombstone_stays_until_a_later_clean_passes_the_delete_horizon(open_log):
    log = open_log(compacted(delete_retention_ms=0))
    for r in range(4):
        log.append_as_leader(keyed([(f"k{k}", f"v{r}") for k in range(5)]), 0)
    log.append_as_leader(keyed([("k0", None)]), 0)                   # deletes k0
    log.append_as_leader(keyed([("k1", "late")] * 5), 0)
    log.append_as_leader(keyed([("k1", "later")]), 0)
    for _ in range(2):                           # the tombstone's segment is no longer the active one
        log.append_as_leader(keyed([("k4", "fill")] * 5), 0)
    first = clean_log(log, 0, log.log_end_offset, T, 1 << 20, UNPACED)
    assert first.end_offset > 20
    keys = [(k, v) for _, k, v in contents(log)]
    assert (b"k0", None) in keys                 # no clean section yet: no horizon
    for r in range(4):                           # more dirty data, then a second clean
        log.append_as_leader(keyed([("k2", f"again{r}")] * 5), 0)
    log.append_as_leader(keyed([("end", "x")]), 0)
    clean_log(log, first.end_offset, log.log_end_offset, T, 1 << 20, UNPACED)
    keys = [k for _, k, _ in contents(log)]
    assert b"k0" not in keys and keys.count(b"k2") == 1


def test_nothing_at_or_above_the_high_watermark_is_touched(log):
    before = contents(log)
    third = log.segment_base_offsets[2]
    result = clean_log(log, 0, third + 1, T, 1 << 20, UNPACED)   # inside the third segment: it waits whole
    assert result.end_offset == third
    after = contents(log)
    assert [r for r in after if r[0] >= third] == [r for r in before if r[0] >= third]
    assert len([r for r in after if r[0] < third]) < len([r for r in before if r[0] < third])


def test_an_idempotent_producers_last_batch_stays_empty_so_a_retry_is_still_caught(open_log, partition_dir, clock):
    log = open_log(compacted())
    for sequence in range(3):
        log.append_as_leader(keyed([("p", f"v{sequence}")], producer_id=7, producer_epoch=0, base_sequence=sequence), 0)
    for r in range(6):
        log.append_as_leader(keyed([("p", f"other{r}")] * 4), 0)   # p's records all superseded
    log.append_as_leader(keyed([("end", "x")]), 0)
    clean_log(log, 0, log.log_end_offset, T, 1 << 20, UNPACED)
    reopened = Log.open(partition_dir, "orders", 0, compacted(), clock, 0, False)
    try:
        retry = keyed([("p", "v2")], producer_id=7, producer_epoch=0, base_sequence=2)
        info = reopened.append_as_leader(retry, 0)
        assert (info.first_offset, info.record_count) == (2, 0)           # a duplicate, answered with its offset
        assert reopened.log_end_offset == log.log_end_offset
    finally:
        reopened.close()


def test_a_fetch_that_started_before_the_swap_reads_the_old_bytes(log):
    fetched = log.read(0, 1 << 20)
    before = fetched.region.read_bytes()
    clean_log(log, 0, log.log_end_offset, T, 1 << 20, UNPACED)
    assert fetched.region.read_bytes() == before
    assert any(name.endswith(".deleted") for name in os.listdir(log.dir_path))   # until purged
    log.purge_deleted()
    assert not any(name.endswith(".deleted") for name in os.listdir(log.dir_path))
    assert fetched.region.read_bytes() == before


def test_a_truncation_during_the_clean_refuses_the_swap_and_leaves_no_file(log):
    def truncate_first(_size, done=[]):
        if not done:
            done.append(log.truncate_to(log.log_end_offset - 1))
        return True
    before = contents(log)
    assert clean_log(log, 0, log.log_end_offset, T, 1 << 20, truncate_first) is None
    assert contents(log) == before[:-1]
    assert not [n for n in os.listdir(log.dir_path) if n.endswith((".cleaned", ".swap"))]


def test_a_stop_request_ends_the_clean_and_changes_nothing(log):
    before = contents(log)
    assert clean_log(log, 0, log.log_end_offset, T, 1 << 20, lambda _size: False) is None
    assert contents(log) == before


def test_a_small_offset_map_ends_the_clean_early_and_the_next_goes_on(log):
    first = clean_log(log, 0, log.log_end_offset, T, 1, UNPACED)
    assert first.end_offset < log.active_segment_base_offset
    second = clean_log(log, first.end_offset, log.log_end_offset, T, 1 << 20, UNPACED)
    assert second.end_offset == log.active_segment_base_offset


@pytest.mark.parametrize("memory_bytes", [0, 1 << 20])
def test_a_compressed_batch_is_decompressed_once_per_clean_when_its_payload_fits_in_memory(
        open_log, monkeypatch, memory_bytes):
    from kafkactl.cluster.protocol import record_filter
    log = open_log(compacted(segment_bytes=400))
    for r in range(6):
        log.append_as_leader(keyed([(f"k{k}", f"v{r}-{k}") for k in range(5)], codec=CODEC_LZ4), 0)
    log.append_as_leader(keyed([("last", "x")]), 0)
    before = contents(log)
    calls = []
    real = record_filter.decompress
    monkeypatch.setattr(record_filter, "decompress", lambda codec, data: calls.append(len(data)) or real(codec, data))
    result = clean_log(log, 0, log.log_end_offset, T, 1 << 20, UNPACED, memory_bytes=memory_bytes)
    active = log.active_segment_base_offset
    assert contents(log) == sorted(latest_per_key([r for r in before if r[0] < active])
                                   + [r for r in before if r[0] >= active])
    below = len([r for r in before if r[0] < active]) // 5   # compressed batches below the active segment
    assert below >= 4 and result.records_read == 5 * below
    assert len(calls) == (below if memory_bytes else 2 * below)   # the map's pass, and the copy's unless kept


def test_a_batch_whose_records_cannot_be_read_is_copied_as_it_is_and_maps_no_key(open_log):
    log = open_log(compacted())
    log.append_as_leader(keyed([("k9", "old")]), 0)
    damaged = bytearray(keyed([("k9", "new"), ("k1", "x")]))
    second = split_records(bytes(damaged[HEADER_SIZE:]), 2, 0, 1)[1]
    damaged[HEADER_SIZE + second.start] = 0x7E   # record 1's length (63) runs past the payload
    struct.pack_into(">I", damaged, 17, crc32c.crc32c(bytes(damaged[21:])))   # stored as a leader would: CRC valid
    log.append_as_leader(bytes(damaged), 0, [parse_header(damaged)])
    for r in range(4):
        log.append_as_leader(keyed([(f"f{r}", "v")] * 4), 0)
    log.append_as_leader(keyed([("last", "x")]), 0)
    stored = log.read(0, 1 << 20).region.read_bytes()
    clean_log(log, 0, log.log_end_offset, T, 1 << 20, UNPACED)
    data = log.read(0, 1 << 20).region.read_bytes()
    size = validate_batches(data, 1 << 30, strict_counts=False)[0].size_bytes
    assert [(r.offset, r.key, r.value) for r in decode_records(data[:size])] == [(0, b"k9", b"old")]  # k9 unmapped
    assert data[size:size + len(damaged)] == stored[size:size + len(damaged)]


# --- a crash at each durable step ---------------------------------------------------------

class Crash(Exception):
    pass


def crash_at(step_name):
    def fault(step):
        if step == step_name:
            raise Crash(step)
    return fault


def abandon(log: Log) -> None:
    """The process died: nothing of the Log object runs any more (no close, no flush)."""
    log._closed = True


@pytest.mark.parametrize("step", ["swap", "retire:first", "retire:second", "retire", "install"])
def test_a_crash_at_any_step_leaves_the_old_segments_or_the_new_one(partition_dir, clock, step):
    log = Log.open(partition_dir, "orders", 0, compacted(), clock, 0, True)
    produce(log, rounds=4)
    bases = log.segment_base_offsets
    assert len(bases) >= 3
    before = contents(log)
    clean_view = latest_per_key([r for r in before if r[0] < bases[-1]]) + [r for r in before if r[0] >= bases[-1]]
    log.update_config(compacted(segment_bytes=10_000))   # every segment below the active one: one group
    named = {"retire:first": f"retire:{bases[0]}", "retire:second": f"retire:{bases[1]}"}.get(step, step)
    with pytest.raises(Crash):
        clean_log(log, 0, log.log_end_offset, T, 1 << 20, UNPACED, fault=crash_at(named))
    abandon(log)
    reopened = Log.open(partition_dir, "orders", 0, compacted(), clock, 0, False)
    try:
        after = contents(reopened)
        offsets = [r[0] for r in after]
        assert offsets == sorted(set(offsets))                      # no duplicate
        assert after == sorted(clean_view)                          # step 1 was durable: all new
        assert not [n for n in os.listdir(partition_dir) if n.endswith((".cleaned", ".swap", ".deleted"))]
    finally:
        reopened.close()


def test_a_crash_inside_step_one_keeps_the_old_segments(partition_dir, clock):
    log = Log.open(partition_dir, "orders", 0, compacted(), clock, 0, True)
    produce(log, rounds=4)
    log.update_config(compacted(segment_bytes=10_000))
    before = contents(log)
    with pytest.raises(Crash):
        clean_log(log, 0, log.log_end_offset, T, 1 << 20, UNPACED, fault=crash_at("swap"))
    abandon(log)
    # the index files had become `.swap`, the `.log` not yet
    swap_log = next(n for n in os.listdir(partition_dir) if n.endswith(".log.swap"))
    os.rename(os.path.join(partition_dir, swap_log), os.path.join(partition_dir, swap_log[:-5] + ".cleaned"))
    reopened = Log.open(partition_dir, "orders", 0, compacted(), clock, 0, False)
    try:
        assert contents(reopened) == before
        assert not [n for n in os.listdir(partition_dir) if n.endswith((".cleaned", ".swap"))]
    finally:
        reopened.close()


def test_settling_is_idempotent_on_a_dir_without_swaps(tmp_path):
    (tmp_path / "00000000000000000000.log").write_bytes(b"")
    settle_swaps(str(tmp_path))
    assert os.listdir(tmp_path) == ["00000000000000000000.log"]
