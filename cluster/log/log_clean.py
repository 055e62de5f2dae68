"""One clean of one compacted log: read its segments, keep the survivors, swap the copies in.

compaction.py decides; this module reads and writes. One clean, in order:
1. a view of the log at one instant (Log.cleaner_view): its segments, log
   start and end offsets, each producer's last batch;
2. the range: from the first segment to the first uncleanable offset
   (compaction.first_uncleanable_offset: the active segment, the high
   watermark, min.compaction.lag.ms), segments whole;
3. the offset map of the dirty section (record_filter.OffsetMap), a
   segment at a time, bounded by the map's capacity (the clean then ends at
   the first segment that did not fit: compaction.py rule 8); a batch that
   cannot be decoded adds no key;
4. the segments below the end in groups (rule 6), each rewritten to a
   `.cleaned` segment without any lock: batches whose records all survive
   are copied as they are, others rebuilt (record_filter.py), emptied ones
   kept only for their producer or as their group's last (rules 5, 6); a
   batch that cannot be decoded, or a control batch, is copied unchanged;
   the copy gets the group's latest modification time (the delete horizon
   of the next clean is read from it), and is fsynced, once;
5. the swap under the log's lock (Log.replace_segments, segment_swap.py),
   refused if retention, a truncation or a move changed the group
   meanwhile: the copy is then deleted and the next clean starts over.
Reads and writes go through the throttle, a MiB piece at a time; a stop
request ends the clean between pieces, leaving the log as it was (a `.cleaned` file at most,
which the next load removes).

Cost: the per-record work of both passes is in C (record_filter.py), so a
clean costs a Python call per batch, not per record. Segments are read and
the copy written in pieces of a MiB (sequential I/O, each piece paced once).
A compressed batch is decompressed by the map's pass; its payload is kept
for the copy's pass while it fits, beside the offset maps, in the thread's
share of log.cleaner.dedupe.buffer.size (`memory_bytes`), so the first
batches the copy needs are decompressed once per clean, the rest twice.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple, Protocol, TypeVar

from kafkactl.cluster.log.compaction import (
    SegmentSummary,
    delete_horizon_ms,
    first_uncleanable_offset,
    group_segments,
    keep_empty_batch,
    retains_tombstones,
)
from kafkactl.cluster.log.log import CleanerView, Log
from kafkactl.cluster.log.errors import KafkaStorageError
from kafkactl.cluster.log.segment import LogSegment
from kafkactl.cluster.log.segment_swap import Fault
from kafkactl.cluster.protocol.record_batch import (
    CODEC_MASK,
    CODEC_NONE,
    CONTROL_MASK,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MIN_BATCH_LENGTH,
    BatchHeader,
    RecordBatchError,
    parse_header,
)
from kafkactl.cluster.protocol.record_filter import (
    OffsetMap,
    collect_keys,
    emptied_batch,
    filtered_batch,
    keep_records,
    records_payload,
)

logger = logging.getLogger(__name__)

T = TypeVar("T")
_NONE: Any = object()

# Large sequential I/O: segments are read, and the copy written, this much at a time.
READ_CHUNK_BYTES = 1024 * 1024
WRITE_CHUNK_BYTES = 1024 * 1024

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
              fault: Fault | None = None, memory_bytes: int = 0) -> CleanResult | None:
    """Clean `log` once from `first_dirty`; None when nothing below the first
    uncleanable offset is dirty, or when the clean was aborted (logged).
    `memory_bytes`: the thread's share of log.cleaner.dedupe.buffer.size, for
    the offset map and the decompressed payloads kept between the passes."""
    view = log.cleaner_view()
    config = log.config
    uncleanable = clean_range(view, high_watermark, now_ms, config.min_compaction_lag_ms)
    dirty = [s for i, s in enumerate(view.segments[:-1])
             if s.base_offset < uncleanable and view.segments[i + 1].base_offset > first_dirty]
    if not dirty:
        return None
    state = _Pass(pace, memory_bytes)
    try:
        latest, end = _offset_map(dirty, first_dirty, uncleanable, map_capacity, state)
        below = [s for s in view.segments[:-1] if s.base_offset < end]
        clean_section = [summarise(s) for i, s in enumerate(view.segments[:-1])
                         if view.segments[i + 1].base_offset <= first_dirty]
        horizon = delete_horizon_ms(clean_section, config.delete_retention_ms)
        next_bases = [view.segments[i + 1].base_offset for i in range(len(below))]
        groups = group_segments([(s.base_offset, s.size_bytes, n) for s, n in zip(below, next_bases)],
                                config.segment_bytes)
        for group in groups:
            old = tuple(below[i] for i in group)
            cleaned = _write_group(log, old, latest, horizon, view.last_batch_of_producer, now_ms, state)
            if not log.replace_segments(old, cleaned, view.truncations, fault):
                cleaned.delete_files()
                raise Aborted("the log changed under the clean (retention, truncation or a move)")
    except Aborted as why:
        logger.info("%s-%d: clean stopped: %s", log.topic, log.partition, why)
        return None
    return CleanResult(end, len(groups), state.bytes_read, state.bytes_written, state.records_read,
                       state.records_kept)


class _Pass:
    """What one clean carries from batch to batch: its pace, its counts, and the
    decompressed payloads the offset map's pass keeps for the copy's."""

    def __init__(self, pace: Pace, memory_bytes: int) -> None:
        self.pace = pace
        self.memory_bytes = memory_bytes
        self.bytes_read = self.bytes_written = self.records_read = self.records_kept = 0
        self._payloads: dict[tuple[int, int], bytes] = {}   # by (base offset, CRC)
        self._payload_bytes = 0

    def payload(self, header: BatchHeader, batch: memoryview) -> bytes | memoryview:
        """The batch's records, decompressed once per clean when they were kept."""
        kept = self._payloads.pop((header.base_offset, header.crc), None)
        if kept is None:
            return records_payload(batch, header)
        self._payload_bytes -= len(kept)
        return kept

    def keep_payload(self, header: BatchHeader, payload: bytes | memoryview, *maps: OffsetMap) -> None:
        """Keep a decompressed payload for the copy if it fits beside the offset
        maps in memory_bytes; the first ones kept are the first the copy needs."""
        if header.attributes & CODEC_MASK == CODEC_NONE:
            return   # the copy reads it again from the page cache, as cheap
        if self._payload_bytes + len(payload) + sum(map(sys.getsizeof, maps)) <= self.memory_bytes:
            self._payloads[header.base_offset, header.crc] = payload
            self._payload_bytes += len(payload)


def _offset_map(dirty: list[LogSegment], first_dirty: int, uncleanable: int, capacity: int,
                state: _Pass) -> tuple[OffsetMap, int]:
    """Step 3: each key's last offset in the dirty section, and where the clean ends."""
    latest = OffsetMap()
    for segment in dirty:
        found = OffsetMap()
        for header, batch in _batches(segment, state):
            if header.attributes & CONTROL_MASK:
                continue
            try:
                payload = records_payload(batch, header)
                collect_keys(header, payload, first_dirty, found)
            except RecordBatchError:
                continue   # no keys: the copy keeps it as it is (_filter)
            state.keep_payload(header, payload, latest, found)
        if latest and len(latest) + latest.new_keys(found) > capacity:
            return latest, segment.base_offset
        latest.update(found)
    return latest, uncleanable


def _write_group(log: Log, old: tuple[LogSegment, ...], latest: OffsetMap, horizon_ms: int,
                 last_batch_of_producer: dict[int, int], now_ms: int, state: _Pass) -> LogSegment:
    """Step 4: the group's survivors in a fsynced `.cleaned` segment."""
    cleaned = LogSegment.create_cleaned(log.dir_path, old[0].base_offset, log.config, now_ms)
    pending: list[bytes | memoryview] = []
    pending_bytes = 0
    try:
        for k, segment in enumerate(old):
            retain_tombstones = retains_tombstones(summarise(segment), horizon_ms)
            for (header, batch), last_of_segment in _with_last(_batches(segment, state)):
                last_of_group = last_of_segment and k == len(old) - 1
                kept = _filter(header, batch, latest, retain_tombstones, last_batch_of_producer, last_of_group, state)
                if kept is not None:
                    pending.append(kept)
                    pending_bytes += len(kept)
                if pending_bytes >= WRITE_CHUNK_BYTES:
                    _append(cleaned, pending, state)
                    pending, pending_bytes = [], 0
        _append(cleaned, pending, state)
        cleaned.on_become_inactive()
        mtime_ns = max(s.last_modified_ms() for s in old) * 1_000_000
        os.utime(cleaned.file.path, ns=(mtime_ns, mtime_ns))
        cleaned.flush()   # the group's one fsync (and its indexes')
    except BaseException:
        cleaned.delete_files()
        raise
    return cleaned


def _filter(header: BatchHeader, batch: memoryview, latest: OffsetMap, retain_tombstones: bool,
            last_batch_of_producer: dict[int, int], last_of_group: bool, state: _Pass) -> bytes | memoryview | None:
    """One batch as the copy holds it, or None when it goes."""
    if header.attributes & CONTROL_MASK:
        return batch
    try:
        survivors = keep_records(header, state.payload(header, batch), latest, retain_tombstones)
    except RecordBatchError as error:
        logger.warning("batch at offset %d kept as it is: %s", header.base_offset, error)
        return batch
    state.records_read += survivors.records
    state.records_kept += survivors.kept
    if survivors.data is None:   # every record survives
        return batch
    if survivors.kept:
        return filtered_batch(header, survivors)
    if keep_empty_batch(header.producer_id, header.last_offset, last_batch_of_producer, last_of_group):
        return emptied_batch(header)
    return None


def _append(cleaned: LogSegment, batches: list[bytes | memoryview], state: _Pass) -> None:
    if not batches:
        return
    data = b"".join(batches)
    cleaned.append(data, [parse_header(b) for b in batches])
    state.bytes_written += len(data)
    if not state.pace(len(data)):
        raise Aborted("the cleaner is stopping")


def _batches(segment: LogSegment, state: _Pass) -> Iterator[tuple[BatchHeader, memoryview]]:
    """(header, bytes) of every batch of a segment below the active one, read
    READ_CHUNK_BYTES at a time (a larger batch alone); as LogSegment.iter_headers,
    they end where a batch would pass the segment's size. The pace counts each
    chunk once its batches were used."""
    fd, size = segment.file.fileno(), segment.size_bytes
    position = 0
    while position + HEADER_SIZE <= size:
        chunk = os.pread(fd, min(READ_CHUNK_BYTES, size - position), position)
        if len(chunk) >= HEADER_SIZE:
            first = _checked_header(segment, chunk, 0, position)
            if len(chunk) < first.batch_length + LOG_OVERHEAD <= size - position:
                chunk = os.pread(fd, first.batch_length + LOG_OVERHEAD, position)
        view = memoryview(chunk)
        used = 0
        while used + HEADER_SIZE <= len(chunk):
            header = _checked_header(segment, chunk, used, position + used)
            end = used + header.batch_length + LOG_OVERHEAD
            if end > len(chunk):
                break
            yield header, view[used:end]
            used = end
        if not used:
            return   # shorter than its batch says: truncated meanwhile (the swap will be refused)
        state.bytes_read += used
        if not state.pace(used):
            raise Aborted("the cleaner is stopping")
        position += used


def _with_last(items: Iterator[T]) -> Iterator[tuple[T, bool]]:
    """Each item and whether it is the last, one item behind."""
    previous = next(items, _NONE)
    for item in items:
        yield previous, False
        previous = item
    if previous is not _NONE:
        yield previous, True


def _checked_header(segment: LogSegment, chunk: bytes, at: int, position: int) -> BatchHeader:
    header = parse_header(chunk, at)
    if header.batch_length < MIN_BATCH_LENGTH:   # as LogSegment._read_header: no batch is shorter
        raise KafkaStorageError(f"{segment.file.path}: batchLength {header.batch_length} at position {position}")
    return header


class Throttling(Protocol):
    """What paced_by needs of a throttle (throttle.py, a layer above)."""

    def record(self, size_bytes: int) -> float: ...

    def pause(self, wait_s: float, stop: threading.Event) -> bool: ...


def paced_by(throttle: Throttling, stop: threading.Event) -> Pace:
    """A Pace from a throttle and a stop event."""
    def pace(size_bytes: int) -> bool:
        wait_s = throttle.record(size_bytes)
        if wait_s > 0:
            return throttle.pause(wait_s, stop)
        return not stop.is_set()
    return pace
