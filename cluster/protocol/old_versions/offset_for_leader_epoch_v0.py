"""OffsetForLeaderEpoch v0 (API 23): the request of v0-v1 and the response of v0.

Followers of Kafka 0.11-2.0 sent it (KIP-101); it has no current leader
epoch to fence with, so it is answered as v2+ with that epoch unset (-1).

No `from __future__ import annotations`: kio reads field types at run time.
"""

from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode
from kio.schema.types import TopicName
from kio.static.primitive import i32, i64

from kafkactl.cluster.protocol.kio_entity import ApiVersion, Request, RequestPart, Response, ResponsePart

OFFSET_FOR_LEADER_EPOCH = 23
OFFSET_FOR_LEADER_EPOCH_V0 = ApiVersion(OFFSET_FOR_LEADER_EPOCH, 0, flexible=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetForLeaderPartition(RequestPart, api=OFFSET_FOR_LEADER_EPOCH_V0):
    partition: i32 = field(metadata={"kafka_type": "int32"})
    leader_epoch: i32 = field(metadata={"kafka_type": "int32"})


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetForLeaderTopic(RequestPart, api=OFFSET_FOR_LEADER_EPOCH_V0):
    topic: TopicName = field(metadata={"kafka_type": "string"})
    partitions: tuple[OffsetForLeaderPartition, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetForLeaderEpochRequest(Request, api=OFFSET_FOR_LEADER_EPOCH_V0):
    topics: tuple[OffsetForLeaderTopic, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class EpochEndOffset(ResponsePart, api=OFFSET_FOR_LEADER_EPOCH_V0):
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    partition: i32 = field(metadata={"kafka_type": "int32"})
    end_offset: i64 = field(metadata={"kafka_type": "int64"}, default=i64(-1))


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetForLeaderTopicResult(ResponsePart, api=OFFSET_FOR_LEADER_EPOCH_V0):
    topic: TopicName = field(metadata={"kafka_type": "string"})
    partitions: tuple[EpochEndOffset, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetForLeaderEpochResponse(Response, api=OFFSET_FOR_LEADER_EPOCH_V0):
    topics: tuple[OffsetForLeaderTopicResult, ...]
