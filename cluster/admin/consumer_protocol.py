"""Reading the bytes a consumer group's members carry in DescribeGroups.

Groups of protocol type "consumer" put the consumer protocol's own structs
in the member metadata and assignment (Kafka's ConsumerProtocolAssignment and
ConsumerProtocolSubscription). Every version so far starts the same way:

    Assignment v0-v3:    version int16, assigned_partitions [topic string,
                         partitions [int32]], user_data nullable bytes
    Subscription v0-v3:  version int16, topics [string], user_data nullable
                         bytes, then v1+ owned_partitions (not read here)

A newer version may append fields; like Kafka's deserializer this reads the
prefix it knows and ignores the rest. The bytes come from whoever joined the
group, so every length is checked against what is left before anything is
allocated: a malformed or hostile member gives `MalformedProtocolData`,
never a huge list or an exception from deep inside.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

CONSUMER_PROTOCOL_TYPE = "consumer"


class MalformedProtocolData(ValueError):
    """The bytes are not a consumer protocol struct."""


@dataclass(frozen=True, slots=True)
class ConsumerAssignment:
    version: int
    partitions: dict[str, list[int]]      # topic -> partitions, in the order given
    user_data_bytes: int                  # -1: null


@dataclass(frozen=True, slots=True)
class ConsumerSubscription:
    version: int
    topics: list[str]


class _Reader:
    """A cursor over untrusted bytes; every read is bounds-checked."""

    def __init__(self, data: bytes) -> None:
        self.data = bytes(data)
        self.position = 0

    def remaining(self) -> int:
        return len(self.data) - self.position

    def take(self, size: int) -> bytes:
        if size < 0 or size > self.remaining():
            raise MalformedProtocolData(f"{size} bytes wanted at byte {self.position}, "
                                        f"{self.remaining()} left")
        chunk = self.data[self.position:self.position + size]
        self.position += size
        return chunk

    def int16(self) -> int:
        return struct.unpack(">h", self.take(2))[0]

    def int32(self) -> int:
        return struct.unpack(">i", self.take(4))[0]

    def string(self) -> str:
        size = self.int16()
        if size < 0:
            raise MalformedProtocolData(f"null string at byte {self.position - 2}")
        try:
            return self.take(size).decode("utf-8")
        except UnicodeDecodeError as error:
            raise MalformedProtocolData(f"string is not UTF-8: {error}") from None

    def count(self, item_bytes: int) -> int:
        """An array length; each item takes at least `item_bytes`, so a length
        the remaining bytes cannot hold is refused before any item is read."""
        count = self.int32()
        if count < 0 or count * item_bytes > self.remaining():
            raise MalformedProtocolData(f"array of {count} items with {self.remaining()} bytes left")
        return count

    def nullable_bytes_size(self) -> int:
        size = self.int32()
        if size == -1:
            return -1
        self.take(size)
        return size


def decode_assignment(data: bytes) -> ConsumerAssignment:
    """The consumer protocol's assignment (any version; the v0-v3 layout is read)."""
    reader = _Reader(data)
    version = reader.int16()
    if version < 0:
        raise MalformedProtocolData(f"assignment version {version}")
    partitions: dict[str, list[int]] = {}
    for _ in range(reader.count(item_bytes=2 + 4)):   # topic string, partitions array
        topic = reader.string()
        partitions.setdefault(topic, []).extend(reader.int32() for _ in range(reader.count(item_bytes=4)))
    # user_data is optional on the wire when a client wrote an old layout.
    user_data = reader.nullable_bytes_size() if reader.remaining() >= 4 else -1
    return ConsumerAssignment(version, partitions, user_data)


def decode_subscription(data: bytes) -> ConsumerSubscription:
    """The topics a consumer subscribed to (the start of any subscription version)."""
    reader = _Reader(data)
    version = reader.int16()
    if version < 0:
        raise MalformedProtocolData(f"subscription version {version}")
    topics = [reader.string() for _ in range(reader.count(item_bytes=2))]
    return ConsumerSubscription(version, topics)


def describe_assignment(protocol_type: str, data: bytes) -> dict:
    """A member's assignment as plain data for output: the decoded partitions
    of a consumer group's member, else only the size of the raw bytes."""
    if protocol_type != CONSUMER_PROTOCOL_TYPE or not data:
        return {"decoded": False, "size_bytes": len(data), "partitions": {}}
    try:
        assignment = decode_assignment(data)
    except MalformedProtocolData as error:
        return {"decoded": False, "size_bytes": len(data), "partitions": {}, "error": str(error)}
    return {"decoded": True, "size_bytes": len(data), "version": assignment.version,
            "partitions": {t: sorted(p) for t, p in sorted(assignment.partitions.items())}}


def encode_assignment(partitions: dict[str, list[int]], version: int = 0, user_data: bytes | None = None) -> bytes:
    """The v0-v3 layout; for tests and tools that need a member's bytes."""
    out = [struct.pack(">hi", version, len(partitions))]
    for topic, indexes in partitions.items():
        name = topic.encode()
        out.append(struct.pack(">h", len(name)) + name + struct.pack(">i", len(indexes)))
        out.append(b"".join(struct.pack(">i", p) for p in indexes))
    out.append(struct.pack(">i", -1) if user_data is None else struct.pack(">i", len(user_data)) + user_data)
    return b"".join(out)
