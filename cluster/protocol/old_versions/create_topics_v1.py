"""CreateTopics v1 response (API 19): v0's, with an error message per topic
and still no throttle time (v2 adds it). The v1 request is kio's v2 layout.

No `from __future__ import annotations`: kio reads field types at run time.
"""

from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

from kafkactl.cluster.protocol.kio_entity import ApiVersion, Response, ResponsePart

CREATE_TOPICS_V1 = ApiVersion(19, 1, flexible=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class CreatableTopicResult(ResponsePart, api=CREATE_TOPICS_V1):
    name: str = field(metadata={"kafka_type": "string"})
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    error_message: str | None = field(metadata={"kafka_type": "string"})


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateTopicsResponse(Response, api=CREATE_TOPICS_V1):
    topics: tuple[CreatableTopicResult, ...]
