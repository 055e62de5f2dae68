# The C record walker (_record_check.c), for type checkers and readers.
def check_records(data: bytes | bytearray | memoryview, record_count: int, refuse_null_key: bool = False,
                  /) -> tuple[int, str] | None:
    """None when rules R1-R6 and P2 of record_validation hold over an
    uncompressed records payload (and K1 with refuse_null_key), else
    (record_index, detail); record_index -1 for bytes after the last record,
    detail "key is null" for K1 (the first record without a key)."""
