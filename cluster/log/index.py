"""Sparse offset index of a segment: Kafka's `.index` file.

Each entry is 8 bytes, big-endian: the offset relative to the segment's base
offset (int32) and the byte position of a batch in the `.log` file (int32).
The key is the last offset of the batch at that position, as Kafka writes it,
so a lookup for offset T lands on a batch at or before the one holding T.

Entries live in memory (two `array`s) and are appended to the file, which
therefore always holds exactly the entries (Kafka preallocates and trims on
close; appending makes that trim unnecessary).

Readers run without the log's lock. They stay safe because an append adds
the position before the offset and readers bound their search by the offsets'
length, and because truncation replaces the arrays rather than shrinking them.
"""

from __future__ import annotations

import os
import struct
import sys
from array import array
from bisect import bisect_right
from typing import BinaryIO, NamedTuple

from kafkactl.cluster.invariant import invariant
from kafkactl.cluster.log.durable import fsync_path
from kafkactl.cluster.log.errors import CorruptIndexError

OFFSET_ENTRY_SIZE = 8
_ENTRY = struct.Struct(">ii")


class OffsetPosition(NamedTuple):
    offset: int
    position: int


def floor_entry(keys: array | list, target: int, count: int | None = None) -> int:
    """Index of the largest key <= target among the first `count` keys, or -1."""
    hi = len(keys) if count is None else count
    return bisect_right(keys, target, 0, hi) - 1


def check_offset_entries(relative_offsets: array, positions: array, log_size_bytes: int) -> str | None:
    """Why these entries cannot index a log file of this size, or None if sane."""
    previous_offset = -1
    previous_position = -1
    for relative_offset, position in zip(relative_offsets, positions):
        if relative_offset <= previous_offset:
            return f"offset {relative_offset} does not increase (previous {previous_offset})"
        if position <= previous_position:
            return f"position {position} does not increase (previous {previous_position})"
        if position >= log_size_bytes:
            return f"position {position} lies beyond the log file ({log_size_bytes} bytes)"
        previous_offset, previous_position = relative_offset, position
    return None


def decode_offset_entries(data: bytes) -> tuple[array, array]:
    """(relative offsets, positions) from the bytes of an `.index` file."""
    if len(data) % OFFSET_ENTRY_SIZE:
        raise CorruptIndexError(
            f"index length {len(data)} is not a multiple of {OFFSET_ENTRY_SIZE}")
    values = array("i")
    values.frombytes(data)
    if sys.byteorder == "little":
        values.byteswap()
    return values[0::2], values[1::2]


def encode_offset_entries(relative_offsets: array, positions: array) -> bytes:
    values = array("i", bytes(4 * 2 * len(relative_offsets)))
    values[0::2] = relative_offsets
    values[1::2] = positions
    if sys.byteorder == "little":
        values.byteswap()
    return values.tobytes()


class IndexFile:
    """The append-only file behind an index; None path keeps it in memory only.

    The handle is opened on the first write and released when the segment
    rolls, so inactive segments hold one descriptor (their `.log`) instead of
    three; a later write (after truncation made the segment active again)
    reopens it.
    """

    def __init__(self, path: str | None) -> None:
        self.path = path
        self._file: BinaryIO | None = None
        self._dirty = False  # written since the last fsync
        if path is not None:
            open(path, "ab").close()  # every segment has its index files, even empty

    def _handle(self) -> BinaryIO | None:
        if self.path is not None and self._file is None:
            self._file = open(self.path, "ab")
        return self._file

    def append(self, data: bytes) -> None:
        handle = self._handle()
        if handle is not None:
            handle.write(data)
            self._dirty = True

    def rewrite(self, data: bytes) -> None:
        self.truncate(0)
        self.append(data)

    def truncate(self, size_bytes: int) -> None:
        handle = self._handle()
        if handle is None:
            return
        handle.flush()
        os.ftruncate(handle.fileno(), size_bytes)
        self._dirty = True

    def flush(self) -> None:
        """fsync what was written, reopening the file if its handle was released."""
        if not self._dirty or self.path is None:
            return
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())
        else:
            try:
                fsync_path(self.path)
            except FileNotFoundError:
                return  # the segment or its log was deleted meanwhile
        self._dirty = False

    def release(self) -> None:
        """Close the handle (written data reaches the OS; flush() still fsyncs it)."""
        if self._file is not None:
            self._file.close()
            self._file = None


class SparseIndex:
    """What the offset and time indexes share: two parallel columns of entries
    in memory, appended to their file, bounded by `segment.index.bytes`."""

    def __init__(self, path: str | None, base_offset: int, max_index_bytes: int,
                 entry_size: int, entries: tuple[array, array]) -> None:
        self.base_offset = base_offset
        self.max_entries = max(1, max_index_bytes // entry_size)
        # One tuple, replaced whole, so a reader never pairs one column of
        # one generation with the other column of another.
        self._entries = entries
        self._entry_size = entry_size
        self._file = IndexFile(path)

    @property
    def path(self) -> str | None:
        return self._file.path

    def relocate(self, path: str) -> None:
        """The file was renamed (its directory moved): use the new name from now on."""
        self._file.path = path

    @property
    def entry_count(self) -> int:
        return len(self._entries[0])

    @property
    def is_full(self) -> bool:
        return self.entry_count >= self.max_entries

    def _keep_first(self, keep: int) -> None:
        first, second = self._entries
        if keep == len(first):
            return
        self._entries = (first[:keep], second[:keep])
        self._file.truncate(keep * self._entry_size)

    def reset(self, first: array, second: array) -> None:
        """Replace every entry (index rebuild) and rewrite the file."""
        self._entries = (first, second)
        self._file.rewrite(self._encode(first, second))

    def reset_from(self, other: SparseIndex) -> None:
        self.reset(*other._entries)

    def flush(self) -> None:
        self._file.flush()

    def release(self) -> None:
        self._file.release()

    @staticmethod
    def _encode(first: array, second: array) -> bytes:
        raise NotImplementedError


class OffsetIndex(SparseIndex):
    def __init__(self, path: str | None, base_offset: int, max_index_bytes: int,
                 relative_offsets: array | None = None, positions: array | None = None) -> None:
        super().__init__(path, base_offset, max_index_bytes, OFFSET_ENTRY_SIZE, (
            relative_offsets if relative_offsets is not None else array("i"),
            positions if positions is not None else array("i")))

    _encode = staticmethod(encode_offset_entries)

    @classmethod
    def load(cls, path: str, base_offset: int, max_index_bytes: int) -> OffsetIndex:
        """Read an existing `.index` file; raises CorruptIndexError on a bad length."""
        with open(path, "rb") as file:
            relative_offsets, positions = decode_offset_entries(file.read())
        return cls(path, base_offset, max_index_bytes, relative_offsets, positions)

    def entries(self) -> list[OffsetPosition]:
        relative_offsets, positions = self._entries
        return [OffsetPosition(self.base_offset + o, p)
                for o, p in zip(relative_offsets, positions)]

    def last_entry(self) -> OffsetPosition | None:
        relative_offsets, positions = self._entries
        count = len(relative_offsets)
        if count == 0:
            return None
        return OffsetPosition(self.base_offset + relative_offsets[count - 1], positions[count - 1])

    def sanity_check(self, log_size_bytes: int) -> None:
        problem = check_offset_entries(*self._entries, log_size_bytes)
        if problem is not None:
            raise CorruptIndexError(f"offset index {self.path}: {problem}")

    def append(self, offset: int, position: int) -> None:
        relative_offsets, positions = self._entries
        relative = offset - self.base_offset
        invariant(0 <= relative <= 2**31 - 1, f"offset {offset} does not fit segment {self.base_offset}")
        invariant(not relative_offsets or relative > relative_offsets[-1],
                  f"index offset {offset} does not increase")
        invariant(not positions or position > positions[-1],
                  f"index position {position} does not increase")
        positions.append(position)  # before the offset: readers bound by offsets
        relative_offsets.append(relative)
        self._file.append(_ENTRY.pack(relative, position))

    def lookup(self, target_offset: int) -> OffsetPosition:
        """The largest entry with offset <= target, or (base_offset, 0)."""
        relative_offsets, positions = self._entries
        slot = floor_entry(relative_offsets, target_offset - self.base_offset)
        if slot < 0:
            return OffsetPosition(self.base_offset, 0)
        return OffsetPosition(self.base_offset + relative_offsets[slot], positions[slot])

    def last_entry_within(self, max_position: int, max_offset: int) -> OffsetPosition | None:
        """The last entry with position <= max_position and offset < max_offset."""
        relative_offsets, positions = self._entries
        count = len(relative_offsets)
        by_offset = floor_entry(relative_offsets, max_offset - self.base_offset - 1, count)
        by_position = floor_entry(positions, max_position, count)
        slot = min(by_offset, by_position)
        if slot < 0:
            return None
        return OffsetPosition(self.base_offset + relative_offsets[slot], positions[slot])

    def truncate_to_position(self, log_size_bytes: int) -> None:
        """Drop entries pointing at or beyond `log_size_bytes` (log truncation)."""
        self._keep_first(floor_entry(self._entries[1], log_size_bytes - 1) + 1)
