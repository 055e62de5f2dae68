"""One log segment: `<base>.log`, `<base>.index` and `<base>.timeindex`.

The base offset is written as 20 zero-padded digits, Kafka's naming. The
`.log` file holds whole record batches exactly as they travel on the wire;
the two index files are described in index.py and time_index.py.

A segment does not lock: the Log serialises appends, truncation and
deletion, and readers pass `max_position`, a size snapshot taken under the
Log's lock, so they never look at bytes an append is still writing.

A segment's three files may carry one more suffix, the same on all three:
`.cleaned` and `.swap` while the log cleaner replaces segments
(segment_swap.py), `.deleted` once it is scheduled for deletion.
"""

from __future__ import annotations

import logging
import os
import weakref
from collections.abc import Iterator
from typing import NamedTuple

from kafkactl.cluster.invariant import invariant
from kafkactl.cluster.log.config import LogConfig
from kafkactl.cluster.log.durable import remove_if_present
from kafkactl.cluster.log.errors import KafkaStorageError
from kafkactl.cluster.log.index import OffsetIndex
from kafkactl.cluster.log.recovery import BatchCallback, ScanResult, check_index_files, scan_log_file
from kafkactl.cluster.log.time_index import TimeIndex
from kafkactl.cluster.protocol.record_batch import (
    HEADER_SIZE,
    INT32_MAX,
    MIN_BATCH_LENGTH,
    BatchHeader,
    RecordBatchError,
    iter_records,
    parse_header,
)

logger = logging.getLogger(__name__)

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
SEGMENT_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX)
NO_OFFSET_LIMIT = 2**63 - 1


def segment_file_name(base_offset: int, suffix: str) -> str:
    return f"{base_offset:020d}{suffix}"


def parse_segment_file_name(name: str, suffix: str = LOG_SUFFIX) -> int | None:
    """The base offset of `<20 digits><suffix>`, or None for any other name."""
    if not name.endswith(suffix):
        return None
    digits = name[: -len(suffix)]
    if len(digits) != 20 or not digits.isdigit():
        return None
    return int(digits)


class SegmentFile:
    """The open `.log` file of a segment.

    The descriptor closes when the last holder lets go of this object (the
    segment, or a FileRegion a fetch is still sending), so deleting a segment
    can never pull the file out from under a running sendfile.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        self._finalizer = weakref.finalize(self, os.close, self._fd)

    def fileno(self) -> int:
        return self._fd

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    def close(self) -> None:
        self._finalizer()


class FileRegion(NamedTuple):
    """Bytes [position, position+length) of a segment file, ready for os.sendfile."""

    file: SegmentFile
    position: int
    length: int

    def read_bytes(self) -> bytes:
        """The region's bytes (for tests and non-sendfile transports)."""
        chunks = []
        position, remaining = self.position, self.length
        while remaining > 0:
            chunk = os.pread(self.file.fileno(), remaining, position)
            if not chunk:
                break  # the log was truncated under this read
            chunks.append(chunk)
            position += len(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)


class SegmentSlice(NamedTuple):
    region: FileRegion
    first_offset: int  # base offset of the first batch; may precede the fetch offset


class LogSegment:
    def __init__(self, dir_path: str, base_offset: int, config: LogConfig, now_ms: int,
                 offset_index: OffsetIndex, time_index: TimeIndex, file_suffix: str = "") -> None:
        invariant(config.segment_bytes <= INT32_MAX, "segment.bytes must fit an int32 position")
        self.dir_path = dir_path
        self.base_offset = base_offset
        self.file_suffix = file_suffix   # "", or `.cleaned`, `.swap`, `.deleted` (module doc)
        self.file = SegmentFile(self._path(LOG_SUFFIX))
        self.offset_index = offset_index
        self.time_index = time_index
        self.index_interval_bytes = config.index_interval_bytes
        self.segment_index_bytes = config.segment_index_bytes
        self.created_ms = now_ms
        self._size_bytes = os.fstat(self.file.fileno()).st_size
        self.max_timestamp_ms = -1
        self.offset_of_max_timestamp = base_offset
        self._next_offset: int | None = base_offset if self._size_bytes == 0 else None
        self._first_batch_timestamp: int | None = None  # loaded lazily
        self._bytes_since_last_index_entry = 0
        self.deleted = False

    # --- creation and loading ---------------------------------------------

    @classmethod
    def create(cls, dir_path: str, base_offset: int, config: LogConfig, now_ms: int) -> LogSegment:
        """A new, empty segment; the files must not exist yet."""
        path = os.path.join(dir_path, segment_file_name(base_offset, LOG_SUFFIX))
        invariant(not os.path.exists(path), f"segment {path} already exists")
        for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
            remove_if_present(os.path.join(dir_path, segment_file_name(base_offset, suffix)))
        return cls._with_empty_indexes(dir_path, base_offset, config, now_ms)

    @classmethod
    def create_cleaned(cls, dir_path: str, base_offset: int, config: LogConfig, now_ms: int) -> LogSegment:
        """A new, empty segment written as `<base>.log.cleaned` and its indexes
        (the log cleaner's output); leftovers of an earlier attempt go first."""
        paths = [os.path.join(dir_path, segment_file_name(base_offset, suffix) + CLEANED_SUFFIX)
                 for suffix in SEGMENT_SUFFIXES]
        for path in paths:
            remove_if_present(path)
        return cls(dir_path, base_offset, config, now_ms, OffsetIndex(paths[1], base_offset, config.segment_index_bytes),
                   TimeIndex(paths[2], base_offset, config.segment_index_bytes), file_suffix=CLEANED_SUFFIX)

    @classmethod
    def open_existing(cls, dir_path: str, base_offset: int, config: LogConfig, now_ms: int,
                      next_base_offset: int | None = None) -> tuple[LogSegment, str | None]:
        """Open a segment and its index files.

        Returns the segment and why its indexes must be rebuilt (None if they
        are sane); in that case they are left empty for `recover`.
        `next_base_offset` (the following segment's) bounds the index offsets.
        """
        log_path = os.path.join(dir_path, segment_file_name(base_offset, LOG_SUFFIX))
        index_path = os.path.join(dir_path, segment_file_name(base_offset, INDEX_SUFFIX))
        time_path = os.path.join(dir_path, segment_file_name(base_offset, TIME_INDEX_SUFFIX))
        max_relative = None if next_base_offset is None else next_base_offset - base_offset
        problem = check_index_files(index_path, time_path, os.path.getsize(log_path), max_relative)
        if problem is not None:
            return cls._with_empty_indexes(dir_path, base_offset, config, now_ms, rewrite=True), problem
        offset_index = OffsetIndex.load(index_path, base_offset, config.segment_index_bytes)
        time_index = TimeIndex.load(time_path, base_offset, config.segment_index_bytes)
        segment = cls(dir_path, base_offset, config, now_ms, offset_index, time_index)
        segment._restore_state_from_indexes()
        return segment, None

    @classmethod
    def _with_empty_indexes(cls, dir_path: str, base_offset: int, config: LogConfig, now_ms: int,
                            rewrite: bool = False) -> LogSegment:
        index_path = os.path.join(dir_path, segment_file_name(base_offset, INDEX_SUFFIX))
        time_path = os.path.join(dir_path, segment_file_name(base_offset, TIME_INDEX_SUFFIX))
        if rewrite:
            remove_if_present(index_path)
            remove_if_present(time_path)
        return cls(dir_path, base_offset, config, now_ms,
                   OffsetIndex(index_path, base_offset, config.segment_index_bytes),
                   TimeIndex(time_path, base_offset, config.segment_index_bytes))

    def recover(self, on_batch: BatchCallback | None = None) -> ScanResult:
        """Rescan the `.log` file, cut a torn or corrupt tail, rebuild both indexes."""
        offset_index = OffsetIndex(None, self.base_offset, self.segment_index_bytes)
        time_index = TimeIndex(None, self.base_offset, self.segment_index_bytes)
        saved = self.offset_index, self.time_index
        self.offset_index, self.time_index = offset_index, time_index
        self._reset_tracking()

        def track(position: int, header: BatchHeader) -> None:
            self._track_batch(position, header)
            if on_batch is not None:
                on_batch(position, header)

        result = scan_log_file(self.file.path, self.base_offset, track)
        self.offset_index, self.time_index = saved
        self.offset_index.reset_from(offset_index)
        self.time_index.reset_from(time_index)
        if result.truncated_bytes:
            os.ftruncate(self.file.fileno(), result.valid_bytes)
            os.fsync(self.file.fileno())
        self._size_bytes = result.valid_bytes
        self._next_offset = result.next_offset
        return result

    def _restore_state_from_indexes(self) -> None:
        """Largest timestamp of a segment loaded without a scan: the time index's last entry."""
        last = self.time_index.last_entry()
        if last is not None:
            self.max_timestamp_ms, self.offset_of_max_timestamp = last

    def _reset_tracking(self) -> None:
        self.max_timestamp_ms = -1
        self.offset_of_max_timestamp = self.base_offset
        self._bytes_since_last_index_entry = 0
        self._first_batch_timestamp = None

    # --- appends -----------------------------------------------------------

    @property
    def size_bytes(self) -> int:
        return self._size_bytes

    @property
    def next_offset(self) -> int:
        """Offset after the segment's last batch (scans headers if unknown)."""
        if self._next_offset is None:
            next_offset = self.base_offset
            for _, header in self.iter_headers(0, self._size_bytes):
                next_offset = header.next_offset
            self._next_offset = next_offset
        return self._next_offset

    def append(self, data: bytes | bytearray | memoryview | list, headers: list[BatchHeader]) -> None:
        """Append validated batches whose offsets are already assigned: one
        buffer, or a list of buffers written in order (record_batch.stamped_parts)."""
        invariant(headers[0].base_offset >= self.next_offset,
                  f"append at {headers[0].base_offset} below segment end {self.next_offset}")
        invariant(headers[-1].last_offset - self.base_offset <= INT32_MAX,
                  "offset too far from the segment's base offset")
        position = self._size_bytes
        try:
            _write_all(self.file.fileno(), data)
        except OSError as error:
            # Cut a partial write so the next append does not land behind garbage.
            os.ftruncate(self.file.fileno(), self._size_bytes)
            raise KafkaStorageError(f"{self.file.path}: append failed: {error}") from error
        for header in headers:
            self._track_batch(position, header)
            position += header.size_bytes
        size = sum(len(part) for part in data) if isinstance(data, list) else len(data)
        invariant(position == self._size_bytes + size, "batch headers do not cover the data")
        # Visible to readers only once the bytes and index entries are in place.
        self._size_bytes = position
        self._next_offset = headers[-1].next_offset

    def _track_batch(self, position: int, header: BatchHeader) -> None:
        """Index bookkeeping shared by append and recovery, so both build the same indexes."""
        if self._first_batch_timestamp is None and position == 0:
            self._first_batch_timestamp = header.max_timestamp
        if header.max_timestamp > self.max_timestamp_ms:
            self.max_timestamp_ms = header.max_timestamp
            self.offset_of_max_timestamp = header.last_offset
        if self._bytes_since_last_index_entry > self.index_interval_bytes:
            self.offset_index.append(header.last_offset, position)
            self.time_index.maybe_append(self.max_timestamp_ms, self.offset_of_max_timestamp)
            self._bytes_since_last_index_entry = 0
        self._bytes_since_last_index_entry += header.size_bytes

    def time_waited_for_roll(self, now_ms: int, incoming_max_timestamp_ms: int) -> int:
        """How old the segment is for segment.ms, Kafka's rule.

        By record timestamps when both the segment's first batch and the
        incoming batches carry one (incoming max timestamp minus the first
        batch's max timestamp), so replicas roll at the same offsets;
        otherwise by the wall clock since the segment was created or opened.
        """
        first = self.first_batch_timestamp()
        if first is not None and first >= 0 and incoming_max_timestamp_ms >= 0:
            return incoming_max_timestamp_ms - first
        return now_ms - self.created_ms

    def first_batch_timestamp(self) -> int | None:
        if self._first_batch_timestamp is None and self._size_bytes > 0:
            header = self._read_header(0, self._size_bytes)
            if header is not None:
                self._first_batch_timestamp = header.max_timestamp
        return self._first_batch_timestamp

    def on_become_inactive(self) -> None:
        """Record the segment's largest timestamp as the time index's last entry.

        Also releases the index file handles: nothing appends to a rolled
        segment, and a large log would otherwise hold three descriptors per
        segment.
        """
        self.time_index.maybe_append(self.max_timestamp_ms, self.offset_of_max_timestamp,
                                     skip_full_check=True)
        self.offset_index.release()
        self.time_index.release()

    def last_modified_ms(self) -> int:
        """The log file's modification time (ListOffsets v0 asks by it); 0 once deleted."""
        try:
            return os.stat(self.file.path).st_mtime_ns // 1_000_000
        except OSError:
            return 0

    def largest_timestamp_ms(self) -> int:
        """Retention's clock: the largest record timestamp, else the file's mtime."""
        if self.max_timestamp_ms >= 0:
            return self.max_timestamp_ms
        return os.fstat(self.file.fileno()).st_mtime_ns // 1_000_000

    # --- reads -------------------------------------------------------------

    def _read_header(self, position: int, max_position: int) -> BatchHeader | None:
        if position + HEADER_SIZE > max_position:
            return None
        data = os.pread(self.file.fileno(), HEADER_SIZE, position)
        if len(data) < HEADER_SIZE:
            return None  # truncated concurrently
        header = parse_header(data)
        if header.batch_length < MIN_BATCH_LENGTH:
            raise KafkaStorageError(
                f"{self.file.path}: batchLength {header.batch_length} at position {position}")
        return header

    def iter_headers(self, start_position: int, max_position: int) -> Iterator[tuple[int, BatchHeader]]:
        position = start_position
        while True:
            header = self._read_header(position, max_position)
            if header is None or position + header.size_bytes > max_position:
                return
            yield position, header
            position += header.size_bytes

    def translate_offset(self, offset: int, max_position: int) -> tuple[int, BatchHeader] | None:
        """Position and header of the first batch whose last offset >= offset."""
        start = self.offset_index.lookup(offset).position
        for position, header in self.iter_headers(start, max_position):
            if header.last_offset >= offset:
                return position, header
        return None

    def read(self, start_offset: int, max_bytes: int, max_position: int, min_one_batch: bool,
             max_offset: int | None = None) -> SegmentSlice | None:
        """Whole batches from the one holding start_offset.

        None when no batch in this segment (below max_position) reaches
        start_offset. Otherwise a slice of whole batches that ends within
        max_bytes (or holds the first batch anyway if min_one_batch) and holds
        only batches entirely below max_offset; it may be empty.
        """
        found = self.translate_offset(start_offset, max_position)
        if found is None:
            return None
        start, first = found
        budget = max(max_bytes, first.size_bytes) if min_one_batch else max_bytes
        limit = min(max_position, start + budget)
        cap = NO_OFFSET_LIMIT if max_offset is None else max_offset
        end = self._whole_batches_end(start, first, limit, cap)
        return SegmentSlice(FileRegion(self.file, start, end - start), first.base_offset)

    def _whole_batches_end(self, start: int, first: BatchHeader, limit: int, max_offset: int) -> int:
        if start + first.size_bytes > limit or first.last_offset >= max_offset:
            return start
        position = start + first.size_bytes
        # Jump over whole indexed stretches so the header walk stays short.
        jump = self.offset_index.last_entry_within(limit, max_offset)
        if jump is not None and jump.position > position:
            position = jump.position
        for at, header in self.iter_headers(position, limit):
            if header.last_offset >= max_offset:
                return at
            position = at + header.size_bytes
        return position

    def find_offset_by_timestamp(self, timestamp_ms: int, start_offset: int,
                                 max_position: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with timestamp >= timestamp_ms.

        Exact per record for every codec: the candidate batch is read and,
        if compressed, decompressed (this is the only path that does).
        """
        entry = self.time_index.lookup(timestamp_ms)
        start = self.offset_index.lookup(max(entry.offset, start_offset)).position
        for position, header in self.iter_headers(start, max_position):
            if header.max_timestamp < timestamp_ms or header.last_offset < start_offset:
                continue
            found = self._first_record_at_or_after(position, header, timestamp_ms, start_offset)
            if found is not None:
                return found
        return None

    def _first_record_at_or_after(self, position: int, header: BatchHeader, timestamp_ms: int,
                                  start_offset: int) -> tuple[int, int] | None:
        batch = os.pread(self.file.fileno(), header.size_bytes, position)
        try:
            for record in iter_records(batch):
                if record.timestamp >= timestamp_ms and record.offset >= start_offset:
                    return record.offset, record.timestamp
        except RecordBatchError as error:
            # The batch passed its CRC when stored, so the client wrote a
            # payload we cannot decode; the batch itself is still a correct,
            # if coarser, answer.
            logger.warning("%s: answering by batch at offset %d: %s", self.file, header.base_offset, error)
            return max(header.base_offset, start_offset), header.max_timestamp
        return None

    # --- truncation, flush, close, delete ----------------------------------

    def truncate_to(self, offset: int) -> int:
        """Remove the batch holding `offset` and all after it; returns the bytes cut."""
        found = self.translate_offset(offset, self._size_bytes)
        cut = 0
        if found is not None:
            position, header = found
            cut = self._size_bytes - position
            os.ftruncate(self.file.fileno(), position)
            self._size_bytes = position
            self.offset_index.truncate_to_position(position)
            self.time_index.truncate_to_offset(header.base_offset)
        self._restore_state_after_truncation()
        return cut

    def _restore_state_after_truncation(self) -> None:
        """Recompute the end state by walking only the stretch after the last index entry.

        Batches before the last offset-index entry are covered by the time
        index, whose entries are written together with offset entries.
        """
        self._reset_tracking()
        self._restore_state_from_indexes()
        last_entry = self.offset_index.last_entry()
        start = last_entry.position if last_entry is not None else 0
        next_offset = self.base_offset
        for _, header in self.iter_headers(start, self._size_bytes):
            if header.max_timestamp > self.max_timestamp_ms:
                self.max_timestamp_ms = header.max_timestamp
                self.offset_of_max_timestamp = header.last_offset
            next_offset = header.next_offset
        if last_entry is not None:
            invariant(next_offset > self.base_offset, "index entry points past the truncated log")
        self._next_offset = next_offset
        self._bytes_since_last_index_entry = self._size_bytes - start

    def flush(self) -> None:
        if self.deleted or self.file.closed:
            return
        os.fsync(self.file.fileno())
        self.offset_index.flush()
        self.time_index.flush()

    def close(self) -> None:
        """Release the index files; the log file closes once the Log drops the segment."""
        if not self.deleted:
            self.on_become_inactive()
        self.offset_index.release()
        self.time_index.release()

    def rename_for_deletion(self) -> None:
        """Rename all three files with `.deleted`; readers holding the file keep working."""
        self.deleted = True
        self.offset_index.release()
        self.time_index.release()
        self.change_file_suffix(DELETED_SUFFIX)

    def change_file_suffix(self, file_suffix: str) -> None:
        """Rename the three files to carry `file_suffix` instead of the current
        one; the index files first, the `.log` last, so the `.log`'s name says
        how far a rename got (segment_swap.py). Not durable by itself; an
        index file already gone is no error (the loader rebuilds it)."""
        old = [self._path(suffix) for suffix in SEGMENT_SUFFIXES]
        self.file_suffix = file_suffix
        for suffix, path in zip(SEGMENT_SUFFIXES[1:], old[1:]):
            if os.path.exists(path):
                os.rename(path, self._path(suffix))
        os.rename(old[0], self._path(LOG_SUFFIX))
        self._follow_paths()

    def delete_files(self) -> None:
        """Unlink the segment's files; the descriptor closes with its last holder."""
        for suffix in SEGMENT_SUFFIXES:
            remove_if_present(self._path(suffix))

    def _path(self, suffix: str) -> str:
        return os.path.join(self.dir_path, segment_file_name(self.base_offset, suffix) + self.file_suffix)

    def relocate(self, dir_path: str) -> None:
        """The partition's directory was renamed: open files stay valid; paths follow."""
        self.dir_path = dir_path
        self._follow_paths()

    def _follow_paths(self) -> None:
        self.file.path = self._path(LOG_SUFFIX)
        self.offset_index.relocate(self._path(INDEX_SUFFIX))
        self.time_index.relocate(self._path(TIME_INDEX_SUFFIX))

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, size_bytes={self._size_bytes})"


# Buffers per writev call: Linux's IOV_MAX.
IOV_MAX = 1024


def _write_all(fd: int, data: bytes | bytearray | memoryview | list) -> None:
    """Write every byte of `data`, or of the buffers of a list in order (one
    writev per IOV_MAX of them; a short write resumes where it stopped)."""
    if not isinstance(data, list):
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        return
    pending = data
    while pending:
        chunk = pending[:IOV_MAX]
        written = os.writev(fd, chunk)
        done = 0
        for part in chunk:
            size = len(part)
            if written < size:
                break
            written -= size
            done += 1
        pending = pending[done:]
        if written:   # stopped inside a buffer: the rest of it goes first
            pending = [memoryview(pending[0])[written:]] + pending[1:]
