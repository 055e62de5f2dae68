"""Threads that handle requests, reused, as many as are busy at once.

Handlers block: an acks=-1 produce waits for its followers' fetches, a fetch
long-polls for data (followers' fetches included). A fixed number of
workers could all be taken by such waits while the requests that would end
them (the followers' fetches) queue behind: a deadlock. So `submit` never
queues behind busy workers: it wakes an idle one or starts a new one. The
number of threads is the number of connections with a request in hand (at
most one per connection, plus one sending its pipelined answers), never the
number of connections; a worker idle for IDLE_THREAD_S ends.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections import deque

from kafkactl.cluster import fatal

log = logging.getLogger("kafkactl.cluster.broker.network")

IDLE_THREAD_S = 60.0


class WorkerPool:
    def __init__(self, name: str = "request-handler", idle_thread_s: float = IDLE_THREAD_S) -> None:
        self._name = name
        self._idle_thread_s = idle_thread_s
        self._tasks: deque = deque()
        self._changed = threading.Condition()
        self._idle = 0          # workers waiting for a task
        self._threads = 0
        self._stopping = False
        self._numbers = itertools.count(1)

    @property
    def threads(self) -> int:
        return self._threads

    def submit(self, task, *args) -> None:
        with self._changed:
            self._tasks.append((task, args))
            if self._idle >= len(self._tasks):
                self._changed.notify()
                return
            self._threads += 1
        threading.Thread(target=self._run, name=f"{self._name}-{next(self._numbers)}", daemon=True).start()

    def stop(self) -> None:
        with self._changed:
            self._stopping = True
            self._changed.notify_all()

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._tasks:
                    if self._stopping:
                        self._threads -= 1
                        return
                    self._idle += 1
                    woken = self._changed.wait(self._idle_thread_s)
                    self._idle -= 1
                    if not woken and not self._tasks:
                        self._threads -= 1
                        return
                task, args = self._tasks.popleft()
            try:
                task(*args)
            except Exception as error:
                fatal.halt_if_fatal(error, "network task")
                log.exception("a network task failed")
