"""Request versions Kafka 2.x serves that kio, generated from Kafka 4.x, lacks.

Tools of the ZooKeeper era still send them: kafka-python 1.4.x asks for
watermarks with ListOffsets v0. Written in kio's conventions (frozen
dataclasses with `__type__`, `__version__`, `__flexible__`, `__api_key__`,
`__header_schema__` and a `kafka_type` per field; field order is wire
order), so kio's reader and writer serialize them like its own classes and
protocol/bounds.py checks their lengths like any other request.

| API         | key | version | notes                                                      |
|-------------|-----|---------|------------------------------------------------------------|
| ListOffsets | 2   | 0       | `max_num_offsets` per partition; answers `old_style_offsets` |

No `from __future__ import annotations`: kio reads field types at run time.
"""

from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.errors import ErrorCode
from kio.schema.request_header.v1.header import RequestHeader
from kio.schema.response_header.v0.header import ResponseHeader
from kio.schema.types import BrokerId, TopicName
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32, i64

LIST_OFFSETS = 2


@dataclass(frozen=True, slots=True, kw_only=True)
class ListOffsetsPartition:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = False
    __api_key__: ClassVar[i16] = i16(LIST_OFFSETS)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    partition_index: i32 = field(metadata={"kafka_type": "int32"})
    timestamp: i64 = field(metadata={"kafka_type": "int64"})
    """-1 latest, -2 earliest, else offsets of segments last modified before it."""
    max_num_offsets: i32 = field(metadata={"kafka_type": "int32"}, default=i32(1))


@dataclass(frozen=True, slots=True, kw_only=True)
class ListOffsetsTopic:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = False
    __api_key__: ClassVar[i16] = i16(LIST_OFFSETS)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    name: TopicName = field(metadata={"kafka_type": "string"})
    partitions: tuple[ListOffsetsPartition, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ListOffsetsRequest:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = False
    __api_key__: ClassVar[i16] = i16(LIST_OFFSETS)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    replica_id: BrokerId = field(metadata={"kafka_type": "int32"})
    topics: tuple[ListOffsetsTopic, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ListOffsetsPartitionResponse:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = False
    __api_key__: ClassVar[i16] = i16(LIST_OFFSETS)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    partition_index: i32 = field(metadata={"kafka_type": "int32"})
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    old_style_offsets: tuple[i64, ...] = field(metadata={"kafka_type": "int64"}, default=())


@dataclass(frozen=True, slots=True, kw_only=True)
class ListOffsetsTopicResponse:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = False
    __api_key__: ClassVar[i16] = i16(LIST_OFFSETS)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    name: TopicName = field(metadata={"kafka_type": "string"})
    partitions: tuple[ListOffsetsPartitionResponse, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ListOffsetsResponse:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = False
    __api_key__: ClassVar[i16] = i16(LIST_OFFSETS)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    topics: tuple[ListOffsetsTopicResponse, ...]


_REQUESTS = {(LIST_OFFSETS, 0): ListOffsetsRequest}
_RESPONSES = {(LIST_OFFSETS, 0): ListOffsetsResponse}


def request_class(api_key: int, version: int):
    """The class of an old version, or None when kio has the version."""
    return _REQUESTS.get((api_key, version))


def response_class(api_key: int, version: int):
    return _RESPONSES.get((api_key, version))
