"""DescribeConfigs v0 (API 32): no synonyms; `is_default` where v1 has the source.

Kafka's AdminClient of 0.11-1.0 (kafka-configs.sh of that era) sends it.

No `from __future__ import annotations`: kio reads field types at run time.
"""

from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode
from kio.static.primitive import i8, i32Timedelta

from kafkactl.cluster.protocol.kio_entity import ApiVersion, Request, RequestPart, Response, ResponsePart

DESCRIBE_CONFIGS = 32
DESCRIBE_CONFIGS_V0 = ApiVersion(DESCRIBE_CONFIGS, 0, flexible=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeConfigsResource(RequestPart, api=DESCRIBE_CONFIGS_V0):
    resource_type: i8 = field(metadata={"kafka_type": "int8"})
    resource_name: str = field(metadata={"kafka_type": "string"})
    configuration_keys: tuple[str, ...] | None = field(metadata={"kafka_type": "string"})
    """Null (or empty) asks for every key."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeConfigsRequest(Request, api=DESCRIBE_CONFIGS_V0):
    resources: tuple[DescribeConfigsResource, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeConfigsResourceResult(ResponsePart, api=DESCRIBE_CONFIGS_V0):
    name: str = field(metadata={"kafka_type": "string"})
    value: str | None = field(metadata={"kafka_type": "string"})
    read_only: bool = field(metadata={"kafka_type": "bool"})
    is_default: bool = field(metadata={"kafka_type": "bool"})
    is_sensitive: bool = field(metadata={"kafka_type": "bool"})


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeConfigsResult(ResponsePart, api=DESCRIBE_CONFIGS_V0):
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    error_message: str | None = field(metadata={"kafka_type": "string"})
    resource_type: i8 = field(metadata={"kafka_type": "int8"})
    resource_name: str = field(metadata={"kafka_type": "string"})
    configs: tuple[DescribeConfigsResourceResult, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeConfigsResponse(Response, api=DESCRIBE_CONFIGS_V0):
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    results: tuple[DescribeConfigsResult, ...]
