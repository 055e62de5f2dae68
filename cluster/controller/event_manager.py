"""The controller's event queue and the one thread that owns controller state.

Seed 002: ZooKeeper watches, broker requests (controlled shutdown) and
timers only *enqueue* events; a single thread takes them one at a time and
runs them against the controller context. Nothing else touches that state,
so no locks are needed in the controller and the order of state changes is
the order of the queue.

The queue is bounded: a producer of events (a watch firing in a storm) blocks
for at most `put_timeout_s` and then fails loudly instead of growing memory
without limit.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

log = logging.getLogger(__name__)

DEFAULT_QUEUE_SIZE = 10_000
DEFAULT_PUT_TIMEOUT_S = 30.0


class EventQueueFull(RuntimeError):
    """The controller cannot keep up; the event was not queued."""


@dataclass(order=True)
class _Queued:
    enqueued_at: float
    sequence: int
    name: str = field(compare=False)
    run: Callable[[], None] = field(compare=False)


class ControllerEventManager:
    def __init__(self, max_queue_size: int = DEFAULT_QUEUE_SIZE,
                 put_timeout_s: float = DEFAULT_PUT_TIMEOUT_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._queue: queue.Queue[_Queued | None] = queue.Queue(maxsize=max_queue_size)
        self._put_timeout_s = put_timeout_s
        self._clock = clock
        self._sequence = 0
        self._sequence_lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="controller-event-thread", daemon=True)
        self._stopped = threading.Event()
        self.processed = 0
        self.max_queue_time_s = 0.0

    def start(self) -> None:
        self._thread.start()

    def put(self, name: str, run: Callable[[], None]) -> None:
        """Queue an event; `run` executes later on the event thread."""
        with self._sequence_lock:
            self._sequence += 1
            item = _Queued(self._clock(), self._sequence, name, run)
        try:
            self._queue.put(item, timeout=self._put_timeout_s)
        except queue.Full:
            raise EventQueueFull(f"controller event queue full; dropped {name}") from None

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop after the event being processed; queued events are dropped."""
        self._stopped.set()
        try:
            self._queue.put_nowait(None)
        except queue.Full:
            pass
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout_s)

    def on_event_thread(self) -> bool:
        return threading.current_thread() is self._thread

    def _run(self) -> None:
        while not self._stopped.is_set():
            item = self._queue.get()
            if item is None or self._stopped.is_set():
                return
            self.max_queue_time_s = max(self.max_queue_time_s, self._clock() - item.enqueued_at)
            try:
                item.run()
            except Exception:
                # One failed event must not stop the controller; the event's
                # own code decides whether to retry (by queueing again).
                log.exception("controller event %s failed", item.name)
            self.processed += 1
