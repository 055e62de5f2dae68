"""SyncGroup (API 14, v0-v5): the leader hands in the assignment, every
member receives its own; the answer waits until the leader's assignment is
on the ISR (coordinator/membership.py rules 9-10). v5 checks the protocol
type and name against the group's.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.handlers.group_answers import MARGIN_S, NO_THROTTLE, answered
from kafkactl.cluster.coordinator.group import NEW_MEMBER_JOIN_TIMEOUT_MS
from kafkactl.cluster.coordinator.messages import SyncRequest, SyncResponse
from kafkactl.cluster.protocol.build import make
from kafkactl.cluster.protocol.codec import response_class

API_KEY = 14
# A follower's SyncGroup waits for the leader's, at most the group's
# rebalance timeout; the broker does not know it here, so the longest a
# rebalance may take bounds the wait.
WAIT_BOUND_S = NEW_MEMBER_JOIN_TIMEOUT_MS / 1000 + MARGIN_S


def handle(services, header, request):
    version = header.api_version
    assignments: dict[str, bytes] = {}
    for item in request.assignments:
        if item.member_id in assignments:
            return _response(version, SyncResponse(ErrorCode.invalid_request))
        assignments[item.member_id] = item.assignment
    sync = SyncRequest(request.group_id, request.member_id, request.generation_id, assignments,
                       getattr(request, "group_instance_id", None), getattr(request, "protocol_type", None),
                       getattr(request, "protocol_name", None))
    if not sync.group_id:
        return _response(version, SyncResponse(ErrorCode.invalid_group_id))
    if services.group_coordinator is None:
        return _response(version, SyncResponse(ErrorCode.coordinator_not_available))
    return answered(services.group_coordinator.sync(sync), lambda result: _response(version, result),
                    SyncResponse(ErrorCode.coordinator_not_available), WAIT_BOUND_S)


def _response(version: int, result: SyncResponse):
    return make(response_class(API_KEY, version), throttle_time=NO_THROTTLE, error_code=result.error,
                protocol_type=result.protocol_type, protocol_name=result.protocol_name,
                assignment=result.assignment)
