"""ListOffsets: earliest (-2), latest (-1), max timestamp (-3) or by timestamp."""

from __future__ import annotations

import datetime

from kafkactl.cluster.protocol.build import make, nested
from kafkactl.cluster.protocol.codec import response_class


def handle(services, header, request):
    cls = response_class(2, header.api_version)
    replica_manager = services.replica_manager
    topics = []
    for topic in request.topics:
        partitions = []
        for partition in topic.partitions:
            epoch_check = getattr(partition, "current_leader_epoch", -1)
            error, offset, timestamp = replica_manager.offset_for(
                topic.name, partition.partition_index, partition.timestamp, epoch_check
            )
            local = replica_manager.get(topic.name, partition.partition_index)
            partitions.append(nested(
                cls, "ListOffsetsPartitionResponse",
                partition_index=partition.partition_index,
                error_code=error,
                timestamp=timestamp,
                offset=offset,
                leader_epoch=local.leader_epoch if local is not None else -1,
                old_style_offsets=(offset,) if offset >= 0 else (),
            ))
        topics.append(nested(cls, "ListOffsetsTopicResponse", name=topic.name, partitions=tuple(partitions)))
    return make(cls, throttle_time=datetime.timedelta(0), topics=tuple(topics))
