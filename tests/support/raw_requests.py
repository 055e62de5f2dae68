"""Requests and record batches written from the spec, for sending exactly the
bytes a test means (over support.wire.WireClient)."""

from __future__ import annotations

import struct
import time


def fetch_request(topic: str, offset: int, max_wait_ms: int, min_bytes: int = 1,
                  partition: int = 0, max_bytes: int = 1 << 20, version: int = 11):
    """A consumer's Fetch (replica id -1) for one partition."""
    import datetime
    import sys as _sys

    from kio.index import load_request_schema
    from kio.schema.types import BrokerId, TopicName

    cls = load_request_schema(1, version)
    module = _sys.modules[cls.__module__]
    fields = {f for f in cls.__dataclass_fields__}
    values = dict(replica_id=BrokerId(-1), max_wait=datetime.timedelta(milliseconds=max_wait_ms),
                  min_bytes=min_bytes, max_bytes=max_bytes, isolation_level=0, session_id=0,
                  session_epoch=-1, forgotten_topics_data=(), rack_id="",
                  topics=(module.FetchTopic(topic=TopicName(topic), partitions=(
                      module.FetchPartition(partition=partition, current_leader_epoch=-1,
                                            fetch_offset=offset, log_start_offset=-1,
                                            partition_max_bytes=max_bytes),)),))
    return cls(**{k: v for k, v in values.items() if k in fields})


def _varint(value: int) -> bytes:
    """Zigzag varint, as record fields use."""
    value = (value << 1) ^ (value >> 63)
    out = bytearray()
    while value & ~0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_batch(values: list[bytes], producer_id: int = -1, producer_epoch: int = -1,
                 base_sequence: int = -1, timestamp_ms: int | None = None) -> bytes:
    """An uncompressed magic-v2 record batch (offsets from 0), written from the spec."""
    import crc32c

    timestamp = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
    records = bytearray()
    for delta, value in enumerate(values):
        body = (b"\x00" + _varint(0) + _varint(delta) + _varint(-1)  # attributes, ts, offset, null key
                + _varint(len(value)) + value + _varint(0))           # value, no headers
        records += _varint(len(body)) + body
    after_crc = struct.pack(">hiqqqhii", 0, len(values) - 1, timestamp, timestamp, producer_id,
                            producer_epoch, base_sequence, len(values)) + records
    crc = crc32c.crc32c(after_crc)
    after_length = struct.pack(">ibI", -1, 2, crc) + after_crc
    return struct.pack(">qi", 0, len(after_length)) + after_length
