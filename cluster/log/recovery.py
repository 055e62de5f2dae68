"""Recovery of segment files after a crash, as plain functions over paths.

`scan_log_file` walks a `.log` file batch by batch, checking each header and
its CRC, and reports how many leading bytes form whole valid batches; a
segment is recovered by truncating the file there and rebuilding its indexes
from the batches seen. `check_index_files` decides whether the `.index` and
`.timeindex` of a segment that is not rescanned can be trusted.

What stops a scan (everything after it is cut):
- fewer bytes left than a batch header (torn write);
- batchLength below the minimum, or running past the end of the file;
- magic other than 2;
- CRC mismatch;
- offsets below the segment's base offset, not increasing, or too far from
  the base offset for a relative index entry.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import NamedTuple

from kafkactl.cluster.log.errors import CorruptIndexError
from kafkactl.cluster.log.index import check_offset_entries, decode_offset_entries
from kafkactl.cluster.log.time_index import check_time_entries, decode_time_entries
from kafkactl.cluster.protocol import record_batch
from kafkactl.cluster.protocol.record_batch import (
    CRC_START,
    HEADER_SIZE,
    INT32_MAX,
    MAGIC_POSITION,
    MAGIC_V2,
    MIN_BATCH_LENGTH,
    BatchHeader,
    parse_header,
)

READ_CHUNK_BYTES = 4 * 1024 * 1024

BatchCallback = Callable[[int, BatchHeader], None]


class ScanResult(NamedTuple):
    valid_bytes: int           # length of the prefix of whole valid batches
    file_size_bytes: int
    batch_count: int
    next_offset: int           # offset after the last valid batch (base offset if none)
    stop_reason: str | None    # why the scan stopped before the end, None if it did not

    @property
    def truncated_bytes(self) -> int:
        return self.file_size_bytes - self.valid_bytes


class _Reader:
    """Chunked pread over a file, so a scan copies each byte about once."""

    def __init__(self, fd: int, file_size: int) -> None:
        self._fd = fd
        self._file_size = file_size
        self._start = 0
        self._data = b""

    def view(self, position: int, length: int) -> tuple[memoryview, int] | None:
        """A view holding [position, position+length) and the offset into it."""
        if position + length > self._file_size:
            return None
        if position < self._start or position + length > self._start + len(self._data):
            self._data = os.pread(self._fd, max(READ_CHUNK_BYTES, length), position)
            self._start = position
            if len(self._data) < length:
                return None
        return memoryview(self._data), position - self._start


def scan_log_file(path: str, base_offset: int,
                  on_batch: BatchCallback | None = None) -> ScanResult:
    """Validate the batches of a segment's `.log` file from the start.

    `on_batch(position, header)` is called for each valid batch, in order, so
    the caller can rebuild indexes and the leader-epoch cache in the same
    pass. The file is not modified.
    """
    with open(path, "rb", buffering=0) as file:
        file_size = os.fstat(file.fileno()).st_size
        reader = _Reader(file.fileno(), file_size)
        position = 0
        count = 0
        next_offset = base_offset
        while position < file_size:
            header, problem = _next_valid_batch(reader, position, next_offset, base_offset)
            if header is None:
                return ScanResult(position, file_size, count, next_offset,
                                  f"{problem} at position {position}")
            if on_batch is not None:
                on_batch(position, header)
            count += 1
            next_offset = header.next_offset
            position += header.size_bytes
        return ScanResult(position, file_size, count, next_offset, None)


def _next_valid_batch(reader: _Reader, position: int, min_offset: int,
                      base_offset: int) -> tuple[BatchHeader | None, str]:
    located = reader.view(position, HEADER_SIZE)
    if located is None:
        return None, "truncated batch header"
    view, at = located
    if view[at + MAGIC_POSITION] != MAGIC_V2:
        return None, f"magic {view[at + MAGIC_POSITION]}"
    header = parse_header(view, at)
    if header.batch_length < MIN_BATCH_LENGTH:
        return None, f"batchLength {header.batch_length} below the minimum"
    located = reader.view(position, header.size_bytes)
    if located is None:
        return None, f"batch of {header.size_bytes} bytes runs past the end of the file"
    view, at = located
    if record_batch._crc32c(view[at + CRC_START:at + header.size_bytes]) != header.crc:
        return None, "CRC mismatch"
    if header.base_offset < min_offset or header.last_offset_delta < 0:
        return None, f"batch offsets {header.base_offset}..{header.last_offset} out of order"
    if header.last_offset - base_offset > INT32_MAX:
        return None, f"offset {header.last_offset} too far from base offset {base_offset}"
    return header, ""


def check_index_files(index_path: str, time_index_path: str, log_size_bytes: int,
                      max_relative_offset: int | None = None) -> str | None:
    """Why a segment's index files must be rebuilt, or None if they look sane.

    Missing files, lengths that are not whole entries, entries that do not
    increase, positions beyond the log file, and offsets at or beyond the
    next segment's base (`max_relative_offset` = next base - this base) all
    call for a rebuild.
    """
    try:
        with open(index_path, "rb") as file:
            relative_offsets, positions = decode_offset_entries(file.read())
        with open(time_index_path, "rb") as file:
            timestamps, time_offsets = decode_time_entries(file.read())
    except FileNotFoundError as error:
        return f"missing {os.path.basename(error.filename)}"
    except CorruptIndexError as error:
        return str(error)
    problem = check_offset_entries(relative_offsets, positions, log_size_bytes)
    if problem is not None:
        return f"offset index: {problem}"
    problem = check_time_entries(timestamps, time_offsets)
    if problem is not None:
        return f"time index: {problem}"
    if max_relative_offset is not None:
        for name, offsets in (("offset index", relative_offsets), ("time index", time_offsets)):
            if offsets and offsets[-1] >= max_relative_offset:
                return (f"{name}: relative offset {offsets[-1]} reaches the next segment "
                        f"({max_relative_offset})")
    return None
