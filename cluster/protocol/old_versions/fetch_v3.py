"""Fetch v3 request (API 1): v0's with a response-wide `max_bytes`.

Its topics and partitions are laid out as v0's, so v0's classes are used.

No `from __future__ import annotations`: kio reads field types at run time.
"""

from dataclasses import dataclass, field

from kio.schema.types import BrokerId
from kio.static.primitive import i32, i32Timedelta

from kafkactl.cluster.protocol.kio_entity import ApiVersion, Request
from kafkactl.cluster.protocol.old_versions.fetch_v0 import FetchTopic

FETCH = 1
FETCH_V3 = ApiVersion(FETCH, 3, flexible=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchRequest(Request, api=FETCH_V3):
    replica_id: BrokerId = field(metadata={"kafka_type": "int32"})
    max_wait: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    min_bytes: i32 = field(metadata={"kafka_type": "int32"})
    max_bytes: i32 = field(metadata={"kafka_type": "int32"})
    topics: tuple[FetchTopic, ...]
