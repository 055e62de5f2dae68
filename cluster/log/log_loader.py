"""Opening a partition dir: a new one is created; in one that exists, what a crash left
is removed, recovered and made durable.

Runs before the Log is shared with any other thread, so it takes no lock.

A new log (no partition dir yet) is created without fsyncs: it holds
nothing a crash could lose, and a broker becoming a replica of thousands of
partitions must not pay milliseconds of fsync for each. Its first flush
makes the dir and its files durable (`created` tells the Log so).

An existing dir, in this order:
0. a swap of cleaned segments a crash interrupted is finished or undone
   (segment_swap.settle_swaps);
1. leftovers go: `.deleted` segments not yet purged, `.tmp` checkpoint
   writes, index files whose `.log` is gone;
2. after an unclean shutdown every segment holding offsets at or above the
   recovery point is rescanned (LogSegment.recover: recovery.py's scan);
   the active segment always is, and so is any segment whose indexes are
   bad or missing, to rebuild them;
3. a torn or corrupt tail is cut; a cut inside an older segment drops every
   later segment;
4. the log start offset is the checkpointed one, at least the first
   segment's base offset, at most the log end offset;
5. the leader-epoch cache is the checkpoint's, corrected by the epochs of the
   rescanned batches (of every batch, when the checkpoint is missing or
   malformed), and cut to the log's offsets;
6. every segment and the dir are fsynced, so the caller may take the log end
   offset as the recovery point.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import NamedTuple

from kafkactl.cluster.log.config import LogConfig
from kafkactl.cluster.log.durable import TMP_SUFFIX, fsync_dir, remove_if_present
from kafkactl.cluster.log.errors import CheckpointFormatError
from kafkactl.cluster.log.leader_epoch import LEADER_EPOCH_CHECKPOINT, EpochEntry, LeaderEpochCache
from kafkactl.cluster.log.segment import (
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    LogSegment,
    parse_segment_file_name,
    segment_file_name,
)
from kafkactl.cluster.log.segment_swap import settle_swaps
from kafkactl.cluster.protocol.record_batch import BatchHeader

logger = logging.getLogger(__name__)


class OpenedLog(NamedTuple):
    segments: tuple[LogSegment, ...]
    log_start_offset: int
    log_end_offset: int       # and the recovery point: everything below it is durable, unless `created`
    epoch_cache: LeaderEpochCache
    created: bool             # a new dir, nothing fsynced yet


def open_partition_dir(dir_path: str, config: LogConfig, now: int, recovery_point: int,
                       clean_shutdown: bool, log_start_offset: int | None) -> OpenedLog:
    """The segments, offsets and leader epochs of the partition dir `dir_path`,
    created or recovered."""
    if not os.path.isdir(dir_path):
        return _create(dir_path, config, now, max(log_start_offset or 0, 0))
    settle_swaps(dir_path)
    base_offsets = _remove_leftovers(dir_path)
    epoch_starts: list[EpochEntry] = []
    segments = _load_segments(dir_path, config, base_offsets, recovery_point, clean_shutdown,
                              epoch_starts, now)
    if not segments:
        segments = [LogSegment.create(dir_path, max(log_start_offset or 0, 0), config, now)]
    log_end_offset = segments[-1].next_offset
    start = max(log_start_offset or 0, segments[0].base_offset)
    if start > log_end_offset:
        logger.warning("%s: log start offset %d beyond log end offset %d; using the end",
                       dir_path, start, log_end_offset)
        start = log_end_offset
    epoch_cache = _load_epoch_cache(dir_path, segments, epoch_starts, start, log_end_offset)
    for segment in segments:
        segment.flush()
    fsync_dir(dir_path)
    return OpenedLog(tuple(segments), start, log_end_offset, epoch_cache, False)


def _create(dir_path: str, config: LogConfig, now: int, start_offset: int) -> OpenedLog:
    os.makedirs(dir_path)
    segment = LogSegment.create(dir_path, start_offset, config, now)
    epoch_cache = LeaderEpochCache(os.path.join(dir_path, LEADER_EPOCH_CHECKPOINT))
    epoch_cache.persist(durable=False)
    return OpenedLog((segment,), start_offset, start_offset, epoch_cache, True)


def _remove_leftovers(dir_path: str) -> list[int]:
    """Delete files a crash left behind (step 1); return the base offsets of `.log` files."""
    names = os.listdir(dir_path)
    base_offsets = sorted({base for name in names if (base := parse_segment_file_name(name)) is not None})
    for name in names:
        index_base = (parse_segment_file_name(name, INDEX_SUFFIX)
                      if name.endswith(INDEX_SUFFIX)
                      else parse_segment_file_name(name, TIME_INDEX_SUFFIX))
        orphan_index = index_base is not None and index_base not in base_offsets
        if name.endswith(DELETED_SUFFIX) or name.endswith(TMP_SUFFIX) or orphan_index:
            logger.info("%s: removing leftover %s", dir_path, name)
            os.unlink(os.path.join(dir_path, name))
    return base_offsets


def _load_segments(dir_path: str, config: LogConfig, base_offsets: list[int], recovery_point: int,
                   clean_shutdown: bool, epoch_starts: list[EpochEntry], now: int) -> list[LogSegment]:
    """Open every segment, rescanning those steps 2 and 3 name; the epochs of
    rescanned batches go to `epoch_starts`."""
    segments: list[LogSegment] = []
    for i, base_offset in enumerate(base_offsets):
        is_last = i == len(base_offsets) - 1
        unflushed = is_last or (not clean_shutdown and base_offsets[i + 1] > recovery_point)
        next_base = None if is_last else base_offsets[i + 1]
        segment, index_problem = LogSegment.open_existing(dir_path, base_offset, config, now, next_base)
        segments.append(segment)
        if not unflushed and index_problem is None:
            continue
        if index_problem is not None and not unflushed:
            logger.warning("%s: rebuilding indexes of segment %d: %s", dir_path, base_offset, index_problem)
        result = segment.recover(_epoch_collector(epoch_starts))
        if not is_last:
            segment.on_become_inactive()  # its largest timestamp, for later opens
        if result.stop_reason is None:
            continue
        logger.warning("%s: segment %d: %s; truncated %d bytes (kept %d bytes, %d batches)",
                       dir_path, base_offset, result.stop_reason, result.truncated_bytes,
                       result.valid_bytes, result.batch_count)
        if not is_last:
            _delete_later_segments(dir_path, base_offsets[i + 1:])
            break
    return segments


def _delete_later_segments(dir_path: str, base_offsets: list[int]) -> None:
    logger.warning("%s: corruption before the end of the log; deleting segments %s", dir_path, base_offsets)
    for base_offset in base_offsets:
        for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX):
            remove_if_present(os.path.join(dir_path, segment_file_name(base_offset, suffix)))


def _load_epoch_cache(dir_path: str, segments: list[LogSegment], epoch_starts: list[EpochEntry],
                      log_start_offset: int, log_end_offset: int) -> LeaderEpochCache:
    """Step 5: the checkpoint, corrected by the batches' epochs, and written."""
    path = os.path.join(dir_path, LEADER_EPOCH_CHECKPOINT)
    existed = os.path.exists(path)
    try:
        cache = LeaderEpochCache.load(path)
    except (CheckpointFormatError, ValueError) as error:
        logger.warning("%s: rebuilding the leader-epoch cache: %s", dir_path, error)
        cache, existed = LeaderEpochCache(path), False
    if not existed:
        epoch_starts = []
        for segment in segments:
            collect = _epoch_collector(epoch_starts)
            for position, header in segment.iter_headers(0, segment.size_bytes):
                collect(position, header)
    cache.truncate_from_end(log_end_offset)  # first: entries of cut batches must not clash
    known = set(cache.entries)   # a rescanned segment finds these again: not a change
    for epoch, start_offset in epoch_starts:
        if EpochEntry(epoch, start_offset) not in known:
            cache.assign(epoch, start_offset)
    cache.truncate_from_end(log_end_offset)
    cache.truncate_from_start(log_start_offset)
    cache.persist()  # so the file exists even when nothing changed
    return cache


def _epoch_collector(epoch_starts: list[EpochEntry]) -> Callable[[int, BatchHeader], None]:
    """A scan callback recording where each new leader epoch starts."""
    def collect(_position: int, header: BatchHeader) -> None:
        epoch = header.partition_leader_epoch
        if epoch >= 0 and (not epoch_starts or epoch_starts[-1].epoch != epoch):
            epoch_starts.append(EpochEntry(epoch, header.base_offset))
    return collect
