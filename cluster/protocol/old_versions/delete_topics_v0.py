"""DeleteTopics v0 response (API 20): v1's without the throttle time. The
v0 request is kio's v1 layout ("versions 0, 1, 2, and 3 are the same").

No `from __future__ import annotations`: kio reads field types at run time.
"""

from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

from kafkactl.cluster.protocol.kio_entity import ApiVersion, Response, ResponsePart

DELETE_TOPICS_V0 = ApiVersion(20, 0, flexible=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class DeletableTopicResult(ResponsePart, api=DELETE_TOPICS_V0):
    name: str = field(metadata={"kafka_type": "string"})
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteTopicsResponse(Response, api=DELETE_TOPICS_V0):
    responses: tuple[DeletableTopicResult, ...]
