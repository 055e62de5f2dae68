"""LeaveGroup (API 13, v0-v4): members leave at once instead of waiting for
their session to expire; v3+ names several members, static ones by
group.instance.id (coordinator/membership.py rules 13-14). Before v3 one
member leaves and its error is the request's."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.handlers.group_answers import MARGIN_S, NO_THROTTLE, answered
from kafkactl.cluster.coordinator.messages import LeaveResponse, MemberIdentity
from kafkactl.cluster.protocol.build import make, nested
from kafkactl.cluster.protocol.codec import response_class

API_KEY = 13
BATCHED_VERSION = 3


def handle(services, header, request):
    version = header.api_version
    if version >= BATCHED_VERSION:
        members = tuple(MemberIdentity(m.member_id, m.group_instance_id) for m in request.members)
    else:
        members = (MemberIdentity(request.member_id),)
    if not request.group_id:
        return _response(version, LeaveResponse(ErrorCode.invalid_group_id))
    if services.group_coordinator is None:
        return _response(version, LeaveResponse(ErrorCode.coordinator_not_available))
    return answered(services.group_coordinator.leave(request.group_id, members),
                    lambda result: _response(version, result),
                    LeaveResponse(ErrorCode.coordinator_not_available), MARGIN_S)


def _response(version: int, result: LeaveResponse):
    cls = response_class(API_KEY, version)
    error = result.error
    if version < BATCHED_VERSION and error == ErrorCode.none and result.members:
        error = result.members[0].error
    return make(cls, throttle_time=NO_THROTTLE, error_code=error,
                members=tuple(nested(cls, "MemberResponse", member_id=m.member_id,
                                     group_instance_id=m.group_instance_id, error_code=m.error)
                              for m in result.members) if version >= BATCHED_VERSION else ())
