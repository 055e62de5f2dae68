"""Topic auto-creation (auto.create.topics.enable), off the request threads.

A Metadata request naming a topic that does not exist asks for it to be
created; Kafka answers LEADER_NOT_AVAILABLE while the new topic's leaders are
elected, and the client asks again. Creating it means reading the registered
brokers and writing the topic's znode: ZooKeeper calls, which no request
thread may wait for. So the handler only records the wish and answers at
once; the zk-agent thread creates what is wished for (`create_pending`).

Rules:
1. A wish is the topic's name with the partition count and replication
   factor the broker's config gave at the time (Kafka's num.partitions and
   default.replication.factor). A topic already wished for is not wished again.
2. At most MAX_PENDING topics wait; beyond that a wish is dropped (the
   answer is still LEADER_NOT_AVAILABLE, and the client's next Metadata
   request wishes again), so a client naming random topics cannot grow memory.
3. A creation that cannot be made (fewer registered brokers than the
   replication factor) is remembered for FAILURE_MEMORY_S: Metadata requests
   for that topic meanwhile answer INVALID_REPLICATION_FACTOR, which Kafka
   answers at once and we one round later. After that it may be wished again
   (brokers may have come back).
4. The group coordinator's `__consumer_offsets` is wished for the same way,
   with its own partition count, replication factor and config
   (coordinator/offsets_topic.py), whatever auto.create.topics.enable says.
5. A topic that exists by the time it is created (another broker or a tool
   made it first) is not an error: the controller elects it either way.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from kafkactl.cluster.admin.replica_assignment import AssignmentError

log = logging.getLogger(__name__)

MAX_PENDING = 1000
FAILURE_MEMORY_S = 10.0


@dataclass(frozen=True, slots=True)
class Wish:
    topic: str
    partitions: int
    replication_factor: int
    config: tuple[tuple[str, str], ...] = ()   # topic config overrides (the internal topics' own)


class TopicAutoCreator:
    """`create` makes the topic (False: it existed) or raises AssignmentError;
    it runs only on the thread that calls `create_pending`."""

    def __init__(self, create: Callable[[str, int, int, dict[str, str]], bool], wake: Callable[[], None],
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self._create = create
        self._wake = wake
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._pending: dict[str, Wish] = {}
        self._failed_until: dict[str, float] = {}

    def request(self, wish: Wish) -> ErrorCode:
        """Record the wish (any thread, never waits); the error to answer now."""
        with self._lock:
            failed_until = self._failed_until.get(wish.topic)
            if failed_until is not None:
                if self._monotonic() < failed_until:
                    return ErrorCode.invalid_replication_factor
                del self._failed_until[wish.topic]
            if wish.topic not in self._pending and len(self._pending) < MAX_PENDING:
                self._pending[wish.topic] = wish
                wake = True
            else:
                wake = False
        if wake:
            self._wake()
        return ErrorCode.leader_not_available

    def pending(self) -> int:
        with self._lock:
            return len(self._pending)

    def create_pending(self) -> None:
        """Create every waiting topic (the zk-agent thread). A ZooKeeper error
        propagates and leaves the rest waiting, for the agent's retry."""
        with self._lock:
            wishes = list(self._pending.values())
        for wish in wishes:
            try:
                if self._create(wish.topic, wish.partitions, wish.replication_factor, dict(wish.config)):
                    log.info("auto-created topic %s with %s partitions", wish.topic, wish.partitions)
            except AssignmentError as error:
                log.warning("cannot auto-create topic %s: %s", wish.topic, error)
                with self._lock:
                    self._failed_until[wish.topic] = self._monotonic() + FAILURE_MEMORY_S
            with self._lock:
                self._pending.pop(wish.topic, None)
            self._forget_old_failures()

    def _forget_old_failures(self) -> None:
        now = self._monotonic()
        with self._lock:
            for topic in [t for t, until in self._failed_until.items() if until <= now]:
                del self._failed_until[topic]
