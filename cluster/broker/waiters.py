"""Requests waiting for partitions to change, and what wakes them (Kafka's purgatories).

Three kinds of waiters, each on its own condition so that a change wakes only
those it may serve:
- acks=-1 producers (`commit_changed`): the high watermark passing their
  batch. Apart from the long polls, so a leader's append (one per produce
  request) wakes only the fetches it feeds.
- followers' long polls (`follower_data`): data appended, or any change but
  a high watermark move. A follower has nothing new when only the high
  watermark moves (Kafka's follower fetch is not completed by it either),
  which happens once per replicated produce, right when its producer is to
  be answered.
- consumers' long polls (`data_arrived`): the high watermark moved, or any
  change but an append.
A change of role, ISR or the hosted partitions wakes all three.

A long poll reads its generation before reading the logs, so nothing that
happens during the read is missed. Deadlines are on `monotonic` (injected:
time.monotonic in the broker).
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from kio.schema.errors import ErrorCode


class Waiters:
    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.monotonic = monotonic
        self.commit_changed = threading.Condition()
        self.follower_data = threading.Condition()
        self.follower_generation = 0   # bumped (under follower_data) by every notification
        self.data_arrived = threading.Condition()
        self.data_generation = 0       # bumped (under data_arrived) by every notification

    def notify(self, commits: bool = True, followers: bool = True, consumers: bool = True) -> None:
        """Wake who may have something new (see the module doc)."""
        # Producers first: a high watermark move is what they wait for.
        if commits:
            with self.commit_changed:
                self.commit_changed.notify_all()
        if followers:
            with self.follower_data:
                self.follower_generation += 1
                self.follower_data.notify_all()
        if consumers:
            with self.data_arrived:
                self.data_generation += 1
                self.data_arrived.notify_all()

    def wait_for_data(self, timeout_s: float, generation: int, follower: bool = False) -> bool:
        """Wait until something was appended or committed after `generation`
        (`data_generation`, or `follower_generation` for a follower's fetch);
        False when nothing was."""
        if follower:
            with self.follower_data:
                if self.follower_generation == generation and timeout_s > 0:
                    self.follower_data.wait(timeout_s)
                return self.follower_generation != generation
        with self.data_arrived:
            if self.data_generation == generation and timeout_s > 0:
                self.data_arrived.wait(timeout_s)
            return self.data_generation != generation

    def await_commit(self, outcome: Callable[[], ErrorCode | None], deadline: float) -> ErrorCode:
        """An acks=-1 produce: `outcome()` (None while waiting) each time the
        commits may have changed; REQUEST_TIMED_OUT at `deadline` (on `monotonic`)."""
        with self.commit_changed:
            while True:
                result = outcome()
                if result is not None:
                    return result
                remaining = deadline - self.monotonic()
                if remaining <= 0:
                    return ErrorCode.request_timed_out
                self.commit_changed.wait(remaining)
