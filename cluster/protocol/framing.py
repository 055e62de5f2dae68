"""Kafka request framing: the size prefix and the request header.

No sockets here: functions take bytes. The connection layer reads the 4-byte
size, checks it against `socket.request.max.bytes` with `check_frame_size`,
reads the payload and hands it to `parse_request_header`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

_SIZE = struct.Struct(">i")
_HEADER_FIXED = struct.Struct(">hhi")


class FrameError(ValueError):
    """The bytes on the connection are not a Kafka request; close it."""


@dataclass(frozen=True, slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body_offset: int  # where the request body starts in the frame


def check_frame_size(size_prefix: bytes, max_bytes: int) -> int:
    (size,) = _SIZE.unpack(size_prefix)
    if size < _HEADER_FIXED.size + 2:
        raise FrameError(f"frame of {size} bytes is too small for a request header")
    if size > max_bytes:
        raise FrameError(f"frame of {size} bytes exceeds socket.request.max.bytes={max_bytes}")
    return size


def peek_api(frame: bytes | memoryview) -> tuple[int, int, int]:
    """api_key, api_version and correlation_id, readable in any version."""
    if len(frame) < _HEADER_FIXED.size:
        raise FrameError("frame too short for a request header")
    return _HEADER_FIXED.unpack_from(frame, 0)


def parse_request_header(frame: bytes | memoryview, flexible: bool) -> RequestHeader:
    """Header v1 (client_id), or v2 (client_id + tagged fields) when flexible."""
    api_key, api_version, correlation_id = peek_api(frame)
    position = _HEADER_FIXED.size
    client_id, position = _read_nullable_string(frame, position)
    if flexible:
        position = skip_tagged_fields(frame, position)
    return RequestHeader(api_key, api_version, correlation_id, client_id, position)


def _read_nullable_string(frame, position: int) -> tuple[str | None, int]:
    if position + 2 > len(frame):
        raise FrameError("truncated client_id")
    (length,) = struct.unpack_from(">h", frame, position)
    position += 2
    if length < 0:
        return None, position
    end = position + length
    if end > len(frame):
        raise FrameError("truncated client_id")
    try:
        return bytes(frame[position:end]).decode("utf-8"), end
    except UnicodeDecodeError:
        raise FrameError("client_id is not UTF-8") from None


def read_unsigned_varint(frame, position: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if position >= len(frame) or shift > 28:
            raise FrameError("bad unsigned varint")
        byte = frame[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, position
        shift += 7


def skip_tagged_fields(frame, position: int) -> int:
    """Past a header's tagged fields (a count, then tag, size, bytes per field)."""
    count, position = read_unsigned_varint(frame, position)
    for _ in range(count):
        _, position = read_unsigned_varint(frame, position)
        size, position = read_unsigned_varint(frame, position)
        position += size
        if position > len(frame):
            raise FrameError("truncated tagged field")
    return position


def size_prefix(size: int) -> bytes:
    return _SIZE.pack(size)


def encode_unsigned_varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
