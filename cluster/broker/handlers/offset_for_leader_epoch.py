"""OffsetForLeaderEpoch (API 23): where a leader epoch ends in the leader's log.

Followers ask before fetching at a new leader epoch, to truncate only their
divergent tail (KIP-101/279); consumers ask to detect truncation after a
leader change (KIP-320). Only the leader answers, fenced by the request's
current leader epoch like Fetch. The answer for the leader's latest epoch is
its log end offset, for an older epoch the start of the next larger one,
and UNDEFINED (-1, -1) for an epoch it knows nothing about.

v0-v1 (followers of Kafka 0.11-2.0) carry no current leader epoch: they
are answered unfenced, as Kafka answers a current epoch of -1; v0's answer
has no leader epoch, only the end offset.

`replica_id` (v3+: the follower's broker id, -1 for consumers, -2 for
debugging tools) changes nothing in the answer: Kafka only uses it to
require the cluster-action permission of followers, and this broker has no
authorization.
"""

from __future__ import annotations

import datetime

from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.handlers.services import not_hosted_error
from kafkactl.cluster.protocol.apis import OFFSET_FOR_LEADER_EPOCH
from kafkactl.cluster.protocol.build import make, nested
from kafkactl.cluster.protocol.codec import response_class


def handle(services, header, request):
    cls = response_class(OFFSET_FOR_LEADER_EPOCH, header.api_version)
    topics = []
    for topic in request.topics:
        partitions = []
        for partition in topic.partitions:
            error, epoch, end_offset = _end_offset(services, topic.topic, partition)
            partitions.append(nested(
                cls, "EpochEndOffset",
                error_code=error,
                partition=partition.partition,
                leader_epoch=epoch,
                end_offset=end_offset,
            ))
        topics.append(nested(cls, "OffsetForLeaderTopicResult", topic=topic.topic, partitions=tuple(partitions)))
    return make(cls, throttle_time=datetime.timedelta(0), topics=tuple(topics))


def _end_offset(services, topic: str, partition) -> tuple[ErrorCode, int, int]:
    current_leader_epoch = getattr(partition, "current_leader_epoch", -1)   # v2+
    error, epoch, end_offset = services.replica_manager.end_offset_for_epoch(
        topic, partition.partition, current_leader_epoch, partition.leader_epoch)
    if error == ErrorCode.unknown_topic_or_partition:
        error = not_hosted_error(services, topic, partition.partition)
    return error, epoch, end_offset
