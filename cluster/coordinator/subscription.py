"""The topics a consumer group member subscribes to, read from the metadata
it sends with JoinGroup (protocol type "consumer").

The coordinator needs them for two decisions: which committed offsets of a
non-empty group may expire (those of topics nobody subscribes to), and the
rebalance it starts itself when a subscribed topic gains partitions (seed 003).

Kafka's ConsumerProtocolSubscription, every version starting the same way:
version int16, topics [string], user_data bytes?, then fields later versions
add (owned partitions, generation, rack). Only the version and the topics are
read, so a version newer than Kafka 3.x still yields its topics, as Kafka's
own reader is forward compatible. Metadata that does not parse yields None:
the member's subscription is unknown (its offsets are kept, its topics do
not start rebalances); it never stops the coordinator.
"""

from __future__ import annotations

from kafkactl.cluster.coordinator.records import Reader, RecordFormatError

CONSUMER_PROTOCOL_TYPE = "consumer"
_LEAST_TOPIC_SIZE = 2   # an empty string: its int16 length


def subscribed_topics(metadata: bytes) -> frozenset[str] | None:
    """The topics in a consumer's subscription metadata; None if it does not parse."""
    reader = Reader(metadata, "consumer subscription")
    try:
        version = reader.int16("version")
        if version < 0:
            return None
        count = reader.count("topics", _LEAST_TOPIC_SIZE)
        return frozenset(reader.string("topic") for _ in range(count))
    except RecordFormatError:
        return None


def group_subscription(protocol_type: str | None, metadata_of_members) -> frozenset[str] | None:
    """Every topic some member subscribes to; None when unknown (not a
    consumer group, or a member whose metadata does not parse)."""
    if protocol_type != CONSUMER_PROTOCOL_TYPE:
        return None
    topics: set[str] = set()
    for metadata in metadata_of_members:
        member_topics = subscribed_topics(metadata)
        if member_topics is None:
            return None
        topics |= member_topics
    return frozenset(topics)
