"""Bytes per second for background I/O: moves between log dirs
(replica.alter.log.dirs.io.max.bytes.per.second) and the log cleaner
(log.cleaner.io.max.bytes.per.second).

Rules: the work counts what it read or wrote (`record`) and is told how long
to wait before going on; it may run up to BURST_S ahead of the rate, so
short bursts go unthrottled; a rate at or above UNLIMITED, or not positive,
never waits. Shared by several threads (the cleaner's), so counting locks.
A new rate (`set_rate`, a dynamic config) starts a new schedule: what was
counted at the old rate is forgiven, and a wait (`pause`) ends within
RATE_CHECK_S of the change, so raising a crawling rate takes effect at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

UNLIMITED = 2**63 - 1           # Kafka's default for the io rates: Long.MAX_VALUE
BURST_S = 1.0                   # work may run this far ahead of the rate
RATE_CHECK_S = 0.2              # a wait looks this often whether the rate changed


class Throttle:
    """Bytes per second over all users; they sleep on their own stop events, so shutdown is prompt."""

    def __init__(self, rate_bytes_per_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate_bytes_per_s = rate_bytes_per_s
        self._clock = clock
        self._next_free_s = clock()
        self._lock = threading.Lock()
        self._rate_changes = 0

    def record(self, size_bytes: int) -> float:
        """Count `size_bytes` done; returns how long to wait before doing more."""
        if self.rate_bytes_per_s >= UNLIMITED or self.rate_bytes_per_s <= 0 or size_bytes <= 0:
            return 0.0
        with self._lock:
            now = self._clock()
            self._next_free_s = max(self._next_free_s, now - BURST_S) + size_bytes / self.rate_bytes_per_s
            return max(0.0, self._next_free_s - now - BURST_S)

    def set_rate(self, rate_bytes_per_s: float) -> None:
        with self._lock:
            self.rate_bytes_per_s = rate_bytes_per_s
            self._next_free_s = self._clock()
            self._rate_changes += 1

    def pause(self, wait_s: float, stop: threading.Event) -> bool:
        """Wait `wait_s` (as record() said), less if the rate changes meanwhile;
        False when `stop` is set."""
        deadline = time.monotonic() + wait_s
        changes = self._rate_changes
        while (left := deadline - time.monotonic()) > 0 and changes == self._rate_changes:
            if stop.wait(min(left, RATE_CHECK_S)):
                return False
        return not stop.is_set()
