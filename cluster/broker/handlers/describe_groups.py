"""DescribeGroups (API 15, v0-v5): each named group's state, protocol and
members (with their metadata and assignment while Stable, as Kafka's group
summary); a group this broker does not coordinate answers NOT_COORDINATOR
(or COORDINATOR_LOAD_IN_PROGRESS), an unknown one the state Dead."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.deferred import PendingAnswer
from kafkactl.cluster.broker.handlers.group_answers import MARGIN_S, NO_THROTTLE
from kafkactl.cluster.coordinator.group_requests import GroupDescription
from kafkactl.cluster.protocol.build import make, nested
from kafkactl.cluster.protocol.codec import response_class

API_KEY = 15
NO_AUTHORIZED_OPERATIONS = -2147483648


def handle(services, header, request):
    coordinator = services.group_coordinator
    futures = [(group_id, None if coordinator is None or not group_id else coordinator.describe(group_id))
               for group_id in request.groups]
    return _Pending(header.api_version, futures)


class _Pending(PendingAnswer):
    __slots__ = ("_version", "_futures")

    def __init__(self, version: int, futures) -> None:
        self._version = version
        self._futures = futures

    def answer(self):
        described = []
        for group_id, future in self._futures:
            if future is None:
                error = ErrorCode.invalid_group_id if not group_id else ErrorCode.coordinator_not_available
                described.append(GroupDescription(error, group_id, state=""))
                continue
            try:
                described.append(future.result(timeout=MARGIN_S))
            except TimeoutError:
                described.append(GroupDescription(ErrorCode.coordinator_not_available, group_id, state=""))
        return _response(self._version, described)


def _response(version: int, described: list[GroupDescription]):
    cls = response_class(API_KEY, version)
    return make(cls, throttle_time=NO_THROTTLE, groups=tuple(
        nested(cls, "DescribedGroup", error_code=d.error, group_id=d.group_id,
               group_state=d.state if d.error == ErrorCode.none else "",
               protocol_type=d.protocol_type, protocol_data=d.protocol,
               authorized_operations=NO_AUTHORIZED_OPERATIONS,
               members=tuple(nested(cls, "DescribedGroupMember", member_id=m.member_id,
                                    group_instance_id=m.group_instance_id, client_id=m.client_id,
                                    client_host=m.client_host, member_metadata=m.metadata,
                                    member_assignment=m.assignment) for m in d.members))
        for d in described))
