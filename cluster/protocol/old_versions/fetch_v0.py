"""Fetch v0 (API 1): the request of v0-v2 and the response of v0.

Read only to answer UNSUPPORTED_VERSION in the client's own layout
(handlers/unsupported_version.py): a v0-v3 fetcher reads message sets of
magic 0 or 1, and this broker keeps magic 2 batches only.

No `from __future__ import annotations`: kio reads field types at run time.
"""

from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import Records, i32, i32Timedelta, i64

from kafkactl.cluster.protocol.kio_entity import ApiVersion, Request, RequestPart, Response, ResponsePart

FETCH = 1
FETCH_V0 = ApiVersion(FETCH, 0, flexible=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchPartition(RequestPart, api=FETCH_V0):
    partition: i32 = field(metadata={"kafka_type": "int32"})
    fetch_offset: i64 = field(metadata={"kafka_type": "int64"})
    partition_max_bytes: i32 = field(metadata={"kafka_type": "int32"})


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchTopic(RequestPart, api=FETCH_V0):
    topic: TopicName = field(metadata={"kafka_type": "string"})
    partitions: tuple[FetchPartition, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchRequest(Request, api=FETCH_V0):
    replica_id: BrokerId = field(metadata={"kafka_type": "int32"})
    max_wait: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    min_bytes: i32 = field(metadata={"kafka_type": "int32"})
    topics: tuple[FetchTopic, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionData(ResponsePart, api=FETCH_V0):
    partition_index: i32 = field(metadata={"kafka_type": "int32"})
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    high_watermark: i64 = field(metadata={"kafka_type": "int64"})
    records: Records | None = field(metadata={"kafka_type": "records"})


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchableTopicResponse(ResponsePart, api=FETCH_V0):
    topic: TopicName = field(metadata={"kafka_type": "string"})
    partitions: tuple[PartitionData, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchResponse(Response, api=FETCH_V0):
    responses: tuple[FetchableTopicResponse, ...]
