"""The threads that own the groups: each group belongs to exactly one owner
thread (by its id's hash), which alone reads and changes it. Request
handlers, the loader and the commit watcher only enqueue work for it.

An owner runs, in order, the tasks put on its bounded queue, and its timers
when they are due (on the injected millisecond clock). A full queue refuses
new work at once (`submit` returns False) rather than making a request
thread wait: the client hears COORDINATOR_NOT_AVAILABLE and retries.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import queue
import threading
from collections.abc import Callable

from kafkactl.cluster import fatal

log = logging.getLogger(__name__)

QUEUE_BOUND = 10_000
IDLE_WAIT_S = 1.0
_STOP = object()


class OwnerThread:
    def __init__(self, name: str, clock_ms: Callable[[], int], bound: int = QUEUE_BOUND) -> None:
        self.name = name
        self._clock_ms = clock_ms
        self._tasks: queue.Queue = queue.Queue(maxsize=bound)
        self._timers: list[tuple[int, int, Callable[[], None]]] = []   # touched by the owner only
        self._sequence = itertools.count()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        try:
            self._tasks.put(_STOP, timeout=1.0)
        except queue.Full:
            pass
        self._thread.join(timeout=5)

    def submit(self, task: Callable[[], None]) -> bool:
        """Run `task` on the owner thread; False (not run) when the queue is full."""
        try:
            self._tasks.put_nowait(task)
            return True
        except queue.Full:
            return False

    def submit_waiting(self, task: Callable[[], None], timeout_s: float) -> bool:
        """For the broker's own threads (the loader, the commit watcher), whose
        work must not be dropped: waits for room, at most `timeout_s`."""
        try:
            self._tasks.put(task, timeout=timeout_s)
            return True
        except queue.Full:
            return False

    def at(self, deadline_ms: int, action: Callable[[], None]) -> None:
        """Run `action` once the clock reaches `deadline_ms` (owner thread only)."""
        heapq.heappush(self._timers, (deadline_ms, next(self._sequence), action))

    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as error:
            fatal.halt_if_fatal(error, f"group owner {self.name}")
            log.exception("group owner %s stopped", self.name)
            raise

    def _loop(self) -> None:
        while True:
            self._fire_due_timers()
            try:
                task = self._tasks.get(timeout=self._wait_s())
            except queue.Empty:
                continue
            if task is _STOP:
                return
            self._guarded(task)

    def _wait_s(self) -> float:
        if not self._timers:
            return IDLE_WAIT_S
        return min(max(self._timers[0][0] - self._clock_ms(), 0) / 1000, IDLE_WAIT_S)

    def _fire_due_timers(self) -> None:
        now_ms = self._clock_ms()
        while self._timers and self._timers[0][0] <= now_ms:
            _, _, action = heapq.heappop(self._timers)
            self._guarded(action)

    def _guarded(self, task: Callable[[], None]) -> None:
        # An operating error in one group's task must not stop the others' owner;
        # invariant violations stop the process (fatal.halt_if_fatal).
        try:
            task()
        except Exception as error:
            fatal.halt_if_fatal(error, f"group owner {self.name}")
            log.exception("group owner %s: a task failed", self.name)
