"""CreateTopics v0 and v1 (API 19): v0 has no validate_only and answers
only an error code per topic; v1 adds validate_only (its request is kio's
v2 layout: "version 2 is the same as version 1") and the error message.

Kafka's AdminClient of 0.10.1-0.11 and clients pinned to old brokers send them.

No `from __future__ import annotations`: kio reads field types at run time.
"""

from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode
from kio.static.primitive import i16, i32, i32Timedelta

from kafkactl.cluster.protocol.kio_entity import ApiVersion, Request, RequestPart, Response, ResponsePart

CREATE_TOPICS = 19
CREATE_TOPICS_V0 = ApiVersion(CREATE_TOPICS, 0, flexible=False)
CREATE_TOPICS_V1 = ApiVersion(CREATE_TOPICS, 1, flexible=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class CreatableReplicaAssignment(RequestPart, api=CREATE_TOPICS_V0):
    partition_index: i32 = field(metadata={"kafka_type": "int32"})
    broker_ids: tuple[i32, ...] = field(metadata={"kafka_type": "int32"}, default=())


@dataclass(frozen=True, slots=True, kw_only=True)
class CreatableTopicConfig(RequestPart, api=CREATE_TOPICS_V0):
    name: str = field(metadata={"kafka_type": "string"})
    value: str | None = field(metadata={"kafka_type": "string"})


@dataclass(frozen=True, slots=True, kw_only=True)
class CreatableTopic(RequestPart, api=CREATE_TOPICS_V0):
    name: str = field(metadata={"kafka_type": "string"})
    num_partitions: i32 = field(metadata={"kafka_type": "int32"})
    replication_factor: i16 = field(metadata={"kafka_type": "int16"})
    assignments: tuple[CreatableReplicaAssignment, ...]
    configs: tuple[CreatableTopicConfig, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateTopicsRequest(Request, api=CREATE_TOPICS_V0):
    topics: tuple[CreatableTopic, ...]
    timeout: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})


@dataclass(frozen=True, slots=True, kw_only=True)
class CreatableTopicResult(ResponsePart, api=CREATE_TOPICS_V0):
    name: str = field(metadata={"kafka_type": "string"})
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateTopicsResponse(Response, api=CREATE_TOPICS_V0):
    topics: tuple[CreatableTopicResult, ...]
