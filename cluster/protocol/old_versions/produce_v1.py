"""Produce v1 response (API 0): v0's, then the throttle time after the topics.

Its topics and partitions are laid out as v0's, so v0's classes are used;
they are imported here by name because handlers look nested classes up in the
response class's module (protocol/build.py). (v2's partitions add the log
append time, so produce_v2.py declares its own.)

No `from __future__ import annotations`: kio reads field types at run time.
"""

from dataclasses import dataclass, field

from kio.static.primitive import i32Timedelta

from kafkactl.cluster.protocol.kio_entity import ApiVersion, Response
from kafkactl.cluster.protocol.old_versions.produce_v0 import (  # noqa: F401  (looked up by name)
    PartitionProduceResponse, TopicProduceResponse,
)

PRODUCE = 0
PRODUCE_V1 = ApiVersion(PRODUCE, 1, flexible=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class ProduceResponse(Response, api=PRODUCE_V1):
    responses: tuple[TopicProduceResponse, ...]
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
