"""Random damage to a records payload, shared by the tests that compare a C record
walk with its Python reference (test_record_check_native.py, test_record_filter_native.py)."""

from __future__ import annotations

import ctypes
import random

INTERESTING = (0, 1, -1, -2, 2, 63, 64, -65, 127, 128, 8191, 8192, 2**31 - 1, -2**31, 2**32, 2**35, -2**62)


def varint(value: int, pad: int = 0) -> bytes:
    """A zigzag varint; `pad` extra continuation bytes of zero bits make it non-canonical."""
    unsigned = (value << 1) ^ (value >> 63) if value < 0 else value << 1
    out = bytearray()
    while unsigned >= 0x80:
        out.append((unsigned & 0x7F) | 0x80)
        unsigned >>= 7
    out.append(unsigned)
    for _ in range(pad):
        out[-1] |= 0x80
        out.append(0)
    return bytes(out)


def mutate_payload(rng: random.Random, data: bytearray, count: int) -> tuple[int, list[str]]:
    """Damage `data` in place one to three times; the record count to declare
    (a "count" mutation changes it) and what was done (for a replay line)."""
    done = []
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        kind = rng.choice(("flip", "byte", "varint", "truncate", "insert", "delete", "count"))
        at = rng.randrange(len(data) + 1)
        if kind == "flip" and data:
            at = min(at, len(data) - 1)
            data[at] ^= 1 << rng.randrange(8)
        elif kind == "byte" and data:
            at = min(at, len(data) - 1)
            data[at] = rng.choice((0x00, 0x01, 0x7F, 0x80, 0xFF, rng.randrange(256)))
        elif kind == "varint":
            value = rng.choice(INTERESTING + (rng.randrange(-300, 300),))
            encoded = varint(value, pad=rng.choice((0, 0, 0, 1, 5)))
            if rng.random() < 0.1:
                encoded = b"\x80" * rng.choice((5, 6, 10, 11))   # over-long
            data[at:at + rng.randrange(1, 4)] = encoded
        elif kind == "truncate":
            del data[at:]
        elif kind == "insert":
            data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 6)))
        elif kind == "delete":
            del data[at:at + rng.randrange(1, 4)]
        elif kind == "count":
            count = max(0, count + rng.choice((-2, -1, 1, 2, 1000)))
        done.append(f"{kind}@{at}")
    return count, done


def exact_buffer(payload: bytes) -> memoryview:
    """`payload` in an allocation of exactly its size (no trailing NUL as in bytes), so
    that a build with -fsanitize=address reports a read past it."""
    return memoryview((ctypes.c_ubyte * len(payload)).from_buffer_copy(payload)) if payload else memoryview(b"")
