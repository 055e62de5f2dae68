"""The records of `__consumer_offsets`, in Kafka's exact key and value schemas,
so the topic reads as Kafka's and Kafka's tools read ours.

Every record's key starts with an int16 schema version that says what it is:
- 0 and 1: a committed offset. Key: group (string), topic (string),
  partition (int32). Value (versions 0-3, the latest Kafka 2.8 writes):
    v0: offset int64, metadata string, commit_timestamp int64
    v1: offset int64, metadata string, commit_timestamp int64, expire_timestamp int64
    v2: offset int64, metadata string, commit_timestamp int64
    v3: offset int64, leader_epoch int32, metadata string, commit_timestamp int64
- 2: a group's metadata. Key: group (string). Value (versions 0-3):
    v0: protocol_type string, generation int32, protocol string?, leader string?,
        members [member_id, client_id, client_host, session_timeout int32,
                 subscription bytes, assignment bytes]
    v1: members gain rebalance_timeout int32 (before session_timeout)
    v2: current_state_timestamp int64 after leader
    v3: members gain group_instance_id string? (after member_id)
A null value (a tombstone) deletes the key: an offset or a whole group.

Strings are an int16 length and UTF-8 (-1: null, where `?` allows it),
bytes an int32 length. Written: key v1 / v2, values v3 (what Kafka 2.8
writes). Read: every version above. A record that does not parse (a length
past the end, a null where none is allowed, bytes left over, an unknown
version) raises RecordFormatError naming the field; nothing is allocated by
a declared length before it is checked against the bytes that remain.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from kafkactl.cluster.errors import KafkaError

OFFSET_KEY_VERSION = 1
GROUP_KEY_VERSION = 2
OFFSET_VALUE_VERSION = 3
GROUP_VALUE_VERSION = 3
NO_LEADER_EPOCH = -1
NO_EXPIRE_TIMESTAMP = -1

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")


class RecordFormatError(KafkaError):
    """A `__consumer_offsets` record that does not parse."""
    error_code = ErrorCode.corrupt_message


@dataclass(frozen=True, slots=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupKey:
    group: str


@dataclass(frozen=True, slots=True)
class OffsetValue:
    offset: int
    metadata: str
    commit_timestamp_ms: int
    leader_epoch: int = NO_LEADER_EPOCH
    expire_timestamp_ms: int = NO_EXPIRE_TIMESTAMP    # only version 1 carries it


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    member_id: str
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class GroupValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp_ms: int
    members: tuple[MemberMetadata, ...]


# --- writing

def encode_key(key: OffsetKey | GroupKey) -> bytes:
    if isinstance(key, OffsetKey):
        return (_INT16.pack(OFFSET_KEY_VERSION) + _string(key.group) + _string(key.topic)
                + _INT32.pack(key.partition))
    return _INT16.pack(GROUP_KEY_VERSION) + _string(key.group)


def encode_offset_value(value: OffsetValue) -> bytes:
    """Version 3; version 1 for an offset with an explicit expire timestamp
    (OffsetCommit v2-v4's retention time), the only version carrying it, as Kafka writes."""
    if value.expire_timestamp_ms != NO_EXPIRE_TIMESTAMP:
        return (_INT16.pack(1) + _INT64.pack(value.offset) + _string(value.metadata)
                + _INT64.pack(value.commit_timestamp_ms) + _INT64.pack(value.expire_timestamp_ms))
    return (_INT16.pack(OFFSET_VALUE_VERSION) + _INT64.pack(value.offset) + _INT32.pack(value.leader_epoch)
            + _string(value.metadata) + _INT64.pack(value.commit_timestamp_ms))


def encode_group_value(value: GroupValue) -> bytes:
    parts = [_INT16.pack(GROUP_VALUE_VERSION), _string(value.protocol_type), _INT32.pack(value.generation),
             _string(value.protocol), _string(value.leader), _INT64.pack(value.current_state_timestamp_ms),
             _INT32.pack(len(value.members))]
    for member in value.members:
        parts += [_string(member.member_id), _string(member.group_instance_id), _string(member.client_id),
                  _string(member.client_host), _INT32.pack(member.rebalance_timeout_ms),
                  _INT32.pack(member.session_timeout_ms), _bytes(member.subscription), _bytes(member.assignment)]
    return b"".join(parts)


def _string(text: str | None) -> bytes:
    if text is None:
        return _INT16.pack(-1)
    encoded = text.encode("utf-8")
    if len(encoded) > 0x7FFF:
        raise RecordFormatError(f"a string of {len(encoded)} bytes does not fit an int16 length")
    return _INT16.pack(len(encoded)) + encoded


def _bytes(data: bytes) -> bytes:
    return _INT32.pack(len(data)) + data


# --- reading

def decode_key(data: bytes) -> OffsetKey | GroupKey:
    reader = Reader(data, "key")
    version = reader.int16("version")
    if version in (0, 1):
        key: OffsetKey | GroupKey = OffsetKey(reader.string("group"), reader.string("topic"),
                                              reader.int32("partition"))
    elif version == 2:
        key = GroupKey(reader.string("group"))
    else:
        raise RecordFormatError(f"key: unknown version {version}")
    reader.end()
    return key


def decode_offset_value(data: bytes) -> OffsetValue:
    reader = Reader(data, "offset value")
    version = reader.int16("version")
    if not 0 <= version <= 3:
        raise RecordFormatError(f"offset value: unknown version {version}")
    offset = reader.int64("offset")
    leader_epoch = reader.int32("leader_epoch") if version == 3 else NO_LEADER_EPOCH
    metadata = reader.string("metadata")
    commit_timestamp = reader.int64("commit_timestamp")
    expire_timestamp = reader.int64("expire_timestamp") if version == 1 else NO_EXPIRE_TIMESTAMP
    reader.end()
    return OffsetValue(offset, metadata, commit_timestamp, leader_epoch, expire_timestamp)


def decode_group_value(data: bytes) -> GroupValue:
    reader = Reader(data, "group value")
    version = reader.int16("version")
    if not 0 <= version <= 3:
        raise RecordFormatError(f"group value: unknown version {version}")
    protocol_type = reader.string("protocol_type")
    generation = reader.int32("generation")
    protocol = reader.string("protocol", nullable=True)
    leader = reader.string("leader", nullable=True)
    current_state_timestamp = reader.int64("current_state_timestamp") if version >= 2 else -1
    count = reader.count("members", least_member_size=_least_member_size(version))
    members = tuple(_member(reader, version) for _ in range(count))
    reader.end()
    return GroupValue(protocol_type, generation, protocol, leader, current_state_timestamp, members)


def _member(reader: "Reader", version: int) -> MemberMetadata:
    member_id = reader.string("member_id")
    group_instance_id = reader.string("group_instance_id", nullable=True) if version >= 3 else None
    client_id = reader.string("client_id")
    client_host = reader.string("client_host")
    rebalance_timeout = reader.int32("rebalance_timeout") if version >= 1 else None
    session_timeout = reader.int32("session_timeout")
    if rebalance_timeout is None:       # version 0 had none: Kafka takes the session timeout
        rebalance_timeout = session_timeout
    return MemberMetadata(member_id, client_id, client_host, rebalance_timeout, session_timeout,
                          reader.bytes("subscription"), reader.bytes("assignment"), group_instance_id)


def _least_member_size(version: int) -> int:
    strings = 3 + (1 if version >= 3 else 0)          # each at least its int16 length
    return strings * 2 + 4 + (4 if version >= 1 else 0) + 2 * 4


class Reader:
    __slots__ = ("data", "position", "what")

    def __init__(self, data: bytes, what: str) -> None:
        self.data = memoryview(data)
        self.position = 0
        self.what = what

    def _take(self, size: int, field: str) -> memoryview:
        end = self.position + size
        if size < 0 or end > len(self.data):
            raise RecordFormatError(f"{self.what}: {field} runs past the end of the record")
        chunk = self.data[self.position:end]
        self.position = end
        return chunk

    def int16(self, field: str) -> int:
        return _INT16.unpack(self._take(2, field))[0]

    def int32(self, field: str) -> int:
        return _INT32.unpack(self._take(4, field))[0]

    def int64(self, field: str) -> int:
        return _INT64.unpack(self._take(8, field))[0]

    def string(self, field: str, nullable: bool = False) -> str:
        length = self.int16(field)
        if length < 0:
            if nullable and length == -1:
                return None  # type: ignore[return-value]
            raise RecordFormatError(f"{self.what}: {field} is null, which its schema does not allow")
        try:
            return str(self._take(length, field), "utf-8")
        except UnicodeDecodeError:
            raise RecordFormatError(f"{self.what}: {field} is not UTF-8") from None

    def bytes(self, field: str) -> bytes:
        length = self.int32(field)
        if length < 0:
            raise RecordFormatError(f"{self.what}: {field} is null, which its schema does not allow")
        return bytes(self._take(length, field))

    def count(self, field: str, least_member_size: int) -> int:
        count = self.int32(field)
        if count < 0 or count * least_member_size > len(self.data) - self.position:
            raise RecordFormatError(f"{self.what}: {field} declares {count} entries, more than the record holds")
        return count

    def end(self) -> None:
        if self.position != len(self.data):
            raise RecordFormatError(f"{self.what}: {len(self.data) - self.position} bytes left over")
