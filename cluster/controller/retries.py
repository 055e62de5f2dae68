"""When an event's ZooKeeper reads or writes fail: try it again, then give up
the controllership.

A watch fires once. If the event it queued cannot read ZooKeeper (no answer
within the store's timeout, connection lost), dropping the event would leave
the change unread and the watch unarmed until some later event of the same
kind: an admin znode acted on minutes late or never (issue 12.2). Kafka's
controller blocks on ZooKeeper until it answers; ours keeps its event thread
free and puts the event back on its queue instead.

Rules:
1. Only events marked `retriable` (those that read what changed, and broker
   responses, which carry their data) are tried again; the others are
   repeated by their own source (timers, a broker asking again).
2. The n-th consecutive failure of one kind of event waits
   `initial_backoff_s * 2**(n-1)`, at most `max_backoff_s`, before the event
   is queued again; a success of that kind starts the count again.
3. After `max_attempts` consecutive failures of one kind the controller
   gives up: it resigns and gives up /controller, so that a broker that can
   reach ZooKeeper is elected and reads everything afresh (with the defaults,
   about a minute of ZooKeeper trouble).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kazoo.exceptions import ConnectionLoss, OperationTimeoutError, SessionExpiredError
from kazoo.handlers.threading import KazooTimeoutError

from kafkactl.cluster.zk.client import ZooKeeperUnavailable

# The errors that say "ZooKeeper did not answer", not "ZooKeeper said no".
ZOOKEEPER_UNAVAILABLE = (ZooKeeperUnavailable, ConnectionLoss, OperationTimeoutError, SessionExpiredError,
                         KazooTimeoutError)


@dataclass
class RetryPolicy:
    initial_backoff_s: float = 0.1
    max_backoff_s: float = 5.0
    max_attempts: int = 20
    _failures: dict[type, int] = field(default_factory=dict)

    def failed(self, kind: type) -> float | None:
        """The wait before trying `kind` again, or None: give up (rule 3)."""
        count = self._failures.get(kind, 0) + 1
        self._failures[kind] = count
        if count >= self.max_attempts:
            self._failures.pop(kind)
            return None
        return min(self.initial_backoff_s * 2 ** (count - 1), self.max_backoff_s)

    def succeeded(self, kind: type) -> None:
        self._failures.pop(kind, None)

    def reset(self) -> None:
        """A new controllership starts with no failures counted."""
        self._failures.clear()
