"""One clean of one compacted log: read its segments, keep the survivors, swap the copies in.

compaction.py decides; this module reads and writes. One clean, in order:
1. a view of the log at one instant (Log.cleaner_view): its segments, log
   start and end offsets, each producer's last batch;
2. the range: from the first segment to the first uncleanable offset
   (compaction.first_uncleanable_offset: the active segment, the high
   watermark, min.compaction.lag.ms), segments whole;
3. the offset map of the dirty section, a segment at a time, bounded by
   the map's capacity (the clean then ends at the first segment that did
   not fit: compaction.py rule 8);
4. the segments below the end in groups (rule 6), each rewritten to a
   `.cleaned` segment without any lock: batches whose records all survive
   are copied as they are, others rebuilt (record_filter.py), emptied ones
   kept only for their producer or as their group's last (rules 5, 6); a
   batch that cannot be decoded, or a control batch, is copied unchanged;
   the copy gets the group's latest modification time (the delete horizon
   of the next clean is read from it), and is fsynced;
5. the swap under the log's lock (Log.replace_segments, segment_swap.py),
   refused if retention, a truncation or a move changed the group
   meanwhile: the copy is then deleted and the next clean starts over.
Reads and writes go through the throttle; a stop request ends the clean
between batches, leaving the log as it was (a `.cleaned` file at most,
which the next load removes).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from typing import NamedTuple

from kafkactl.cluster.log.compaction import (
    RecordSummary,
    SegmentSummary,
    delete_horizon_ms,
    first_uncleanable_offset,
    group_segments,
    keep_empty_batch,
    retains_tombstones,
    survives,
)
from kafkactl.cluster.log.log import CleanerView, Log
from kafkactl.cluster.log.segment import LogSegment
from kafkactl.cluster.log.segment_swap import Fault
from kafkactl.cluster.protocol.record_batch import CONTROL_MASK, BatchHeader, RecordBatchError, parse_header
from kafkactl.cluster.protocol.record_filter import batch_records, emptied_batch, retained_batch

logger = logging.getLogger(__name__)

WRITE_CHUNK_BYTES = 1024 * 1024   # batches appended to the copy at a time

# Sleeps `seconds` for the throttle, counting bytes; False when the clean must stop.
Pace = Callable[[int], bool]


class CleanResult(NamedTuple):
    end_offset: int          # the new first dirty offset
    groups: int              # segments written
    bytes_read: int
    bytes_written: int
    records_read: int
    records_kept: int


class Aborted(Exception):
    """The clean stopped (shutdown) or its swap was refused; the log is unchanged."""


def summarise(segment: LogSegment) -> SegmentSummary:
    return SegmentSummary(segment.base_offset, segment.size_bytes, segment.largest_timestamp_ms(),
                          segment.last_modified_ms())


def clean_range(view: CleanerView, high_watermark: int, now_ms: int, min_compaction_lag_ms: int) -> int:
    """The first uncleanable offset of the view (step 2)."""
    return first_uncleanable_offset(view.segments[-1].base_offset, high_watermark,
                                    [summarise(s) for s in view.segments[:-1]], now_ms, min_compaction_lag_ms)


def clean_log(log: Log, first_dirty: int, high_watermark: int, now_ms: int, map_capacity: int, pace: Pace,
              fault: Fault | None = None) -> CleanResult | None:
    """Clean `log` once from `first_dirty`; None when nothing below the first
    uncleanable offset is dirty, or when the clean was aborted (logged)."""
    view = log.cleaner_view()
    config = log.config
    uncleanable = clean_range(view, high_watermark, now_ms, config.min_compaction_lag_ms)
    dirty = [s for i, s in enumerate(view.segments[:-1])
             if s.base_offset < uncleanable and view.segments[i + 1].base_offset > first_dirty]
    if not dirty:
        return None
    counts = [0, 0, 0, 0]   # bytes read, bytes written, records read, records kept
    try:
        latest, end = _offset_map(dirty, first_dirty, uncleanable, map_capacity, pace, counts)
        below = [s for s in view.segments[:-1] if s.base_offset < end]
        clean_section = [summarise(s) for i, s in enumerate(view.segments[:-1])
                         if view.segments[i + 1].base_offset <= first_dirty]
        horizon = delete_horizon_ms(clean_section, config.delete_retention_ms)
        next_bases = [view.segments[i + 1].base_offset for i in range(len(below))]
        groups = group_segments([(s.base_offset, s.size_bytes, n) for s, n in zip(below, next_bases)],
                                config.segment_bytes)
        for group in groups:
            old = tuple(below[i] for i in group)
            cleaned = _write_group(log, old, latest, horizon, view.last_batch_of_producer, now_ms, pace, counts)
            if not log.replace_segments(old, cleaned, view.truncations, fault):
                cleaned.delete_files()
                raise Aborted("the log changed under the clean (retention, truncation or a move)")
    except Aborted as why:
        logger.info("%s-%d: clean stopped: %s", log.topic, log.partition, why)
        return None
    return CleanResult(end, len(groups), *counts)


def _offset_map(dirty: list[LogSegment], first_dirty: int, uncleanable: int, capacity: int, pace: Pace,
                counts: list[int]) -> tuple[dict[bytes, int], int]:
    """Step 3: each key's last offset in the dirty section, and where the clean ends."""
    latest: dict[bytes, int] = {}
    for segment in dirty:
        found: dict[bytes, int] = {}
        for header, batch in _batches(segment, pace, counts):
            for offset, key, _ in _keys(header, batch):
                if key is not None and offset >= first_dirty:
                    found[key] = offset
        if latest and len(latest.keys() | found.keys()) > capacity:
            return latest, segment.base_offset
        latest.update(found)
    return latest, uncleanable


def _write_group(log: Log, old: tuple[LogSegment, ...], latest: dict[bytes, int], horizon_ms: int,
                 last_batch_of_producer: dict[int, int], now_ms: int, pace: Pace,
                 counts: list[int]) -> LogSegment:
    """Step 4: the group's survivors in a fsynced `.cleaned` segment."""
    cleaned = LogSegment.create_cleaned(log.dir_path, old[0].base_offset, log.config, now_ms)
    pending: list[bytes] = []
    try:
        for k, segment in enumerate(old):
            retain_tombstones = retains_tombstones(summarise(segment), horizon_ms)
            batches = list(_batches(segment, pace, counts))
            for j, (header, batch) in enumerate(batches):
                last_of_group = k == len(old) - 1 and j == len(batches) - 1
                kept = _filter(header, batch, latest, retain_tombstones, last_batch_of_producer, last_of_group, counts)
                if kept is not None:
                    pending.append(kept)
                if sum(len(b) for b in pending) >= WRITE_CHUNK_BYTES:
                    _append(cleaned, pending, pace, counts)
                    pending = []
        _append(cleaned, pending, pace, counts)
        cleaned.on_become_inactive()
        mtime_ns = max(s.last_modified_ms() for s in old) * 1_000_000
        os.utime(cleaned.file.path, ns=(mtime_ns, mtime_ns))
        cleaned.flush()
    except BaseException:
        cleaned.delete_files()
        raise
    return cleaned


def _filter(header: BatchHeader, batch: bytes, latest: dict[bytes, int], retain_tombstones: bool,
            last_batch_of_producer: dict[int, int], last_of_group: bool, counts: list[int]) -> bytes | None:
    """One batch as the copy holds it, or None when it goes."""
    if header.attributes & CONTROL_MASK:
        return batch
    try:
        _, payload, records = batch_records(batch)
    except RecordBatchError as error:
        logger.warning("batch at offset %d kept as it is: %s", header.base_offset, error)
        return batch
    kept = [r for r in records if survives(
        RecordSummary(header.base_offset + r.offset_delta, r.key, r.is_tombstone), latest, retain_tombstones)]
    counts[2] += len(records)
    counts[3] += len(kept)
    if len(kept) == len(records) and records:
        return batch
    if kept:
        return retained_batch(header, payload, kept)
    if keep_empty_batch(header.producer_id, header.last_offset, last_batch_of_producer, last_of_group):
        return emptied_batch(header)
    return None


def _append(cleaned: LogSegment, batches: list[bytes], pace: Pace, counts: list[int]) -> None:
    if not batches:
        return
    data = b"".join(batches)
    cleaned.append(data, [parse_header(b) for b in batches])
    counts[1] += len(data)
    if not pace(len(data)):
        raise Aborted("the cleaner is stopping")


def _batches(segment: LogSegment, pace: Pace, counts: list[int]):
    """(header, bytes) of every batch of a segment below the active one."""
    fd = segment.file.fileno()
    for position, header in list(segment.iter_headers(0, segment.size_bytes)):
        batch = os.pread(fd, header.size_bytes, position)
        counts[0] += len(batch)
        if not pace(len(batch)):
            raise Aborted("the cleaner is stopping")
        yield header, batch


def _keys(header: BatchHeader, batch: bytes):
    """(offset, key, is tombstone) of a batch's records; none for a control or unreadable batch."""
    if header.attributes & CONTROL_MASK:
        return
    try:
        _, _, records = batch_records(batch)
    except RecordBatchError:
        return
    for r in records:
        yield header.base_offset + r.offset_delta, r.key, r.is_tombstone


def paced_by(throttle_wait: Callable[[int], float], stop: threading.Event) -> Pace:
    """A Pace from a throttle's record() and a stop event."""
    def pace(size_bytes: int) -> bool:
        wait_s = throttle_wait(size_bytes)
        if wait_s > 0:
            return not stop.wait(wait_s)
        return not stop.is_set()
    return pace
