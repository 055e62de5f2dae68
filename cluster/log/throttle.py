"""Bytes per second for background I/O: moves between log dirs
(replica.alter.log.dirs.io.max.bytes.per.second) and the log cleaner
(log.cleaner.io.max.bytes.per.second).

Rules: the work counts what it read or wrote (`record`) and is told how long
to wait before going on; it may run up to BURST_S ahead of the rate, so
short bursts go unthrottled; a rate at or above UNLIMITED, or not positive,
never waits. Shared by several threads (the cleaner's), so counting locks.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

UNLIMITED = 2**63 - 1           # Kafka's default for the io rates: Long.MAX_VALUE
BURST_S = 1.0                   # work may run this far ahead of the rate


class Throttle:
    """Bytes per second over all users; they sleep on their own stop events, so shutdown is prompt."""

    def __init__(self, rate_bytes_per_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate_bytes_per_s = rate_bytes_per_s
        self._clock = clock
        self._next_free_s = clock()
        self._lock = threading.Lock()

    def record(self, size_bytes: int) -> float:
        """Count `size_bytes` done; returns how long to wait before doing more."""
        if self.rate_bytes_per_s >= UNLIMITED or self.rate_bytes_per_s <= 0 or size_bytes <= 0:
            return 0.0
        with self._lock:
            now = self._clock()
            self._next_free_s = max(self._next_free_s, now - BURST_S) + size_bytes / self.rate_bytes_per_s
            return max(0.0, self._next_free_s - now - BURST_S)
