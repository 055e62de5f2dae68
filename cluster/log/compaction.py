"""Which records a clean of a compacted log keeps (cleanup.policy=compact): pure
decisions, as Kafka's log cleaner makes them; the cleaner that reads and
rewrites segments applies them.

A compacted log is split at two offsets:
- the first dirty offset: everything below it was cleaned before (the
  clean section), everything from it on was not (the dirty section);
- the first uncleanable offset (`first_uncleanable_offset`): nothing at or
  above it is touched. It is the smallest of the active segment's base
  offset, the high watermark (a record not yet on every ISR member could
  still be truncated away), and the base offset of the first segment holding
  a record younger than min.compaction.lag.ms.

Rules:
1. A log is due for cleaning (`cleanable`) when its dirty ratio (dirty
   bytes over clean + dirty bytes, counted below the first uncleanable
   offset) reaches min.cleanable.dirty.ratio, or when its oldest dirty
   record is older than max.compaction.lag.ms (KIP-354), whatever the ratio.
2. The offset map (`offset_map`) holds, for every key in the dirty section,
   the offset of its last record there.
3. A record in the cleaned range (`survives`) is kept unless its key has a
   later record in the offset map (an update or a tombstone made it
   obsolete). A record without a key is dropped: a compacted topic refuses
   them on produce, so only data written before the policy changed has them.
4. A tombstone (a record with a key and a null value) is kept like any
   record until the delete horizon has passed for its segment: tombstones in
   segments last modified before `delete_horizon_ms` (the last modification
   of the clean section minus delete.retention.ms) are dropped, so that
   consumers reading the log had delete.retention.ms to see them.
5. Offsets are never rewritten: the survivors keep theirs, so a cleaned log
   has gaps. A batch whose records all go is still kept, empty, when it is
   the last batch of its producer id in the log (`keep_empty_batch`): the
   producer's sequence must survive for idempotent retries.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SegmentSummary:
    base_offset: int
    size_bytes: int
    largest_timestamp_ms: int
    last_modified_ms: int


@dataclass(frozen=True, slots=True)
class RecordSummary:
    offset: int
    key: bytes | None
    is_tombstone: bool          # a key and a null value


def first_uncleanable_offset(active_segment_base: int, high_watermark: int,
                             segments: Sequence[SegmentSummary], now_ms: int,
                             min_compaction_lag_ms: int) -> int:
    """Nothing at or above this offset is cleaned (module doc)."""
    limit = min(active_segment_base, high_watermark)
    if min_compaction_lag_ms > 0:
        for segment in segments:
            if segment.base_offset >= limit:
                break
            if segment.largest_timestamp_ms > now_ms - min_compaction_lag_ms:
                return min(limit, segment.base_offset)
    return limit


def cleanable(segments: Sequence[SegmentSummary], first_dirty_offset: int, first_uncleanable: int,
              now_ms: int, min_cleanable_dirty_ratio: float, max_compaction_lag_ms: int) -> bool:
    """Rule 1, over the segments below the first uncleanable offset."""
    counted = [s for s in segments if s.base_offset < first_uncleanable]
    dirty = [s for s in counted if s.base_offset >= first_dirty_offset]
    if not dirty:
        return False
    dirty_bytes = sum(s.size_bytes for s in dirty)
    total_bytes = sum(s.size_bytes for s in counted)
    if total_bytes > 0 and dirty_bytes / total_bytes >= min_cleanable_dirty_ratio:
        return True
    oldest_dirty_ms = min(s.largest_timestamp_ms for s in dirty)
    return max_compaction_lag_ms < 2 ** 63 - 1 and now_ms - oldest_dirty_ms > max_compaction_lag_ms


def offset_map(dirty_records: Iterable[RecordSummary]) -> dict[bytes, int]:
    """Rule 2: each key's last offset in the dirty section."""
    latest: dict[bytes, int] = {}
    for record in dirty_records:
        if record.key is not None:
            latest[record.key] = record.offset
    return latest


def survives(record: RecordSummary, latest: Mapping[bytes, int], retain_tombstones: bool) -> bool:
    """Rules 3 and 4 for one record of the cleaned range."""
    if record.key is None:
        return False
    newer = latest.get(record.key, -1)
    if newer > record.offset:
        return False
    return retain_tombstones or not record.is_tombstone


def delete_horizon_ms(clean_section: Sequence[SegmentSummary], delete_retention_ms: int) -> int:
    """Rule 4: tombstones in segments last modified before this are dropped;
    no clean section yet means no horizon (every tombstone is kept)."""
    if not clean_section:
        return -(2 ** 63)
    return clean_section[-1].last_modified_ms - delete_retention_ms


def retains_tombstones(segment: SegmentSummary, horizon_ms: int) -> bool:
    return segment.last_modified_ms > horizon_ms


def keep_empty_batch(producer_id: int, last_offset: int, last_batch_of_producer: Mapping[int, int]) -> bool:
    """Rule 5: an emptied batch stays when it is its producer's last in the log."""
    return producer_id >= 0 and last_batch_of_producer.get(producer_id) == last_offset
