"""Rewriting a stored record batch with some of its records (the log cleaner's part of the format).

Pure functions over bytes. The log cleaner (cluster/log/cleaner.py) reads a
batch, asks compaction.py which records survive, and writes what this
module builds. Rules, Kafka's for a v2 batch the cleaner filters:
- the batch keeps its base offset, lastOffsetDelta, partition leader epoch,
  producer id, epoch and base sequence, base timestamp and attributes
  (codec, timestamp type): the survivors keep their offsets (each record's
  offsetDelta and timestampDelta stay as written, relative to the same
  base), and the producer's sequence range stays whole for idempotence;
- the surviving records' bytes are copied as they are, recompressed with
  the batch's codec when it has one; recordCount is the survivors' count;
- maxTimestamp is the survivors' largest (under LogAppendTime it stays the
  append time), and the CRC-32C is computed again over attributes..end;
- an emptied batch kept for its producer or its segment (compaction.py,
  rules 5 and 6) has no records, no codec, and the original maxTimestamp as
  its base and max timestamp.

Reading is bounds-checked: each record's declared length, key and value
lengths are checked against the bytes left, and a batch that cannot be
read raises CorruptRecordError (the cleaner then keeps it unchanged).
"""

from __future__ import annotations

from typing import NamedTuple

from kafkactl.cluster.protocol.compression import DecompressionError, compress, decompress
from kafkactl.cluster.protocol.record_batch import (
    CODEC_MASK,
    CODEC_NAMES,
    CODEC_NONE,
    CRC_POSITION,
    CRC_START,
    HEADER_SIZE,
    MIN_BATCH_LENGTH,
    BatchHeader,
    CorruptRecordError,
    _HEADER,
    _read_varint,
    _UINT32,
    parse_header,
)


class RawRecord(NamedTuple):
    """One record of an uncompressed records payload, located, not copied."""

    start: int                  # its length varint's first byte
    end: int                    # just after its last field
    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    is_tombstone: bool          # a null value


def batch_records(batch: bytes | memoryview) -> tuple[BatchHeader, bytes, list[RawRecord]]:
    """The header, the uncompressed records payload and its records, of one whole batch."""
    header = parse_header(batch)
    if header.size_bytes > len(batch) or header.batch_length < MIN_BATCH_LENGTH:
        raise CorruptRecordError(f"batch at offset {header.base_offset} is truncated")
    payload = bytes(memoryview(batch)[HEADER_SIZE:header.size_bytes])
    if header.codec not in CODEC_NAMES:
        raise CorruptRecordError(f"unknown compression codec {header.codec}")
    if header.codec != CODEC_NONE:
        try:
            payload = decompress(header.codec, payload)
        except DecompressionError as error:
            raise CorruptRecordError(f"payload does not decompress: {error}") from error
    return header, payload, split_records(payload, header.record_count)


def split_records(payload: bytes, record_count: int) -> list[RawRecord]:
    """Every record of `payload`; CorruptRecordError when a field runs past its record.

    Varints of one and two bytes (most lengths and deltas) are read inline,
    longer ones through record_batch._read_varint; a read past the payload raises
    IndexError, turned into CorruptRecordError, and the key and value are
    checked to end within their record."""
    records = []
    position = 0
    try:
        for _ in range(max(record_count, 0)):
            start = position
            length, position = _varint(payload, position)
            end = position + length
            if length < 0 or end > len(payload):
                raise CorruptRecordError(f"record length {length} runs past the payload")
            timestamp_delta, position = _varint(payload, position + 1)   # after the attributes byte
            offset_delta, position = _varint(payload, position)
            key_length, position = _varint(payload, position)
            if key_length < -1 or position + max(key_length, 0) > end:
                raise CorruptRecordError(f"key length {key_length} runs past its record")
            key = None if key_length < 0 else payload[position:position + key_length]
            value_length, position = _varint(payload, position + max(key_length, 0))
            if value_length < -1 or position + max(value_length, 0) > end:
                raise CorruptRecordError(f"value length {value_length} runs past its record")
            records.append(RawRecord(start, end, offset_delta, timestamp_delta, key, value_length < 0))
            position = end
    except IndexError:
        raise CorruptRecordError("a record runs past the payload") from None
    if position != len(payload):
        raise CorruptRecordError(f"{len(payload) - position} bytes after the last of {record_count} records")
    return records


def _varint(data: bytes, position: int) -> tuple[int, int]:
    """A zigzag varint; one and two bytes inline (record lengths of real producers fit in two)."""
    byte = data[position]
    if byte < 0x80:
        return (byte >> 1) ^ -(byte & 1), position + 1
    second = data[position + 1]
    if second < 0x80:
        unsigned = (byte & 0x7F) | (second << 7)
        return (unsigned >> 1) ^ -(unsigned & 1), position + 2
    return _read_varint(data, position)


def retained_batch(header: BatchHeader, payload: bytes, kept: list[RawRecord]) -> bytes:
    """The batch with only the `kept` records of `payload` (see the module's rules)."""
    if not kept:
        return emptied_batch(header)
    records = b"".join(payload[r.start:r.end] for r in kept)
    if header.codec != CODEC_NONE:
        records = compress(header.codec, records)
    max_timestamp = (header.max_timestamp if header.is_log_append_time
                     else max(header.base_timestamp + r.timestamp_delta for r in kept))
    return _batch(header, header.attributes, header.base_timestamp, max_timestamp, len(kept), records)


def emptied_batch(header: BatchHeader) -> bytes:
    """The batch with no records left, kept for its producer's sequence or its segment's end."""
    return _batch(header, header.attributes & ~CODEC_MASK, header.max_timestamp, header.max_timestamp, 0, b"")


def _batch(header: BatchHeader, attributes: int, base_timestamp: int, max_timestamp: int, count: int,
           records: bytes) -> bytes:
    batch = bytearray(HEADER_SIZE)
    _HEADER.pack_into(batch, 0, header.base_offset, MIN_BATCH_LENGTH + len(records), header.partition_leader_epoch,
                      header.magic, 0, attributes, header.last_offset_delta, base_timestamp, max_timestamp,
                      header.producer_id, header.producer_epoch, header.base_sequence, count)
    batch += records
    _UINT32.pack_into(batch, CRC_POSITION, _crc32c(memoryview(batch)[CRC_START:]))
    return bytes(batch)


def _crc32c(data) -> int:
    from kafkactl.cluster.protocol import record_batch   # its module global: tests count CRC passes there
    return record_batch._crc32c(data)
