"""The records inside a produce batch: what the leader accepts (pure functions).

`validate_batches` (record_batch.py) has checked each batch's frame: magic 2,
batchLength, max.message.bytes, the CRC32C, recordCount >= 1 and
lastOffsetDelta = recordCount - 1, a known codec. A valid CRC only proves
the bytes arrived as the producer sent them; this module checks what they
say, once per batch, on the leader's produce path only
(`Log.check_produce`, run before the partition's lock). Followers keep the frame checks alone, as Kafka's
followers do: the leader already validated what they replicate.

Rules, in the order they are checked, and Kafka's answer to each:

Batch level (`check_batch_attributes`, header fields only)
  B1 one batch per partition: a Produce request (v3 and later) carries
     exactly one record batch per partition -> INVALID_RECORD (checked by
     the produce handler with count_batches, as Kafka checks it in
     ProduceRequest, before the log).
  B2 control bit (attributes 0x20) set: "clients are not allowed to write
     control records" -> INVALID_RECORD.
  B3 transactional bit (attributes 0x10) set -> INVALID_TXN_STATE (48).
     This broker has no transaction coordinator, so no transaction is ever
     ongoing; Kafka answers a transactional batch that is not part of an
     ongoing transaction with INVALID_TXN_STATE ("Record was not part of an
     ongoing transaction"). The other candidates would lie: the client is not
     unauthorized (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), the version and the
     format are fine (UNSUPPORTED_VERSION, UNSUPPORTED_FOR_MESSAGE_FORMAT).
  B4 a producer id (>= 0) with a negative base sequence: "invalid sequence
     number" -> INVALID_RECORD.
  B5 LogAppendTime bit (0x08) set by the producer on a LogAppendTime topic,
     or on a CreateTime topic with no maxTimestamp (-1): "producer should not
     set timestamp type to LogAppendTime" -> INVALID_TIMESTAMP (32), one
     record error per record, as Kafka's LogValidator.
     message.timestamp.difference.max.ms (and its successors
     message.timestamp.before/after.max.ms) is accepted as a topic config but
     not applied by this broker (no LogConfig field); its default, no limit,
     is what every topic gets.

Payload (`check_records`), after decompression for gzip, snappy, lz4, zstd
  P1 the compressed payload decompresses, to at most
     MAX_UNCOMPRESSED_BYTES -> INVALID_RECORD.
  P2 exactly recordCount records and no byte after the last one
     -> INVALID_RECORD.
  Each record i (Kafka's v2 record):
     length varint | attributes int8 | timestampDelta varlong |
     offsetDelta varint | keyLength varint | key | valueLength varint | value |
     headerCount varint | headers: keyLength varint, key, valueLength varint, value
  R1 varints at most 5 bytes, varlongs at most 10, each within its record.
  R2 length >= 0 and the record within the payload.
  R3 offsetDelta == i. Kafka does not refuse other deltas: it rewrites a
     compressed batch whose inner offsets are not 0..n-1 and does not read
     them in an uncompressed one, giving each record its index either way.
     This broker stores batches as received and consumers take each record's
     offset from baseOffset + offsetDelta, so a batch it cannot rewrite must
     already be right: refused.
  R4 key and value lengths -1 (null) or >= 0, within the record.
  R5 headerCount >= 0 and not more than the bytes left could hold; each
     header key non-null (length >= 0), its value -1 or >= 0, all within
     the record.
  R6 the fields end exactly at the record's declared length.
  The record attributes byte is unused in v2; Kafka reads and ignores it.
  K1 on a compacted topic (cleanup.policy has compact) every record has a
     key: "Compacted topic cannot accept message without key in topic
     partition <tp>." -> INVALID_RECORD with one record error per keyless
     record, as Kafka's LogValidator collects them. Checked after R1-R6 and
     P2 (a malformed payload is named as such first); the cleaner could not
     keep a record without a key (compaction.py).
  Every R failure -> INVALID_RECORD with one record error naming the record
  (index i, Kafka's `batch_index`, which is the record's index within the
  batch) and the field; Kafka's reader throws these without record errors,
  which only say more. P failures name the batch.

Why INVALID_RECORD and not CORRUPT_MESSAGE for an unreadable record: the
CRC matched, so sending the same bytes again cannot help. Kafka's record
reader raises InvalidRecordException (INVALID_RECORD, not retriable) for
these; CORRUPT_MESSAGE is retriable for clients and stays for what a resend
can fix: a CRC mismatch or a torn batch frame (record_batch.py).

Any failure refuses the partition's whole payload: the caller checks every
batch before writing any (Log.append_as_leader).

Cost: one pass over the payload, in C (`_record_check.c`, built by
`pip install -e .`), reading the uncompressed payload in place from the
request frame (no copy); `check_records_reference` is the same pass in
Python, the executable form of the rules above, which the C walk follows
read by read and is tested against (same verdict, same message). There is
no silent fallback to it: it is ~20x slower, and a broker that lost its
extension would pass every test while producing small records at a third of
the speed; an unbuilt extension fails this import instead. See
docs/benchmarks.md for the per-MiB figures.
"""

from __future__ import annotations

import zlib
from typing import NamedTuple

from kio.schema.errors import ErrorCode

from kafkactl.cluster import fatal
from kafkactl.cluster.errors import KafkaError
from kafkactl.cluster.protocol.compression import CODEC_GZIP, CODEC_LZ4, CODEC_SNAPPY, CODEC_ZSTD

try:
    from kafkactl.cluster.protocol import _record_check
except ImportError as error:   # not a silent fallback: see "Cost" above
    raise ImportError(f"{error}: the C record walker (cluster/protocol/_record_check.c) is not built; "
                      "run `make setup` (pip install -e .) with gcc installed") from error

INVALID_RECORD = 87
INVALID_TIMESTAMP = 32
INVALID_TXN_STATE = 48

TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20

# A bound on one batch's decompressed records, so that a small "zip bomb"
# (zstd and gzip reach ratios above 1000:1) cannot make the broker allocate
# gigabytes. gzip and lz4 decompress in steps and stop as soon as the output
# passes the bound; snappy and zstd are refused before expanding anything that
# declares more, and zstd's one-shot call stops at the bound otherwise; so at
# most this much is held per request being validated. 64 MiB is far above what clients build: librdkafka caps a
# batch's uncompressed messages at batch.size (1,000,000 bytes by default,
# at most message.max.bytes), and the Java producer closes a batch at
# batch.size (16 KiB by default) of estimated compressed bytes.
MAX_UNCOMPRESSED_BYTES = 64 << 20
_STEP_BYTES = 1 << 20   # decompressed per step before the bound is checked again

_HEADER_SIZE = 61    # the v2 batch header (record_batch.HEADER_SIZE)
_LOG_OVERHEAD = 12   # baseOffset and batchLength


class RecordError(NamedTuple):
    """Kafka's BatchIndexAndErrorMessage: the record's index in its batch."""

    batch_index: int
    message: str


class RecordValidationError(KafkaError):
    """A batch whose records the leader refuses; `error_code` is Kafka's."""

    def __init__(self, error_code: int, message: str, record_errors: tuple[RecordError, ...] = ()) -> None:
        super().__init__(message)
        self.error_code = ErrorCode(error_code)
        self.record_errors = record_errors


def _invalid_record(batch_index: int, record_index: int, detail: str) -> RecordValidationError:
    message = f"batch {batch_index}: record {record_index}: {detail}"
    return RecordValidationError(INVALID_RECORD, message, (RecordError(record_index, message),))


# --- entry points ----------------------------------------------------------------

def validate_produce_records(records, headers, log_append_time_topic: bool,
                             compacted_topic_partition: str | None = None) -> None:
    """B2-B5, P1, P2, R1-R6 (and K1 when `compacted_topic_partition`, the
    topic-partition's name, is given) for every batch of a partition's payload.

    `headers` are validate_batches' (contiguous from position 0 of
    `records`). Raises RecordValidationError on the first refusal.
    """
    view = memoryview(records)
    position = 0
    for batch_index, header in enumerate(headers):
        end = position + header.size_bytes
        check_batch_attributes(header, batch_index, log_append_time_topic)
        data = uncompressed_records(header.attributes & 0x07, view[position + _HEADER_SIZE:end], batch_index)
        check_records(data, header.record_count, batch_index, compacted_topic_partition)
        position = end


def count_batches(records) -> int:
    """How many batches the batchLength fields chain through `records` (a
    trailing fragment counts as one). Counting stops at a batchLength too
    small for a batch header: validate_batches names that error (CORRUPT_MESSAGE)."""
    view = memoryview(records)
    count = position = 0
    while position < len(view):
        count += 1
        if len(view) - position < _LOG_OVERHEAD:
            break
        batch_length = int.from_bytes(view[position + 8:position + 12], "big", signed=True)
        if batch_length < _HEADER_SIZE - _LOG_OVERHEAD:
            break
        position += _LOG_OVERHEAD + batch_length
    return count


# --- batch level ---------------------------------------------------------------

def check_batch_attributes(header, batch_index: int, log_append_time_topic: bool) -> None:
    """B2-B5 on a batch header (record_batch.BatchHeader)."""
    attributes = header.attributes
    if attributes & CONTROL_MASK:
        raise RecordValidationError(
            INVALID_RECORD, f"batch {batch_index}: attributes {attributes:#x} has the control bit; "
            "clients are not allowed to write control records")
    if attributes & TRANSACTIONAL_MASK:
        raise RecordValidationError(
            INVALID_TXN_STATE, f"batch {batch_index}: attributes {attributes:#x} has the transactional bit "
            f"(producerId {header.producer_id}); this broker has no transaction coordinator, so the batch "
            "is not part of an ongoing transaction")
    if header.producer_id >= 0 and header.base_sequence < 0:
        raise RecordValidationError(
            INVALID_RECORD, f"batch {batch_index}: invalid baseSequence {header.base_sequence} "
            f"with producerId {header.producer_id}")
    if attributes & TIMESTAMP_TYPE_MASK and (log_append_time_topic or header.max_timestamp < 0):
        message = (f"batch {batch_index}: attributes {attributes:#x} has the LogAppendTime bit; "
                   "producers should not set the timestamp type to LogAppendTime")
        raise RecordValidationError(INVALID_TIMESTAMP, message, tuple(
            RecordError(index, message) for index in range(header.record_count)))


# --- payload -------------------------------------------------------------------

def uncompressed_records(codec: int, payload, batch_index: int, limit: int = MAX_UNCOMPRESSED_BYTES):
    """P1: the records of a batch's payload (`payload` itself when codec 0)."""
    if codec == 0:
        return payload
    try:
        data = _DECOMPRESSORS[codec](payload, limit)
    except RecordValidationError:
        raise
    except Exception as error:   # each library raises its own kinds
        fatal.halt_if_fatal(error, f"decompressing batch {batch_index}")
        raise RecordValidationError(
            INVALID_RECORD, f"batch {batch_index}: the {_CODEC_NAMES[codec]} payload does not "
            f"decompress: {error}") from None
    if data is None:
        raise RecordValidationError(
            INVALID_RECORD, f"batch {batch_index}: the {_CODEC_NAMES[codec]} payload decompresses to "
            f"more than {limit} bytes")
    return data


def check_records(data, record_count: int, batch_index: int, compacted_topic_partition: str | None = None) -> None:
    """P2 and R1-R6: `data` (a bytes-like buffer) holds exactly `record_count` valid records;
    and K1 when `compacted_topic_partition` names the topic-partition.

    The C walk (_record_check.c); raises what check_records_reference raises."""
    if compacted_topic_partition is None:
        failure = _native_walk(data, record_count)
    else:
        failure = _native_walk(data, record_count, True)
    if failure is not None:
        index, detail = failure
        if index < 0:   # P2: bytes after the last record, a batch-level error
            raise RecordValidationError(INVALID_RECORD, f"batch {batch_index}: {detail}")
        if detail == NULL_KEY_DETAIL:
            raise _keyless_records(data, record_count, compacted_topic_partition or "")
        raise _invalid_record(batch_index, index, detail)


NULL_KEY_DETAIL = "key is null"   # the C walk's K1 answer


def _keyless_records(data, record_count: int, topic_partition: str) -> RecordValidationError:
    """K1's refusal, naming every record without a key. Runs only on a
    payload the walk found well formed, so the reads here stay within it
    (a copy: any buffer kind; a refusal's cost does not matter)."""
    message = f"Compacted topic cannot accept message without key in topic partition {topic_partition}."
    return RecordValidationError(INVALID_RECORD, message, tuple(
        RecordError(index, message) for index in null_key_indexes(bytes(data), record_count)))


def null_key_indexes(data, record_count: int) -> list[int]:
    """The indexes of the records without a key in a well-formed records payload."""
    found = []
    position = 0
    for index in range(record_count):
        length, position = _varint(data, position, 5, 0, index, "length")
        record_end = position + length
        position = _varint(data, position + 1, 10, 0, index, "timestampDelta")[1]   # after attributes
        position = _varint(data, position, 5, 0, index, "offsetDelta")[1]
        if _varint(data, position, 5, 0, index, "key length")[0] < 0:
            found.append(index)
        position = record_end
    return found


_native_walk = _record_check.check_records


def check_records_reference(data, record_count: int, batch_index: int,
                            compacted_topic_partition: str | None = None) -> None:
    """check_records in Python: the specification the C walk follows.

    One pass. Measured hot path (docs/benchmarks.md): varints of one and
    two bytes are read inline (record lengths, key and value lengths and
    timestamp deltas of real producers fit in two), without a call per field;
    anything longer goes through _varint. Reading past the end of `data`
    raises IndexError, caught once; reading past a record's end into the next
    record is caught by the check that its fields end at its length.
    """
    end = len(data)
    position = record_start = index = 0
    null_keys = 0
    try:
        for index in range(record_count):
            record_start = position
            # length: zigzag, so an odd value is negative
            byte = data[position]
            if byte < 0x80:
                unsigned = byte
                position += 1
            elif data[position + 1] < 0x80:
                unsigned = (byte & 0x7F) | (data[position + 1] << 7)
                position += 2
            else:
                unsigned, position = _varint(data, position, 5, batch_index, index, "length", False)
            record_end = position + (unsigned >> 1)
            if unsigned & 1 or record_end > end:
                length = (unsigned >> 1) ^ -(unsigned & 1)
                raise _invalid_record(batch_index, index, f"length {length} runs past the end of the batch "
                                      f"({end - position} bytes left)")
            # attributes (unused in v2), then timestampDelta: skipped
            if data[position + 1] < 0x80:
                position += 2
            elif data[position + 2] < 0x80:
                position += 3
            else:
                position = _varint(data, position + 1, 10, batch_index, index, "timestampDelta", False)[1]
            # offsetDelta, zigzag-encoded: 2 * index
            byte = data[position]
            if byte < 0x80:
                unsigned = byte
                position += 1
            elif data[position + 1] < 0x80:
                unsigned = (byte & 0x7F) | (data[position + 1] << 7)
                position += 2
            else:
                unsigned, position = _varint(data, position, 5, batch_index, index, "offsetDelta", False)
            if unsigned != index << 1:
                raise _invalid_record(batch_index, index, f"offsetDelta {(unsigned >> 1) ^ -(unsigned & 1)}, "
                                      f"expected {index}")
            # key: length (-1 null) and bytes
            byte = data[position]
            if byte < 0x80:
                unsigned = byte
                position += 1
            elif data[position + 1] < 0x80:
                unsigned = (byte & 0x7F) | (data[position + 1] << 7)
                position += 2
            else:
                unsigned, position = _varint(data, position, 5, batch_index, index, "key length", False)
            if not unsigned & 1:
                position += unsigned >> 1
            elif unsigned != 1:
                raise _invalid_record(batch_index, index, f"key length {-(unsigned + 1) >> 1} is negative "
                                      "and not -1 (null)")
            else:
                null_keys += 1
            # value: length (-1 null) and bytes
            byte = data[position]
            if byte < 0x80:
                unsigned = byte
                position += 1
            elif data[position + 1] < 0x80:
                unsigned = (byte & 0x7F) | (data[position + 1] << 7)
                position += 2
            else:
                unsigned, position = _varint(data, position, 5, batch_index, index, "value length", False)
            if not unsigned & 1:
                position += unsigned >> 1
            elif unsigned != 1:
                raise _invalid_record(batch_index, index, f"value length {-(unsigned + 1) >> 1} is negative "
                                      "and not -1 (null)")
            # headerCount: most records have none
            if position + 1 == record_end and data[position] == 0:
                position = record_end
                continue
            if position >= record_end:
                raise _invalid_record(batch_index, index, "key and value run past the record's length "
                                      f"{record_end - record_start}")
            position = _skip_headers(data, position, record_end, batch_index, index)
            if position != record_end:
                raise _invalid_record(batch_index, index, f"fields end at byte {position - record_end:+d} "
                                      "from the record's declared length")
    except IndexError:
        if record_start >= end:
            raise _invalid_record(batch_index, index, f"missing: the batch declares {record_count} records "
                                  f"but its payload ends after {index}") from None
        raise _invalid_record(batch_index, index, "a field runs past the end of the batch") from None
    if position != end:
        raise RecordValidationError(
            INVALID_RECORD, f"batch {batch_index}: {end - position} bytes after the last of its "
            f"{record_count} records")
    if null_keys and compacted_topic_partition is not None:
        raise _keyless_records(data, record_count, compacted_topic_partition)


def _skip_bytes(data, position: int, record_end: int, batch_index: int, index: int,
                field: str) -> tuple[int, int]:
    """A header key or value: length varint (-1 null) and the bytes; the length and the position after it."""
    length, position = _varint(data, position, 5, batch_index, index, f"{field} length")
    if length < -1 or position + length > record_end:
        raise _invalid_record(batch_index, index, f"{field} length {length} outside the record "
                              f"({record_end - position} bytes left)")
    return length, (position + length if length > 0 else position)


def _skip_headers(data, position: int, record_end: int, batch_index: int, index: int) -> int:
    count, position = _varint(data, position, 5, batch_index, index, "headerCount")
    # each header takes at least two bytes (two length varints)
    if count < 0 or count > (record_end - position) // 2:
        raise _invalid_record(batch_index, index, f"headerCount {count} is negative or more than the "
                              f"{record_end - position} bytes left could hold")
    for header in range(count):
        # the decoded length, not the first byte: 0x81 0x00 is a (2-byte) -1 too
        length, position = _skip_bytes(data, position, record_end, batch_index, index, f"header {header} key")
        if length == -1:
            raise _invalid_record(batch_index, index, f"header {header} key is null")
        position = _skip_bytes(data, position, record_end, batch_index, index, f"header {header} value")[1]
    return position


def _varint(data, position: int, max_bytes: int, batch_index: int, index: int, field: str,
            decode: bool = True) -> tuple[int, int]:
    """A varint (max_bytes 5) or varlong (10) and the position after it;
    zigzag-decoded unless `decode` is false (then the raw unsigned value)."""
    unsigned = shift = 0
    for _ in range(max_bytes):
        byte = data[position]
        position += 1
        unsigned |= (byte & 0x7F) << shift
        if byte < 0x80:
            if max_bytes == 5 and unsigned > 0xFFFFFFFF:
                raise _invalid_record(batch_index, index, f"{field} varint {unsigned:#x} is wider than 32 bits")
            return ((unsigned >> 1) ^ -(unsigned & 1) if decode else unsigned), position
        shift += 7
    kind = "varint" if max_bytes == 5 else "varlong"
    raise _invalid_record(batch_index, index, f"{field} {kind} longer than {max_bytes} bytes")


# --- bounded decompression ------------------------------------------------------
# Each returns the decompressed bytes, or None once they pass `limit`.

def _gunzip(payload, limit: int):
    decompressor = zlib.decompressobj(47)   # 32 + 15: gzip or zlib header
    out = bytearray()
    data = bytes(payload)
    while True:
        out += decompressor.decompress(data, _STEP_BYTES)
        if len(out) > limit:
            return None
        data = decompressor.unconsumed_tail
        if decompressor.eof:
            if decompressor.unused_data:
                raise ValueError(f"{len(decompressor.unused_data)} bytes after the gzip stream")
            return bytes(out)
        if not data:
            raise ValueError("truncated gzip stream")


def _lz4(payload, limit: int):
    import lz4.frame

    decompressor = lz4.frame.LZ4FrameDecompressor()
    out = bytearray()
    data = bytes(payload)
    while True:
        out += decompressor.decompress(data, max_length=_STEP_BYTES)
        if len(out) > limit:
            return None
        if decompressor.eof:
            if decompressor.unused_data:
                raise ValueError(f"{len(decompressor.unused_data)} bytes after the lz4 frame")
            return bytes(out)
        if not decompressor.needs_input:
            data = b""
            continue
        raise ValueError("truncated lz4 frame")


def _zstd(payload, limit: int):
    """The first frame, bounded by its declared content size or the one-shot
    call's max_output_size (that call also fails on a truncated frame), then a second pass to find bytes after that frame:
    zstd's one-shot call ignores them and its stream reader ignores
    truncation, and neither alone says both."""
    import zstandard

    data = bytes(payload)
    # The one-shot call trusts a content size in the frame header over
    # max_output_size: a frame declaring a huge one is refused before it.
    if zstandard.frame_content_size(data) > limit:
        return None
    try:
        out = zstandard.ZstdDecompressor().decompress(data, max_output_size=limit)
    except zstandard.ZstdError as error:
        raise ValueError(f"{error} (a damaged or truncated frame, or more than {limit} bytes)") from None
    decompressor = zstandard.ZstdDecompressor().decompressobj()
    decompressor.decompress(data)
    if decompressor.unused_data:
        raise ValueError(f"{len(decompressor.unused_data)} bytes after the zstd frame")
    return out


_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER_SIZE = 16


def _snappy(payload, limit: int):
    """snappy-java's xerial framing (or one raw block); each block's
    uncompressed length is read from its preamble before it is expanded."""
    import snappy

    data = bytes(payload)
    if not data.startswith(_XERIAL_MAGIC):
        return None if _snappy_length(data) > limit else snappy.uncompress(data)
    out = bytearray()
    position = _XERIAL_HEADER_SIZE
    while position < len(data):
        if position + 4 > len(data):
            raise ValueError("truncated xerial block length")
        length = int.from_bytes(data[position:position + 4], "big", signed=True)
        position += 4
        if length < 0 or position + length > len(data):
            raise ValueError("xerial block runs past the payload")
        block = data[position:position + length]
        if len(out) + _snappy_length(block) > limit:
            return None
        out += snappy.uncompress(block)
        position += length
    return bytes(out)


def _snappy_length(block: bytes) -> int:
    """The uncompressed length a raw snappy block declares (its uvarint preamble)."""
    value = shift = 0
    for byte in block[:5]:
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value
        shift += 7
    raise ValueError("bad snappy length preamble")


_DECOMPRESSORS = {CODEC_GZIP: _gunzip, CODEC_SNAPPY: _snappy, CODEC_LZ4: _lz4, CODEC_ZSTD: _zstd}
_CODEC_NAMES = {CODEC_GZIP: "gzip", CODEC_SNAPPY: "snappy", CODEC_LZ4: "lz4", CODEC_ZSTD: "zstd"}
