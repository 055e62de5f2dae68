"""Produce request bodies (v3-v9) read without copying record bytes.

A produce request is almost all record batches (~1 MiB per request with
librdkafka's defaults). kio's reader copies each partition's records into a
new `bytes`; at replication speeds that allocation and copy cost as much as
the CRC check. This reader returns each partition's records as a read-only
memoryview of the request frame; the log writes the batches from there
(Log.append_as_leader never changes nor keeps the buffer).

The views are valid while the frame is: the connection reuses its receive
buffer for its next request (network.FrameReader), which it reads only after
this one was answered, so the produce handler must not keep them.

Layout (v9 is flexible: compact lengths are uvarint length + 1, each struct
ends with tagged fields; v3-v8 use int16 string and int32 array/bytes lengths):
    transactional_id nullable string, acks int16, timeout_ms int32,
    topic_data [name string, partition_data [index int32, records nullable bytes]]
"""

from __future__ import annotations

import datetime
import struct
from typing import NamedTuple

from kafkactl.cluster.protocol.framing import FrameError

PRODUCE_API_KEY = 0
MIN_VERSION = 3
MAX_VERSION = 9
FIRST_FLEXIBLE_VERSION = 9

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_ACKS_TIMEOUT = struct.Struct(">hi")


class PartitionProduceData(NamedTuple):
    index: int
    records: memoryview | None


class TopicProduceData(NamedTuple):
    name: str
    partition_data: list[PartitionProduceData]


class ProduceRequest(NamedTuple):
    """The fields of kio's ProduceRequest, with records as views of the frame."""

    transactional_id: str | None
    acks: int
    timeout: datetime.timedelta
    topic_data: list[TopicProduceData]


def read_produce_request(frame, position: int, version: int) -> tuple[ProduceRequest, int]:
    """The body starting at `position` of `frame` and its size; FrameError if malformed."""
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise ValueError(f"Produce v{version} is not read here")
    view = memoryview(frame)
    if view.readonly is False:
        view = view.toreadonly()   # the views handed out must not allow writes into the frame
    reader = _Reader(view, position, version >= FIRST_FLEXIBLE_VERSION)
    try:
        request = reader.request()
    except (struct.error, IndexError) as error:   # ran past the end of the frame
        raise FrameError(f"truncated ProduceRequest v{version}: {error}") from None
    except UnicodeDecodeError:
        raise FrameError(f"ProduceRequest v{version}: a string is not UTF-8") from None
    if reader.position > len(view):
        raise FrameError(f"truncated ProduceRequest v{version}")
    return request, reader.position - position


class _Reader:
    __slots__ = ("view", "position", "flexible")

    def __init__(self, view: memoryview, position: int, flexible: bool) -> None:
        self.view = view
        self.position = position
        self.flexible = flexible

    def request(self) -> ProduceRequest:
        transactional_id = self.string(nullable=True)
        acks, timeout_ms = _ACKS_TIMEOUT.unpack_from(self.view, self.position)
        self.position += _ACKS_TIMEOUT.size
        topics = []
        for _ in range(self.array_length()):
            name = self.string(nullable=False)
            partitions = []
            for _ in range(self.array_length()):
                (index,) = _INT32.unpack_from(self.view, self.position)
                self.position += 4
                records = self.records()
                self.skip_tags()
                partitions.append(PartitionProduceData(index, records))
            self.skip_tags()
            topics.append(TopicProduceData(name, partitions))
        self.skip_tags()
        return ProduceRequest(transactional_id, acks, datetime.timedelta(milliseconds=timeout_ms), topics)

    def length(self, prefix: struct.Struct) -> int:
        """A length: compact (uvarint, 0 = null → -1) or fixed-size; -1 is null."""
        if self.flexible:
            return self.uvarint() - 1
        (value,) = prefix.unpack_from(self.view, self.position)
        self.position += prefix.size
        return value

    def array_length(self) -> int:
        count = self.length(_INT32)
        if count < 0:
            raise FrameError("null array where ProduceRequest requires one")
        return count

    def string(self, nullable: bool) -> str | None:
        length = self.length(_INT16)
        if length < 0:
            if nullable:
                return None
            raise FrameError("null string where ProduceRequest requires one")
        end = self.position + length
        if end > len(self.view):
            raise FrameError("string runs past the end of the ProduceRequest")
        text = str(self.view[self.position:end], "utf-8")
        self.position = end
        return text

    def records(self) -> memoryview | None:
        length = self.length(_INT32)
        if length < 0:
            return None
        end = self.position + length
        if end > len(self.view):
            raise FrameError("records run past the end of the ProduceRequest")
        records = self.view[self.position:end]
        self.position = end
        return records

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            byte = self.view[self.position]
            self.position += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
            shift += 7
            if shift > 28:
                raise FrameError("unsigned varint longer than 5 bytes")

    def skip_tags(self) -> None:
        if not self.flexible:
            return
        for _ in range(self.uvarint()):
            self.uvarint()           # tag
            size = self.uvarint()    # read before adding: uvarint() moves the position
            self.position += size    # the value, skipped
