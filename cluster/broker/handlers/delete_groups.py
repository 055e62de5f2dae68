"""DeleteGroups (API 42, v0-v2): remove Empty groups and their offsets
(tombstones in `__consumer_offsets`); a group with members answers
NON_EMPTY_GROUP, an unknown one GROUP_ID_NOT_FOUND."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.deferred import PendingAnswer
from kafkactl.cluster.broker.handlers.group_answers import MARGIN_S, NO_THROTTLE
from kafkactl.cluster.protocol.build import make, nested
from kafkactl.cluster.protocol.codec import response_class

API_KEY = 42


def handle(services, header, request):
    coordinator = services.group_coordinator
    futures = {}
    for group_id in request.groups_names:
        if group_id not in futures:
            futures[group_id] = (None if coordinator is None or not group_id
                                 else coordinator.delete_group(group_id))
    return _Pending(header.api_version, futures, services.config.offsets_commit_timeout_ms / 1000 + MARGIN_S)


class _Pending(PendingAnswer):
    __slots__ = ("_version", "_futures", "_timeout_s")

    def __init__(self, version: int, futures, timeout_s: float) -> None:
        self._version = version
        self._futures = futures
        self._timeout_s = timeout_s

    def answer(self):
        results = []
        for group_id, future in self._futures.items():
            if future is None:
                error = ErrorCode.invalid_group_id if not group_id else ErrorCode.coordinator_not_available
            else:
                try:
                    error = future.result(timeout=self._timeout_s)
                except TimeoutError:
                    error = ErrorCode.request_timed_out
            results.append((group_id, error))
        cls = response_class(API_KEY, self._version)
        return make(cls, throttle_time=NO_THROTTLE, results=tuple(
            nested(cls, "DeletableGroupResult", group_id=group_id, error_code=error) for group_id, error in results))
