"""The log of one partition: an ordered list of segments in `<topic>-<partition>/`.

Concurrency: one lock per Log serialises appends, rolls, truncation,
retention and config changes. Reads take a snapshot under the lock (the
segment list, log start and end offsets, and the active segment's size) and
then read files without it; bytes below the snapshot are never rewritten
except by truncation, which a reader sees as a short read.
"""

from __future__ import annotations

import logging
import os
import threading
from bisect import bisect_right
from collections.abc import Callable
from typing import NamedTuple

from kafkactl.cluster.invariant import invariant
from kafkactl.cluster.log.config import LogConfig
from kafkactl.cluster.log.durable import TMP_SUFFIX, fsync_dir, fsync_file, remove_if_present
from kafkactl.cluster.log.errors import (
    CheckpointFormatError,
    LogClosedError,
    OffsetOutOfRangeError,
    OffsetsOutOfOrderError,
    UnexpectedAppendOffsetError,
)
from kafkactl.cluster.log.leader_epoch import LEADER_EPOCH_CHECKPOINT, EpochEntry, LeaderEpochCache
from kafkactl.cluster.log.producer_state import ProducerStateManager
from kafkactl.cluster.log.segment import (
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    FileRegion,
    LogSegment,
    parse_segment_file_name,
    segment_file_name,
)
from kafkactl.cluster.protocol.record_batch import (
    INT32_MAX,
    BatchHeader,
    InvalidRecordError,
    assign_offsets,
    rebased_headers,
    stamp_log_append_time,
    stamped_parts,
    validate_batches,
)
from kafkactl.cluster.protocol.record_validation import validate_produce_records

LOG_APPEND_TIME = "LogAppendTime"

logger = logging.getLogger(__name__)


class AppendInfo(NamedTuple):
    first_offset: int
    last_offset: int
    max_timestamp: int
    record_count: int
    log_append_time_ms: int = -1  # the broker's timestamp under LogAppendTime, else -1


class FetchSlice(NamedTuple):
    """Whole batches of one segment, for one partition of a fetch response."""

    region: FileRegion
    first_offset: int  # base offset of the first batch; may precede fetch_offset
    fetch_offset: int

    @property
    def size_bytes(self) -> int:
        return self.region.length


class _Snapshot(NamedTuple):
    segments: tuple[LogSegment, ...]
    base_offsets: tuple[int, ...]
    log_start_offset: int
    log_end_offset: int
    active_size_bytes: int


def partition_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


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

    # --- opening and recovery ----------------------------------------------

    @classmethod
    def open(cls, dir_path: str, topic: str, partition: int, config: LogConfig,
             clock_ms: Callable[[], int], recovery_point: int, clean_shutdown: bool,
             log_start_offset: int | None = None) -> Log:
        """Open (or create) the log in partition dir `dir_path` (`.../<topic>-<partition>`).

        After an unclean shutdown every segment holding offsets at or above
        `recovery_point` is rescanned; the active segment is always rescanned.
        Torn or corrupt tails are cut (a cut inside an older segment drops all
        later segments), bad or missing indexes are rebuilt, and what was
        recovered is fsynced, so the recovery point becomes the log end offset.

        A new log (no partition dir yet) is created without fsyncs: it holds
        nothing a crash could lose, and a broker becoming a replica of
        thousands of partitions must not pay milliseconds of fsync for each.
        Its first flush makes the dir and its files durable.
        """
        if not os.path.isdir(dir_path):
            return cls._create(dir_path, topic, partition, config, clock_ms, log_start_offset or 0)
        log = cls(dir_path, topic, partition, config, clock_ms)
        log._load(recovery_point, clean_shutdown, log_start_offset)
        return log

    @classmethod
    def _create(cls, dir_path: str, topic: str, partition: int, config: LogConfig,
                clock_ms: Callable[[], int], start_offset: int) -> Log:
        os.makedirs(dir_path)
        log = cls(dir_path, topic, partition, config, clock_ms)
        start_offset = max(start_offset, 0)
        log._set_segments((LogSegment.create(dir_path, start_offset, config, clock_ms()),))
        log._log_start_offset = log._log_end_offset = log._recovery_point = start_offset
        log._epoch_cache.persist(durable=False)
        log._dir_dirty = log._parent_dirty = True
        return log

    def _load(self, recovery_point: int, clean_shutdown: bool, log_start_offset: int | None) -> None:
        now = self._clock_ms()
        base_offsets = self._remove_leftovers()
        epoch_starts: list[EpochEntry] = []
        segments = self._load_segments(base_offsets, recovery_point, clean_shutdown, epoch_starts, now)
        if not segments:
            segments = [LogSegment.create(self.dir_path, max(log_start_offset or 0, 0), self.config, now)]
        self._set_segments(tuple(segments))
        self._log_end_offset = segments[-1].next_offset
        self._rebuild_producer_state()
        start = max(log_start_offset or 0, segments[0].base_offset)
        if start > self._log_end_offset:
            logger.warning("%s: log start offset %d beyond log end offset %d; using the end",
                           self.dir_path, start, self._log_end_offset)
            start = self._log_end_offset
        self._log_start_offset = start
        self._load_epoch_cache(epoch_starts)
        for segment in segments:
            segment.flush()
        fsync_dir(self.dir_path)
        self._recovery_point = self._log_end_offset

    def _rebuild_producer_state(self) -> None:
        """Idempotent producers' last batches, from the batch headers in the log."""
        self._producer_state.clear()
        for segment in self._segments:
            self._producer_state.update([h for _, h in segment.iter_headers(0, segment.size_bytes)])

    def _remove_leftovers(self) -> list[int]:
        """Delete files a crash left behind; return the base offsets of `.log` files.

        Leftovers: `.deleted` segments not yet purged, `.tmp` checkpoint
        writes, and index files whose `.log` is gone.
        """
        names = os.listdir(self.dir_path)
        base_offsets = sorted({parse_segment_file_name(name) for name in names} - {None})
        for name in names:
            index_base = (parse_segment_file_name(name, INDEX_SUFFIX)
                          if name.endswith(INDEX_SUFFIX)
                          else parse_segment_file_name(name, TIME_INDEX_SUFFIX))
            orphan_index = index_base is not None and index_base not in base_offsets
            if name.endswith(DELETED_SUFFIX) or name.endswith(TMP_SUFFIX) or orphan_index:
                logger.info("%s: removing leftover %s", self.dir_path, name)
                os.unlink(os.path.join(self.dir_path, name))
        return base_offsets

    def _load_segments(self, base_offsets: list[int], recovery_point: int, clean_shutdown: bool,
                       epoch_starts: list[EpochEntry], now: int) -> list[LogSegment]:
        segments: list[LogSegment] = []
        for i, base_offset in enumerate(base_offsets):
            is_last = i == len(base_offsets) - 1
            unflushed = is_last or (not clean_shutdown and base_offsets[i + 1] > recovery_point)
            next_base = None if is_last else base_offsets[i + 1]
            segment, index_problem = LogSegment.open_existing(self.dir_path, base_offset, self.config,
                                                              now, next_base)
            segments.append(segment)
            if not unflushed and index_problem is None:
                continue
            if index_problem is not None and not unflushed:
                logger.warning("%s: rebuilding indexes of segment %d: %s",
                               self.dir_path, base_offset, index_problem)
            result = segment.recover(_epoch_collector(epoch_starts))
            if not is_last:
                segment.on_become_inactive()  # its largest timestamp, for later opens
            if result.stop_reason is None:
                continue
            logger.warning("%s: segment %d: %s; truncated %d bytes (kept %d bytes, %d batches)",
                           self.dir_path, base_offset, result.stop_reason, result.truncated_bytes,
                           result.valid_bytes, result.batch_count)
            if not is_last:
                self._delete_later_segments(base_offsets[i + 1:])
                break
        return segments

    def _delete_later_segments(self, base_offsets: list[int]) -> None:
        logger.warning("%s: corruption before the end of the log; deleting segments %s",
                       self.dir_path, base_offsets)
        for base_offset in base_offsets:
            for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX):
                remove_if_present(os.path.join(self.dir_path, segment_file_name(base_offset, suffix)))

    def _load_epoch_cache(self, epoch_starts: list[EpochEntry]) -> None:
        path = os.path.join(self.dir_path, LEADER_EPOCH_CHECKPOINT)
        existed = os.path.exists(path)
        try:
            cache = LeaderEpochCache.load(path)
        except (CheckpointFormatError, ValueError) as error:
            logger.warning("%s: rebuilding the leader-epoch cache: %s", self.dir_path, error)
            cache, existed = LeaderEpochCache(path), False
        if not existed:
            epoch_starts = []
            for segment in self._segments:
                collect = _epoch_collector(epoch_starts)
                for position, header in segment.iter_headers(0, segment.size_bytes):
                    collect(position, header)
        cache.truncate_from_end(self._log_end_offset)  # first: entries of cut batches must not clash
        known = set(cache.entries)   # a rescanned segment finds these again: not a change
        for epoch, start_offset in epoch_starts:
            if EpochEntry(epoch, start_offset) not in known:
                cache.assign(epoch, start_offset)
        cache.truncate_from_end(self._log_end_offset)
        cache.truncate_from_start(self._log_start_offset)
        cache.persist()  # so the file exists even when nothing changed
        self._epoch_cache = cache

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

    def check_produce(self, records: bytes | bytearray | memoryview) -> list[BatchHeader]:
        """The headers of a produce payload every batch of which the leader
        accepts: frame and CRC (validate_batches), then the records, decompressed
        if need be (record_validation.py: Kafka's LogValidator rules for
        clients' batches, one pass). Takes no lock: callers run it before
        theirs, since the record pass is the costly part of an append. Raises
        the record_batch errors and record_validation.RecordValidationError."""
        headers = validate_batches(records, self.config.max_message_bytes)
        if not headers:
            raise InvalidRecordError("a produce payload needs at least one record batch")
        validate_produce_records(records, headers, self.config.message_timestamp_type == LOG_APPEND_TIME)
        return headers

    def append_as_leader(self, records: bytes | bytearray | memoryview, leader_epoch: int,
                         headers: list[BatchHeader] | None = None) -> AppendInfo:
        """Validate, assign offsets, stamp `leader_epoch` and append a produce payload.

        Every batch is validated before anything is written (check_produce,
        unless the caller passes the `headers` it returned for these
        `records`). The offsets and the epoch lie outside the
        CRC: each batch's first 16 bytes are written anew and the rest straight
        from `records` (os.writev), which is never copied nor changed, so it
        may be a read-only view of the request. Only LogAppendTime, which
        changes bytes under the CRC, works on a copy. Raises the record_batch
        errors (CorruptRecordError, InvalidRecordError, RecordTooLargeError, ...)
        and record_validation.RecordValidationError.
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
            append_time = -1
            if self.config.message_timestamp_type == LOG_APPEND_TIME:
                data = bytearray(records)
                assign_offsets(data, headers, first_offset, leader_epoch)
                headers = stamp_log_append_time(data, rebased_headers(headers, first_offset, leader_epoch), now)
                append_time = now
            else:
                data = stamped_parts(records, headers, first_offset, leader_epoch)
                headers = rebased_headers(headers, first_offset, leader_epoch)
            self._append(data, headers, now)
            self._producer_state.update(headers)
            if leader_epoch >= 0 and self._epoch_cache.assign(leader_epoch, first_offset):
                self._attention("flush")
            flush_due = self._log_end_offset - self._recovery_point >= self.config.flush_messages
        if flush_due:
            self.flush()
        return _append_info(headers, append_time)

    def append_as_follower(self, records: bytes | bytearray | memoryview) -> AppendInfo | None:
        """Append batches fetched from the leader, offsets and epochs as they are.

        Checks the CRC and structure of every batch, that offsets strictly
        increase and that the first is not below the log end offset. An
        incomplete trailing batch is ignored; None if no whole batch remains.
        The max.message.bytes limit is not applied: the leader accepted them.
        """
        headers = validate_batches(records, INT32_MAX, strict_counts=False, allow_partial_tail=True)
        if not headers:
            return None
        _check_increasing(headers)
        size = sum(header.size_bytes for header in headers)
        with self._lock:
            self._ensure_open()
            if headers[0].base_offset < self._log_end_offset:
                raise UnexpectedAppendOffsetError(
                    f"{self.dir_path}: follower append at {headers[0].base_offset} below "
                    f"log end offset {self._log_end_offset}",
                    headers[0].base_offset, self._log_end_offset)
            self._append(memoryview(records)[:size], headers, self._clock_ms())
            self._producer_state.update(headers)
            for header in headers:
                if header.partition_leader_epoch >= 0 and self._epoch_cache.assign(
                        header.partition_leader_epoch, header.base_offset):
                    self._attention("flush")
            flush_due = self._log_end_offset - self._recovery_point >= self.config.flush_messages
        if flush_due:
            self.flush()
        return _append_info(headers, -1)

    def _append(self, data: bytes | bytearray | memoryview | list, headers: list[BatchHeader], now: int) -> None:
        max_timestamp = max(header.max_timestamp for header in headers)
        size = headers[-1].size_bytes if len(headers) == 1 else sum(header.size_bytes for header in headers)
        segment = self._maybe_roll(size, max_timestamp, headers[0].base_offset,
                                   headers[-1].last_offset, now)
        segment.append(data, headers)
        self._log_end_offset = headers[-1].next_offset

    def _maybe_roll(self, size_bytes: int, max_timestamp: int, first_offset: int, last_offset: int,
                    now: int) -> LogSegment:
        active = self._segments[-1]
        if not self._should_roll(active, size_bytes, max_timestamp, last_offset, now):
            return active
        active.on_become_inactive()
        segment = LogSegment.create(self.dir_path, first_offset, self.config, now)
        self._set_segments(self._segments + (segment,))
        self._dir_dirty = True
        self._attention("flush")
        logger.debug("%s: rolled segment %d", self.dir_path, first_offset)
        return segment

    def _attention(self, kind: str) -> None:
        if self.needs_attention is not None:
            self.needs_attention(self, kind)

    def _should_roll(self, active: LogSegment, size_bytes: int, max_timestamp: int,
                     last_offset: int, now: int) -> bool:
        if active.size_bytes == 0:
            return False  # an empty segment takes any append, even an oversized one
        return (active.size_bytes > self.config.segment_bytes - size_bytes
                or active.time_waited_for_roll(now, max_timestamp) > self.config.segment_ms
                or active.offset_index.is_full
                or active.time_index.is_full
                or last_offset - active.base_offset > INT32_MAX)

    # --- reads ---------------------------------------------------------------

    def _snapshot(self) -> _Snapshot:
        with self._lock:
            self._ensure_open()
            return _Snapshot(self._segments, self._base_offsets, self._log_start_offset,
                             self._log_end_offset, self._segments[-1].size_bytes)

    def read(self, fetch_offset: int, max_bytes: int, max_offset: int | None = None,
             min_one_batch: bool = True) -> FetchSlice | None:
        """Whole batches from the one holding `fetch_offset`, from a single segment.

        `max_offset` (the high watermark for consumers) admits only batches
        entirely below it. Raises OffsetOutOfRangeError outside
        [log_start_offset, log_end_offset]; None when there is nothing to
        return (at the log end offset, at max_offset, or a first batch larger
        than max_bytes without min_one_batch).
        """
        snapshot = self._snapshot()
        if not snapshot.log_start_offset <= fetch_offset <= snapshot.log_end_offset:
            raise OffsetOutOfRangeError(
                f"{self.topic}-{self.partition}: offset {fetch_offset} outside "
                f"[{snapshot.log_start_offset}, {snapshot.log_end_offset}]",
                snapshot.log_start_offset, snapshot.log_end_offset)
        cap = snapshot.log_end_offset if max_offset is None else min(max_offset, snapshot.log_end_offset)
        if fetch_offset >= cap:
            return None
        first = max(bisect_right(snapshot.base_offsets, fetch_offset) - 1, 0)
        for i in range(first, len(snapshot.segments)):
            segment = snapshot.segments[i]
            is_active = i == len(snapshot.segments) - 1
            max_position = snapshot.active_size_bytes if is_active else segment.size_bytes
            found = segment.read(fetch_offset, max_bytes, max_position, min_one_batch, cap)
            if found is not None:
                if found.region.length == 0:
                    return None
                return FetchSlice(found.region, found.first_offset, fetch_offset)
        return None

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the earliest record with timestamp >= timestamp_ms.

        Exact per record for every codec (compressed candidates are
        decompressed, see LogSegment.find_offset_by_timestamp). None if no
        record qualifies.
        The ListOffsets sentinels (-1 latest, -2 earliest) are the broker's to
        map to the high watermark / log_start_offset.
        """
        snapshot = self._snapshot()
        for i, segment in enumerate(snapshot.segments):
            if segment.max_timestamp_ms < timestamp_ms:
                continue
            is_active = i == len(snapshot.segments) - 1
            max_position = snapshot.active_size_bytes if is_active else segment.size_bytes
            found = segment.find_offset_by_timestamp(timestamp_ms, snapshot.log_start_offset,
                                                     max_position)
            if found is not None:
                return found
        return None

    def offset_of_max_timestamp(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record carrying the log's largest timestamp.

        ListOffsets with MAX_TIMESTAMP (-3). Same codec limitation as
        offset_for_timestamp. None for an empty log or one without timestamps.
        """
        snapshot = self._snapshot()
        best = max(snapshot.segments, key=lambda s: s.max_timestamp_ms)  # first of equals
        if best.max_timestamp_ms < 0:
            return None
        return self.offset_for_timestamp(best.max_timestamp_ms)

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

    def delete_retained_segments(self) -> int:
        """Apply retention.ms, retention.bytes and the log start offset.

        A segment expires by retention.ms when its largest record timestamp
        (its file's mtime if it has none) is older than that. Only a prefix of
        the oldest segments is deleted, never the active segment. Returns the
        number of segments deleted; log_start_offset moves to the new first
        segment.
        """
        with self._lock:
            self._ensure_open()
            count = self._retained_prefix(self._clock_ms())
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

    def _retained_prefix(self, now: int) -> int:
        candidates = self._segments[:-1]
        count = 0
        if self.config.retention_ms >= 0:
            while (count < len(candidates)
                   and now - candidates[count].largest_timestamp_ms() > self.config.retention_ms):
                count += 1
        if self.config.retention_bytes >= 0:
            excess = sum(s.size_bytes for s in self._segments[count:]) - self.config.retention_bytes
            while count < len(candidates) and excess >= candidates[count].size_bytes:
                excess -= candidates[count].size_bytes
                count += 1
        while count < len(candidates) and self._base_offsets[count + 1] <= self._log_start_offset:
            count += 1
        return count

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

    def _schedule_deletion(self, segment: LogSegment) -> None:
        segment.rename_for_deletion()
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

    def _set_segments(self, segments: tuple[LogSegment, ...]) -> None:
        self._segments = segments
        self._base_offsets = tuple(segment.base_offset for segment in segments)

    def _ensure_open(self) -> None:
        if self._closed:
            raise LogClosedError(f"log {self.topic}-{self.partition} in {self.dir_path} is closed")

    def __repr__(self) -> str:
        return (f"Log({self.topic}-{self.partition}, log_start_offset={self._log_start_offset}, "
                f"log_end_offset={self._log_end_offset}, segments={len(self._segments)})")


def _append_info(headers: list[BatchHeader], log_append_time_ms: int) -> AppendInfo:
    return AppendInfo(
        first_offset=headers[0].base_offset,
        last_offset=headers[-1].last_offset,
        max_timestamp=max(header.max_timestamp for header in headers),
        record_count=sum(header.record_count for header in headers),
        log_append_time_ms=log_append_time_ms,
    )


def _check_increasing(headers: list[BatchHeader]) -> None:
    for previous, header in zip(headers, headers[1:]):
        if header.base_offset <= previous.last_offset:
            raise OffsetsOutOfOrderError(
                f"batch at offset {header.base_offset} does not follow offset {previous.last_offset}")


def _epoch_collector(epoch_starts: list[EpochEntry]) -> Callable[[int, BatchHeader], None]:
    """A scan callback recording where each new leader epoch starts."""
    def collect(_position: int, header: BatchHeader) -> None:
        epoch = header.partition_leader_epoch
        if epoch >= 0 and (not epoch_starts or epoch_starts[-1].epoch != epoch):
            epoch_starts.append(EpochEntry(epoch, header.base_offset))
    return collect
