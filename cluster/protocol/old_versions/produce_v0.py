"""Produce v0 (API 0): the request of v0-v2 and the response of v0.

Read only to answer UNSUPPORTED_VERSION in the client's own layout
(handlers/unsupported_version.py): the records of v0-v2 are message sets of
magic 0 or 1, which this broker's log (magic 2 only) does not take.

No `from __future__ import annotations`: kio reads field types at run time.
"""

from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode
from kio.schema.types import TopicName
from kio.static.primitive import Records, i16, i32, i32Timedelta, i64

from kafkactl.cluster.protocol.kio_entity import ApiVersion, Request, RequestPart, Response, ResponsePart

PRODUCE = 0
PRODUCE_V0 = ApiVersion(PRODUCE, 0, flexible=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionProduceData(RequestPart, api=PRODUCE_V0):
    index: i32 = field(metadata={"kafka_type": "int32"})
    records: Records | None = field(metadata={"kafka_type": "records"})
    """A message set (magic 0 or 1), not a record batch."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicProduceData(RequestPart, api=PRODUCE_V0):
    name: TopicName = field(metadata={"kafka_type": "string"})
    partition_data: tuple[PartitionProduceData, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ProduceRequest(Request, api=PRODUCE_V0):
    acks: i16 = field(metadata={"kafka_type": "int16"})
    timeout: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    topic_data: tuple[TopicProduceData, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionProduceResponse(ResponsePart, api=PRODUCE_V0):
    index: i32 = field(metadata={"kafka_type": "int32"})
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    base_offset: i64 = field(metadata={"kafka_type": "int64"})


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicProduceResponse(ResponsePart, api=PRODUCE_V0):
    name: TopicName = field(metadata={"kafka_type": "string"})
    partition_responses: tuple[PartitionProduceResponse, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ProduceResponse(Response, api=PRODUCE_V0):
    responses: tuple[TopicProduceResponse, ...]
