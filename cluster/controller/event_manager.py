"""The controller's event queue and the one thread that owns controller state.

Seed 002: ZooKeeper watches, broker requests (controlled shutdown), broker
responses and timers only *enqueue* typed events (events.py); a single
thread takes them one at a time and hands each to `process` (the
Controller's dispatch by type). Nothing else touches that state, so no
locks are needed in the controller and the order of state changes is the
order of the queue.

The queue is bounded: a producer of events (a watch firing in a storm) blocks
for at most `put_timeout_s` and then fails loudly instead of growing memory
without limit.

Preemption, as in Kafka's ControllerEventManager: `preempt(which)` takes
the queued events `which` selects out of the queue and calls their
`preempt()` (a waiting controlled shutdown is answered NOT_CONTROLLER at
once); `stop` preempts everything left, and an event put after `stop` is
preempted at once: nobody waits for an event that will never run.

An event that fails is logged and the loop goes on (the event's own code
decides whether to retry by queueing again), except an InvariantViolation:
a property the design guarantees did not hold, so the state this thread
owns cannot be trusted. It goes to `on_fatal`, which must not return
normally (the Controller's gives up /controller, then halts the process).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import NamedTuple

from kafkactl.cluster import fatal
from kafkactl.cluster.controller.events import ControllerEvent
from kafkactl.cluster.invariant import InvariantViolation

log = logging.getLogger(__name__)

DEFAULT_QUEUE_SIZE = 10_000
DEFAULT_PUT_TIMEOUT_S = 30.0


class EventQueueFull(RuntimeError):
    """The controller cannot keep up; the event was not queued."""


class Queued(NamedTuple):
    enqueued_at: float
    event: ControllerEvent


class ControllerEventManager:
    def __init__(self, process: Callable[[ControllerEvent], None],
                 max_queue_size: int = DEFAULT_QUEUE_SIZE,
                 put_timeout_s: float = DEFAULT_PUT_TIMEOUT_S,
                 clock: Callable[[], float] = time.monotonic,
                 on_fatal: Callable[[InvariantViolation, ControllerEvent], None] | None = None) -> None:
        self._process = process
        self._max_queue_size = max_queue_size
        self._put_timeout_s = put_timeout_s
        self._clock = clock
        self._on_fatal = on_fatal or _halt
        self._queue: deque[Queued] = deque()
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="controller-event-thread", daemon=True)
        self._stopped = False
        self.processed = 0
        self.max_queue_time_s = 0.0

    def start(self) -> None:
        self._thread.start()

    def put(self, event: ControllerEvent) -> None:
        """Queue an event for `process` on the event thread."""
        deadline = None
        with self._changed:
            while not self._stopped and len(self._queue) >= self._max_queue_size:
                if deadline is None:
                    deadline = time.monotonic() + self._put_timeout_s
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise EventQueueFull(f"controller event queue full; dropped {event.name}")
                self._changed.wait(remaining)
            if not self._stopped:
                self._queue.append(Queued(self._clock(), event))
                self._changed.notify_all()
                return
        event.preempt()   # stopped: it would never run

    def preempt(self, which: Callable[[ControllerEvent], bool] = lambda _event: True) -> int:
        """Take the queued events `which` selects out of the queue, calling
        their `preempt()` (outside the lock: a reply may take its time)."""
        with self._changed:
            taken = [item.event for item in self._queue if which(item.event)]
            if taken:
                self._queue = deque(item for item in self._queue if not which(item.event))
                self._changed.notify_all()
        for event in taken:
            _preempt(event)
        return len(taken)

    def queued(self) -> list[ControllerEvent]:
        """The events waiting, oldest first (for tests and diagnostics)."""
        with self._changed:
            return [item.event for item in self._queue]

    def process_queued(self) -> int:
        """Tests without the thread: process what is queued now, in order."""
        count = 0
        while True:
            with self._changed:
                if not self._queue:
                    return count
                item = self._queue.popleft()
            self._process_one(item)
            count += 1

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop after the event being processed; queued events are preempted."""
        with self._changed:
            self._stopped = True
            self._changed.notify_all()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout_s)
        self.preempt()

    def on_event_thread(self) -> bool:
        return threading.current_thread() is self._thread

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._queue and not self._stopped:
                    self._changed.wait()
                if self._stopped:
                    return
                item = self._queue.popleft()
                self._changed.notify_all()    # room for a blocked put
            self._process_one(item)

    def _process_one(self, item: Queued) -> None:
        self.max_queue_time_s = max(self.max_queue_time_s, self._clock() - item.enqueued_at)
        try:
            self._process(item.event)
        except InvariantViolation as violation:
            self._on_fatal(violation, item.event)
        except Exception:
            # One failed event must not stop the controller; the event's
            # own code decides whether to retry (by queueing again).
            log.exception("controller event %s failed", item.event.name)
        self.processed += 1


def _preempt(event: ControllerEvent) -> None:
    try:
        event.preempt()
    except Exception as error:   # a waiter gone away must not stop the others being answered
        fatal.halt_if_fatal(error, f"preempting controller event {event.name}")
        log.exception("preempting controller event %s failed", event.name)


def _halt(violation: InvariantViolation, event: ControllerEvent) -> None:
    fatal.halt(f"controller event {event.name}: invariant violated: {violation}", violation)
