"""Which segments retention deletes: retention.ms, retention.bytes and the log start offset.

Rules:
- only a prefix of the oldest segments goes, never the active segment;
- by retention.ms, a segment expires when its largest record timestamp (its
  file's mtime if it has none) is more than retention.ms old;
- by retention.bytes, the oldest segments go while the log stays at least
  that large without them;
- a segment wholly below the log start offset (moved by DeleteRecords)
  goes;
- -1 turns a limit off;
- retention.ms and retention.bytes apply only with cleanup.policy delete
  (alone or with compact): a compact-only log loses old records to its
  cleaner alone. The log start offset applies whatever the policy, as in
  Kafka (DeleteRecords works on compacted topics too).
The Log then deletes the prefix (renamed `.deleted`, unlinked after
file.delete.delay.ms) and moves its log start offset to the new first
segment. Pure: no lock, no file is touched.
"""

from __future__ import annotations

from collections.abc import Sequence

from kafkactl.cluster.log.config import LogConfig
from kafkactl.cluster.log.segment import LogSegment


def retained_prefix(segments: Sequence[LogSegment], base_offsets: Sequence[int], log_start_offset: int,
                    config: LogConfig, now: int) -> int:
    """How many of the oldest `segments` retention deletes at `now`."""
    candidates = segments[:-1]
    count = 0
    if config.retention_ms >= 0 and config.delete:
        while count < len(candidates) and now - candidates[count].largest_timestamp_ms() > config.retention_ms:
            count += 1
    if config.retention_bytes >= 0 and config.delete:
        excess = sum(s.size_bytes for s in segments[count:]) - config.retention_bytes
        while count < len(candidates) and excess >= candidates[count].size_bytes:
            excess -= candidates[count].size_bytes
            count += 1
    while count < len(candidates) and base_offsets[count + 1] <= log_start_offset:
        count += 1
    return count
