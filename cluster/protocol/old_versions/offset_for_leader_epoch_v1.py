"""OffsetForLeaderEpoch v1 response (API 23): v0's, with the leader epoch found.

No `from __future__ import annotations`: kio reads field types at run time.
"""

from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode
from kio.schema.types import TopicName
from kio.static.primitive import i32, i64

from kafkactl.cluster.protocol.kio_entity import ApiVersion, Response, ResponsePart

OFFSET_FOR_LEADER_EPOCH = 23
OFFSET_FOR_LEADER_EPOCH_V1 = ApiVersion(OFFSET_FOR_LEADER_EPOCH, 1, flexible=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class EpochEndOffset(ResponsePart, api=OFFSET_FOR_LEADER_EPOCH_V1):
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    partition: i32 = field(metadata={"kafka_type": "int32"})
    leader_epoch: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))
    end_offset: i64 = field(metadata={"kafka_type": "int64"}, default=i64(-1))


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetForLeaderTopicResult(ResponsePart, api=OFFSET_FOR_LEADER_EPOCH_V1):
    topic: TopicName = field(metadata={"kafka_type": "string"})
    partitions: tuple[EpochEndOffset, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetForLeaderEpochResponse(Response, api=OFFSET_FOR_LEADER_EPOCH_V1):
    topics: tuple[OffsetForLeaderTopicResult, ...]
