"""JoinGroup (API 11, v0-v7): a member joins its group's rebalance; the
answer waits until the rebalance completes (coordinator/membership.py has
the rules). v0 has no rebalance timeout (the session timeout serves), v4+
asks a new member to come back with its id (MEMBER_ID_REQUIRED, KIP-394),
v5+ carries group.instance.id (KIP-345), v7 names the protocol type.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.handlers.group_answers import MARGIN_S, NO_THROTTLE, answered, milliseconds
from kafkactl.cluster.coordinator.group import NEW_MEMBER_JOIN_TIMEOUT_MS
from kafkactl.cluster.coordinator.messages import JoinRequest, JoinResponse
from kafkactl.cluster.protocol.build import make, nested
from kafkactl.cluster.protocol.codec import response_class

API_KEY = 11


def handle(services, header, request, client_host: str = ""):
    version = header.api_version
    session_timeout_ms = milliseconds(request.session_timeout)
    rebalance_timeout_ms = (milliseconds(request.rebalance_timeout) if hasattr(request, "rebalance_timeout")
                            else session_timeout_ms)
    join = JoinRequest(
        group_id=request.group_id, member_id=request.member_id, client_id=header.client_id or "",
        client_host=client_host, session_timeout_ms=session_timeout_ms,
        rebalance_timeout_ms=rebalance_timeout_ms, protocol_type=request.protocol_type,
        protocols=tuple((p.name, p.metadata) for p in request.protocols),
        group_instance_id=getattr(request, "group_instance_id", None), version=version)
    refused = _refusal(join)
    if refused is not None or services.group_coordinator is None:
        return _response(version, JoinResponse(refused or ErrorCode.coordinator_not_available, join.member_id))
    future = services.group_coordinator.join(join)
    bound_s = (max(rebalance_timeout_ms, NEW_MEMBER_JOIN_TIMEOUT_MS)
               + services.config.group_initial_rebalance_delay_ms) / 1000 + MARGIN_S
    return answered(future, lambda result: _response(version, result),
                    JoinResponse(ErrorCode.coordinator_not_available, join.member_id), bound_s)


def _refusal(join: JoinRequest) -> ErrorCode | None:
    if not join.group_id:
        return ErrorCode.invalid_group_id
    if join.rebalance_timeout_ms < 0 or join.session_timeout_ms < 0:
        return ErrorCode.invalid_session_timeout
    return None


def _response(version: int, result: JoinResponse):
    cls = response_class(API_KEY, version)
    protocol_name = result.protocol_name
    if protocol_name is None and version < 7:
        protocol_name = ""   # nullable only from v7
    return make(cls, throttle_time=NO_THROTTLE, error_code=result.error, generation_id=result.generation_id,
                protocol_type=result.protocol_type, protocol_name=protocol_name, leader=result.leader_id,
                member_id=result.member_id,
                members=tuple(nested(cls, "JoinGroupResponseMember", member_id=m.member_id,
                                     group_instance_id=m.group_instance_id, metadata=m.metadata)
                              for m in result.members))
