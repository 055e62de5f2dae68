"""What the handlers of controller-only Admin APIs share (ElectLeaders,
AlterPartitionReassignments, ListPartitionReassignments): the request goes
to this broker's controller as an event (controller/events.py AdminRequest)
and is answered from a Future the event thread completes, on the
connection's answer sender (deferred.FutureAnswer), never by waiting on the
request thread. Elsewhere than on the active controller the answer is
NOT_CONTROLLER at once, as Kafka's ZooKeeper-mode brokers answer.

A Future's result: what the controller decided; None when the controller
resigned meanwhile (NOT_CONTROLLER); an ErrorCode when its step failed.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future

from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.handlers.group_answers import milliseconds
from kafkactl.cluster.broker.handlers.services import is_controller

# Requests carry their own timeout; never wait beyond this (a client asking
# for an hour must not hold the answer sender that long).
MAX_TIMEOUT_S = 300.0


def to_controller(services, make_event: Callable[[Callable[[object], None]], object]) -> Future | None:
    """The Future of the event `make_event(reply)` put on the controller's
    queue; None when this broker is not the active controller."""
    if not is_controller(services):
        return None
    future: Future = Future()

    def reply(answer) -> None:
        if not future.done():
            future.set_result(answer)

    services.controller.admin_request(make_event(reply))
    return future


def timeout_s(value) -> float:
    """A request's timeout field, in seconds, bounded to (0, MAX_TIMEOUT_S]."""
    return min(max(milliseconds(value), 1) / 1000, MAX_TIMEOUT_S)


def error_of(answer) -> ErrorCode | None:
    """The error every partition gets when the controller gave no result."""
    if answer is None:
        return ErrorCode.not_controller
    if isinstance(answer, ErrorCode):
        return answer
    if isinstance(answer, BaseException):
        return ErrorCode.request_timed_out
    return None
