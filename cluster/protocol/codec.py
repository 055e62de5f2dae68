"""Request decoding and response encoding with `kio`, plus the Fetch splice.

A Fetch response carries record bytes in the middle of its structure. To send
them straight from the segment files with `os.sendfile`, the response is
encoded by kio with a short random placeholder in each partition's `records`
field; the placeholder and its length prefix are then replaced by the real
length prefix and a reference to the file region. The result is a list of
byte strings and file regions whose total size is known before sending.
"""

from __future__ import annotations

import io
import os
import struct
from dataclasses import dataclass
from functools import cache
from typing import Any, Protocol

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer

from kafkactl.cluster import fatal
from kafkactl.cluster.protocol import control, old_versions, produce_request
from kafkactl.cluster.protocol.bounds import check_request_body
from kafkactl.cluster.protocol.framing import (
    FrameError,
    encode_unsigned_varint,
    parse_request_header,
    size_prefix,
)


PRODUCE_API_KEY = 0


class FileRegionLike(Protocol):
    file: Any        # has fileno()
    position: int
    length: int


@cache
def request_class(api_key: int, api_version: int):
    if control.is_control_api(api_key):  # the ZooKeeper-era APIs kio lacks
        return control.control_request_class(api_key, api_version)
    return old_versions.request_class(api_key, api_version) or load_request_schema(api_key, api_version)


@cache
def response_class(api_key: int, api_version: int):
    if control.is_control_api(api_key):
        return control.control_response_class(api_key, api_version)
    return old_versions.response_class(api_key, api_version) or load_response_schema(api_key, api_version)


@cache
def _reader(cls):
    return entity_reader(cls)


@cache
def _writer(cls):
    return entity_writer(cls)


def is_flexible(api_key: int, api_version: int) -> bool:
    return bool(request_class(api_key, api_version).__flexible__)


def decode_request(frame: bytes, api_key: int, api_version: int):
    """Header and body of a request the dispatcher takes; FrameError if malformed
    (a field runs past the frame's end); bytes after the body are ignored.

    Produce v3+ bodies are read by protocol.produce_request: their records
    are views of `frame`, not copies (valid while the frame's buffer is)."""
    cls = request_class(api_key, api_version)
    header = parse_request_header(frame, cls.__flexible__)
    if api_key == PRODUCE_API_KEY and produce_request.MIN_VERSION <= api_version <= produce_request.MAX_VERSION:
        body, _ = produce_request.read_produce_request(frame, header.body_offset, api_version)
    else:
        # kio reserves by declared counts: nothing reaches it unchecked.
        check_request_body(cls, frame, header.body_offset)
        try:
            body, _ = _reader(cls)(frame, header.body_offset)
        except Exception as error:  # kio's native reader raises several kinds
            fatal.halt_if_fatal(error, f"decoding {cls.__name__}")
            raise FrameError(f"malformed {cls.__name__}: {error}") from None
    # Bytes after the body are ignored, as Kafka's request parser ignores them
    # (it reads the fields it knows): librdkafka 2.x sends an all-topics
    # Metadata v12 with three of them, and real Kafka answers it.
    return header, body


def _response_header(correlation_id: int, flexible_header: bool) -> bytes:
    header = struct.pack(">i", correlation_id)
    return header + b"\x00" if flexible_header else header


def encode_body(response) -> bytes:
    buffer = io.BytesIO()
    _writer(type(response))(buffer, response)
    return buffer.getvalue()


def encode_response(response, correlation_id: int, flexible_header: bool | None = None) -> bytes:
    """Size-prefixed response frame. ApiVersions always uses header v0."""
    if flexible_header is None:
        flexible_header = response.__flexible__ and response.__api_key__ != 18
    body = _response_header(correlation_id, flexible_header) + encode_body(response)
    return size_prefix(len(body)) + body


@dataclass(slots=True)
class SplicedResponse:
    """A response frame made of bytes and file regions, in order."""

    parts: list[bytes | FileRegionLike]
    size: int  # including the 4-byte size prefix


def new_placeholder() -> bytes:
    return os.urandom(16)


def splice_records(
    response,
    correlation_id: int,
    regions: list[tuple[bytes, FileRegionLike]],
) -> SplicedResponse:
    """Replace each (placeholder, region) in the encoded response.

    `regions` are in the order their partitions appear in the response; each
    placeholder was put in a `records` field when the response was built.
    """
    flexible = response.__flexible__
    body = _response_header(correlation_id, flexible) + encode_body(response)
    parts: list[bytes | FileRegionLike] = []
    size = 0
    cursor = 0
    prefix_length = 1 if flexible else 4  # uvarint(17) is one byte; int32 is four
    for placeholder, region in regions:
        found = body.find(placeholder, cursor)
        if found < 0:
            raise ValueError("fetch placeholder not found in encoded response")
        head = body[cursor:found - prefix_length] + _records_length(region.length, flexible)
        parts.append(head)
        size += len(head)
        if region.length:
            parts.append(region)
            size += region.length
        cursor = found + len(placeholder)
    tail = body[cursor:]
    parts.append(tail)
    size += len(tail)
    parts.insert(0, size_prefix(size))
    return SplicedResponse(parts, size + 4)


def _records_length(length: int, flexible: bool) -> bytes:
    if flexible:
        return encode_unsigned_varint(length + 1)  # compact nullable bytes
    return struct.pack(">i", length)
