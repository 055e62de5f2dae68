"""Sparse time index of a segment: Kafka's `.timeindex` file.

Each entry is 12 bytes, big-endian: a timestamp (int64) and an offset
relative to the segment's base offset (int32). An entry says "the largest
timestamp up to this offset is this timestamp"; entries are only written when
that maximum grows, so timestamps strictly increase. The last entry of a
rolled segment carries the segment's largest timestamp (written on roll and
close), which retention reads without scanning the log.

Same concurrency scheme as the offset index: offsets are appended before
timestamps, readers bound their search by the timestamps' length, and
truncation replaces the arrays.
"""

from __future__ import annotations

import struct
from array import array
from typing import NamedTuple

from kafkactl.cluster.invariant import invariant
from kafkactl.cluster.log.errors import CorruptIndexError
from kafkactl.cluster.log.index import SparseIndex, floor_entry

TIME_ENTRY_SIZE = 12
_ENTRY = struct.Struct(">qi")


class TimestampOffset(NamedTuple):
    timestamp: int
    offset: int


def check_time_entries(timestamps: array, relative_offsets: array) -> str | None:
    """Why these entries are not a valid time index, or None if sane."""
    previous_timestamp = None
    previous_offset = -1
    for timestamp, relative_offset in zip(timestamps, relative_offsets):
        if previous_timestamp is not None and timestamp <= previous_timestamp:
            return f"timestamp {timestamp} does not increase (previous {previous_timestamp})"
        if relative_offset < previous_offset or relative_offset < 0:
            return f"offset {relative_offset} goes backwards (previous {previous_offset})"
        previous_timestamp, previous_offset = timestamp, relative_offset
    return None


def decode_time_entries(data: bytes) -> tuple[array, array]:
    """(timestamps, relative offsets) from the bytes of a `.timeindex` file."""
    if len(data) % TIME_ENTRY_SIZE:
        raise CorruptIndexError(
            f"time index length {len(data)} is not a multiple of {TIME_ENTRY_SIZE}")
    timestamps = array("q")
    relative_offsets = array("i")
    for timestamp, relative_offset in _ENTRY.iter_unpack(data):
        timestamps.append(timestamp)
        relative_offsets.append(relative_offset)
    return timestamps, relative_offsets


def encode_time_entries(timestamps: array, relative_offsets: array) -> bytes:
    return b"".join(_ENTRY.pack(t, o) for t, o in zip(timestamps, relative_offsets))


class TimeIndex(SparseIndex):
    def __init__(self, path: str | None, base_offset: int, max_index_bytes: int,
                 timestamps: array | None = None, relative_offsets: array | None = None) -> None:
        super().__init__(path, base_offset, max_index_bytes, TIME_ENTRY_SIZE, (
            timestamps if timestamps is not None else array("q"),
            relative_offsets if relative_offsets is not None else array("i")))

    _encode = staticmethod(encode_time_entries)

    @classmethod
    def load(cls, path: str, base_offset: int, max_index_bytes: int) -> TimeIndex:
        with open(path, "rb") as file:
            timestamps, relative_offsets = decode_time_entries(file.read())
        return cls(path, base_offset, max_index_bytes, timestamps, relative_offsets)

    def entries(self) -> list[TimestampOffset]:
        timestamps, relative_offsets = self._entries
        return [TimestampOffset(t, self.base_offset + o)
                for t, o in zip(timestamps, relative_offsets)]

    def last_entry(self) -> TimestampOffset | None:
        timestamps, relative_offsets = self._entries
        count = len(timestamps)
        if count == 0:
            return None
        return TimestampOffset(timestamps[count - 1], self.base_offset + relative_offsets[count - 1])

    def sanity_check(self) -> None:
        problem = check_time_entries(*self._entries)
        if problem is not None:
            raise CorruptIndexError(f"time index {self.path}: {problem}")

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> bool:
        """Add (timestamp, offset) if the timestamp is larger than the last entry's."""
        timestamps, relative_offsets = self._entries
        if timestamp < 0 or (timestamps and timestamp <= timestamps[-1]):
            return False
        if not skip_full_check and self.is_full:
            return False
        relative = offset - self.base_offset
        invariant(0 <= relative <= 2**31 - 1, f"offset {offset} does not fit segment {self.base_offset}")
        invariant(not relative_offsets or relative >= relative_offsets[-1],
                  f"time index offset {offset} goes backwards")
        relative_offsets.append(relative)  # before the timestamp: readers bound by timestamps
        timestamps.append(timestamp)
        self._file.append(_ENTRY.pack(timestamp, relative))
        return True

    def lookup(self, target_timestamp: int) -> TimestampOffset:
        """The largest entry with timestamp <= target, or (-1, base_offset).

        A scan for the first record with timestamp >= target may start at
        that entry's offset: every earlier record has a smaller timestamp.
        """
        timestamps, relative_offsets = self._entries
        slot = floor_entry(timestamps, target_timestamp)
        if slot < 0:
            return TimestampOffset(-1, self.base_offset)
        return TimestampOffset(timestamps[slot], self.base_offset + relative_offsets[slot])

    def truncate_to_offset(self, next_offset: int) -> None:
        """Drop entries for offsets >= next_offset (log truncation)."""
        self._keep_first(floor_entry(self._entries[1], next_offset - self.base_offset - 1) + 1)
