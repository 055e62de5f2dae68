"""Moves partitions between the log dirs of this broker (Kafka's ReplicaAlterLogDirsThread).

AlterReplicaLogDirs creates a future log in the wanted dir and attaches it to
the partition (Partition.attach_future). One mover thread then copies each
partition's batches, as they are, from the current log to the future log, a
bounded chunk at a time, at most `replica.alter.log.dirs.io.max.bytes.per.second`
over all moves. Once a future log is within one chunk of its current log, the
mover takes the partition's locks (appends and truncations wait), copies the
rest, and has the LogManager swap the logs on disk; the partition then serves
from the new log. The current log is authoritative until that swap, so a
crash at any point loses nothing acknowledged (the crash rules are in
cluster/log/future_logs.py).

Truncations of the current log reach the future log under the same lock
(Partition.follower_truncate_*), so the future log is always a copy of a
prefix of the current one.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import NamedTuple

from kafkactl.cluster import fatal
from kafkactl.cluster.log.errors import LogError
from kafkactl.cluster.log.throttle import UNLIMITED, Throttle

log = logging.getLogger(__name__)

CHUNK_BYTES = 1024 * 1024       # one copy step; also the lag below which the swap starts
IDLE_WAIT_S = 0.5               # between looks when nothing is moving
ERROR_BACKOFF_S = 1.0


class CopyResult(NamedTuple):
    copied_bytes: int
    caught_up: bool     # the future log reached the end the current log had when the step began


def copy_step(partition, max_bytes: int = CHUNK_BYTES) -> CopyResult:
    """Copy up to `max_bytes` of whole batches from the partition's log to its future log."""
    with partition.log_move_lock:
        return _copy_locked(partition, max_bytes)


def _copy_locked(partition, max_bytes: int) -> CopyResult:
    current, future = partition.log, partition.future_log
    if future is None:
        return CopyResult(0, False)
    end_offset = current.log_end_offset
    if future.log_end_offset < current.log_start_offset:
        # Retention (or DeleteRecords) overtook the copy: what it has is gone from the source.
        future.truncate_fully_and_start_at(current.log_start_offset)
    if future.log_end_offset >= end_offset:
        return CopyResult(0, True)
    found = current.read(future.log_end_offset, max_bytes, None, True)
    if found is None:
        return CopyResult(0, True)
    data = found.region.read_bytes()
    if found.first_offset < future.log_end_offset:
        # Only at the very start, when the log start offset lies inside a batch:
        # the future log starts at that batch, as the current one does.
        future.truncate_fully_and_start_at(found.first_offset)
    future.append_as_follower(data)
    return CopyResult(len(data), future.log_end_offset >= end_offset)


def finish_move(log_manager, partition, fault: Callable[[str], None] | None = None) -> bool:
    """Catch up with appends stopped and swap the future log in. False if
    there was no move to finish (cancelled meanwhile)."""
    with partition.log_move_lock:          # follower appends and truncations wait
        with partition.lock:               # leader appends, reads and role changes wait
            future = partition.future_log
            if future is None or log_manager.future_log(partition.topic, partition.index) is not future:
                return False
            while not _copy_locked(partition, CHUNK_BYTES).caught_up:
                pass
            current = partition.log
            _align(current, future)
            new_log = log_manager.replace_current_with_future(partition.topic, partition.index, fault)
            _align(current, new_log)   # opening a log drops epochs that start at its end
            partition.replace_log(new_log)
    return True


def _align(current, future) -> None:
    """What the batches do not carry: the log start offset, and leader epochs
    without batches (a leader's new epoch before its first append)."""
    future.maybe_increment_log_start_offset(current.log_start_offset)
    wanted, have = current.leader_epoch_cache.entries, future.leader_epoch_cache.entries
    same = 0
    while same < min(len(wanted), len(have)) and wanted[same] == have[same]:
        same += 1
    for entry in wanted[same:]:    # in order: the first one drops whatever differs after it
        future.maybe_assign_epoch_start_offset(entry.epoch, entry.start_offset)


class LogDirMover:
    """One thread moving every partition that has a future log, round robin."""

    def __init__(self, replica_manager, log_manager, rate_bytes_per_s: int = UNLIMITED,
                 chunk_bytes: int = CHUNK_BYTES) -> None:
        self._replica_manager = replica_manager
        self._log_manager = log_manager
        self._chunk_bytes = chunk_bytes
        self.throttle = Throttle(rate_bytes_per_s)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def set_rate(self, rate_bytes_per_s: int) -> None:
        self.throttle.set_rate(rate_bytes_per_s)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="log-dir-mover", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop between copy steps; a swap under way finishes first."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            if self._thread.is_alive():
                log.warning("log dir mover did not stop within %.0f s", timeout_s)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                busy = self.run_once()
            except Exception as error:
                fatal.halt_if_fatal(error, "log dir mover")
                log.exception("log dir mover failed; retrying")
                self._stop.wait(ERROR_BACKOFF_S)
                continue
            if not busy:
                self._stop.wait(IDLE_WAIT_S)

    def run_once(self) -> bool:
        """One copy step for every moving partition, swapping those caught up;
        True if anything was copied or swapped."""
        busy = False
        for (topic, index), future in sorted(self._log_manager.all_future_logs().items()):
            if self._stop.is_set():
                break
            partition = self._replica_manager.get(topic, index)
            if partition is None or partition.future_log is not future:
                continue     # not hosted (yet): the move waits for its LeaderAndIsr
            try:
                busy |= self._advance(partition)
            except LogError as error:   # e.g. the partition was deleted under the copy
                log.warning("%s-%s: move between log dirs paused: %s", topic, index, error)
        return busy

    def _advance(self, partition) -> bool:
        copied, caught_up = copy_step(partition, self._chunk_bytes)
        swapped = False
        # Caught up: what is left arrived during one step, so the swap's pause is short.
        if caught_up and not self._stop.is_set():
            started = time.monotonic()
            swapped = finish_move(self._log_manager, partition)
            if swapped:
                log.info("%s-%s: log swapped in (appends paused %.0f ms)", partition.topic, partition.index,
                         (time.monotonic() - started) * 1000)
        delay_s = self.throttle.record(copied)
        if delay_s > 0:
            self.throttle.pause(delay_s, self._stop)
        return swapped or copied > 0
