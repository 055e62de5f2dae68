"""What the group handlers share: answering from the coordinator's Future.

The coordinator answers on its owner threads; a handler returns a
`deferred.FutureAnswer`, which the connection's answer sender waits on (never
the thread reading requests), at most `timeout_s`: a JoinGroup is parked
until its rebalance completes (up to the group's rebalance timeout), the
rest until their record is on the ISR (offsets.commit.timeout.ms) or at
once. A coordinator that does not answer in time answers `on_timeout`.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from concurrent.futures import Future

from kafkactl.cluster.broker.deferred import FutureAnswer

NO_THROTTLE = datetime.timedelta(0)
# Beyond the coordinator's own deadlines: its timers fire late under load.
MARGIN_S = 10.0


def answered(future: Future, build: Callable[[object], object], on_timeout, timeout_s: float):
    """The response now if the coordinator already answered, else a FutureAnswer."""
    if future.done():
        return build(future.result())
    return FutureAnswer(future, timeout_s, build, on_timeout)


def milliseconds(value) -> int:
    """A kio duration field (a timedelta) in milliseconds; -1 stays -1."""
    if isinstance(value, datetime.timedelta):
        return round(value.total_seconds() * 1000)
    return int(value)
