"""FindCoordinator: advertised because librdkafka disables LZ4 without it.

The group coordinator arrives with its own issue; until then every key is
answered COORDINATOR_NOT_AVAILABLE, which clients treat as retriable.
"""

from __future__ import annotations

import datetime

from kio.schema.errors import ErrorCode

from kafkactl.cluster.protocol.build import make, nested
from kafkactl.cluster.protocol.codec import response_class


GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1
NOT_AVAILABLE = {
    GROUP_KEY_TYPE: "this broker has no group coordinator yet",
    TRANSACTION_KEY_TYPE: "transactions are not supported: this broker has no transaction coordinator",
}


def not_available_message(key_type: int) -> str:
    """What is not available, said for the kind of coordinator asked for."""
    return NOT_AVAILABLE.get(key_type, f"unknown coordinator key type {key_type}")


def handle(services, header, request):
    cls = response_class(10, header.api_version)
    unavailable = dict(error_code=ErrorCode.coordinator_not_available, node_id=-1, host="", port=-1)
    message = not_available_message(getattr(request, "key_type", GROUP_KEY_TYPE))
    keys = getattr(request, "coordinator_keys", None)
    return make(
        cls,
        throttle_time=datetime.timedelta(0),
        error_message=message,
        coordinators=tuple(nested(cls, "Coordinator", key=k, error_message=message, **unavailable)
                           for k in keys or ()),
        **unavailable,
    )
