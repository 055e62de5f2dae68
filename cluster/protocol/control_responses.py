"""The LeaderAndIsr response straight to bytes.

A failover's LeaderAndIsr carries 10,000 partitions, and its response one
error per partition. Building 10,000 kio entities and writing them through
kio's generic writer took ~30 ms of the new leader's CPU right when it starts
serving; this writes the same bytes (tests/unit/cluster/protocol compares
them with kio's) in a few milliseconds.
"""

from __future__ import annotations

import struct
import uuid
from typing import Iterable, Sequence

from kafkactl.cluster.protocol.codec import SplicedResponse
from kafkactl.cluster.protocol.framing import encode_unsigned_varint, size_prefix

_NO_TAGS = b"\x00"
_PARTITION_ERROR = struct.Struct(">ihB")     # partition index, error code, no tagged fields
_ERROR_CODE = struct.Struct(">h")
_RESPONSE_HEADER_V1 = struct.Struct(">iB")   # correlation id, no tagged fields
_ZERO_UUID = bytes(16)


def leader_and_isr_response_body(error_code: int,
                                 topics: Iterable[tuple[uuid.UUID | None, Sequence[tuple[int, int]]]]) -> bytes:
    """LeaderAndIsr v6 response body: topics are (topic id, [(partition, error code)])."""
    topics = list(topics)
    parts = [_ERROR_CODE.pack(error_code), encode_unsigned_varint(len(topics) + 1)]
    pack = _PARTITION_ERROR.pack
    for topic_id, errors in topics:
        parts.append(_ZERO_UUID if topic_id is None else topic_id.bytes)
        parts.append(encode_unsigned_varint(len(errors) + 1))
        parts += [pack(partition, code, 0) for partition, code in errors]
        parts.append(_NO_TAGS)
    parts.append(_NO_TAGS)
    return b"".join(parts)


def framed(correlation_id: int, body: bytes) -> SplicedResponse:
    """A flexible response (header v1) ready to send, as the dispatcher sends a Fetch's."""
    head = size_prefix(_RESPONSE_HEADER_V1.size + len(body)) + _RESPONSE_HEADER_V1.pack(correlation_id, 0)
    return SplicedResponse([head, body], len(head) + len(body))
