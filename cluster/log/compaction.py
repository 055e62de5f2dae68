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
  a record younger than min.compaction.lag.ms; rounded down to the base
  offset of the segment holding it, since segments are cleaned whole.

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
6. The segments below the end of a clean are cleaned in groups
   (`group_segments`): consecutive segments whose sizes add up to at most
   segment.bytes and whose offsets fit one segment's relative index
   entries, each group rewritten as one segment. The last batch of a group
   is always kept (emptied if none of its records survives), so the
   cleaned segment ends at the offset where the group ended: a crash
   mid-swap is then settled by offsets alone (segment_swap.py), and a
   fetch at any offset of the group still finds the batch holding it or
   the next one.
7. The first dirty offset is the cleaner's checkpoint for the log, at least
   the log start offset; a checkpoint beyond the log end offset (the log
   was truncated, or deleted and created again) starts over at the log
   start offset (`first_dirty_offset`).
8. The offset map is bounded (log.cleaner.dedupe.buffer.size, shared by
   the cleaner threads; Kafka's map takes 24 bytes per key at a load factor
   of 0.9: `offset_map_capacity`); a clean whose dirty section has more
   keys ends at the first segment that did not fit, and the next clean
   goes on from there. The first dirty segment is always taken whole.
9. Of the logs due (rule 1), the cleaner takes those past
   max.compaction.lag.ms first, then the highest dirty ratio (`choose_log`).
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
                return segment.base_offset
    holding = [s.base_offset for s in segments if s.base_offset <= limit] + [active_segment_base]
    return max(b for b in holding if b <= limit) if min(holding) <= limit else limit


def cleanable(segments: Sequence[SegmentSummary], first_dirty_offset: int, first_uncleanable: int,
              now_ms: int, min_cleanable_dirty_ratio: float, max_compaction_lag_ms: int) -> bool:
    """Rule 1, over the segments below the first uncleanable offset."""
    if not any(first_dirty_offset <= s.base_offset < first_uncleanable for s in segments):
        return False
    return (dirty_ratio(segments, first_dirty_offset, first_uncleanable) >= min_cleanable_dirty_ratio
            or past_max_compaction_lag(segments, first_dirty_offset, first_uncleanable, now_ms,
                                       max_compaction_lag_ms))


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


def keep_empty_batch(producer_id: int, last_offset: int, last_batch_of_producer: Mapping[int, int],
                     last_of_group: bool = False) -> bool:
    """Rules 5 and 6: an emptied batch stays when it is its producer's last
    in the log, or the last batch of its group."""
    return last_of_group or (producer_id >= 0 and last_batch_of_producer.get(producer_id) == last_offset)


# Relative offsets in a segment's index entries are int32s.
MAX_OFFSET_SPAN = 2**31 - 1


def group_segments(segments: Sequence[tuple[int, int, int]], max_bytes: int) -> list[list[int]]:
    """Rule 6 over (base offset, size in bytes, next offset) of consecutive
    segments: lists of indexes into `segments`, each a group rewritten as one."""
    groups: list[list[int]] = []
    for i, (base, size, next_offset) in enumerate(segments):
        if groups:
            group = groups[-1]
            first_base = segments[group[0]][0]
            total = sum(segments[j][1] for j in group) + size
            if total <= max_bytes and next_offset - 1 - first_base <= MAX_OFFSET_SPAN:
                group.append(i)
                continue
        groups.append([i])
    return groups


def first_dirty_offset(checkpointed: int | None, log_start_offset: int, log_end_offset: int) -> int:
    """Rule 7."""
    if checkpointed is None or checkpointed > log_end_offset:
        return log_start_offset
    return max(checkpointed, log_start_offset)


# Kafka's SkimpyOffsetMap: a 16-byte key hash and an 8-byte offset per entry, filled to 90%.
OFFSET_MAP_ENTRY_BYTES = 24
OFFSET_MAP_LOAD_FACTOR = 0.9


def offset_map_capacity(dedupe_buffer_bytes: int, threads: int) -> int:
    """Rule 8: how many keys one cleaner thread's offset map may hold."""
    return max(1, int(dedupe_buffer_bytes / max(threads, 1) * OFFSET_MAP_LOAD_FACTOR) // OFFSET_MAP_ENTRY_BYTES)


def dirty_ratio(segments: Sequence[SegmentSummary], first_dirty_offset: int, first_uncleanable: int) -> float:
    """Dirty bytes over all bytes below the first uncleanable offset (rule 1)."""
    counted = [s for s in segments if s.base_offset < first_uncleanable]
    total = sum(s.size_bytes for s in counted)
    dirty = sum(s.size_bytes for s in counted if s.base_offset >= first_dirty_offset)
    return dirty / total if total else 0.0


@dataclass(frozen=True, slots=True)
class Candidate:
    name: str                  # topic-partition
    dirty_ratio: float
    past_max_lag: bool         # its oldest dirty record is older than max.compaction.lag.ms


def choose_log(candidates: Iterable[Candidate]) -> Candidate | None:
    """Rule 9 among logs already found due."""
    return max(candidates, key=lambda c: (c.past_max_lag, c.dirty_ratio, c.name), default=None)


def past_max_compaction_lag(segments: Sequence[SegmentSummary], first_dirty_offset: int, first_uncleanable: int,
                            now_ms: int, max_compaction_lag_ms: int) -> bool:
    """The max.compaction.lag.ms half of rule 1."""
    dirty = [s for s in segments if first_dirty_offset <= s.base_offset < first_uncleanable]
    if not dirty or max_compaction_lag_ms >= 2 ** 63 - 1:
        return False
    return now_ms - min(s.largest_timestamp_ms for s in dirty) > max_compaction_lag_ms
