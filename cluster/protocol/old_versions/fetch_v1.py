"""Fetch v1 response (API 1), also that of v2 and v3: the throttle time, then v0's.

Its topics and partitions are laid out as v0's, so v0's classes are used;
they are imported here by name because handlers look nested classes up in the
response class's module (protocol/build.py).

No `from __future__ import annotations`: kio reads field types at run time.
"""

from dataclasses import dataclass, field

from kio.static.primitive import i32Timedelta

from kafkactl.cluster.protocol.kio_entity import ApiVersion, Response
from kafkactl.cluster.protocol.old_versions.fetch_v0 import (  # noqa: F401  (looked up by name)
    FetchableTopicResponse, PartitionData,
)

FETCH = 1
FETCH_V1 = ApiVersion(FETCH, 1, flexible=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchResponse(Response, api=FETCH_V1):
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    responses: tuple[FetchableTopicResponse, ...]
