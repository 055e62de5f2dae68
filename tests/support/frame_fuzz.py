"""Structure-aware mutations of real request frames, for fuzzing a broker.

`mutate(frame, rng)` returns the bytes to send (size prefix included) and a
line saying what was done. It knows where a frame declares lengths (the
broker's own schema walk, bounds.length_positions) and where a Produce
request's record batches are, so most cases reach past the first check:

- size prefix: shorter or longer than the frame, or huge;
- header: another api key or version (the body is then read as another schema);
- a declared length (string, bytes, array count) set to an extreme, one off,
  null, or re-encoded as a varint wider than Kafka allows;
- record batches: recordCount, lastOffsetDelta, batchLength, magic, codec,
  control and transactional bits, producer id, record bytes; the CRC is
  recomputed so that the broker's record validation, not the CRC, must refuse;
- random bytes and truncation.
"""

from __future__ import annotations

import random
import struct

import crc32c

from kafkactl.cluster.protocol import apis, control, record_batch
from kafkactl.cluster.protocol.bounds import length_positions, read_uvarint
from kafkactl.cluster.protocol.codec import request_class
from kafkactl.cluster.protocol.framing import FrameError, encode_unsigned_varint

EXTREME_COUNTS = (0, 1, 2, 127, 128, 16383, 16384, 2**31 - 1, 2**32 - 2, 2**32 - 1)


def accepted_versions(api_key: int) -> range:
    if control.is_control_api(api_key):
        return range(control.VERSIONS[api_key], control.VERSIONS[api_key] + 1)
    return apis.SUPPORTED[api_key].decoded()   # served, or read to answer UNSUPPORTED_VERSION


def mutate(frame: bytes, rng: random.Random) -> tuple[bytes, str]:
    """A hostile variant of one request frame (given without its size prefix)."""
    kinds = [_size_prefix, _header, _random_bytes, _truncate]
    lengths = _lengths(frame)
    if lengths:
        kinds += [_declared_length] * 4
    records = [(p, k, c) for p, k, c in lengths if k == "bytes"] if _api_key(frame) == apis.PRODUCE else []
    if records:
        kinds += [_record_batch] * 6
    mutation = rng.choice(kinds)
    if mutation is _declared_length:
        body, what = _declared_length(frame, rng, lengths)
    elif mutation is _record_batch:
        body, what = _record_batch(frame, rng, records)
    else:
        return mutation(frame, rng)
    return struct.pack(">i", len(body)) + body, what


def mutate_batch(frame: bytes, rng: random.Random, edit: str | None = None) -> tuple[bytes, str] | None:
    """A Produce frame with one record batch edited (`edit` one of BATCH_EDITS,
    or any), size prefix included; None when the frame carries no records."""
    records = [(p, k, c) for p, k, c in _lengths(frame) if k == "bytes"] if _api_key(frame) == apis.PRODUCE else []
    if not records:
        return None
    body, what = _record_batch(frame, rng, records, edit)
    return struct.pack(">i", len(body)) + body, what


def _api_key(frame: bytes) -> int:
    return struct.unpack_from(">h", frame, 0)[0]


def _lengths(frame: bytes) -> list[tuple[int, str, bool]]:
    api_key, version = struct.unpack_from(">hh", frame, 0)
    try:
        cls = request_class(api_key, version)
        return length_positions(cls, memoryview(frame), _body_offset(frame, cls.__flexible__))
    except (FrameError, KeyError, ValueError, struct.error):
        return []


def _body_offset(frame: bytes, flexible: bool) -> int:
    (client_id_length,) = struct.unpack_from(">h", frame, 8)
    offset = 10 + max(client_id_length, 0)
    if flexible:
        tags = frame[offset]
        assert tags == 0, "clients send no header tags"
        offset += 1
    return offset


# --- whole-frame mutations ------------------------------------------------------

def _size_prefix(frame: bytes, rng: random.Random) -> tuple[bytes, str]:
    declared = rng.choice((len(frame) - 1, len(frame) + 1, len(frame) + 1000, 0, 5, 10,
                           100 * 1024 * 1024, 2**31 - 1, -1))
    return struct.pack(">i", declared) + frame, f"size prefix {declared} for {len(frame)} bytes"


def _header(frame: bytes, rng: random.Random) -> tuple[bytes, str]:
    api_key = rng.choice(sorted(apis.SUPPORTED) + sorted(control.VERSIONS) + [rng.randint(-5, 100)])
    known = api_key in apis.SUPPORTED or control.is_control_api(api_key)
    versions = list(accepted_versions(api_key)) if known else [0]
    version = rng.choice(versions + [-1, max(versions) + 1, rng.randint(-32768, 32767)])
    body = struct.pack(">hh", api_key, version) + frame[4:]
    return struct.pack(">i", len(body)) + body, f"header api_key {api_key} version {version}"


def _random_bytes(frame: bytes, rng: random.Random) -> tuple[bytes, str]:
    data = bytearray(frame)
    spots = [rng.randrange(8, len(data)) for _ in range(rng.randint(1, 4))] if len(data) > 8 else []
    for spot in spots:
        data[spot] = rng.randrange(256)
    return struct.pack(">i", len(data)) + bytes(data), f"random bytes at {spots}"


def _truncate(frame: bytes, rng: random.Random) -> tuple[bytes, str]:
    cut = rng.randrange(8, len(frame)) if len(frame) > 8 else len(frame)
    return struct.pack(">i", cut) + frame[:cut], f"truncated to {cut} of {len(frame)} bytes"


# --- declared lengths -------------------------------------------------------------

def _declared_length(frame: bytes, rng: random.Random,
                     lengths: list[tuple[int, str, bool]]) -> tuple[bytes, str]:
    position, kind, compact = rng.choice(lengths)
    if compact:
        old_value, end = _read_uvarint(frame, position)
        if rng.random() < 0.25:   # the same value, encoded wider than 5 bytes
            encoded = _overlong_uvarint(old_value)
            return frame[:position] + encoded + frame[end:], f"{kind} length at {position} as a 6-byte varint"
        value = rng.choice(EXTREME_COUNTS + (old_value - 1, old_value + 1, old_value + 2))
        value = max(value, 0)
        return (frame[:position] + encode_unsigned_varint(value) + frame[end:],
                f"compact {kind} length at {position}: {old_value - 1} -> {value - 1}")
    width = 2 if kind == "string" else 4
    (old_value,) = struct.unpack_from(">h" if width == 2 else ">i", frame, position)
    low, high = (-2**15, 2**15 - 1) if width == 2 else (-2**31, 2**31 - 1)
    value = rng.choice((-1, -2, 0, high, low, old_value + 1, old_value - 1, old_value * 1000))
    value = min(max(value, low), high)
    packed = struct.pack(">h" if width == 2 else ">i", value)
    return (frame[:position] + packed + frame[position + width:],
            f"{kind} length at {position}: {old_value} -> {value}")


def _read_uvarint(data: bytes, position: int) -> tuple[int, int]:
    return read_uvarint(memoryview(data), position, len(data))


def _overlong_uvarint(value: int) -> bytes:
    encoded = bytearray(encode_unsigned_varint(value))
    encoded[-1] |= 0x80
    return bytes(encoded) + b"\x80" * (5 - len(encoded)) + b"\x00"


# --- record batches ---------------------------------------------------------------

BATCH_EDITS = ("record_count", "last_offset_delta", "batch_length", "magic", "codec", "control",
               "transactional", "producer_id", "record_bytes", "all_ff", "trailing")


def _record_batch(frame: bytes, rng: random.Random, records: list[tuple[int, str, bool]],
                  edit: str | None = None) -> tuple[bytes, str]:
    position, _, compact = rng.choice(records)
    if compact:
        length, start = _read_uvarint(frame, position)
        length -= 1
    else:
        (length,) = struct.unpack_from(">i", frame, position)
        start = position + 4
    if length < record_batch.HEADER_SIZE:
        return frame, "records too short to edit: sent as they were"
    batch = bytearray(frame[start:start + length])
    edit = edit or rng.choice(BATCH_EDITS)
    what = _edit_batch(batch, edit, rng)
    if edit == "trailing":
        return _with_records(frame, position, start, length, bytes(batch), compact), f"batch: {what}"
    batch[record_batch.CRC_POSITION:record_batch.CRC_START] = struct.pack(
        ">I", crc32c.crc32c(bytes(batch[record_batch.CRC_START:])))
    return frame[:start] + bytes(batch) + frame[start + length:], f"batch: {what} (CRC recomputed)"


def _edit_batch(batch: bytearray, edit: str, rng: random.Random) -> str:
    if edit == "record_count":
        current = struct.unpack_from(">i", batch, 57)[0]
        value = rng.choice([v for v in (0, 1, 2, 1000, 2**31 - 1, -1) if v != current])
        struct.pack_into(">i", batch, 57, value)
        return f"recordCount {value}"
    if edit == "last_offset_delta":
        value = rng.choice((0, 999, 2**31 - 1, -1))
        struct.pack_into(">i", batch, 23, value)
        struct.pack_into(">i", batch, 57, value + 1 if value < 2**31 - 1 else value)
        return f"lastOffsetDelta {value} and a count to match"
    if edit == "batch_length":
        value = struct.unpack_from(">i", batch, 8)[0] + rng.choice((-1, 1, 100, -20))
        struct.pack_into(">i", batch, 8, value)
        return f"batchLength {value}"
    if edit == "magic":
        batch[16] = rng.choice((0, 1, 3, 255))
        return f"magic {batch[16]}"
    attributes = struct.unpack_from(">h", batch, 21)[0]
    if edit in ("codec", "control", "transactional"):
        bits = {"codec": rng.choice((1, 2, 3, 4, 5, 7)), "control": 0x20, "transactional": 0x10}[edit]
        attributes = (attributes & ~0x07) | bits if edit == "codec" else attributes | bits
        struct.pack_into(">h", batch, 21, attributes)
        return f"attributes {attributes:#06x} ({edit})"
    if edit == "producer_id":
        struct.pack_into(">q", batch, 43, rng.choice((-1, 0, 2**62)))
        return "producerId changed"
    if edit == "record_bytes":
        spots = [rng.randrange(record_batch.HEADER_SIZE, len(batch)) for _ in range(rng.randint(1, 3))] \
            if len(batch) > record_batch.HEADER_SIZE else []
        for spot in spots:
            batch[spot] = rng.choice((0x00, 0x7F, 0x80, 0xFF, 0x01, rng.randrange(256)))
        return f"record bytes at {spots}"
    if edit == "all_ff":
        batch[record_batch.HEADER_SIZE:] = b"\xff" * (len(batch) - record_batch.HEADER_SIZE)
        return "every byte after the header 0xff"
    batch += rng.randbytes(rng.randint(1, 70))
    return "bytes after the last batch"


def _with_records(frame: bytes, position: int, start: int, length: int, records: bytes,
                  compact: bool) -> bytes:
    prefix = encode_unsigned_varint(len(records) + 1) if compact else struct.pack(">i", len(records))
    return frame[:position] + prefix + records + frame[start + length:]
