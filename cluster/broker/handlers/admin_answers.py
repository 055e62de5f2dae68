"""What the topic Admin handlers share (CreateTopics, CreatePartitions,
DeleteTopics): when their answer is due.

As Kafka's ZkAdminManager: the ZooKeeper writes happen whatever the
request's timeout; then, with a timeout <= 0 (or validate_only) the answer
goes at once and every topic written is REQUEST_TIMED_OUT (the change was
made, not seen); otherwise the answer waits until this broker's metadata
shows the change (every partition led, or the topic gone: Kafka's
DelayedCreatePartitions / DelayedDeleteTopics), or the timeout passes, and
each topic not yet shown is REQUEST_TIMED_OUT.

Bounds: the ZooKeeper work is handed to the admin-work thread (never done
on a request thread) and not started after WORK_BOUND_S; the wait is at
most the request's timeout, capped at MAX_WAIT_S (a client's timeout of
24 days must not hold a thread that long). Work that has not finished by
then, or failed, answers REQUEST_TIMED_OUT for every topic not refused
(its outcome is unknown: the change may yet happen, which is what that
error tells a client).
"""

from __future__ import annotations

import datetime
import logging
import time
from collections.abc import Callable

from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.deferred import PendingAnswer
from kafkactl.cluster.errors import KafkaError

log = logging.getLogger(__name__)

NO_THROTTLE = datetime.timedelta(0)
WORK_BOUND_S = 30.0     # ZooKeeper calls are bounded at 10 s each; a request's work makes few in a row
MAX_WAIT_S = 300.0


def timeout_ms(request) -> int:
    """The request's `timeout` field (a kio timedelta) in milliseconds."""
    value = request.timeout
    if isinstance(value, datetime.timedelta):
        return round(value.total_seconds() * 1000)
    return int(value)


def failure_error(error: BaseException) -> ErrorCode:
    """The answer for topics whose ZooKeeper work failed or did not finish."""
    if isinstance(error, KafkaError) and error.error_code == ErrorCode.request_timed_out:
        return error.error_code
    if not isinstance(error, TimeoutError):
        log.warning("admin work failed: %r; answering REQUEST_TIMED_OUT", error)
    return ErrorCode.request_timed_out


class MetadataAnswer(PendingAnswer):
    """Waits (on the connection's answer sender) for the admin work's Future,
    then, if `wait_s` > 0 and `shown(outcome, snapshot)` is not yet true,
    for the metadata to show it, until `wait_s` after the request came.
    `build(outcome, snapshot_or_None)`: None when no wait was due (so what
    was written is REQUEST_TIMED_OUT); `on_failure(ErrorCode)` when the work
    failed or did not finish in time."""

    __slots__ = ("_future", "_metadata", "_wait_s", "_shown", "_build", "_on_failure", "_monotonic", "_started")

    def __init__(self, future, metadata, wait_s: float, shown: Callable, build: Callable, on_failure: Callable,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self._future = future
        self._metadata = metadata
        self._wait_s = min(wait_s, MAX_WAIT_S)
        self._shown = shown
        self._build = build
        self._on_failure = on_failure
        self._monotonic = monotonic
        self._started = monotonic()

    def answer(self):
        try:
            outcome = self._future.result(timeout=max(self._wait_s, WORK_BOUND_S))
        except Exception as error:   # TimeoutError included: the work did not finish
            return self._on_failure(failure_error(error))
        if self._wait_s <= 0:
            return self._build(outcome, None)
        remaining = self._wait_s - (self._monotonic() - self._started)
        self._metadata.wait_until(lambda snapshot: self._shown(outcome, snapshot), remaining)
        return self._build(outcome, self._metadata.snapshot)


def submit(services, work: Callable, monotonic: Callable[[], float] = time.monotonic):
    """Hand `work(zk)` to the admin-work thread; a Future."""
    return services.admin_work.submit(work, deadline=monotonic() + WORK_BOUND_S)


def led(snapshot, topic: str, count: int) -> bool:
    """Every partition 0..count-1 of `topic` has a leader in `snapshot`
    (Kafka's DelayedCreatePartitions: leader not -1)."""
    known = snapshot.topics.get(topic)
    if known is None:
        return False
    states = known.states
    return all(p in states and states[p].leader >= 0 for p in range(count))
