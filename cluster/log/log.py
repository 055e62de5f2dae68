"""The log of one partition: an ordered list of segments in `<topic>-<partition>/`.

The Log owns the partition's state (its segments, log start and end
offsets, recovery point, leader epochs, producer state) and its lock; the
rules live beside it: opening and recovery in log_loader.py, what an append
must be in log_append.py, reads in log_read.py, what retention deletes in
retention.py.

Concurrency: one lock per Log serialises appends, rolls, truncation,
retention, config changes and the cleaner's swap of cleaned segments
(renames and three directory fsyncs; the cleaning itself reads and writes
without the lock). Reads take a snapshot under the lock and then read files
without it (log_read.py): a snapshot taken before a swap keeps reading the
replaced segments' files. fsyncs run outside the lock, so appends continue
meanwhile.

Durability: the recovery point is the offset below which every segment,
the leader-epoch checkpoint and the dir's names are fsynced; after a crash,
what lies above it is rescanned (log_loader.py). A segment goes in two
steps: renamed `.deleted` at once (a fetch still sending from it keeps
working), unlinked after file.delete.delay.ms.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from typing import NamedTuple

from kafkactl.cluster.invariant import invariant
from kafkactl.cluster.log.config import LogConfig
from kafkactl.cluster.log.dir_failures import reports_io_errors
from kafkactl.cluster.log.durable import fsync_dir, fsync_file
from kafkactl.cluster.log.errors import LogClosedError, LogDirFailedError, UnexpectedAppendOffsetError
from kafkactl.cluster.log.leader_epoch import LEADER_EPOCH_CHECKPOINT, LeaderEpochCache
from kafkactl.cluster.log.log_append import (
    AppendInfo,
    Appendable,
    Payload,
    append_info,
    check_follower_batches,
    check_leader_batches,
    should_roll,
    stamp_as_leader,
)
from kafkactl.cluster.log.log_loader import open_partition_dir
from kafkactl.cluster.log.log_read import (
    FetchSlice,
    LogSnapshot,
    largest_timestamp,
    offset_for_timestamp_in,
    read_snapshot,
)
from kafkactl.cluster.log.producer_state import ProducerStateManager
from kafkactl.cluster.log.retention import retained_prefix
from kafkactl.cluster.log.segment import LogSegment
from kafkactl.cluster.log.segment_swap import Fault, swap_in_cleaned
from kafkactl.cluster.protocol.record_batch import BatchHeader

logger = logging.getLogger(__name__)


class CleanerView(NamedTuple):
    segments: tuple[LogSegment, ...]
    log_start_offset: int
    log_end_offset: int
    truncations: int                      # Log.replace_segments refuses a swap after a truncation
    last_batch_of_producer: dict[int, int]  # producer id -> last offset of its last batch in the log


class Log:
    """Use Log.open; the constructor only sets fields."""

    def __init__(self, dir_path: str, topic: str, partition: int, config: LogConfig,
                 clock_ms: Callable[[], int]) -> None:
        self.dir_path = dir_path
        self.topic = topic
        self.partition = partition
        self.config = config
        self._clock_ms = clock_ms
        self._lock = threading.Lock()
        self._segments: tuple[LogSegment, ...] = ()
        self._base_offsets: tuple[int, ...] = ()
        self._log_start_offset = 0
        self._log_end_offset = 0
        self._recovery_point = 0
        self._epoch_cache = LeaderEpochCache(os.path.join(dir_path, LEADER_EPOCH_CHECKPOINT))
        self._pending_deletion: list[tuple[int, LogSegment]] = []
        self._last_flush_ms = clock_ms()
        self._truncations = 0  # bumped by truncation, so a flush racing it keeps its recovery point
        self._producer_state = ProducerStateManager()
        self._dir_dirty = False
        self._parent_dirty = False  # a new partition dir whose name is not fsynced yet
        self._closed = False
        # Set by the LogManager: called (under this log's lock) with "flush"
        # after a roll or a new leader epoch, with "purge" after a segment is
        # scheduled for deletion, so periodic work visits only logs that
        # have some (a broker may hold 10,000s of logs).
        self.needs_attention: Callable[[Log, str], None] | None = None
        # Set by the LogManager: called with (log dir, message, error) when an
        # I/O error here takes the whole dir offline (dir_failures.py).
        self.io_failed: Callable[[str, str, BaseException], None] | None = None

    # --- opening and recovery ----------------------------------------------

    @classmethod
    def open(cls, dir_path: str, topic: str, partition: int, config: LogConfig,
             clock_ms: Callable[[], int], recovery_point: int, clean_shutdown: bool,
             log_start_offset: int | None = None) -> Log:
        """Open (or create) the log in partition dir `dir_path` (`.../<topic>-<partition>`).

        An existing dir is recovered (log_loader.py): after an unclean
        shutdown every segment holding offsets at or above `recovery_point`
        is rescanned, the active segment always; what was recovered is
        fsynced, so the recovery point becomes the log end offset. A new log
        is durable only after its first flush.
        """
        log = cls(dir_path, topic, partition, config, clock_ms)
        opened = open_partition_dir(dir_path, config, clock_ms(), recovery_point, clean_shutdown,
                                    log_start_offset)
        log._set_segments(opened.segments)
        log._log_start_offset, log._log_end_offset = opened.log_start_offset, opened.log_end_offset
        log._recovery_point = opened.log_end_offset
        log._epoch_cache = opened.epoch_cache
        log._dir_dirty = log._parent_dirty = opened.created
        if not opened.created:
            log._rebuild_producer_state()
        return log

    def _rebuild_producer_state(self) -> None:
        """Idempotent producers' last batches, from the batch headers in the log."""
        self._producer_state.clear()
        for segment in self._segments:
            self._producer_state.update([h for _, h in segment.iter_headers(0, segment.size_bytes)])

    # --- properties ----------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._log_end_offset

    @property
    def recovery_point(self) -> int:
        return self._recovery_point

    @property
    def size_bytes(self) -> int:
        return sum(segment.size_bytes for segment in self._segments)

    @property
    def segment_base_offsets(self) -> list[int]:
        return list(self._base_offsets)

    @property
    def active_segment_base_offset(self) -> int:
        return self._base_offsets[-1]

    @property
    def last_flush_ms(self) -> int:
        return self._last_flush_ms

    @property
    def leader_epoch_cache(self) -> LeaderEpochCache:
        return self._epoch_cache

    @property
    def latest_epoch(self) -> int | None:
        return self._epoch_cache.latest_epoch

    def segment_summaries(self) -> list[tuple[int, int, int]]:
        """(base offset, size in bytes, last modified ms) of every segment, oldest first."""
        with self._lock:
            segments = self._segments
        return [(s.base_offset, s.size_bytes, s.last_modified_ms()) for s in segments]

    @property
    def closed(self) -> bool:
        return self._closed

    # --- appends -------------------------------------------------------------

    def check_produce(self, records: Payload) -> list[BatchHeader]:
        """The headers of a produce payload every batch of which the leader
        accepts (log_append.check_leader_batches). Takes no lock: callers run it
        before theirs, since the record pass is the costly part of an append."""
        return check_leader_batches(records, self.config, f"{self.topic}-{self.partition}")

    @reports_io_errors
    def append_as_leader(self, records: Payload, leader_epoch: int,
                         headers: list[BatchHeader] | None = None) -> AppendInfo:
        """Validate, assign offsets, stamp `leader_epoch` and append a produce payload.

        Every batch is validated before anything is written (check_produce,
        unless the caller passes the `headers` it returned for these
        `records`). `records` is never copied nor changed, so it may be a
        read-only view of the request (log_append.stamp_as_leader). Raises
        the record_batch errors (CorruptRecordError, InvalidRecordError,
        RecordTooLargeError, ...) and record_validation.RecordValidationError.
        """
        if headers is None:
            headers = self.check_produce(records)
        with self._lock:
            self._ensure_open()
            duplicate = self._producer_state.check(headers)
            if duplicate is not None:
                # A producer's retry of a batch already in the log: answer
                # with the offsets it got the first time, append nothing.
                return AppendInfo(duplicate.first_offset, duplicate.last_offset,
                                  duplicate.max_timestamp, 0)
            now = self._clock_ms()
            first_offset = self._log_end_offset
            data, headers, append_time = stamp_as_leader(records, headers, first_offset, leader_epoch, now,
                                                         self.config)
            flush_due = self._append(data, headers, now)
            self._producer_state.update(headers)
            if leader_epoch >= 0 and self._epoch_cache.assign(leader_epoch, first_offset):
                self._attention("flush")
        if flush_due:
            self.flush()
        return append_info(headers, append_time)

    @reports_io_errors
    def append_as_follower(self, records: Payload) -> AppendInfo | None:
        """Append batches fetched from the leader, offsets and epochs as they are.

        Checks every batch (log_append.check_follower_batches) and that the
        first is not below the log end offset. None if no whole batch
        remains.
        """
        headers = check_follower_batches(records)
        if not headers:
            return None
        size = sum(header.size_bytes for header in headers)
        with self._lock:
            self._ensure_open()
            if headers[0].base_offset < self._log_end_offset:
                raise UnexpectedAppendOffsetError(
                    f"{self.dir_path}: follower append at {headers[0].base_offset} below "
                    f"log end offset {self._log_end_offset}",
                    headers[0].base_offset, self._log_end_offset)
            flush_due = self._append(memoryview(records)[:size], headers, self._clock_ms())
            self._producer_state.update(headers)
            for header in headers:
                if header.partition_leader_epoch >= 0 and self._epoch_cache.assign(
                        header.partition_leader_epoch, header.base_offset):
                    self._attention("flush")
        if flush_due:
            self.flush()
        return append_info(headers, -1)

    def _append(self, data: Appendable, headers: list[BatchHeader], now: int) -> bool:
        """Write checked batches, rolling first if need be; True when
        flush.messages asks for a flush (the caller's, outside the lock)."""
        max_timestamp = max(header.max_timestamp for header in headers)
        size = headers[-1].size_bytes if len(headers) == 1 else sum(header.size_bytes for header in headers)
        active = self._segments[-1]
        if should_roll(active, self.config, size, max_timestamp, headers[-1].last_offset, now):
            active = self._roll(headers[0].base_offset, now)
        active.append(data, headers)
        self._log_end_offset = headers[-1].next_offset
        return self._log_end_offset - self._recovery_point >= self.config.flush_messages

    def _roll(self, base_offset: int, now: int) -> LogSegment:
        self._segments[-1].on_become_inactive()
        segment = LogSegment.create(self.dir_path, base_offset, self.config, now)
        self._set_segments(self._segments + (segment,))
        self._dir_dirty = True
        self._attention("flush")
        logger.debug("%s: rolled segment %d", self.dir_path, base_offset)
        return segment

    def _attention(self, kind: str) -> None:
        if self.needs_attention is not None:
            self.needs_attention(self, kind)

    # --- reads ---------------------------------------------------------------

    def _snapshot(self) -> LogSnapshot:
        with self._lock:
            self._ensure_open()
            return LogSnapshot(self._segments, self._base_offsets, self._log_start_offset,
                               self._log_end_offset, self._segments[-1].size_bytes)

    @reports_io_errors
    def read(self, fetch_offset: int, max_bytes: int, max_offset: int | None = None,
             min_one_batch: bool = True) -> FetchSlice | None:
        """Whole batches from the one holding `fetch_offset`, from a single segment.

        `max_offset` (the high watermark for consumers) admits only batches
        entirely below it. Raises OffsetOutOfRangeError outside
        [log_start_offset, log_end_offset]; None when there is nothing to
        return (at the log end offset, at max_offset, or a first batch larger
        than max_bytes without min_one_batch).
        """
        return read_snapshot(self._snapshot(), f"{self.topic}-{self.partition}", fetch_offset, max_bytes,
                             max_offset, min_one_batch)

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the earliest record with timestamp >= timestamp_ms.

        Exact per record for every codec (compressed candidates are
        decompressed, see LogSegment.find_offset_by_timestamp). None if no
        record qualifies.
        The ListOffsets sentinels (-1 latest, -2 earliest) are the broker's to
        map to the high watermark / log_start_offset.
        """
        return offset_for_timestamp_in(self._snapshot(), timestamp_ms)

    def offset_of_max_timestamp(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record carrying the log's largest timestamp.

        ListOffsets with MAX_TIMESTAMP (-3). None for an empty log or one
        without timestamps.
        """
        largest = largest_timestamp(self._snapshot())
        return None if largest is None else self.offset_for_timestamp(largest)

    def maybe_assign_epoch_start_offset(self, leader_epoch: int, start_offset: int) -> bool:
        """Record that `leader_epoch` starts at `start_offset` (on becoming leader).

        Takes the log's lock, so it cannot interleave with an append updating
        the same cache.
        """
        with self._lock:
            self._ensure_open()
            changed = self._epoch_cache.assign(leader_epoch, start_offset)
            if changed:
                self._attention("flush")
            return changed

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch: (epoch, end offset); see LeaderEpochCache.end_offset_for."""
        with self._lock:
            return self._epoch_cache.end_offset_for(epoch, self._log_end_offset)

    # --- truncation and retention --------------------------------------------

    @reports_io_errors
    def truncate_to(self, offset: int) -> bool:
        """Remove every batch from the one holding `offset` on (follower truncation).

        Returns False when there is nothing above `offset`. The new log end
        offset is the end of the last remaining batch, which equals `offset`
        when it lies on a batch boundary, as replication guarantees.
        """
        if offset < 0:
            raise ValueError(f"cannot truncate to negative offset {offset}")
        with self._lock:
            self._ensure_open()
            if offset >= self._log_end_offset:
                return False
            if offset < self._segments[0].base_offset:
                self._truncate_fully_locked(offset)
                return True
            keep = [s for s in self._segments if s.base_offset <= offset]
            for segment in self._segments[len(keep):]:
                self._schedule_deletion(segment)
            self._set_segments(tuple(keep))
            cut = keep[-1].truncate_to(offset)
            self._log_end_offset = keep[-1].next_offset
            self._after_truncation(min(self._log_start_offset, self._log_end_offset))
            logger.info("%s: truncated to %d (cut %d bytes of the last kept segment)",
                        self.dir_path, self._log_end_offset, cut)
            return True

    @reports_io_errors
    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop every segment and restart the log empty at `offset`."""
        if offset < 0:
            raise ValueError(f"cannot start a log at negative offset {offset}")
        with self._lock:
            self._ensure_open()
            self._truncate_fully_locked(offset)

    def _truncate_fully_locked(self, offset: int) -> None:
        for segment in self._segments:
            self._schedule_deletion(segment)
        now = self._clock_ms()
        self._set_segments((LogSegment.create(self.dir_path, offset, self.config, now),))
        self._dir_dirty = True
        self._log_end_offset = offset
        self._epoch_cache.clear()
        self._after_truncation(offset)
        logger.info("%s: truncated fully, restarting at %d", self.dir_path, offset)

    def _after_truncation(self, log_start_offset: int) -> None:
        self._log_start_offset = log_start_offset
        self._recovery_point = min(self._recovery_point, self._log_end_offset)
        self._epoch_cache.truncate_from_end(self._log_end_offset)
        self._rebuild_producer_state()
        self._truncations += 1

    @reports_io_errors
    def delete_retained_segments(self) -> int:
        """Delete the oldest segments retention.ms, retention.bytes or the log
        start offset expire (retention.py); log_start_offset moves to the new
        first segment. Returns the number of segments deleted."""
        with self._lock:
            self._ensure_open()
            count = retained_prefix(self._segments, self._base_offsets, self._log_start_offset, self.config,
                                    self._clock_ms())
            if count == 0:
                return 0
            for segment in self._segments[:count]:
                self._schedule_deletion(segment)
            self._set_segments(self._segments[count:])
            self._log_start_offset = max(self._log_start_offset, self._segments[0].base_offset)
            self._epoch_cache.truncate_from_start(self._log_start_offset)
            logger.info("%s: retention deleted %d segments; log start offset %d",
                        self.dir_path, count, self._log_start_offset)
            return count

    @reports_io_errors
    def maybe_increment_log_start_offset(self, offset: int) -> bool:
        """Move log_start_offset up (DeleteRecords); segments go on the next retention run."""
        with self._lock:
            self._ensure_open()
            invariant(offset <= self._log_end_offset,
                      f"log start offset {offset} beyond log end offset {self._log_end_offset}")
            if offset <= self._log_start_offset:
                return False
            self._log_start_offset = offset
            self._epoch_cache.truncate_from_start(offset)
            return True

    # --- the log cleaner ------------------------------------------------------

    def cleaner_view(self) -> CleanerView:
        """What a clean starts from, read at one instant (cleaner.py)."""
        with self._lock:
            self._ensure_open()
            last_batches = {pid: entry.batches[-1].last_offset
                            for pid, entry in self._producer_state.producers.items() if entry.batches}
            return CleanerView(self._segments, self._log_start_offset, self._log_end_offset, self._truncations,
                               last_batches)

    def replace_segments(self, old: tuple[LogSegment, ...], cleaned: LogSegment, truncations: int,
                         fault: Fault | None = None) -> bool:
        """Put the fsynced `cleaned` segment in place of the group `old`
        (segment_swap.py's steps), if `old` is still a run of this log's
        segments below the active one and no truncation happened since
        the clean's view (`truncations`). False, changing nothing, otherwise."""
        with self._lock:
            self._ensure_open()
            if self._truncations != truncations or old[0] not in self._segments:
                return False
            first = self._segments.index(old[0])
            end = first + len(old)
            current = self._segments[first:end]
            if end >= len(self._segments) or len(current) != len(old) or any(
                    a is not b for a, b in zip(current, old)):
                return False
            swap_in_cleaned(self.dir_path, old, cleaned, fault)
            self._set_segments(self._segments[:first] + (cleaned,) + self._segments[end:])
            for segment in old:
                self._delete_later(segment)
            return True

    def _schedule_deletion(self, segment: LogSegment) -> None:
        segment.rename_for_deletion()
        self._delete_later(segment)

    def _delete_later(self, segment: LogSegment) -> None:
        """A segment already renamed `.deleted`: unlinked after file.delete.delay.ms."""
        due_ms = self._clock_ms() + self.config.file_delete_delay_ms
        self._pending_deletion.append((due_ms, segment))
        self._attention("purge")

    @property
    def has_pending_deletions(self) -> bool:
        return bool(self._pending_deletion)

    def purge_deleted(self, now_ms: int | None = None) -> int:
        """Unlink `.deleted` segment files whose file.delete.delay.ms has passed."""
        if not self._pending_deletion:   # unlocked peek: the periodic task visits every log
            return 0
        now = self._clock_ms() if now_ms is None else now_ms
        with self._lock:
            due = [segment for due_ms, segment in self._pending_deletion if due_ms <= now]
            self._pending_deletion = [(d, s) for d, s in self._pending_deletion if d > now]
        for segment in due:
            segment.delete_files()
        return len(due)

    # --- flush, config, close ------------------------------------------------

    @reports_io_errors
    def flush(self, up_to_offset: int | None = None) -> None:
        """fsync every segment holding offsets in [recovery_point, up_to_offset).

        The fsyncs run outside the lock, so appends continue meanwhile.
        """
        with self._lock:
            self._ensure_open()
            target = self._log_end_offset if up_to_offset is None else min(
                up_to_offset, self._log_end_offset)
            segments = [] if target <= self._recovery_point else [
                s for i, s in enumerate(self._segments)
                if s.base_offset < target and (i == len(self._segments) - 1
                                               or self._base_offsets[i + 1] > self._recovery_point)]
            dir_dirty, self._dir_dirty = self._dir_dirty, False
            parent_dirty, self._parent_dirty = self._parent_dirty, False
            epoch_checkpoint = self._epoch_cache.take_unsynced()
            truncations = self._truncations
        for segment in segments:
            segment.flush()
        # The epochs of what lies below the new recovery point are never
        # re-read from the batches after a crash: the checkpoint must hold them.
        if epoch_checkpoint is not None:
            fsync_file(epoch_checkpoint)
        if dir_dirty:
            fsync_dir(self.dir_path)
        if parent_dirty:
            fsync_dir(os.path.dirname(self.dir_path))
        with self._lock:
            if self._truncations == truncations:
                self._recovery_point = max(self._recovery_point, target)
            if up_to_offset is None:  # only a full flush restarts the flush.ms clock
                self._last_flush_ms = self._clock_ms()

    @reports_io_errors
    def write_epoch_checkpoint(self) -> bool:
        """Write leader epochs noted since the last write (no fsync; see leader_epoch)."""
        if not self._epoch_cache.dirty:   # unlocked peek, as in purge_deleted
            return False
        with self._lock:
            if self._closed:
                return False
            return self._epoch_cache.write_if_dirty()

    def flush_rolled_segments(self) -> None:
        """fsync segments rolled since the last flush (Kafka flushes on roll)."""
        if self._recovery_point < self.active_segment_base_offset:
            self.flush(self.active_segment_base_offset)

    def update_config(self, config: LogConfig) -> None:
        with self._lock:
            self.config = config
            self._segments[-1].index_interval_bytes = config.index_interval_bytes

    def relocate(self, dir_path: str) -> None:
        """The caller renamed this open log's directory (the last step of a move
        between log dirs): keep every open file and in-memory state, and use
        the new paths from now on. No rescan, so the swap pauses appends for
        a rename, not for reading the active segment again."""
        with self._lock:
            self._ensure_open()
            self.dir_path = dir_path
            self._epoch_cache.path = os.path.join(dir_path, LEADER_EPOCH_CHECKPOINT)
            for segment in self._segments:
                segment.relocate(dir_path)

    def close(self) -> None:
        """Close the log; fetches still sending a FileRegion keep their file open."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for segment in self._segments:
                segment.close()
            pending = [segment for _, segment in self._pending_deletion]
            self._pending_deletion = []
            self._set_segments(())
        for segment in pending:
            segment.delete_files()

    def io_error(self, action: str, error: BaseException) -> LogDirFailedError:
        """`action` met an I/O error: the log dir goes offline (its owner is told)."""
        log_dir = os.path.dirname(self.dir_path)
        message = f"{action} of {self.topic}-{self.partition} in {log_dir} failed: {error}"
        if self.io_failed is not None:
            self.io_failed(log_dir, message, error)
        return LogDirFailedError(message)

    def _set_segments(self, segments: tuple[LogSegment, ...]) -> None:
        self._segments = segments
        self._base_offsets = tuple(segment.base_offset for segment in segments)

    def _ensure_open(self) -> None:
        if self._closed:
            raise LogClosedError(f"log {self.topic}-{self.partition} in {self.dir_path} is closed")

    def __repr__(self) -> str:
        return (f"Log({self.topic}-{self.partition}, log_start_offset={self._log_start_offset}, "
                f"log_end_offset={self._log_end_offset}, segments={len(self._segments)})")

