"""Which partition of `__consumer_offsets` holds a group: its leader is the
group's coordinator.

Kafka computes `Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions`
(GroupMetadataManager.partitionFor). Tools and clients that look up a
group's partition themselves, and operators comparing with a Kafka cluster,
expect the same partition here, so the hash is Java's, bit for bit:
- String.hashCode: h = 31 * h + c over the string's UTF-16 code units (a
  character outside the Basic Multilingual Plane counts as its two
  surrogates), in 32-bit two's complement arithmetic;
- Utils.abs: the absolute value, except that Integer.MIN_VALUE (whose
  absolute value does not fit) maps to 0, not to itself.
"""

from __future__ import annotations

OFFSETS_TOPIC = "__consumer_offsets"
DEFAULT_OFFSETS_TOPIC_PARTITIONS = 50        # offsets.topic.num.partitions
INT_MIN = -(2 ** 31)


def java_string_hash(text: str) -> int:
    """Java's String.hashCode of `text`, as a signed 32-bit int."""
    h = 0
    for unit in _utf16_code_units(text):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - 2 ** 32 if h >= 2 ** 31 else h


def kafka_abs(n: int) -> int:
    """Kafka's Utils.abs: |n|, and 0 for Integer.MIN_VALUE."""
    return 0 if n == INT_MIN else abs(n)


def partition_for(group_id: str, partitions: int = DEFAULT_OFFSETS_TOPIC_PARTITIONS) -> int:
    """The `__consumer_offsets` partition of `group_id`."""
    if partitions < 1:
        raise ValueError(f"offsets.topic.num.partitions must be at least 1, not {partitions}")
    return kafka_abs(java_string_hash(group_id)) % partitions


def _utf16_code_units(text: str):
    encoded = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(encoded), 2):
        yield (encoded[i] << 8) | encoded[i + 1]
