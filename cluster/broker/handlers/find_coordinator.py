"""FindCoordinator: advertised because librdkafka disables LZ4 without it.

The group coordinator arrives with its own issue; until then every key is
answered COORDINATOR_NOT_AVAILABLE, which clients treat as retriable.
"""

from __future__ import annotations

import datetime

from kio.schema.errors import ErrorCode

from kafkactl.cluster.protocol.build import make, nested
from kafkactl.cluster.protocol.codec import response_class


def handle(services, header, request):
    cls = response_class(10, header.api_version)
    unavailable = dict(error_code=ErrorCode.coordinator_not_available, node_id=-1, host="", port=-1)
    keys = getattr(request, "coordinator_keys", None)
    return make(
        cls,
        throttle_time=datetime.timedelta(0),
        error_message="the group coordinator is not implemented yet",
        coordinators=tuple(nested(cls, "Coordinator", key=k, error_message=None, **unavailable) for k in keys or ()),
        **unavailable,
    )
