"""Fetch v1 response (API 1), also that of v2 and v3: the throttle time, then v0's.

No `from __future__ import annotations`: kio reads field types at run time.
"""

from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode
from kio.schema.types import TopicName
from kio.static.primitive import Records, i32, i32Timedelta, i64

from kafkactl.cluster.protocol.kio_entity import ApiVersion, Response, ResponsePart

FETCH = 1
FETCH_V1 = ApiVersion(FETCH, 1, flexible=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionData(ResponsePart, api=FETCH_V1):
    partition_index: i32 = field(metadata={"kafka_type": "int32"})
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    high_watermark: i64 = field(metadata={"kafka_type": "int64"})
    records: Records | None = field(metadata={"kafka_type": "records"})


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchableTopicResponse(ResponsePart, api=FETCH_V1):
    topic: TopicName = field(metadata={"kafka_type": "string"})
    partitions: tuple[PartitionData, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchResponse(Response, api=FETCH_V1):
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    responses: tuple[FetchableTopicResponse, ...]
