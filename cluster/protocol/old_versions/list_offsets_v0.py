"""ListOffsets v0 (API 2): what kafka-python 1.4.x asks watermarks with.

Each partition names `max_num_offsets`; the answer is a list of offsets
(`old_style_offsets`), newest first (handlers/list_offsets.py).

No `from __future__ import annotations`: kio reads field types at run time.
"""

from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i32, i64

from kafkactl.cluster.protocol.kio_entity import ApiVersion, Request, RequestPart, Response, ResponsePart

LIST_OFFSETS = 2
LIST_OFFSETS_V0 = ApiVersion(LIST_OFFSETS, 0, flexible=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class ListOffsetsPartition(RequestPart, api=LIST_OFFSETS_V0):
    partition_index: i32 = field(metadata={"kafka_type": "int32"})
    timestamp: i64 = field(metadata={"kafka_type": "int64"})
    """-1 latest, -2 earliest, else offsets of segments last modified before it."""
    max_num_offsets: i32 = field(metadata={"kafka_type": "int32"}, default=i32(1))


@dataclass(frozen=True, slots=True, kw_only=True)
class ListOffsetsTopic(RequestPart, api=LIST_OFFSETS_V0):
    name: TopicName = field(metadata={"kafka_type": "string"})
    partitions: tuple[ListOffsetsPartition, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ListOffsetsRequest(Request, api=LIST_OFFSETS_V0):
    replica_id: BrokerId = field(metadata={"kafka_type": "int32"})
    topics: tuple[ListOffsetsTopic, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ListOffsetsPartitionResponse(ResponsePart, api=LIST_OFFSETS_V0):
    partition_index: i32 = field(metadata={"kafka_type": "int32"})
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    old_style_offsets: tuple[i64, ...] = field(metadata={"kafka_type": "int64"}, default=())


@dataclass(frozen=True, slots=True, kw_only=True)
class ListOffsetsTopicResponse(ResponsePart, api=LIST_OFFSETS_V0):
    name: TopicName = field(metadata={"kafka_type": "string"})
    partitions: tuple[ListOffsetsPartitionResponse, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ListOffsetsResponse(Response, api=LIST_OFFSETS_V0):
    topics: tuple[ListOffsetsTopicResponse, ...]

