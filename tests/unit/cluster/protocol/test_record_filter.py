"""A batch rewritten with some of its records (record_filter.py): offsets,
producer fields and CRC as Kafka's cleaner leaves them."""

import crc32c
import pytest

from kafkactl.cluster.protocol.record_batch import (
    CODEC_GZIP, CODEC_LZ4, CODEC_NONE, CODEC_SNAPPY, CODEC_ZSTD, CorruptRecordError, build_batch, decode_records,
    parse_header, stamp_log_append_time, validate_batches,
)
from kafkactl.cluster.protocol.record_filter import (
    OffsetMap, batch_records, emptied_batch, filtered_batch, keep_records, records_payload,
)

T = 1_700_000_000_000
CODECS = [CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD]


def crc_ok(batch: bytes) -> bool:
    return crc32c.crc32c(batch[21:]) == parse_header(batch).crc


def latest(**offsets: int) -> OffsetMap:
    found = OffsetMap()
    for key, offset in offsets.items():
        found.put(key.encode(), offset)
    return found


def survivors_of(batch: bytes, offsets: OffsetMap, retain_tombstones: bool = True):
    header = parse_header(batch)
    return header, keep_records(header, records_payload(batch, header), offsets, retain_tombstones)


@pytest.mark.parametrize("codec", CODECS)
def test_survivors_keep_their_offsets_timestamps_and_the_producer_fields(codec):
    entries = [(b"a", b"1", None, T), (b"b", b"2", [("h", b"x")], T + 5), (b"a", None, None, T + 9),
               (b"c", b"3", None, T + 2)]
    batch = build_batch(entries, base_offset=100, codec=codec, partition_leader_epoch=4, producer_id=7,
                        producer_epoch=2, base_sequence=30)
    _, _, records = batch_records(batch)
    assert [(r.key, r.is_tombstone, r.offset) for r in records] == [
        (b"a", False, 100), (b"b", False, 101), (b"a", True, 102), (b"c", False, 103)]
    header, survivors = survivors_of(batch, latest(a=102, c=200))   # a@100 and c@103 have later records
    assert (survivors.records, survivors.kept) == (4, 2)
    rewritten = filtered_batch(header, survivors)
    assert crc_ok(rewritten)
    new = validate_batches(rewritten, 1 << 30, strict_counts=False)[0]   # what a follower checks
    assert (new.base_offset, new.last_offset, new.record_count) == (100, 103, 2)
    assert (new.partition_leader_epoch, new.producer_id, new.producer_epoch, new.base_sequence) == (4, 7, 2, 30)
    assert new.codec == codec and new.base_timestamp == T and new.max_timestamp == T + 9
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in decode_records(rewritten)] == [
        (101, T + 5, b"b", b"2", [("h", b"x")]), (102, T + 9, b"a", None, [])]


def test_all_records_kept_means_the_batch_is_copied_as_it_is():
    batch = build_batch([(b"a", b"1", None, T), (b"b", b"2", None, T + 1)], base_offset=5)
    header, survivors = survivors_of(batch, latest(a=5, b=3))   # no later record of either
    assert (survivors.records, survivors.kept, survivors.data) == (2, 2, None)
    with pytest.raises(ValueError, match="copy it as it is"):   # not rebuilt, let alone emptied
        filtered_batch(header, survivors)


def test_the_max_timestamp_is_the_survivors_and_stays_the_append_time_under_log_append_time():
    batch = build_batch([(b"a", b"1", None, T + 50), (b"b", b"2", None, T)])
    header, survivors = survivors_of(batch, latest(a=1))
    assert parse_header(filtered_batch(header, survivors)).max_timestamp == T
    stamped = bytearray(batch)
    stamp_log_append_time(stamped, [header], T + 999)
    header, survivors = survivors_of(bytes(stamped), latest(a=1))
    kept = filtered_batch(header, survivors)
    assert parse_header(kept).max_timestamp == T + 999 and parse_header(kept).is_log_append_time
    assert crc_ok(kept)


@pytest.mark.parametrize("codec", CODECS)
def test_an_emptied_batch_keeps_its_offset_range_and_sequence(codec):
    batch = build_batch([(b"a", b"1", None, T), (b"a", b"2", None, T + 3)], base_offset=40, codec=codec,
                        producer_id=9, producer_epoch=1, base_sequence=12)
    header, survivors = survivors_of(batch, latest(a=99))
    empty = emptied_batch(header)
    assert (survivors.kept, survivors.data) == (0, b"") and filtered_batch(header, survivors) == empty
    new = validate_batches(empty, 1 << 30, strict_counts=False)[0]
    assert (new.base_offset, new.last_offset, new.record_count, new.codec) == (40, 41, 0, CODEC_NONE)
    assert (new.producer_id, new.producer_epoch, new.base_sequence, new.max_timestamp) == (9, 1, 12, T + 3)
    assert crc_ok(empty) and decode_records(empty) == []


@pytest.mark.parametrize("cut", [62, 64, 70])
def test_a_batch_whose_records_cannot_be_read_is_refused_not_misread(cut):
    batch = bytearray(build_batch([(b"key", b"value", None, T)]))
    batch[61] = 0x7E   # record length 63: past the payload
    with pytest.raises(CorruptRecordError):
        survivors_of(bytes(batch), OffsetMap())
    with pytest.raises(CorruptRecordError):
        batch_records(bytes(batch))
    whole = build_batch([(b"key", b"value", None, T)])
    with pytest.raises(CorruptRecordError):   # the declared batchLength passes the bytes there are
        survivors_of(whole[:cut], OffsetMap())


def test_a_compressed_payload_that_does_not_decompress_is_refused():
    batch = bytearray(build_batch([(b"key", b"value", None, T)], codec=CODEC_LZ4))
    batch[-4:] = b"\xff\xff\xff\xff"
    with pytest.raises(CorruptRecordError, match="does not decompress"):
        survivors_of(bytes(batch), OffsetMap())
