"""Periodic work over many logs: which logs a pass visits, and what it does to each.

Rules:
- a broker may hold 10,000s of logs, so a pass visits only the logs that
  asked for it: a Log notes itself (Log.needs_attention, under its own
  lock) for "flush" after a roll or a new leader epoch, for "purge" after a
  segment is scheduled for deletion; a pass takes the whole set at once.
  A log the manager starts watching (loaded, created or swapped in) is
  noted for "flush", since it may have epochs to write;
- a log deleted, or replaced by a move between log dirs, while a pass runs
  is skipped, never an error; so is a log whose dir failed (an I/O error
  takes the dir offline, dir_failures.py), and the pass goes on;
- a flush pass writes the leader epochs noted since the last pass (no
  fsync), fsyncs the whole log when flush.ms has elapsed since its last
  full flush, and otherwise the segments rolled since (Kafka flushes on
  roll).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from kafkactl.cluster.log.errors import LogClosedError, LogDirFailedError
from kafkactl.cluster.log.log import Log

FLUSH = "flush"
PURGE = "purge"


class Attention:
    """The logs that asked for periodic work, by kind."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._logs: dict[str, set[Log]] = {FLUSH: set(), PURGE: set()}

    def watch(self, log: Log) -> Log:
        log.needs_attention = self.note
        self.note(log, FLUSH)
        return log

    def note(self, log: Log, kind: str) -> None:
        with self._lock:
            self._logs[kind].add(log)

    def take(self, kind: str) -> list[Log]:
        with self._lock:
            logs, self._logs[kind] = self._logs[kind], set()
        return list(logs)


def each_open_log(logs: Iterable[Log], action: Callable[[Log], int | None]) -> int:
    """Apply `action` to every log still open; sums the results."""
    total = 0
    for log in logs:
        if log.closed:      # deleted, or replaced by a move between log dirs
            continue
        try:
            total += action(log) or 0
        except LogClosedError:
            continue  # deleted while this pass ran
        except LogDirFailedError:
            continue  # its dir went offline (reported): the other dirs' logs go on
    return total


def flush_if_due(log: Log, now: int) -> int:
    """One log's part of a flush pass; 1 if flush.ms made it flush the whole log."""
    log.write_epoch_checkpoint()
    if now - log.last_flush_ms >= log.config.flush_ms:
        log.flush()
        return 1
    log.flush_rolled_segments()
    return 0
