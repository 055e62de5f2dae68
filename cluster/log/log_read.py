"""Reads of a log: fetches and lookups by timestamp, on a snapshot, without the log's lock.

Rules:
- the Log takes a LogSnapshot under its lock (the segment list, the log
  start and end offsets, the active segment's size) and a read looks at
  nothing beyond it, so an append still writing is never seen;
- bytes below the snapshot are never rewritten, except by truncation, which
  a read sees as a short read; a deleted segment stays readable (its files
  are renamed `.deleted`, unlinked later), and a FileRegion keeps its file
  open until it has been sent;
- a fetch answers whole batches from one segment, starting with the batch
  holding the fetch offset (so it may start before it), within max_bytes
  unless the first batch alone is larger and min_one_batch allows it, and
  entirely below max_offset (the high watermark, for consumers);
- a lookup by timestamp is exact per record, for every codec.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import NamedTuple

from kafkactl.cluster.log.errors import OffsetOutOfRangeError
from kafkactl.cluster.log.segment import FileRegion, LogSegment


class FetchSlice(NamedTuple):
    """Whole batches of one segment, for one partition of a fetch response."""

    region: FileRegion
    first_offset: int  # base offset of the first batch; may precede fetch_offset
    fetch_offset: int

    @property
    def size_bytes(self) -> int:
        return self.region.length


class LogSnapshot(NamedTuple):
    segments: tuple[LogSegment, ...]
    base_offsets: tuple[int, ...]
    log_start_offset: int
    log_end_offset: int
    active_size_bytes: int

    def max_position(self, i: int) -> int:
        """How far a read may look in segment i."""
        return self.active_size_bytes if i == len(self.segments) - 1 else self.segments[i].size_bytes


def read_snapshot(snapshot: LogSnapshot, name: str, fetch_offset: int, max_bytes: int, max_offset: int | None,
                  min_one_batch: bool) -> FetchSlice | None:
    """See Log.read; `name` (topic-partition) is for the error message."""
    if not snapshot.log_start_offset <= fetch_offset <= snapshot.log_end_offset:
        raise OffsetOutOfRangeError(
            f"{name}: offset {fetch_offset} outside "
            f"[{snapshot.log_start_offset}, {snapshot.log_end_offset}]",
            snapshot.log_start_offset, snapshot.log_end_offset)
    cap = snapshot.log_end_offset if max_offset is None else min(max_offset, snapshot.log_end_offset)
    if fetch_offset >= cap:
        return None
    first = max(bisect_right(snapshot.base_offsets, fetch_offset) - 1, 0)
    for i in range(first, len(snapshot.segments)):
        found = snapshot.segments[i].read(fetch_offset, max_bytes, snapshot.max_position(i), min_one_batch, cap)
        if found is not None:
            if found.region.length == 0:
                return None
            return FetchSlice(found.region, found.first_offset, fetch_offset)
    return None


def offset_for_timestamp_in(snapshot: LogSnapshot, timestamp_ms: int) -> tuple[int, int] | None:
    """See Log.offset_for_timestamp."""
    for i, segment in enumerate(snapshot.segments):
        if segment.max_timestamp_ms < timestamp_ms:
            continue
        found = segment.find_offset_by_timestamp(timestamp_ms, snapshot.log_start_offset,
                                                 snapshot.max_position(i))
        if found is not None:
            return found
    return None


def largest_timestamp(snapshot: LogSnapshot) -> int | None:
    """The largest record timestamp of the log, None without one."""
    best = max(snapshot.segments, key=lambda s: s.max_timestamp_ms)  # first of equals
    return None if best.max_timestamp_ms < 0 else best.max_timestamp_ms
