"""Admin requests that change ZooKeeper (the Admin API: CreateTopics,
DeleteTopics, CreatePartitions, AlterConfigs, ElectLeaders, reassignments,
...): where their ZooKeeper work runs.

No request thread waits for ZooKeeper. A handler validates its request
against the metadata snapshot (pure functions, the same the CLI applies),
then hands the ZooKeeper work to the `admin-work` thread through `submit`,
and returns a `deferred.FutureAnswer` that waits for the work's Future (and,
where Kafka does, for the metadata to reach this broker), bounded by the
request's own timeout.

1. One thread, one bounded queue (QUEUE_BOUND). A full queue answers at
   once: the Future fails with AdminBusy (handlers answer
   REQUEST_TIMED_OUT, which clients retry), the request thread never blocks.
2. The work is a function of the broker's ZooKeeper client (a BoundedZk:
   every call bounded); its return value or exception completes the Future.
   Work queued longer than its deadline is not started (AdminBusy).
3. Work runs in arrival order, one at a time: two requests on the same
   topic are applied one after the other, as Kafka's controller does.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

from kio.schema.errors import ErrorCode

from kafkactl.cluster import fatal
from kafkactl.cluster.errors import KafkaError

log = logging.getLogger(__name__)

QUEUE_BOUND = 1000
T = TypeVar("T")


class AdminBusy(KafkaError):
    """The admin work queue is full, or the work waited past its deadline."""

    error_code = ErrorCode.request_timed_out


class AdminWork:
    def __init__(self, zookeeper: Callable[[], object], monotonic: Callable[[], float] = time.monotonic,
                 bound: int = QUEUE_BOUND) -> None:
        """`zookeeper()`: the broker's BoundedZk (read when work runs: the
        zk-agent connects after this is built)."""
        self._zookeeper = zookeeper
        self._monotonic = monotonic
        self._queue: queue.Queue = queue.Queue(maxsize=bound)
        self._thread = threading.Thread(target=self._run, name="admin-work", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        try:
            self._queue.put(None, timeout=1.0)
        except queue.Full:
            pass
        self._thread.join(timeout=5)

    def submit(self, work: Callable[[object], T], deadline: float | None = None) -> Future:
        """Run `work(zk)` on the admin-work thread; never waits. `deadline`
        (monotonic seconds): not started after it."""
        future: Future = Future()
        try:
            self._queue.put_nowait((work, future, deadline))
        except queue.Full:
            future.set_exception(AdminBusy("too many admin requests waiting; retry"))
        return future

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            work, future, deadline = item
            if deadline is not None and self._monotonic() > deadline:
                future.set_exception(AdminBusy("the request's timeout passed before its turn came"))
                continue
            try:
                future.set_result(work(self._zookeeper()))
            except Exception as error:
                fatal.halt_if_fatal(error, "admin work")
                future.set_exception(error)
