"""Writing the coordinator's records to `__consumer_offsets`, acknowledged
only once the partition's ISR has them (acks=-1, min.insync.replicas).

The group's owner thread appends (a local disk write, the leader's own
append path) and goes on; the `CommitWatcher` thread waits for the high
watermark to pass each write and calls its `done(error)` then, or with
REQUEST_TIMED_OUT at offsets.commit.timeout.ms. The owner thread never waits
for followers, so one slow ISR cannot stall the other groups it owns.

What the client hears when a write fails, as Kafka maps it:
- offset commits (`commit_error`): no partition, or too few replicas ->
  COORDINATOR_NOT_AVAILABLE; leadership lost or the log dir failed ->
  NOT_COORDINATOR; too large -> INVALID_COMMIT_OFFSET_SIZE; a timeout stays
  REQUEST_TIMED_OUT;
- group metadata (`group_error`): the same, except that a timeout is
  COORDINATOR_NOT_AVAILABLE and a size error UNKNOWN_SERVER_ERROR.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from kafkactl.cluster import fatal
from kafkactl.cluster.coordinator.placement import OFFSETS_TOPIC
from kafkactl.cluster.protocol.record_batch import build_batch

log = logging.getLogger(__name__)

# The watcher looks again at least this often, so a deadline is noticed
# although no high watermark moved.
WATCH_INTERVAL_S = 0.1
MAX_WATCHED = 100_000

_UNAVAILABLE = {ErrorCode.unknown_topic_or_partition, ErrorCode.not_enough_replicas,
                ErrorCode.not_enough_replicas_after_append}
_NOT_COORDINATOR = {ErrorCode.not_leader_or_follower, ErrorCode.kafka_storage_error}
_TOO_LARGE = {ErrorCode.message_too_large, ErrorCode.record_list_too_large, ErrorCode.invalid_fetch_size}


def commit_error(error: ErrorCode) -> ErrorCode:
    if error in _UNAVAILABLE:
        return ErrorCode.coordinator_not_available
    if error in _NOT_COORDINATOR:
        return ErrorCode.not_coordinator
    if error in _TOO_LARGE:
        return ErrorCode.invalid_commit_offset_size
    return error


def group_error(error: ErrorCode) -> ErrorCode:
    if error == ErrorCode.none:
        return error
    if error in _UNAVAILABLE or error == ErrorCode.request_timed_out:
        return ErrorCode.coordinator_not_available
    if error in _NOT_COORDINATOR:
        return ErrorCode.not_coordinator
    return ErrorCode.unknown_server_error


Done = Callable[[ErrorCode], None]


@dataclass(slots=True)
class _Watched:
    partition: int
    last_offset: int
    leader_epoch: int
    deadline: float
    done: Done


class RecordWriter:
    """Appends (key, value) records to one `__consumer_offsets` partition as
    one batch and reports, through `done`, once they are committed."""

    def __init__(self, replica_manager, clock_ms: Callable[[], int], commit_timeout_ms: int,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self._replica_manager = replica_manager
        self._clock_ms = clock_ms
        self._commit_timeout_s = commit_timeout_ms / 1000
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._watched: list[_Watched] = []
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="coordinator-commits", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        with self._lock:
            self._stopping = True
        self._wake()
        self._thread.join(timeout=5)

    def write(self, partition: int, records: Sequence[tuple[bytes, bytes | None]], done: Done) -> None:
        """Append now; `done(error)` later, on the watcher's thread (at once
        on this thread when the append itself fails)."""
        now_ms = self._clock_ms()
        batch = build_batch([(key, value, None, now_ms) for key, value in records])
        result = self._replica_manager.append(OFFSETS_TOPIC, partition, batch, -1)
        if result.error != ErrorCode.none:
            done(result.error)
            return
        watched = _Watched(partition, result.last_offset, result.leader_epoch,
                           self._monotonic() + self._commit_timeout_s, done)
        with self._lock:
            if len(self._watched) >= MAX_WATCHED:
                overflow = True
            else:
                overflow = False
                self._watched.append(watched)
        if overflow:   # cannot happen while owners' queues are bounded; refused, never dropped silently
            done(ErrorCode.request_timed_out)
        else:
            self._wake()

    def _wake(self) -> None:
        waiters = self._replica_manager.waiters
        with waiters.commit_changed:
            waiters.commit_changed.notify_all()

    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as error:
            fatal.halt_if_fatal(error, "watching the coordinator's writes")
            log.exception("the coordinator's commit watcher stopped")
            raise

    def _loop(self) -> None:
        waiters = self._replica_manager.waiters
        while True:
            with waiters.commit_changed:
                finished = self._take_finished()
                with self._lock:
                    if self._stopping:
                        return
                    idle = not self._watched
                if not finished:
                    waiters.commit_changed.wait(None if idle else WATCH_INTERVAL_S)
            for watched, error in finished:
                watched.done(error)

    def _take_finished(self) -> list[tuple[_Watched, ErrorCode]]:
        now = self._monotonic()
        finished, waiting = [], []
        with self._lock:
            watched_now = self._watched
        for watched in watched_now:
            error = self._replica_manager.commit_outcome(
                OFFSETS_TOPIC, watched.partition, watched.last_offset, watched.leader_epoch)
            if error is None and now >= watched.deadline:
                error = ErrorCode.request_timed_out
            if error is None:
                waiting.append(watched)
            else:
                finished.append((watched, error))
        with self._lock:
            added = self._watched[len(watched_now):]
            self._watched = waiting + added
        return finished
