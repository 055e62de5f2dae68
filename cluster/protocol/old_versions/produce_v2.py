"""Produce v2 response (API 0): v1's, with each partition's log append time.

No `from __future__ import annotations`: kio reads field types at run time.
"""

from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode
from kio.schema.types import TopicName
from kio.static.primitive import TZAware, i32, i32Timedelta, i64

from kafkactl.cluster.protocol.kio_entity import ApiVersion, Response, ResponsePart

PRODUCE = 0
PRODUCE_V2 = ApiVersion(PRODUCE, 2, flexible=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionProduceResponse(ResponsePart, api=PRODUCE_V2):
    index: i32 = field(metadata={"kafka_type": "int32"})
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    base_offset: i64 = field(metadata={"kafka_type": "int64"})
    log_append_time: TZAware | None = field(metadata={"kafka_type": "datetime_i64"}, default=None)
    """None is -1 on the wire: no LogAppendTime."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicProduceResponse(ResponsePart, api=PRODUCE_V2):
    name: TopicName = field(metadata={"kafka_type": "string"})
    partition_responses: tuple[PartitionProduceResponse, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ProduceResponse(Response, api=PRODUCE_V2):
    responses: tuple[TopicProduceResponse, ...]
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
