"""Rewriting a stored record batch with some of its records (the log cleaner's part of the format).

Pure functions over bytes. The log cleaner (cluster/log/log_clean.py) reads a
batch, maps its keys (`collect_keys`), later keeps its survivors
(`keep_records`, compaction.py's rules) and writes what this module builds.
Rules, Kafka's for a v2 batch the cleaner filters:
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
lengths are checked against the bytes left, varints against their width,
each offsetDelta against the batch's 0..lastOffsetDelta (a survivor must
stay inside its batch), and a batch that cannot be read raises
CorruptRecordError (the cleaner then keeps it unchanged).

Cost: both record passes run in C (`_record_filter.c`, built with the
package, no fallback, as record_validation.py's walk): one Python call per
batch, not per record. `split_records` is the same walk in Python, read by
read and message by message: with compaction.offset_map and
compaction.survives it is the reference the C passes are tested against
(tests/unit/cluster/protocol/test_record_filter_native.py).
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
    _UINT32,
    parse_header,
)

try:
    from kafkactl.cluster.protocol import _record_filter
except ImportError as error:   # no silent fallback: the Python walk is ~50x slower
    raise ImportError(f"{error}: the C record filter (cluster/protocol/_record_filter.c) is not built; "
                      "run `make setup` (pip install -e .) with gcc installed") from error

INT64_MAX = 2**63 - 1

# Each key's last offset (compaction.py rule 2), keys kept whole: bytes -> int
# with len, get(key, default), put, items, new_keys(other) (how many of
# other's keys it lacks) and update(other). In C (_offset_map.c): no Python
# object per key or per lookup, about a third of a dict's memory.
OffsetMap = _record_filter.OffsetMap


class Survivors(NamedTuple):
    """What `keep_records` found in one batch."""

    records: int                    # records read
    kept: int
    data: bytes | None              # the kept records' bytes; None: every record is kept
    max_timestamp_delta: int | None  # the kept records' largest; None: none is kept


def records_payload(batch: bytes | memoryview, header: BatchHeader) -> bytes | memoryview:
    """The uncompressed records of one whole batch (`batch` itself past the header when uncompressed)."""
    if header.size_bytes > len(batch) or header.batch_length < MIN_BATCH_LENGTH:
        raise CorruptRecordError(f"batch at offset {header.base_offset} is truncated")
    payload = memoryview(batch)[HEADER_SIZE:header.size_bytes]
    if header.codec not in CODEC_NAMES:
        raise CorruptRecordError(f"unknown compression codec {header.codec}")
    if header.codec == CODEC_NONE:
        return payload
    try:
        return decompress(header.codec, bytes(payload))   # the codecs' libraries do not all take a view
    except DecompressionError as error:
        raise CorruptRecordError(f"payload does not decompress: {error}") from error


def collect_keys(header: BatchHeader, payload: bytes | memoryview, first_dirty: int, found: OffsetMap) -> int:
    """found[key] = offset for each record with a key at or above `first_dirty`,
    the last record of a key winning; the number of records. A batch that
    cannot be read raises CorruptRecordError and adds nothing to `found`."""
    try:
        return _record_filter.collect_keys(payload, header.record_count, header.last_offset_delta,
                                           header.base_offset, first_dirty, found)
    except ValueError as error:
        raise CorruptRecordError(f"batch at offset {header.base_offset}: {error}") from None


def keep_records(header: BatchHeader, payload: bytes | memoryview, latest: OffsetMap,
                 retain_tombstones: bool) -> Survivors:
    """The records of the batch that survive `latest` (compaction.survives)."""
    try:
        return Survivors(*_record_filter.keep_records(payload, header.record_count, header.last_offset_delta,
                                                      header.base_offset, latest, retain_tombstones))
    except ValueError as error:
        raise CorruptRecordError(f"batch at offset {header.base_offset}: {error}") from None


def filtered_batch(header: BatchHeader, survivors: Survivors) -> bytes:
    """The batch holding only `survivors` (some records, not all: the caller
    copies a batch whose records all survive); emptied if none is left."""
    if survivors.data is None:   # an emptied batch here would lose every record
        raise ValueError(f"batch at offset {header.base_offset}: every record survives, copy it as it is")
    if not survivors.kept or survivors.max_timestamp_delta is None:
        return emptied_batch(header)
    records = survivors.data
    if header.codec != CODEC_NONE:
        records = compress(header.codec, records)
    max_timestamp = (header.max_timestamp if header.is_log_append_time
                     else header.base_timestamp + survivors.max_timestamp_delta)
    return _batch(header, header.attributes, header.base_timestamp, max_timestamp, survivors.kept, records)


def emptied_batch(header: BatchHeader) -> bytes:
    """The batch with no records left, kept for its producer's sequence or its segment's end."""
    return _batch(header, header.attributes & ~CODEC_MASK, header.max_timestamp, header.max_timestamp, 0, b"")


def _batch(header: BatchHeader, attributes: int, base_timestamp: int, max_timestamp: int, count: int,
           records: bytes) -> bytes:
    batch = bytearray(HEADER_SIZE + len(records))
    _HEADER.pack_into(batch, 0, header.base_offset, MIN_BATCH_LENGTH + len(records), header.partition_leader_epoch,
                      header.magic, 0, attributes, header.last_offset_delta, base_timestamp, max_timestamp,
                      header.producer_id, header.producer_epoch, header.base_sequence, count)
    batch[HEADER_SIZE:] = records
    _UINT32.pack_into(batch, CRC_POSITION, _crc32c(memoryview(batch)[CRC_START:]))
    return bytes(batch)


def _crc32c(data) -> int:
    from kafkactl.cluster.protocol import record_batch   # its module global: tests count CRC passes there
    return record_batch._crc32c(data)


# --- the reference: the same walk in Python ---------------------------------------------

class RawRecord(NamedTuple):
    """One record of an uncompressed records payload, located, not copied."""

    start: int                  # its length varint's first byte
    end: int                    # just after its last field
    offset: int                 # base offset + offsetDelta
    timestamp_delta: int
    key: bytes | None
    is_tombstone: bool          # a null value


def batch_records(batch: bytes) -> tuple[BatchHeader, bytes, list[RawRecord]]:
    """The header, the uncompressed records payload and its records, of one whole batch (the reference)."""
    header = parse_header(batch)
    payload = bytes(records_payload(batch, header))
    return header, payload, split_records(payload, header.record_count, header.base_offset, header.last_offset_delta)


def split_records(payload: bytes, record_count: int, base_offset: int, last_offset_delta: int) -> list[RawRecord]:
    """Every record of `payload`, read as _record_filter.c reads it (same checks, same order,
    same messages); CorruptRecordError when one cannot be read."""
    if last_offset_delta > 0 and base_offset + last_offset_delta > INT64_MAX:
        raise CorruptRecordError("the batch's last offset overflows 64 bits")
    records = []
    position = 0
    for index in range(max(record_count, 0)):
        def fail(detail: str):
            return CorruptRecordError(f"record {index}: {detail}")
        start = position
        length, position = _varint(payload, position, 5, fail)
        if length < 0 or length > len(payload) - position:
            raise fail(f"length {length} does not fit the payload")
        end = position + length
        timestamp_delta, position = _varint(payload, position + 1, 10, fail)   # after the attributes byte
        offset_delta, position = _varint(payload, position, 5, fail)
        if not 0 <= offset_delta <= last_offset_delta:
            raise fail(f"offsetDelta {offset_delta} outside the batch's 0..{last_offset_delta}")
        key_length, position = _varint(payload, position, 5, fail)
        if key_length < -1 or max(key_length, 0) > end - position:
            raise fail(f"key length {key_length} does not fit its record")
        key = None if key_length < 0 else payload[position:position + key_length]
        value_length, position = _varint(payload, position + max(key_length, 0), 5, fail)
        if value_length < -1 or max(value_length, 0) > end - position:
            raise fail(f"value length {value_length} does not fit its record")
        records.append(RawRecord(start, end, base_offset + offset_delta, timestamp_delta, key, value_length == -1))
        position = end
    if position != len(payload):
        raise CorruptRecordError(f"{len(payload) - position} bytes after the last of {max(record_count, 0)} records")
    return records


def _varint(data: bytes, position: int, max_bytes: int, fail) -> tuple[int, int]:
    """A zigzag varint of at most `max_bytes`: 5 (32 bits) or 10 (a varlong, its low 64 bits, as Kafka's reader)."""
    unsigned = 0
    for i in range(max_bytes):
        if position >= len(data):
            raise fail("a field runs past the payload")
        byte = data[position]
        position += 1
        unsigned |= (byte & 0x7F) << (7 * i)
        if byte < 0x80:
            if max_bytes == 5 and unsigned > 0xFFFFFFFF:
                raise fail("varint wider than 32 bits")
            unsigned &= 0xFFFFFFFFFFFFFFFF
            return (unsigned >> 1) ^ -(unsigned & 1), position
    raise fail(f"{'varint' if max_bytes == 5 else 'varlong'} longer than {max_bytes} bytes")
