"""OffsetDelete (API 47, v0, KIP-496): delete a group's committed offsets of
some partitions; refused per partition (GROUP_SUBSCRIBED_TO_TOPIC) while a
member of a live consumer group subscribes to the topic."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.handlers.group_answers import MARGIN_S, NO_THROTTLE, answered
from kafkactl.cluster.protocol.build import make, nested
from kafkactl.cluster.protocol.codec import response_class

API_KEY = 47


def handle(services, header, request):
    version = header.api_version
    partitions = [(t.name, p.partition_index) for t in request.topics for p in t.partitions]
    if not request.group_id:
        return _response(version, (ErrorCode.invalid_group_id, {}))
    if services.group_coordinator is None:
        return _response(version, (ErrorCode.coordinator_not_available, {}))
    return answered(services.group_coordinator.delete_offsets(request.group_id, partitions),
                    lambda result: _response(version, result), (ErrorCode.coordinator_not_available, {}),
                    MARGIN_S)


def _response(version: int, result):
    error, partitions = result
    cls = response_class(API_KEY, version)
    by_topic: dict[str, list] = {}
    for (topic, partition), partition_error in sorted(partitions.items()):
        by_topic.setdefault(topic, []).append(
            nested(cls, "OffsetDeleteResponsePartition", partition_index=partition, error_code=partition_error))
    return make(cls, throttle_time=NO_THROTTLE, error_code=error, topics=tuple(
        nested(cls, "OffsetDeleteResponseTopic", name=topic, partitions=tuple(items))
        for topic, items in by_topic.items()))
