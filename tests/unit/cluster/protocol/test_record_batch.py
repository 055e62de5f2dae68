import struct

import pytest

from kafkactl.cluster.protocol import record_batch
from kafkactl.cluster.protocol.record_batch import (
    CODEC_GZIP,
    CODEC_NONE,
    CODEC_ZSTD,
    HEADER_SIZE,
    CorruptRecordError,
    InvalidRecordError,
    RecordTooLargeError,
    UnsupportedCompressionTypeError,
    assign_offsets,
    build_batch,
    codec,
    decode_records,
    parse_header,
    rebased_headers,
    stamp_log_append_time,
    validate_batches,
)

MAX = 1 << 20


def batch(count=3, timestamp=1_000, **kwargs):
    records = [(b"k%d" % i, b"value-%d" % i, [("h", b"x")], timestamp + i) for i in range(count)]
    return build_batch(records, **kwargs)


def test_header_fields_of_a_built_batch():
    data = batch(3, timestamp=5_000, base_offset=7, partition_leader_epoch=2, producer_id=9,
                 producer_epoch=1, base_sequence=4)
    header = parse_header(data)
    assert header.base_offset == 7
    assert header.size_bytes == len(data)
    assert header.partition_leader_epoch == 2
    assert header.magic == 2
    assert header.last_offset_delta == 2 and header.last_offset == 9 and header.next_offset == 10
    assert header.base_timestamp == 5_000 and header.max_timestamp == 5_002
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (9, 1, 4)
    assert header.record_count == 3
    assert header.codec == CODEC_NONE == codec(header.attributes)


def test_records_round_trip_with_null_key_and_headers():
    records = [(None, b"v", [("a", None), ("b", b"2")], 10), (b"k", None, None, 7)]
    decoded = decode_records(build_batch(records, base_offset=100))
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in decoded] == [
        (100, 10, None, b"v", [("a", None), ("b", b"2")]),
        (101, 7, b"k", None, []),
    ]


def test_gzip_batch_validates_and_decodes():
    data = batch(5, codec=CODEC_GZIP)
    [header] = validate_batches(data, MAX)
    assert header.codec == CODEC_GZIP
    assert [r.value for r in decode_records(data)] == [b"value-%d" % i for i in range(5)]


def test_valid_payload_of_several_batches():
    data = batch(2) + batch(1) + batch(4)
    headers = validate_batches(data, MAX)
    assert [h.record_count for h in headers] == [2, 1, 4]
    assert sum(h.size_bytes for h in headers) == len(data)
    assert validate_batches(b"", MAX) == []


def test_flipped_byte_fails_the_crc():
    data = bytearray(batch(3))
    data[-1] ^= 0x01
    with pytest.raises(CorruptRecordError, match="CRC") as error:
        validate_batches(bytes(data), MAX)
    assert error.value.error_code == 2


def test_flipped_byte_in_second_batch_names_it():
    second = bytearray(batch(2))
    second[HEADER_SIZE + 2] ^= 0xFF
    with pytest.raises(CorruptRecordError) as error:
        validate_batches(batch(1) + bytes(second), MAX)
    assert error.value.batch_index == 1


@pytest.mark.parametrize("cut", [1, 10, HEADER_SIZE - 1, HEADER_SIZE + 3])
def test_truncated_batch_is_corrupt(cut):
    data = batch(3)
    with pytest.raises(CorruptRecordError):
        validate_batches(data[: len(data) - cut] if cut > 10 else data[:cut], MAX)


def test_length_that_lies_is_corrupt():
    data = bytearray(batch(3))
    struct.pack_into(">i", data, 8, len(data))  # claims 12 bytes more than present
    with pytest.raises(CorruptRecordError, match="remain"):
        validate_batches(bytes(data), MAX)
    struct.pack_into(">i", data, 8, 10)  # shorter than a header
    with pytest.raises(CorruptRecordError, match="minimum"):
        validate_batches(bytes(data), MAX)


def test_magic_1_is_an_invalid_record():
    data = bytearray(batch(1))
    data[16] = 1
    with pytest.raises(InvalidRecordError, match="magic") as error:
        validate_batches(bytes(data), MAX)
    assert error.value.error_code == 87


def test_too_large_batch():
    data = batch(3)
    with pytest.raises(RecordTooLargeError) as error:
        validate_batches(data, len(data) - 1)
    assert error.value.error_code == 10
    assert validate_batches(data, len(data))


def _rewrite(data: bytes, fmt: str, position: int, value: int) -> bytes:
    """Patch a header field inside the CRC and fix the CRC, as a buggy client would send it."""
    patched = bytearray(data)
    struct.pack_into(fmt, patched, position, value)
    struct.pack_into(">I", patched, 17, record_batch._crc32c(bytes(patched[21:])))
    return bytes(patched)


def test_inconsistent_counts_are_invalid():
    data = batch(3)
    with pytest.raises(InvalidRecordError, match="lastOffsetDelta"):
        validate_batches(_rewrite(data, ">i", 23, 5), MAX)
    with pytest.raises(InvalidRecordError, match="positive"):
        validate_batches(_rewrite(data, ">i", 57, 0), MAX)
    with pytest.raises(InvalidRecordError):
        validate_batches(_rewrite(data, ">i", 57, -1), MAX, strict_counts=False)
    # A compacted batch (fewer records than its offset range) is fine for followers.
    assert validate_batches(_rewrite(data, ">i", 23, 5), MAX, strict_counts=False)


def test_unknown_codec_is_rejected():
    data = _rewrite(batch(1), ">h", 21, CODEC_ZSTD + 2)
    with pytest.raises(UnsupportedCompressionTypeError) as error:
        validate_batches(data, MAX)
    assert error.value.error_code == 76


def test_partial_tail_is_dropped_only_when_allowed():
    data = batch(2) + batch(3)[:40]
    with pytest.raises(CorruptRecordError):
        validate_batches(data, MAX)
    assert len(validate_batches(data, MAX, allow_partial_tail=True)) == 1


def test_assign_offsets_rewrites_offsets_and_epoch_without_touching_the_crc():
    data = bytearray(batch(2) + batch(3) + batch(1))
    headers = validate_batches(data, MAX)
    next_offset = assign_offsets(data, headers, 1_000, 7)
    assert next_offset == 1_006
    rewritten = validate_batches(data, MAX)  # CRC still valid
    assert [h.base_offset for h in rewritten] == [1_000, 1_002, 1_005]
    assert {h.partition_leader_epoch for h in rewritten} == {7}
    assert rebased_headers(headers, 1_000, 7) == rewritten
    assert [r.offset for r in decode_records(data[headers[0].size_bytes:])][:3] == [1_002, 1_003, 1_004]


def test_log_append_time_rewrites_timestamp_and_crc():
    data = bytearray(batch(3, timestamp=10))
    headers = validate_batches(data, MAX)
    stamped = stamp_log_append_time(data, headers, 99_000)
    [header] = validate_batches(data, MAX)
    assert header == stamped[0]
    assert header.is_log_append_time and header.max_timestamp == 99_000
    assert {r.timestamp for r in decode_records(data)} == {99_000}


def test_one_crc_pass_per_batch_and_no_record_parsing(monkeypatch):
    big = build_batch([(None, bytes(1 << 20), None, 0)])
    small = batch(2)
    calls = []
    real = record_batch._crc32c
    monkeypatch.setattr(record_batch, "_crc32c", lambda data: calls.append(len(data)) or real(data))
    monkeypatch.setattr(record_batch, "_decode_record", None)  # any record parsing would fail
    validate_batches(big + small, 2 << 20)
    assert calls == [len(big) - 21, len(small) - 21]
