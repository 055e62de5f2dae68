"""What an append must be before it is written: the leader's and the follower's checks,
the leader's offsets and epoch, and when the active segment rolls.

Rules:
- a leader accepts a produce payload only if every batch passes
  (check_leader_batches: frame and CRC, then Kafka's LogValidator rules for
  the records, record_validation.py, including K1: no record without a key
  on a compacted log); nothing is written otherwise. The
  check takes no lock: the Log runs it before taking its own, since the
  record pass is the costly part of an append;
- the leader assigns offsets from the log end offset and stamps its epoch in
  each batch's first 16 bytes, outside the CRC (stamp_as_leader): the rest
  of the payload goes to the file as received, never copied nor changed, so
  it may be a read-only view of the request. Only LogAppendTime, which
  changes bytes under the CRC, works on a copy;
- a follower appends the leader's batches as they are, after checking frame,
  CRC and that offsets strictly increase (check_follower_batches); an
  incomplete trailing batch is left for the next fetch. max.message.bytes is
  not applied: the leader accepted them;
- a segment rolls (should_roll) by segment.bytes, by segment.ms (Kafka's
  rule: see LogSegment.time_waited_for_roll), when an index is full, or when
  an offset would not fit a relative index entry; an empty segment takes
  any append, even an oversized one.

Pure functions over bytes and headers: the Log calls them and keeps the state.
"""

from __future__ import annotations

from typing import NamedTuple

from kafkactl.cluster.log.config import LogConfig
from kafkactl.cluster.log.errors import OffsetsOutOfOrderError
from kafkactl.cluster.log.segment import LogSegment
from kafkactl.cluster.protocol.record_batch import (
    INT32_MAX,
    BatchHeader,
    InvalidRecordError,
    assign_offsets,
    rebased_headers,
    stamp_log_append_time,
    stamped_parts,
    validate_batches,
)
from kafkactl.cluster.protocol.record_validation import validate_produce_records

LOG_APPEND_TIME = "LogAppendTime"

Payload = bytes | bytearray | memoryview
Appendable = Payload | list   # one buffer, or buffers written in order (stamped_parts)


class AppendInfo(NamedTuple):
    first_offset: int
    last_offset: int
    max_timestamp: int
    record_count: int
    log_append_time_ms: int = -1  # the broker's timestamp under LogAppendTime, else -1


def check_leader_batches(records: Payload, config: LogConfig, topic_partition: str = "") -> list[BatchHeader]:
    """The headers of a produce payload every batch of which the leader
    accepts; on a compacted log (cleanup.policy has compact) every record
    needs a key, and `topic_partition` names the log in that refusal. Raises
    the record_batch errors (CorruptRecordError, InvalidRecordError,
    RecordTooLargeError, ...) and record_validation.RecordValidationError."""
    headers = validate_batches(records, config.max_message_bytes)
    if not headers:
        raise InvalidRecordError("a produce payload needs at least one record batch")
    validate_produce_records(records, headers, config.message_timestamp_type == LOG_APPEND_TIME,
                             topic_partition if config.compact else None)
    return headers


def stamp_as_leader(records: Payload, headers: list[BatchHeader], first_offset: int, leader_epoch: int,
                    now: int, config: LogConfig) -> tuple[Appendable, list[BatchHeader], int]:
    """(what to write, the batches' new headers, the LogAppendTime or -1) for
    checked `records` whose first batch gets offset `first_offset`."""
    if config.message_timestamp_type == LOG_APPEND_TIME:
        data = bytearray(records)
        assign_offsets(data, headers, first_offset, leader_epoch)
        return data, stamp_log_append_time(data, rebased_headers(headers, first_offset, leader_epoch), now), now
    return (stamped_parts(records, headers, first_offset, leader_epoch),
            rebased_headers(headers, first_offset, leader_epoch), -1)


def check_follower_batches(records: Payload) -> list[BatchHeader]:
    """The headers of the whole batches of a fetched payload (none: []);
    raises the record_batch errors, or OffsetsOutOfOrderError."""
    headers = validate_batches(records, INT32_MAX, strict_counts=False, allow_partial_tail=True)
    for previous, header in zip(headers, headers[1:]):
        if header.base_offset <= previous.last_offset:
            raise OffsetsOutOfOrderError(
                f"batch at offset {header.base_offset} does not follow offset {previous.last_offset}")
    return headers


def should_roll(active: LogSegment, config: LogConfig, size_bytes: int, max_timestamp: int,
                last_offset: int, now: int) -> bool:
    """Whether an append of `size_bytes` ending at `last_offset` needs a new segment."""
    if active.size_bytes == 0:
        return False  # an empty segment takes any append, even an oversized one
    return (active.size_bytes > config.segment_bytes - size_bytes
            or active.time_waited_for_roll(now, max_timestamp) > config.segment_ms
            or active.offset_index.is_full
            or active.time_index.is_full
            or last_offset - active.base_offset > INT32_MAX)


def append_info(headers: list[BatchHeader], log_append_time_ms: int) -> AppendInfo:
    return AppendInfo(
        first_offset=headers[0].base_offset,
        last_offset=headers[-1].last_offset,
        max_timestamp=max(header.max_timestamp for header in headers),
        record_count=sum(header.record_count for header in headers),
        log_append_time_ms=log_append_time_ms,
    )
