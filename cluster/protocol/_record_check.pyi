# The C record walker (_record_check.c), for type checkers and readers.
def check_records(data: bytes | bytearray | memoryview, record_count: int, /) -> tuple[int, str] | None:
    """None when rules R1-R6 and P2 of record_validation hold over an
    uncompressed records payload, else (record_index, detail); record_index
    -1 for bytes after the last record."""
