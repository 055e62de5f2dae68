"""The log cleaner: compacts the logs whose cleanup.policy has compact, on its own threads.

Rules (Kafka's LogCleaner and LogCleanerManager):
- log.cleaner.threads threads (log.cleaner.enable false, or 0 threads: no
  cleaning); each round a thread takes the log that is due (compaction.py
  rule 1) with the best claim (rule 9), one no other thread is cleaning,
  and cleans it once (log_clean.py); with none due it sleeps
  log.cleaner.backoff.ms;
- only current logs of partitions this broker hosts are cleaned, each up
  to its partition's high watermark (leader or follower), which the broker
  passes in (`high_watermark`; None: not hosted, skipped); future logs of a
  move are not;
- the offset map of each thread holds at most
  log.cleaner.dedupe.buffer.size / threads at Kafka's 24 bytes a key; the
  rest of that share keeps decompressed payloads between a clean's two
  passes (log_clean.py);
- reads and writes of all threads together stay under
  log.cleaner.io.max.bytes.per.second (throttle.py);
- each log's first dirty offset is kept in its dir's
  `cleaner-offset-checkpoint` (Kafka's file), written after every clean
  with the entries of the dir's current logs; a malformed or missing file
  is read as empty, which only makes the next clean of each log start from
  its log start offset;
- stop() interrupts a clean between the MiB pieces it reads and writes;
  the log stays as it was;
- reconfigure() applies a dynamic change of log.cleaner.* as Kafka's
  LogCleaner.reconfigure does: the I/O rate at once, then every thread
  stopped and the new config's threads started (a clean in progress is
  interrupted as by stop(), and its log is due again); whether a change of
  the thread count may apply is `reconfiguration_problem`'s (Kafka's
  validateReconfiguration).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from kafkactl.cluster import fatal
from kafkactl.cluster.log.checkpoint import OffsetCheckpointFile, TopicPartition
from kafkactl.cluster.log.compaction import (
    Candidate,
    choose_log,
    cleanable,
    dirty_ratio,
    first_dirty_offset,
    offset_map_capacity,
    past_max_compaction_lag,
)
from kafkactl.cluster.log.dir_failures import is_io_error
from kafkactl.cluster.log.errors import CheckpointFormatError, KafkaStorageError, LogClosedError, LogDirFailedError
from kafkactl.cluster.log.layout import CLEANER_OFFSET_CHECKPOINT
from kafkactl.cluster.log.log import Log
from kafkactl.cluster.log.log_clean import CleanResult, clean_log, clean_range, paced_by, summarise
from kafkactl.cluster.log.manager import LogManager
from kafkactl.cluster.log.throttle import UNLIMITED, Throttle

logger = logging.getLogger(__name__)

ERROR_BACKOFF_S = 1.0


@dataclass(frozen=True, slots=True)
class CleanerConfig:
    enable: bool = True                                   # log.cleaner.enable
    threads: int = 1                                      # log.cleaner.threads
    backoff_ms: int = 15000                               # log.cleaner.backoff.ms
    dedupe_buffer_size: int = 128 * 1024 * 1024           # log.cleaner.dedupe.buffer.size
    io_max_bytes_per_second: float = UNLIMITED            # log.cleaner.io.max.bytes.per.second


def reconfiguration_problem(current_threads: int, new_threads: int) -> str | None:
    """Why log.cleaner.threads may not go from current to new without a
    restart (Kafka's LogCleaner.validateReconfiguration), or None."""
    if new_threads == current_threads:
        return None
    if new_threads < 1:
        return "Log cleaner threads should be at least 1"
    if new_threads < current_threads // 2:
        return f"Log cleaner threads cannot be reduced to less than half the current value {current_threads}"
    if new_threads > current_threads * 2:
        return f"Log cleaner threads cannot be increased to more than double the current value {current_threads}"
    return None


class LogCleaner:
    def __init__(self, log_manager: LogManager, config: CleanerConfig,
                 high_watermark: Callable[[str, int], int | None], clock_ms: Callable[[], int]) -> None:
        self._log_manager = log_manager
        self.config = config
        self._high_watermark = high_watermark
        self._clock_ms = clock_ms
        self._throttle = Throttle(config.io_max_bytes_per_second)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._in_progress: set[TopicPartition] = set()
        self._first_dirty: dict[TopicPartition, int] = {}
        self._threads: list[threading.Thread] = []
        self.cleans = 0   # completed cleans, for tests and metrics

    # --- life cycle --------------------------------------------------------------

    def start(self) -> None:
        """Read every dir's checkpoint, then start the threads (if enabled)."""
        for log_dir in self._log_manager.log_dirs:
            path = os.path.join(log_dir.path, CLEANER_OFFSET_CHECKPOINT)
            try:
                self._first_dirty.update(OffsetCheckpointFile(path).read())
            except (CheckpointFormatError, ValueError, OSError) as error:
                logger.warning("%s: unreadable, every log there is cleaned from its start: %s", path, error)
        self._start_threads()

    def _start_threads(self) -> None:
        if not self.config.enable:
            return
        stop = self._stop        # each generation of threads has its own stop event (reconfigure)
        for i in range(self.config.threads):
            thread = threading.Thread(target=self._run, args=(stop,), name=f"log-cleaner-{i}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout_s)

    def reconfigure(self, config: CleanerConfig, timeout_s: float = 10.0) -> None:
        """The new config in effect (module doc): the caller checked the
        thread count with reconfiguration_problem. A thread still in a clean
        after timeout_s stops at its next piece; it cleans no other log."""
        self._throttle.set_rate(config.io_max_bytes_per_second)
        self.stop(timeout_s)
        self.config = config
        self._stop = threading.Event()
        self._threads = [thread for thread in self._threads if thread.is_alive()]
        self._start_threads()
        logger.info("log cleaner reconfigured: %d threads, backoff %d ms, dedupe buffer %d bytes, I/O %g bytes/s",
                    config.threads if config.enable else 0, config.backoff_ms, config.dedupe_buffer_size,
                    config.io_max_bytes_per_second)

    @property
    def running_threads(self) -> int:
        return sum(1 for thread in self._threads if thread.is_alive())

    def _run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                cleaned = self.run_once(stop)
            except Exception as error:
                fatal.halt_if_fatal(error, "log cleaner")
                logger.exception("log cleaner: a clean failed; will retry")
                stop.wait(ERROR_BACKOFF_S)
                continue
            if cleaned is None:
                stop.wait(self.config.backoff_ms / 1000)

    # --- one round ---------------------------------------------------------------

    def run_once(self, stop: threading.Event | None = None) -> CleanResult | None:
        """Clean the log with the best claim once; None when no log is due.
        `stop` (default: the cleaner's) interrupts the clean."""
        stop = self._stop if stop is None else stop
        tp = self._take()
        if tp is None:
            return None
        log = None
        try:
            log = self._log_manager.get_log(*tp)
            high_watermark = self._high_watermark(*tp)
            if log is None or high_watermark is None:
                return None
            started = time.monotonic()
            threads = max(self.config.threads, 1)
            capacity = offset_map_capacity(self.config.dedupe_buffer_size, threads)
            result = clean_log(log, self._first_dirty_of(tp, log), high_watermark, self._clock_ms(), capacity,
                               paced_by(self._throttle, stop),
                               memory_bytes=self.config.dedupe_buffer_size // threads)
            if result is not None:
                self._done(tp, result.end_offset)
                logger.info("%s-%d: cleaned %d segments up to offset %d: %d bytes read, %d written, "
                            "%d of %d records kept, %.2f s", *tp, result.groups, result.end_offset,
                            result.bytes_read, result.bytes_written, result.records_kept, result.records_read,
                            time.monotonic() - started)
            return result
        except LogClosedError:
            return None   # deleted, or moved to another dir, meanwhile
        except (OSError, KafkaStorageError) as error:
            # The cleaned copy is written beside the log: an I/O error there
            # takes the log's dir offline, as one met by an append does.
            if log is None or isinstance(error, LogDirFailedError) or not is_io_error(error):
                raise
            raise log.io_error("cleaning", error) from error
        finally:
            with self._lock:
                self._in_progress.discard(tp)

    def _take(self) -> TopicPartition | None:
        """The due log with the best claim (rule 9), marked in progress."""
        now = self._clock_ms()
        with self._lock:
            busy = set(self._in_progress)
        candidates = {}
        for tp, log in self._log_manager.all_logs().items():
            if tp in busy or not log.config.compact or log.closed:
                continue
            candidate = self._candidate(tp, log, now)
            if candidate is not None:
                candidates[candidate.name] = (tp, candidate)
        chosen = choose_log(c for _, c in candidates.values())
        if chosen is None:
            return None
        tp = candidates[chosen.name][0]
        with self._lock:
            if tp in self._in_progress:
                return None
            self._in_progress.add(tp)
        return tp

    def _candidate(self, tp: TopicPartition, log: Log, now: int) -> Candidate | None:
        high_watermark = self._high_watermark(*tp)
        if high_watermark is None:
            return None
        try:
            view = log.cleaner_view()
        except LogClosedError:
            return None
        config = log.config
        first_dirty = first_dirty_offset(self._first_dirty.get(tp), view.log_start_offset, view.log_end_offset)
        uncleanable = clean_range(view, high_watermark, now, config.min_compaction_lag_ms)
        summaries = [summarise(s) for s in view.segments[:-1]]
        if not cleanable(summaries, first_dirty, uncleanable, now, config.min_cleanable_dirty_ratio,
                         config.max_compaction_lag_ms):
            return None
        return Candidate(f"{tp[0]}-{tp[1]}", dirty_ratio(summaries, first_dirty, uncleanable),
                         past_max_compaction_lag(summaries, first_dirty, uncleanable, now, config.max_compaction_lag_ms))

    def _first_dirty_of(self, tp: TopicPartition, log: Log) -> int:
        return first_dirty_offset(self._first_dirty.get(tp), log.log_start_offset, log.log_end_offset)

    def _done(self, tp: TopicPartition, end_offset: int) -> None:
        """Remember the new first dirty offset and write the dir's checkpoint."""
        with self._lock:
            self._first_dirty[tp] = end_offset
            self.cleans += 1
            dir_path = self._log_manager.dir_of(*tp)
            if dir_path is None:
                return
            entries = {t: self._first_dirty[t] for t in self._log_manager.all_logs()
                       if t in self._first_dirty and self._log_manager.dir_of(*t) == dir_path}
            OffsetCheckpointFile(os.path.join(dir_path, CLEANER_OFFSET_CHECKPOINT)).write(entries)

    def first_dirty_offsets(self) -> dict[TopicPartition, int]:
        with self._lock:
            return dict(self._first_dirty)
