"""`__consumer_offsets` itself: how it is created on first need, as Kafka
creates it (KafkaApis.createInternalTopic): offsets.topic.num.partitions
partitions, offsets.topic.replication.factor replicas over the live brokers,
compacted, segments of offsets.topic.segment.bytes, records kept as the
coordinator writes them. With fewer live brokers than the replication
factor it is not created: FindCoordinator answers COORDINATOR_NOT_AVAILABLE
until enough brokers are up (a one-broker cluster sets the factor to 1).
"""

from __future__ import annotations

from kafkactl.cluster.broker.topic_auto_creation import Wish
from kafkactl.cluster.coordinator.placement import OFFSETS_TOPIC


def offsets_topic_wish(config) -> Wish:
    return Wish(OFFSETS_TOPIC, config.offsets_topic_num_partitions, config.offsets_topic_replication_factor,
                (("cleanup.policy", "compact"), ("compression.type", "producer"),
                 ("segment.bytes", str(config.offsets_topic_segment_bytes))))
