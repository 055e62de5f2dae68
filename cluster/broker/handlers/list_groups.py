"""ListGroups (API 16, v0-v4): the groups this broker coordinates, with
their protocol type and (v4) state, filtered by state when asked. While a
`__consumer_offsets` partition is loading the answer says
COORDINATOR_LOAD_IN_PROGRESS with the groups known so far, as Kafka does."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.deferred import PendingAnswer
from kafkactl.cluster.broker.handlers.group_answers import MARGIN_S, NO_THROTTLE
from kafkactl.cluster.protocol.build import make, nested
from kafkactl.cluster.protocol.codec import response_class

API_KEY = 16


def handle(services, header, request):
    coordinator = services.group_coordinator
    states = {s.lower() for s in getattr(request, "states_filter", ()) or ()}
    if coordinator is None:
        return _response(header.api_version, ErrorCode.coordinator_not_available, [])
    return _Pending(header.api_version, coordinator.list_groups(), coordinator.any_loading(), states)


class _Pending(PendingAnswer):
    __slots__ = ("_version", "_futures", "_loading", "_states")

    def __init__(self, version: int, futures, loading: bool, states: set[str]) -> None:
        self._version = version
        self._futures = futures
        self._loading = loading
        self._states = states

    def answer(self):
        error = ErrorCode.coordinator_load_in_progress if self._loading else ErrorCode.none
        groups = []
        for future in self._futures:
            try:
                listed = future.result(timeout=MARGIN_S)
            except TimeoutError:
                listed = None
            if listed is None:
                error = ErrorCode.coordinator_not_available
                continue
            groups += [g for g in listed if not self._states or g[2].lower() in self._states]
        return _response(self._version, error, sorted(groups))


def _response(version: int, error: ErrorCode, groups):
    cls = response_class(API_KEY, version)
    return make(cls, throttle_time=NO_THROTTLE, error_code=error, groups=tuple(
        nested(cls, "ListedGroup", group_id=group_id, protocol_type=protocol_type, group_state=state)
        for group_id, protocol_type, state in groups))
