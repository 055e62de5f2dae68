"""Record batch (magic v2) header handling for the broker's data path.

Pure functions over bytes: no I/O. Each batch is validated with its
61-byte header and one CRC32C pass, then baseOffset and partitionLeaderEpoch
are rewritten in place (both lie outside the CRC, so the CRC is not
recomputed). The records inside a produced batch are checked on the leader
by record_validation.py; the fetch path never parses them. Record-level
decoding (`decode_records`) exists only for the timestamp lookup and for
tests; `build_batch` produces valid batches for tests and synthetic traffic.

Header layout (big-endian), offsets in bytes:
    0 baseOffset int64        8 batchLength int32     12 partitionLeaderEpoch int32
   16 magic int8             17 crc uint32           21 attributes int16
   23 lastOffsetDelta int32  27 baseTimestamp int64  35 maxTimestamp int64
   43 producerId int64       51 producerEpoch int16  53 baseSequence int32
   57 recordCount int32      61 records...
batchLength counts the bytes after the batchLength field, so a batch
occupies batchLength + 12 bytes. The CRC is CRC32C over bytes 21..end.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from typing import NamedTuple

import crc32c as _crc32c_module
from kio.schema.errors import ErrorCode

from kafkactl.cluster.errors import KafkaError
from kafkactl.cluster.protocol.compression import DecompressionError, compress, decompress

# Looked up through the module global on every call so tests can count the
# CRC passes an append makes.
_crc32c = _crc32c_module.crc32c

MAGIC_V2 = 2
LOG_OVERHEAD = 12  # baseOffset + batchLength, the part not counted by batchLength
HEADER_SIZE = 61
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD  # batchLength of a batch with no records
CRC_START = 21  # the CRC covers attributes..end
MAGIC_POSITION = 16
BATCH_LENGTH_POSITION = 8
PARTITION_LEADER_EPOCH_POSITION = 12
CRC_POSITION = 17
ATTRIBUTES_POSITION = 21
MAX_TIMESTAMP_POSITION = 35

CODEC_NONE = 0
CODEC_GZIP = 1
CODEC_SNAPPY = 2
CODEC_LZ4 = 3
CODEC_ZSTD = 4
CODEC_NAMES = {CODEC_NONE: "none", CODEC_GZIP: "gzip", CODEC_SNAPPY: "snappy",
               CODEC_LZ4: "lz4", CODEC_ZSTD: "zstd"}

CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08  # set: LogAppendTime, clear: CreateTime
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20

NO_TIMESTAMP = -1
NO_PARTITION_LEADER_EPOCH = -1
INT32_MAX = 2**31 - 1

_HEADER = struct.Struct(">qiibIhiqqqhii")
_OFFSET = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")
_INT64 = struct.Struct(">q")


class RecordBatchError(KafkaError):
    """A produce payload Kafka would reject; `error_code` is the wire error."""

    error_code = ErrorCode.unknown_server_error

    def __init__(self, message: str, batch_index: int | None = None) -> None:
        super().__init__(message)
        self.batch_index = batch_index


class CorruptRecordError(RecordBatchError):
    """CRC mismatch, truncated batch or impossible length: CORRUPT_MESSAGE."""

    error_code = ErrorCode.corrupt_message


class RecordTooLargeError(RecordBatchError):
    """A batch larger than max.message.bytes: MESSAGE_TOO_LARGE."""

    error_code = ErrorCode.message_too_large


class UnsupportedCompressionTypeError(RecordBatchError):
    """Attributes name a codec id Kafka does not define: UNSUPPORTED_COMPRESSION_TYPE."""

    error_code = ErrorCode.unsupported_compression_type


class InvalidRecordError(RecordBatchError):
    """A well-formed but unacceptable batch: INVALID_RECORD (87).

    Used for magic != 2: Kafka's ProduceRequest (v3 and later, the only
    versions this broker accepts) requires magic v2 batches and rejects others
    with InvalidRecordException, which maps to INVALID_RECORD, not to
    UNSUPPORTED_FOR_MESSAGE_FORMAT (43). Also used for an inconsistent record
    count / offset delta, as Kafka's LogValidator does.
    """

    error_code = ErrorCode.invalid_record


class BatchHeader(NamedTuple):
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def size_bytes(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def codec(self) -> int:
        return self.attributes & CODEC_MASK

    @property
    def is_log_append_time(self) -> bool:
        return bool(self.attributes & TIMESTAMP_TYPE_MASK)


def codec(attributes: int) -> int:
    return attributes & CODEC_MASK


def parse_header(buffer: bytes | bytearray | memoryview, position: int = 0) -> BatchHeader:
    """The header of the batch starting at `position`; no CRC or sanity check."""
    if len(buffer) - position < HEADER_SIZE:
        raise CorruptRecordError(
            f"truncated batch header at position {position}: "
            f"{len(buffer) - position} bytes, need {HEADER_SIZE}")
    return BatchHeader._make(_HEADER.unpack_from(buffer, position))


def validate_batches(
    records: bytes | bytearray | memoryview,
    max_batch_bytes: int,
    *,
    strict_counts: bool = True,
    allow_partial_tail: bool = False,
) -> list[BatchHeader]:
    """Check every batch of a payload and return their headers, in order.

    One CRC pass per batch and no per-record work, so a 1 MiB batch costs one
    crc32c call. `strict_counts` applies the producer rule (recordCount >= 1
    and lastOffsetDelta == recordCount - 1); replicated batches may have been
    compacted, so followers pass False. `allow_partial_tail` drops an
    incomplete last batch instead of failing, as Kafka does for fetched data;
    the caller appends only sum(h.size_bytes).
    """
    view = memoryview(records)
    total = len(view)
    headers: list[BatchHeader] = []
    position = 0
    while position < total:
        index = len(headers)
        remaining = total - position
        if remaining < LOG_OVERHEAD + 5:  # up to and including magic
            if allow_partial_tail:
                break
            raise CorruptRecordError(
                f"batch {index}: {remaining} trailing bytes are not a batch", index)
        magic = view[position + MAGIC_POSITION]
        if magic != MAGIC_V2:
            raise InvalidRecordError(
                f"batch {index}: magic {magic}; only magic v2 record batches are accepted", index)
        batch_length = _INT32.unpack_from(view, position + BATCH_LENGTH_POSITION)[0]
        if batch_length < MIN_BATCH_LENGTH:
            raise CorruptRecordError(
                f"batch {index}: batchLength {batch_length} is below the minimum "
                f"{MIN_BATCH_LENGTH}", index)
        size = batch_length + LOG_OVERHEAD
        if size > remaining:
            if allow_partial_tail:
                break
            raise CorruptRecordError(
                f"batch {index}: batchLength says {size} bytes but only {remaining} remain", index)
        if size > max_batch_bytes:
            raise RecordTooLargeError(
                f"batch {index}: {size} bytes exceeds the maximum {max_batch_bytes}", index)
        header = BatchHeader._make(_HEADER.unpack_from(view, position))
        end = position + size
        actual_crc = _crc32c(view[position + CRC_START:end])
        if actual_crc != header.crc:
            raise CorruptRecordError(
                f"batch {index}: CRC mismatch (stored {header.crc:#010x}, "
                f"computed {actual_crc:#010x})", index)
        _check_counts(header, index, strict_counts)
        if header.codec > CODEC_ZSTD:
            raise UnsupportedCompressionTypeError(
                f"batch {index}: unknown compression codec id {header.codec}", index)
        headers.append(header)
        position = end
    return headers


def _check_counts(header: BatchHeader, index: int, strict: bool) -> None:
    count, delta = header.record_count, header.last_offset_delta
    if strict:
        if count <= 0:
            raise InvalidRecordError(f"batch {index}: record count {count} must be positive", index)
        if delta != count - 1:
            raise InvalidRecordError(
                f"batch {index}: lastOffsetDelta {delta} does not match record count {count}",
                index)
    elif count < 0 or delta < 0 or count > delta + 1:
        raise InvalidRecordError(
            f"batch {index}: record count {count} and lastOffsetDelta {delta} are inconsistent",
            index)


def assign_offsets(
    buffer: bytearray,
    headers: Sequence[BatchHeader],
    first_offset: int,
    partition_leader_epoch: int,
) -> int:
    """Stamp offsets and the leader epoch into the batches in place.

    `headers` must describe `buffer` from position 0, contiguously (as
    returned by validate_batches). Both fields lie outside the CRC. Returns the
    offset after the last record.
    """
    position = 0
    offset = first_offset
    for header in headers:
        _OFFSET.pack_into(buffer, position, offset)
        _INT32.pack_into(buffer, position + PARTITION_LEADER_EPOCH_POSITION,
                         partition_leader_epoch)
        offset += header.last_offset_delta + 1
        position += header.size_bytes
    return offset


_STAMPED_PREFIX = struct.Struct(">qii")   # baseOffset, batchLength, partitionLeaderEpoch
STAMPED_PREFIX_SIZE = _STAMPED_PREFIX.size   # 16: everything before magic


def stamped_parts(
    records: bytes | bytearray | memoryview,
    headers: Sequence[BatchHeader],
    first_offset: int,
    partition_leader_epoch: int,
) -> list[bytes | memoryview]:
    """The batches as assign_offsets would leave them, without copying them.

    For os.writev: per batch a new 16-byte prefix (baseOffset, batchLength,
    partitionLeaderEpoch, all outside the CRC) and a view of the rest of the
    batch as received. A produce payload of ~1 MiB is then written to the
    segment straight from the request's buffer, which may be read-only.
    `headers` must describe `records` from position 0, contiguously.
    """
    view = memoryview(records)
    parts: list[bytes | memoryview] = []
    position = 0
    offset = first_offset
    for header in headers:
        end = position + header.size_bytes
        parts.append(_STAMPED_PREFIX.pack(offset, header.batch_length, partition_leader_epoch))
        parts.append(view[position + STAMPED_PREFIX_SIZE:end])
        offset += header.last_offset_delta + 1
        position = end
    return parts


def rebased_headers(
    headers: Sequence[BatchHeader], first_offset: int, partition_leader_epoch: int,
) -> list[BatchHeader]:
    """The headers as assign_offsets leaves them, without re-reading the buffer."""
    result = []
    offset = first_offset
    for header in headers:
        result.append(header._replace(base_offset=offset,
                                      partition_leader_epoch=partition_leader_epoch))
        offset += header.last_offset_delta + 1
    return result


def stamp_log_append_time(
    buffer: bytearray, headers: Sequence[BatchHeader], timestamp_ms: int,
) -> list[BatchHeader]:
    """Set LogAppendTime on every batch (message.timestamp.type=LogAppendTime).

    maxTimestamp and attributes lie inside the CRC, so this costs a second
    CRC pass per batch; only topics configured for LogAppendTime pay it.
    """
    result = []
    position = 0
    for header in headers:
        attributes = header.attributes | TIMESTAMP_TYPE_MASK
        _INT16.pack_into(buffer, position + ATTRIBUTES_POSITION, attributes)
        _INT64.pack_into(buffer, position + MAX_TIMESTAMP_POSITION, timestamp_ms)
        end = position + header.size_bytes
        crc = _crc32c(memoryview(buffer)[position + CRC_START:end])
        _UINT32.pack_into(buffer, position + CRC_POSITION, crc)
        result.append(header._replace(attributes=attributes, max_timestamp=timestamp_ms, crc=crc))
        position = end
    return result


# --- record level: lookups and tests only, never the append path -----------

class Record(NamedTuple):
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


def _zigzag(value: int) -> int:
    return (value << 1) ^ (value >> 63)


def _write_varint(out: bytearray, value: int) -> None:
    unsigned = _zigzag(value)
    while unsigned >= 0x80:
        out.append((unsigned & 0x7F) | 0x80)
        unsigned >>= 7
    out.append(unsigned)


def _read_varint(data: bytes | memoryview, position: int) -> tuple[int, int]:
    shift = 0
    unsigned = 0
    while True:
        if position >= len(data):
            raise CorruptRecordError("varint runs past the end of the records")
        byte = data[position]
        position += 1
        unsigned |= (byte & 0x7F) << shift
        if byte < 0x80:
            break
        shift += 7
        if shift > 63:
            raise CorruptRecordError("varint longer than 10 bytes")
    return (unsigned >> 1) ^ -(unsigned & 1), position


def _write_bytes(out: bytearray, value: bytes | None) -> None:
    if value is None:
        _write_varint(out, -1)
        return
    _write_varint(out, len(value))
    out += value


def _read_bytes(data: bytes, position: int) -> tuple[bytes | None, int]:
    length, position = _read_varint(data, position)
    if length < 0:
        return None, position
    end = position + length
    if end > len(data):
        raise CorruptRecordError("record field runs past the end of the records")
    return bytes(data[position:end]), end


def _encode_record(out: bytearray, offset_delta: int, timestamp_delta: int,
                   key: bytes | None, value: bytes | None,
                   headers: Sequence[tuple[str, bytes | None]]) -> None:
    body = bytearray()
    body.append(0)  # record attributes, unused
    _write_varint(body, timestamp_delta)
    _write_varint(body, offset_delta)
    _write_bytes(body, key)
    _write_bytes(body, value)
    _write_varint(body, len(headers))
    for header_key, header_value in headers:
        _write_bytes(body, header_key.encode())
        _write_bytes(body, header_value)
    _write_varint(out, len(body))
    out += body


def build_batch(
    records: Sequence[tuple[bytes | None, bytes | None, Sequence[tuple[str, bytes | None]] | None,
                            int]],
    base_offset: int = 0,
    *,
    codec: int = CODEC_NONE,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
) -> bytes:
    """A valid magic v2 batch of (key, value, headers, timestamp_ms) records.

    baseTimestamp is the first record's timestamp, as Kafka's producer does.
    Any codec; payloads are compressed as Kafka's clients do.
    """
    if not records:
        raise ValueError("a batch needs at least one record")
    base_timestamp = records[0][3]
    body = bytearray()
    for delta, (key, value, headers, timestamp) in enumerate(records):
        _encode_record(body, delta, timestamp - base_timestamp, key, value, headers or ())
    payload = compress(codec, bytes(body)) if codec != CODEC_NONE else bytes(body)
    attributes = codec | (TRANSACTIONAL_MASK if transactional else 0)
    max_timestamp = max(record[3] for record in records)
    batch = bytearray(HEADER_SIZE)
    _HEADER.pack_into(batch, 0, base_offset, MIN_BATCH_LENGTH + len(payload),
                      partition_leader_epoch, MAGIC_V2, 0, attributes, len(records) - 1,
                      base_timestamp, max_timestamp, producer_id, producer_epoch,
                      base_sequence, len(records))
    batch += payload
    _UINT32.pack_into(batch, CRC_POSITION, _crc32c(memoryview(batch)[CRC_START:]))
    return bytes(batch)


def decode_records(batch: bytes | bytearray | memoryview) -> list[Record]:
    """The records of one batch, decompressed (never used on the data path)."""
    return list(iter_records(batch))


def iter_records(batch: bytes | bytearray | memoryview) -> Iterator[Record]:
    header = parse_header(batch)
    if header.size_bytes > len(batch):
        raise CorruptRecordError("batch is truncated")
    payload = bytes(memoryview(batch)[HEADER_SIZE:header.size_bytes])
    if header.codec not in CODEC_NAMES:
        raise UnsupportedCompressionTypeError(f"unknown compression codec {header.codec}")
    if header.codec != CODEC_NONE:
        try:
            payload = decompress(header.codec, payload)
        except DecompressionError as error:
            raise CorruptRecordError(f"payload does not decompress: {error}") from error
    position = 0
    for _ in range(header.record_count):
        record, position = _decode_record(payload, position, header)
        yield record


def _decode_record(data: bytes, position: int, header: BatchHeader) -> tuple[Record, int]:
    length, position = _read_varint(data, position)
    end = position + length
    if length < 0 or end > len(data):
        raise CorruptRecordError("record length runs past the end of the batch")
    position += 1  # record attributes
    timestamp_delta, position = _read_varint(data, position)
    offset_delta, position = _read_varint(data, position)
    key, position = _read_bytes(data, position)
    value, position = _read_bytes(data, position)
    header_count, position = _read_varint(data, position)
    headers = []
    for _ in range(header_count):
        header_key, position = _read_bytes(data, position)
        header_value, position = _read_bytes(data, position)
        headers.append(((header_key or b"").decode(), header_value))
    if position != end:
        raise CorruptRecordError("record length does not match its fields")
    timestamp = (header.max_timestamp if header.is_log_append_time
                 else header.base_timestamp + timestamp_delta)
    return Record(header.base_offset + offset_delta, timestamp, key, value, headers), end
