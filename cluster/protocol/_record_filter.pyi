# The log cleaner's C record passes (_record_filter.c, _offset_map.c), for type checkers and readers.
Buffer = bytes | bytearray | memoryview

class OffsetMap:
    """Each key's last offset (bytes -> int), keys kept whole."""

    def __init__(self) -> None: ...
    def __len__(self) -> int: ...
    def get(self, key: Buffer, default: int | None = None, /) -> int | None: ...
    def put(self, key: Buffer, offset: int, /) -> None: ...
    def new_keys(self, other: OffsetMap, /) -> int:
        """How many of other's keys this map does not hold."""
    def update(self, other: OffsetMap, /) -> None:
        """Other's keys and offsets, replacing this map's."""
    def items(self) -> list[tuple[bytes, int]]: ...
    def __sizeof__(self) -> int: ...

def collect_keys(payload: Buffer, record_count: int, last_offset_delta: int, base_offset: int, first_dirty: int,
                 found: OffsetMap, /) -> int:
    """found[key] = offset for each keyed record at or above first_dirty; the
    number of records. ValueError (found untouched) when one cannot be read."""

def keep_records(payload: Buffer, record_count: int, last_offset_delta: int, base_offset: int, latest: OffsetMap,
                 retain_tombstones: bool, /) -> tuple[int, int, bytes | None, int | None]:
    """(records, kept, the kept records' bytes or None when all are kept,
    their largest timestamp delta or None when none is); ValueError when a
    record cannot be read."""
