"""Heartbeat (API 12, v0-v4): a member is alive; the answer tells it whether
its group is rebalancing (coordinator/membership.py rule 11)."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.handlers.group_answers import MARGIN_S, NO_THROTTLE, answered
from kafkactl.cluster.coordinator.messages import HeartbeatRequest
from kafkactl.cluster.protocol.build import make
from kafkactl.cluster.protocol.codec import response_class

API_KEY = 12


def handle(services, header, request):
    version = header.api_version
    if not request.group_id:
        return _response(version, ErrorCode.invalid_group_id)
    if services.group_coordinator is None:
        return _response(version, ErrorCode.coordinator_not_available)
    beat = HeartbeatRequest(request.group_id, request.member_id, request.generation_id,
                            getattr(request, "group_instance_id", None))
    return answered(services.group_coordinator.heartbeat(beat), lambda error: _response(version, error),
                    ErrorCode.coordinator_not_available, MARGIN_S)


def _response(version: int, error: ErrorCode):
    return make(response_class(API_KEY, version), throttle_time=NO_THROTTLE, error_code=error)
