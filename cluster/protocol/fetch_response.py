"""A follower's view of a Fetch v12 response, without copying record bytes.

The replica fetcher receives up to replica.fetch.response.max.bytes of
record batches per response. kio's reader copies each partition's records
into a new `bytes`, and builds an object per field; the follower needs only
a few fields and appends the records as received (after their CRC check).
This reader walks the response once and returns each partition's records as
a memoryview of the received frame: no copy and no allocation per byte, so
the bytes are touched only by the CRC check and the write to the segment.

The views are valid as long as the frame they point into is not reused:
the fetcher applies a response before it sends its next request (see
BrokerClient, which reuses its receive buffer).

Layout (flexible version: compact arrays and strings are uvarint length + 1,
every struct ends with tagged fields):
    throttle_time_ms int32, error_code int16, session_id int32,
    responses [topic string, partitions [partition_index int32, error_code int16,
      high_watermark int64, last_stable_offset int64, log_start_offset int64,
      aborted_transactions nullable [producer_id int64, first_offset int64, tags],
      preferred_read_replica int32, records nullable bytes, tags (diverging_epoch,
      current_leader, snapshot_id)], tags], tags
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from kio.schema.errors import ErrorCode

from kafkactl.cluster.protocol.framing import FrameError, encode_unsigned_varint

FETCH_API_KEY = 1
VERSION = 12

_HEAD = struct.Struct(">ihi")                 # throttle_time_ms, error_code, session_id
_PARTITION_HEAD = struct.Struct(">ihqqq")     # partition_index .. log_start_offset
_INT32 = struct.Struct(">i")
_ABORTED_SIZE = 16                            # producer_id int64, first_offset int64

# ErrorCode(value) goes through Enum's lookup machinery; a dict is one probe.
_ERRORS = {code.value: code for code in ErrorCode}


class PartitionView(NamedTuple):
    partition_index: int
    error_code: ErrorCode
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    records: memoryview | None


class TopicView(NamedTuple):
    topic: str
    partitions: list[PartitionView]


class FetchResponseView(NamedTuple):
    throttle_time_ms: int
    error_code: ErrorCode
    session_id: int
    responses: list[TopicView]


class FetchResponseV12:
    """Stands in for kio's response class where BrokerClient decodes a
    response (`response_cls`): same API key, version and header flexibility,
    and `read(frame, position) -> (view, size)` instead of kio's reader."""

    __api_key__ = FETCH_API_KEY
    __version__ = VERSION
    __flexible__ = True

    @staticmethod
    def read(frame, position: int) -> tuple[FetchResponseView, int]:
        return read_fetch_response(frame, position)


def read_fetch_response(frame, position: int = 0) -> tuple[FetchResponseView, int]:
    """The response body starting at `position` of `frame` (bytes, bytearray
    or memoryview) and its size in bytes; FrameError if malformed."""
    view = memoryview(frame)
    try:
        return _read(view, position)
    except (struct.error, IndexError) as error:   # ran past the end of the frame
        raise FrameError(f"truncated FetchResponse v{VERSION}: {error}") from None


def _read(view: memoryview, start: int) -> tuple[FetchResponseView, int]:
    end = len(view)
    throttle_time_ms, error_code, session_id = _HEAD.unpack_from(view, start)
    position = start + _HEAD.size
    topic_count, position = _length(view, position)
    topics = []
    for _ in range(topic_count):
        name_length, position = _length(view, position)
        if name_length < 0 or position + name_length > end:
            raise FrameError("bad topic name in FetchResponse")
        topic = str(view[position:position + name_length], "utf-8")
        position += name_length
        partition_count, position = _length(view, position)
        partitions = []
        for _ in range(partition_count):
            index, p_error, high_watermark, last_stable, log_start = _PARTITION_HEAD.unpack_from(view, position)
            position += _PARTITION_HEAD.size
            aborted_count, position = _length(view, position)
            for _ in range(max(aborted_count, 0)):   # a follower never needs them: skipped
                position = _skip_tags(view, position + _ABORTED_SIZE)
            position += _INT32.size                   # preferred_read_replica
            records_length, position = _length(view, position)
            records = None
            if records_length >= 0:
                if position + records_length > end:
                    raise FrameError("records run past the end of the FetchResponse")
                records = view[position:position + records_length]
                position += records_length
            position = _skip_tags(view, position)
            partitions.append(PartitionView(index, _error(p_error), high_watermark, last_stable,
                                            log_start, records))
        position = _skip_tags(view, position)
        topics.append(TopicView(topic, partitions))
    position = _skip_tags(view, position)
    if position > end:
        raise FrameError("FetchResponse runs past the end of the frame")
    return FetchResponseView(throttle_time_ms, _error(error_code), session_id, topics), position - start


def _error(value: int) -> ErrorCode:
    code = _ERRORS.get(value)
    return code if code is not None else ErrorCode(value)   # ErrorCode raises for an unknown code


def _uvarint(view: memoryview, position: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = view[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, position
        shift += 7
        if shift > 28:
            raise FrameError("unsigned varint longer than 5 bytes")


def _length(view: memoryview, position: int) -> tuple[int, int]:
    """A compact length: uvarint of length + 1, 0 for null (returned as -1)."""
    value, position = _uvarint(view, position)
    return value - 1, position


def _skip_tags(view: memoryview, position: int) -> int:
    count, position = _uvarint(view, position)
    for _ in range(count):
        _, position = _uvarint(view, position)
        size, position = _uvarint(view, position)
        position += size
    return position


# --- writing (the leader) ---------------------------------------------------------

class PartitionToSend(NamedTuple):
    partition_index: int
    error_code: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    region: object | None    # codec.FileRegionLike with length > 0, or None for no records


_PARTITION_FIXED = struct.Struct(">ihqqq")
_NO_ABORTED_AND_REPLICA = b"\x00" + struct.pack(">i", -1)   # aborted_transactions null, preferred_read_replica -1
_EMPTY_RECORDS_AND_TAGS = b"\x01\x00"                        # records of length 0, no tagged fields
_NO_TAGS = b"\x00"


def encode_fetch_response(correlation_id: int, error_code: int, session_id: int,
                          topics: list[tuple[str, list[PartitionToSend]]]):
    """A Fetch v12 response frame, as kio would write it followed by
    codec.splice_records, without building kio objects or searching for
    placeholders: every follower fetch is answered in this version, ~2 per
    produce request at replication factor 3."""
    from kafkactl.cluster.protocol.codec import SplicedResponse   # codec imports this module

    parts: list = []
    size = 0
    pending = bytearray(struct.pack(">i", correlation_id))
    pending += _NO_TAGS                                           # response header v1
    pending += _HEAD.pack(0, error_code, session_id)              # throttle_time_ms 0
    pending += _uvarint_bytes(len(topics) + 1)
    for topic, partitions in topics:
        name = topic.encode()
        pending += _uvarint_bytes(len(name) + 1)
        pending += name
        pending += _uvarint_bytes(len(partitions) + 1)
        for p in partitions:
            pending += _PARTITION_FIXED.pack(p.partition_index, p.error_code, p.high_watermark,
                                             p.last_stable_offset, p.log_start_offset)
            pending += _NO_ABORTED_AND_REPLICA
            if p.region is None:
                pending += _EMPTY_RECORDS_AND_TAGS
                continue
            pending += _uvarint_bytes(p.region.length + 1)
            parts.append(bytes(pending))
            size += len(pending)
            parts.append(p.region)
            size += p.region.length
            pending = bytearray(_NO_TAGS)                         # the partition's tagged fields
        pending += _NO_TAGS                                       # the topic's
    pending += _NO_TAGS                                           # the response's
    parts.append(bytes(pending))
    size += len(pending)
    parts.insert(0, struct.pack(">i", size))
    return SplicedResponse(parts, size + 4)


def _uvarint_bytes(value: int) -> bytes:
    # Counts and lengths below 128 are most of them: one lookup, no encoding.
    return _SMALL_UVARINTS[value] if value < 0x80 else encode_unsigned_varint(value)


_SMALL_UVARINTS = [bytes([value]) for value in range(0x80)]
