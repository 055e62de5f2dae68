"""The leader's record checks (record_validation.py) on literal batch edits.

Every bad batch here has a valid CRC, recomputed after the edit, so only its
contents are wrong: these are the batches a fuzzer got acknowledged before
issue 11 (the first group), then the rules one by one.

Every record pass here runs twice, the C walk and the Python reference, which
must agree (the fixture `both_walkers`); test_record_check_native.py has the rest.
"""

import gzip
import struct

import crc32c
import pytest

from kafkactl.cluster.protocol import compression, record_validation
from kafkactl.cluster.protocol.record_batch import (
    CODEC_GZIP,
    CODEC_LZ4,
    CODEC_NONE,
    CODEC_SNAPPY,
    CODEC_ZSTD,
    HEADER_SIZE,
    build_batch,
    validate_batches,
)
from kafkactl.cluster.protocol.record_validation import (
    INVALID_RECORD,
    INVALID_TIMESTAMP,
    INVALID_TXN_STATE,
    MAX_UNCOMPRESSED_BYTES,
    RecordValidationError,
    count_batches,
    uncompressed_records,
    validate_produce_records,
)


CODECS = (CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD)
_HEADER = struct.Struct(">qiibIhiqqqhii")
BASE_TIMESTAMP = 1_700_000_000_000


def outcome(check, data, record_count: int, batch_index: int, compacted_topic_partition: str | None = None):
    """What a record pass says: None, or the refusal's code, message and record errors."""
    try:
        check(data, record_count, batch_index, compacted_topic_partition)
    except RecordValidationError as error:
        return error.error_code, str(error), error.record_errors
    return None


@pytest.fixture(autouse=True)
def both_walkers(monkeypatch):
    """The production check_records (the C walk) agrees with check_records_reference on every call."""
    native = record_validation.check_records
    calls = []

    def both(data, record_count, batch_index, compacted_topic_partition=None):
        args = (data, record_count, batch_index, compacted_topic_partition)
        expected = outcome(record_validation.check_records_reference, *args)
        assert outcome(native, *args) == expected
        calls.append(expected)
        native(*args)

    monkeypatch.setattr(record_validation, "check_records", both)
    yield calls


# --- building blocks: records written field by field ---------------------------

def varint(value: int) -> bytes:
    unsigned = (value << 1) ^ (value >> 63)
    out = bytearray()
    while unsigned >= 0x80:
        out.append((unsigned & 0x7F) | 0x80)
        unsigned >>= 7
    out.append(unsigned)
    return bytes(out)


def field(value: bytes | None) -> bytes:
    return varint(-1) if value is None else varint(len(value)) + value


def body(offset_delta: int, key: bytes | None = b"k", value: bytes | None = b"value",
         headers=(), timestamp_delta: int = 0) -> bytes:
    """A record's fields after its length varint."""
    out = b"\x00" + varint(timestamp_delta) + varint(offset_delta) + field(key) + field(value)
    out += varint(len(headers))
    for header_key, header_value in headers:
        out += field(header_key) + field(header_value)
    return out


def record(offset_delta: int, **kwargs) -> bytes:
    fields = body(offset_delta, **kwargs)
    return varint(len(fields)) + fields


def raw_batch(payload: bytes, count: int, *, codec: int = CODEC_NONE, attributes: int = 0,
              last_offset_delta: int | None = None, producer_id: int = -1, base_sequence: int = -1,
              max_timestamp: int = BASE_TIMESTAMP) -> bytes:
    """A batch around `payload` as given (compressed if `codec`), CRC correct."""
    if codec != CODEC_NONE:
        payload = compression.compress(codec, payload)
    header = bytearray(_HEADER.pack(
        0, HEADER_SIZE - 12 + len(payload), -1, 2, 0, codec | attributes,
        count - 1 if last_offset_delta is None else last_offset_delta, BASE_TIMESTAMP, max_timestamp,
        producer_id, 0 if producer_id >= 0 else -1, base_sequence, count))
    data = header + payload
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    return bytes(data)


def records(count: int, **kwargs) -> bytes:
    return b"".join(record(i, **kwargs) for i in range(count))


def refusal(data: bytes, log_append_time_topic: bool = False) -> RecordValidationError:
    """The leader's refusal of a batch whose frame and CRC are fine."""
    headers = validate_batches(data, 1 << 30)   # the CRC matches: only the contents are wrong
    with pytest.raises(RecordValidationError) as caught:
        validate_produce_records(data, headers, log_append_time_topic)
    return caught.value


def accept(data: bytes, log_append_time_topic: bool = False) -> None:
    validate_produce_records(data, validate_batches(data, 1 << 30), log_append_time_topic)


def assert_invalid_record(data: bytes, *words: str, record_index: int | None = None) -> None:
    error = refusal(data)
    assert error.error_code == INVALID_RECORD == 87
    for word in words:
        assert word in str(error), str(error)
    if record_index is not None:
        assert [e.batch_index for e in error.record_errors] == [record_index]
        assert str(error) in error.record_errors[0].message


# --- valid batches of every codec -------------------------------------------------

@pytest.mark.parametrize("codec", CODECS)
def test_a_valid_batch_of_every_codec_is_accepted(codec):
    entries = [(b"key-%d" % i if i % 3 else None, b"v" * (i * 37 % 300) if i % 5 else None,
                [("h1", b"x"), ("h2", None)] if i % 2 else None, BASE_TIMESTAMP + i * 1000)
               for i in range(200)]   # offset deltas past 63 and 8191 would take 2 and 3 bytes
    accept(build_batch(entries, codec=codec))


def test_three_byte_offset_deltas_and_long_fields_are_accepted():
    data = raw_batch(records(9000, key=None, value=b"y" * 9000, timestamp_delta=-(1 << 40)), 9000)
    accept(data)


def test_several_valid_batches_are_checked_one_by_one():
    first = build_batch([(b"a", b"1", None, BASE_TIMESTAMP)])
    second = raw_batch(records(2), 1)   # 2 records, 1 declared
    error = refusal(first + second)
    assert "batch 1" in str(error)


# --- the reproducers of issue 11 ----------------------------------------------------

@pytest.mark.parametrize("declared", [1_000, 2**31 - 1])
def test_one_record_declaring_many(declared):
    data = raw_batch(records(1), declared)
    assert_invalid_record(data, f"declares {declared} records", "ends after 1", record_index=1)


def test_three_records_declaring_one():
    assert_invalid_record(raw_batch(records(3), 1), "bytes after the last of its 1 records")


def test_record_length_pointing_past_the_batch():
    fields = body(0)
    data = raw_batch(varint(len(fields) + 50) + fields, 1)
    assert_invalid_record(data, "record 0", f"length {len(fields) + 50} runs past the end of the batch",
                          record_index=0)


def test_every_byte_after_the_header_0xff():
    data = raw_batch(b"\xff" * 200, 3)
    assert_invalid_record(data, "record 0", "varint longer than 5 bytes", record_index=0)


@pytest.mark.parametrize("codec", [CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD])
def test_codec_bit_on_plain_records(codec):
    data = raw_batch(records(3), 3, attributes=codec)   # the bit says compressed, the bytes are not
    assert_invalid_record(data, "batch 0", "payload does not decompress")


def test_control_bit_from_a_client():
    error = refusal(raw_batch(records(1), 1, attributes=0x20))
    assert error.error_code == INVALID_RECORD
    assert "clients are not allowed to write control records" in str(error)


@pytest.mark.parametrize("producer_id", [-1, 7])
def test_transactional_bit(producer_id):
    error = refusal(raw_batch(records(1), 1, attributes=0x10, producer_id=producer_id,
                              base_sequence=0 if producer_id >= 0 else -1))
    assert error.error_code == INVALID_TXN_STATE == 48
    assert "transactional" in str(error) and f"producerId {producer_id}" in str(error)


# --- varints ----------------------------------------------------------------------------

def test_truncated_varint_at_the_end_of_the_batch():
    full = record(0)
    data = raw_batch(full + b"\x80", 2)   # record 1's length: a continuation bit, then nothing
    assert_invalid_record(data, "record 1", "runs past the end of the batch", record_index=1)


def test_truncated_value_length_inside_the_record():
    fields = b"\x00" + varint(0) + varint(0) + field(b"k") + b"\x80"   # value length cut short
    data = raw_batch(varint(len(fields)) + fields, 1)
    assert_invalid_record(data, "record 0", record_index=0)


def test_over_long_varint_key_length():
    fields = b"\x00" + varint(0) + varint(0) + b"\x82\x80\x80\x80\x80\x00" + b"\x00" + b"\x00"
    data = raw_batch(varint(len(fields)) + fields, 1)
    assert_invalid_record(data, "key length varint longer than 5 bytes", record_index=0)


def test_over_long_varlong_timestamp_delta():
    fields = b"\x00" + b"\x80" * 10 + b"\x00" + varint(0) + field(b"k") + field(b"v") + varint(0)
    data = raw_batch(varint(len(fields)) + fields, 1)
    assert_invalid_record(data, "timestampDelta varlong longer than 10 bytes", record_index=0)


def test_ten_byte_varlong_timestamp_delta_is_accepted():
    accept(raw_batch(records(2, timestamp_delta=-(1 << 62)), 2))


def test_varint_wider_than_32_bits():
    fields = b"\x00" + varint(0) + varint(0) + b"\xfe\xff\xff\xff\x7f" + b"\x00\x00"
    data = raw_batch(varint(len(fields)) + fields, 1)
    assert_invalid_record(data, "key length varint", "wider than 32 bits", record_index=0)


# --- lengths ------------------------------------------------------------------------------

@pytest.mark.parametrize("name, fields", [
    ("key", b"\x00" + varint(0) + varint(0) + varint(-2) + field(b"v") + varint(0)),
    ("value", b"\x00" + varint(0) + varint(0) + field(b"k") + varint(-5) + varint(0)),
])
def test_negative_key_or_value_length_other_than_null(name, fields):
    data = raw_batch(varint(len(fields)) + fields, 1)
    assert_invalid_record(data, f"{name} length", "negative and not -1", record_index=0)


def test_negative_record_length():
    data = raw_batch(varint(-3) + body(0), 1)
    assert_invalid_record(data, "length -3", record_index=0)


def test_value_longer_than_its_record():
    fields = b"\x00" + varint(0) + varint(0) + field(b"k") + varint(40) + b"v" * 5 + varint(0)
    data = raw_batch(varint(len(fields)) + fields + record(1), 2)
    assert_invalid_record(data, "record 0", record_index=0)


def test_fields_ending_before_the_declared_length():
    fields = body(0) + b"\x00\x00"   # two bytes no field accounts for
    data = raw_batch(varint(len(fields)) + fields, 1)
    assert_invalid_record(data, "fields end at byte -2 from the record's declared length", record_index=0)


def test_null_key_and_null_value_are_accepted():
    accept(raw_batch(records(3, key=None, value=None), 3))


# --- headers -------------------------------------------------------------------------------

def test_header_key_null():
    data = raw_batch(record(0, headers=[(b"ok", b"1"), (None, b"v")]), 1)
    assert_invalid_record(data, "header 1 key is null", record_index=0)


def test_header_value_negative_other_than_null():
    fields = body(0, headers=()).removesuffix(varint(0)) + varint(1) + field(b"h") + varint(-3)
    data = raw_batch(varint(len(fields)) + fields, 1)
    assert_invalid_record(data, "header 0 value length -3", record_index=0)


@pytest.mark.parametrize("count", [-1, 1000])
def test_header_count_negative_or_more_than_the_record_holds(count):
    fields = body(0).removesuffix(varint(0)) + varint(count) + field(b"h") + field(b"v")
    data = raw_batch(varint(len(fields)) + fields, 1)
    assert_invalid_record(data, f"headerCount {count}", record_index=0)


def test_header_null_value_is_accepted():
    accept(raw_batch(record(0, headers=[(b"h", None), (b"", b"")]), 1))


# --- offsets ---------------------------------------------------------------------------------

@pytest.mark.parametrize("deltas", [(0, 0, 2), (1, 2, 3), (0, 1, 5)])
def test_bad_offset_delta(deltas):
    payload = b"".join(record(delta) for delta in deltas)
    bad = next(i for i, delta in enumerate(deltas) if delta != i)
    data = raw_batch(payload, 3)
    assert_invalid_record(data, f"record {bad}", f"offsetDelta {deltas[bad]}, expected {bad}",
                          record_index=bad)


def test_offset_delta_past_64_must_still_be_the_index():
    payload = records(64) + record(100) + record(65)
    assert_invalid_record(raw_batch(payload, 66), "offsetDelta 100, expected 64", record_index=64)


# --- batch attributes -------------------------------------------------------------------------

def test_producer_id_without_a_sequence():
    error = refusal(raw_batch(records(1), 1, producer_id=5, base_sequence=-1))
    assert error.error_code == INVALID_RECORD
    assert "invalid baseSequence -1 with producerId 5" in str(error)


def test_idempotent_batch_is_accepted():
    accept(raw_batch(records(2), 2, producer_id=5, base_sequence=0))


def test_log_append_time_from_the_producer_on_a_log_append_time_topic():
    error = refusal(raw_batch(records(3), 3, attributes=0x08), log_append_time_topic=True)
    assert error.error_code == INVALID_TIMESTAMP == 32
    assert "LogAppendTime" in str(error)
    assert [e.batch_index for e in error.record_errors] == [0, 1, 2]


def test_log_append_time_from_the_producer_without_a_timestamp_on_a_create_time_topic():
    error = refusal(raw_batch(records(1), 1, attributes=0x08, max_timestamp=-1))
    assert error.error_code == INVALID_TIMESTAMP


def test_log_append_time_with_a_timestamp_on_a_create_time_topic_is_accepted():
    accept(raw_batch(records(1), 1, attributes=0x08))   # as Kafka: consumers see maxTimestamp


# --- compressed payloads ------------------------------------------------------------------------

@pytest.mark.parametrize("codec", [CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD])
def test_compressed_records_are_checked_too(codec):
    payload = record(0) + record(0)   # the second record's offsetDelta is wrong
    assert_invalid_record(raw_batch(payload, 2, codec=codec), "offsetDelta 0, expected 1", record_index=1)


@pytest.mark.parametrize("codec", [CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD])
def test_each_codecs_garbage(codec):
    payload = b"\x00\x01garbage that no codec wrote" * 3
    data = raw_batch(payload, 1, attributes=codec)
    assert_invalid_record(data, "payload does not decompress")


@pytest.mark.parametrize("codec", [CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD])
def test_each_codecs_truncated_stream(codec):
    compressed = compression.compress(codec, records(50, value=bytes(range(256))))
    data = raw_batch(compressed[:-7], 50, attributes=codec)
    error = refusal(data)
    assert error.error_code == INVALID_RECORD


@pytest.mark.parametrize("codec", [CODEC_GZIP, CODEC_LZ4, CODEC_ZSTD])
def test_bytes_after_the_compressed_stream(codec):
    compressed = compression.compress(codec, records(2))
    data = raw_batch(compressed + compressed, 2, attributes=codec)   # a second stream after the first
    assert_invalid_record(data, "after the")


@pytest.mark.parametrize("codec", [CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD])
def test_a_zip_bomb_stops_at_the_bound(codec):
    bomb = compression.compress(codec, bytes(3 << 20))   # 3 MiB of zeros, a few KiB compressed
    assert len(bomb) < 200_000
    with pytest.raises(RecordValidationError) as caught:
        uncompressed_records(codec, bomb, 0, limit=1 << 20)
    assert caught.value.error_code == INVALID_RECORD
    assert "1048576" in str(caught.value)


def test_the_default_bound_refuses_a_gzip_bomb_of_65_mib():
    bomb = gzip.compress(bytes(MAX_UNCOMPRESSED_BYTES + (1 << 20)), compresslevel=1)
    assert len(bomb) < 1 << 20   # it fits in one produce request
    data = raw_batch(bomb, 1, attributes=CODEC_GZIP)
    assert_invalid_record(data, f"more than {MAX_UNCOMPRESSED_BYTES} bytes")


def test_a_zstd_frame_declaring_a_huge_content_size_is_refused_unread():
    import zstandard

    frame = bytearray(zstandard.ZstdCompressor().compress(bytes(1000)))
    assert zstandard.frame_content_size(bytes(frame)) == 1000
    frame[5:7] = b"\xff\xff"   # the declared size (2 bytes here) grows; the body stays
    assert zstandard.frame_content_size(bytes(frame)) > 1000
    with pytest.raises(RecordValidationError):
        uncompressed_records(CODEC_ZSTD, bytes(frame), 0, limit=1000)


def test_a_zstd_frame_without_a_content_size_is_bounded_too():
    import zstandard

    bomb = zstandard.ZstdCompressor(write_content_size=False).compress(bytes(3 << 20))
    with pytest.raises(RecordValidationError):
        uncompressed_records(CODEC_ZSTD, bomb, 0, limit=1 << 20)


@pytest.mark.parametrize("codec", [CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD])
def test_a_payload_just_under_the_bound_decompresses(codec):
    payload = bytes(1 << 20)
    assert uncompressed_records(codec, compression.compress(codec, payload), 0, limit=1 << 20) == payload


def test_uncompressed_payload_is_the_view_itself():
    view = memoryview(b"abc")
    assert uncompressed_records(CODEC_NONE, view, 0) is view


# --- batches per partition -----------------------------------------------------------------------

def test_count_batches():
    one = build_batch([(b"a", b"1", None, BASE_TIMESTAMP)])
    assert count_batches(one) == 1
    assert count_batches(one + one) == 2
    assert count_batches(one + one[:20]) == 2   # a torn second batch is still a second batch
    assert count_batches(one + b"\x00" * 5) == 2


def test_count_batches_stops_at_a_length_no_batch_can_have():
    lying = bytearray(build_batch([(b"a", b"1", None, BASE_TIMESTAMP)] * 3))
    struct.pack_into(">i", lying, 8, 10)   # batchLength below the header's 49: validate_batches' to name
    assert count_batches(bytes(lying)) == 1


def test_header_key_null_in_a_two_byte_varint():
    # 0x81 0x00 is zigzag -1 written in two bytes: still a null key (Kafka reads the value, not the byte)
    fields = body(0, headers=()).removesuffix(varint(0)) + varint(1) + b"\x81\x00" + field(b"v")
    data = raw_batch(varint(len(fields)) + fields, 1)
    assert_invalid_record(data, "header 0 key is null", record_index=0)


# --- K1: keys on a compacted topic ---------------------------------------------------------

KAFKA_KEYLESS = "Compacted topic cannot accept message without key in topic partition orders-3."


@pytest.mark.parametrize("codec", CODECS)
def test_a_compacted_topic_refuses_keyless_records_naming_each_as_kafka_does(codec):
    payload = record(0, key=b"a") + record(1, key=None) + record(2, key=b"") + record(3, key=None, value=None)
    data = raw_batch(payload, 4, codec=codec)
    accept(data)   # any other topic takes them
    with pytest.raises(RecordValidationError) as caught:
        validate_produce_records(data, validate_batches(data, 1 << 30), False, "orders-3")
    error = caught.value
    assert error.error_code == INVALID_RECORD and str(error) == KAFKA_KEYLESS
    # an empty key is a key; the tombstone without a key is refused too
    assert [(e.batch_index, e.message) for e in error.record_errors] == [(1, KAFKA_KEYLESS), (3, KAFKA_KEYLESS)]


def test_a_compacted_topic_takes_keyed_records_and_tombstones():
    data = raw_batch(record(0, key=b"a") + record(1, key=b"a", value=None), 2)
    validate_produce_records(data, validate_batches(data, 1 << 30), False, "orders-3")


def test_a_malformed_record_is_named_before_a_missing_key():
    fields = body(1, key=None) + b"\x00\x00"   # two bytes more than the fields: R6
    data = raw_batch(record(0, key=None) + varint(len(fields) - 2) + fields, 2)
    headers = validate_batches(data, 1 << 30)
    with pytest.raises(RecordValidationError) as caught:
        validate_produce_records(data, headers, False, "orders-3")
    assert "Compacted" not in str(caught.value)
