"""A group's `__consumer_offsets` partition is Apache Kafka's: Java's
String.hashCode and Kafka's Utils.abs (cluster/coordinator/placement.py).

The expected values were printed by Java 17 (`String.hashCode()`, and
`(h == Integer.MIN_VALUE ? 0 : Math.abs(h)) % 50`)."""

import pytest

from kafkactl.cluster.coordinator.placement import java_string_hash, kafka_abs, partition_for


@pytest.mark.parametrize(("text", "expected"), [
    ("", 0),
    ("a", 97),
    ("Aa", 2112), ("BB", 2112),                     # Java's classic collision
    ("hello", 99162322),
    ("hello world", 1794106052),
    ("polygenelubricants", -2 ** 31),               # hashes to Integer.MIN_VALUE
    ("\U0001F600", 0xD83D * 31 + 0xDE00),           # outside the BMP: two UTF-16 code units
    ("é", 233),
])
def test_java_string_hash(text, expected):
    assert java_string_hash(text) == expected


def test_the_hash_wraps_as_a_signed_32_bit_int():
    assert java_string_hash("zzzzzzzzzzzz") == 1097476992
    assert java_string_hash("my-group") == -1906497762
    assert all(-2 ** 31 <= java_string_hash("group-" * n) < 2 ** 31 for n in range(1, 50))


def test_kafka_abs_maps_integer_min_value_to_zero():
    assert kafka_abs(-2 ** 31) == 0
    assert kafka_abs(-5) == 5 and kafka_abs(7) == 7


@pytest.mark.parametrize(("group", "partitions", "expected"), [
    ("polygenelubricants", 50, 0),
    ("hello", 50, 99162322 % 50),
    ("hello world", 50, 1794106052 % 50),
    ("my-group", 50, 12),                           # a negative hash: its absolute value
    ("console-consumer-12345", 50, 6),
    ("\U0001F600", 50, 49),
    ("a", 50, 47),
    ("a", 1, 0),
])
def test_partition_for(group, partitions, expected):
    assert partition_for(group, partitions) == expected


def test_a_topic_without_partitions_is_refused():
    with pytest.raises(ValueError, match="offsets.topic.num.partitions"):
        partition_for("g", 0)
