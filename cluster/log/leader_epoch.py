"""Leader-epoch cache of a partition: which epoch started at which offset.

Persisted as `leader-epoch-checkpoint` in the partition dir, Kafka's format:
version `0`, entry count, then `epoch startOffset` lines. Every change is
written atomically (tmp file, rename). Truncations are written and fsynced
at once. A new epoch (`assign`) is only noted: a broker taking over
thousands of leaderships would otherwise spend milliseconds per partition in
file writes and fsyncs before serving any of them (Kafka moved the fsync off
the same path, KAFKA-15046). The log's periodic task writes noted entries
(`write_if_dirty`), and the log makes the file durable (`take_unsynced`)
before it moves its recovery point. Recovery after a crash re-reads the
epochs of every batch above the recovery point, so a crash can only lose the
entry of an epoch that has no batch in the log, which answers no
OffsetForLeaderEpoch differently.

Entries are kept strictly increasing in both epoch and start offset. The
caller (Log) serialises access under its lock.
"""

from __future__ import annotations

import logging
from typing import NamedTuple

from kafkactl.cluster.log.checkpoint import read_checkpoint, write_checkpoint

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1

log = logging.getLogger(__name__)


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


def _parse_entry(fields: list[str]) -> EpochEntry:
    epoch, start_offset = int(fields[0]), int(fields[1])
    if epoch < 0 or start_offset < 0:
        raise ValueError("epoch and start offset must not be negative")
    return EpochEntry(epoch, start_offset)


class LeaderEpochCache:
    def __init__(self, path: str | None, entries: list[EpochEntry] | None = None) -> None:
        self.path = path
        self._entries: list[EpochEntry] = list(entries or ())
        self._dirty = False      # entries not written to the file yet
        self._unsynced = False   # the file holds entries not yet fsynced

    @classmethod
    def load(cls, path: str) -> LeaderEpochCache:
        """Read the checkpoint; a missing file is an empty cache.

        Raises CheckpointFormatError for a malformed file and ValueError for
        entries that do not increase.
        """
        entries = read_checkpoint(path, _parse_entry, 2) or []
        for previous, entry in zip(entries, entries[1:]):
            if entry.epoch <= previous.epoch or entry.start_offset < previous.start_offset:
                raise ValueError(f"{path}: entry {entry} does not follow {previous}")
        return cls(path, entries)

    @property
    def entries(self) -> list[EpochEntry]:
        return list(self._entries)

    @property
    def latest_epoch(self) -> int | None:
        return self._entries[-1].epoch if self._entries else None

    @property
    def earliest_entry(self) -> EpochEntry | None:
        return self._entries[0] if self._entries else None

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that `epoch` starts at `start_offset`; True if the cache changed.

        A repeat of the latest epoch is ignored unless it starts earlier. Any
        entry that would break monotonicity (epoch >= new epoch, or start
        offset >= new start offset) is dropped, as Kafka does after a leader
        truncates a divergent suffix.
        """
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"epoch {epoch} and start offset {start_offset} must not be negative")
        latest = self._entries[-1] if self._entries else None
        if latest is not None and latest.epoch == epoch and start_offset >= latest.start_offset:
            return False
        if latest is None or (epoch > latest.epoch and start_offset > latest.start_offset):
            self._entries.append(EpochEntry(epoch, start_offset))   # the usual case: a newer epoch
            self._dirty = True
            return True
        kept = [e for e in self._entries if e.epoch < epoch and e.start_offset < start_offset]
        if len(self._entries) - len(kept) > 1 or (
                len(kept) < len(self._entries) and self._entries[len(kept)].start_offset != start_offset):
            log.warning("%s: epoch %d at %d replaces entries %s", self.path, epoch, start_offset,
                        self._entries[len(kept):])
        self._entries = kept + [EpochEntry(epoch, start_offset)]
        self._dirty = True
        return True

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) answering OffsetForLeaderEpoch for `requested_epoch`.

        - the latest epoch ends at the log end offset;
        - an older known epoch ends where the next larger epoch starts, and the
          answer names the largest epoch <= requested that the cache knows;
        - an epoch below every entry answers (requested, first start offset);
        - an epoch above every entry, an empty cache, or UNDEFINED_EPOCH
          answers (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET).
        """
        if requested_epoch == UNDEFINED_EPOCH or not self._entries:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if requested_epoch == self._entries[-1].epoch:
            return requested_epoch, log_end_offset
        higher = next((e for e in self._entries if e.epoch > requested_epoch), None)
        if higher is None:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        floor = None
        for entry in self._entries:
            if entry.epoch > requested_epoch:
                break
            floor = entry
        if floor is None:
            return requested_epoch, higher.start_offset
        return floor.epoch, higher.start_offset

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch of the leader that wrote `offset`, if the cache knows it."""
        result = None
        for entry in self._entries:
            if entry.start_offset > offset:
                break
            result = entry.epoch
        return result

    def truncate_from_end(self, end_offset: int) -> None:
        """Forget epochs starting at or after `end_offset` (log truncated there)."""
        kept = [e for e in self._entries if e.start_offset < end_offset]
        if len(kept) != len(self._entries):
            self._entries = kept
            self._flush()

    def truncate_from_start(self, start_offset: int) -> None:
        """Forget what lies below `start_offset`; the epoch covering it now starts there."""
        below = [e for e in self._entries if e.start_offset <= start_offset]
        if not below:
            return
        covering = EpochEntry(below[-1].epoch, start_offset)
        entries = [covering] + self._entries[len(below):]
        if entries != self._entries:
            self._entries = entries
            self._flush()

    def clear(self) -> None:
        self._entries = []
        self._flush()

    def persist(self, durable: bool = True) -> None:
        """Write the checkpoint file now."""
        self._flush(durable)

    @property
    def dirty(self) -> bool:
        """Entries noted by `assign` and not written yet."""
        return self._dirty

    def write_if_dirty(self) -> bool:
        """Write entries noted by `assign` (without fsync); True if it wrote."""
        if not self._dirty:
            return False
        self._flush(durable=False)
        return True

    def take_unsynced(self) -> str | None:
        """Write what is noted, and return the file's path if it was written
        without fsync since the last call (the caller fsyncs it, e.g. with
        durable.fsync_file); None if it is durable already."""
        self.write_if_dirty()
        if not self._unsynced or self.path is None:
            return None
        self._unsynced = False
        return self.path

    def _flush(self, durable: bool = True) -> None:
        self._dirty = False
        if self.path is None:
            return
        write_checkpoint(self.path, [f"{e.epoch} {e.start_offset}" for e in self._entries], durable)
        self._unsynced = not durable
