"""Kafka's consumer protocol bytes, built by hand for tests: the subscription
a member sends with JoinGroup (ConsumerProtocolSubscription)."""

from __future__ import annotations

import struct


def subscription(topics: list[str], version: int = 0, user_data: bytes | None = None) -> bytes:
    out = struct.pack(">hi", version, len(topics))
    for topic in topics:
        encoded = topic.encode()
        out += struct.pack(">h", len(encoded)) + encoded
    out += struct.pack(">i", -1) if user_data is None else struct.pack(">i", len(user_data)) + user_data
    if version >= 1:
        out += struct.pack(">i", 0)          # owned partitions: none
    return out
