"""OffsetFetch (API 9, v1-v8): a group's committed offsets (all of them
when no topics are named, v2+). v8 asks for several groups at once, each
answered by this broker if it coordinates it (else that group's
NOT_COORDINATOR). An uncommitted partition answers offset -1, as Kafka."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.deferred import PendingAnswer
from kafkactl.cluster.broker.handlers.group_answers import MARGIN_S, NO_THROTTLE
from kafkactl.cluster.coordinator.records import NO_LEADER_EPOCH
from kafkactl.cluster.protocol.build import make, nested
from kafkactl.cluster.protocol.codec import response_class

API_KEY = 9
MULTI_GROUP_VERSION = 8
GROUP_ERROR_VERSION = 2
NO_OFFSET = -1


def handle(services, header, request):
    version = header.api_version
    if version >= MULTI_GROUP_VERSION:
        asked = [(g.group_id, _partitions(g.topics)) for g in request.groups]
    else:
        asked = [(request.group_id, _partitions(request.topics))]
    coordinator = services.group_coordinator
    futures = [(group_id, wanted, None if coordinator is None or not group_id
                else coordinator.fetch_offsets(group_id, wanted)) for group_id, wanted in asked]
    return _Pending(version, futures)


def _partitions(topics) -> list[tuple[str, int]] | None:
    if topics is None:
        return None
    return [(t.name, p) for t in topics for p in t.partition_indexes]


class _Pending(PendingAnswer):
    __slots__ = ("_version", "_futures")

    def __init__(self, version: int, futures) -> None:
        self._version = version
        self._futures = futures

    def answer(self):
        groups = []
        for group_id, wanted, future in self._futures:
            if future is None:
                error = ErrorCode.invalid_group_id if not group_id else ErrorCode.coordinator_not_available
                groups.append((group_id, error, {tp: None for tp in wanted or ()}))
                continue
            try:
                error, offsets = future.result(timeout=MARGIN_S)
            except TimeoutError:
                error, offsets = ErrorCode.coordinator_not_available, {}
            groups.append((group_id, error, offsets))
        return _response(self._version, groups)


def _response(version: int, groups):
    cls = response_class(API_KEY, version)
    if version >= MULTI_GROUP_VERSION:
        return make(cls, throttle_time=NO_THROTTLE, groups=tuple(
            nested(cls, "OffsetFetchResponseGroup", group_id=group_id, error_code=error,
                   topics=_topics(cls, "OffsetFetchResponseTopics", "OffsetFetchResponsePartitions", offsets))
            for group_id, error, offsets in groups))
    [(_, error, offsets)] = groups
    # v0-v1 have no group-level error: each partition carries it.
    partition_error = error if version < GROUP_ERROR_VERSION else ErrorCode.none
    return make(cls, throttle_time=NO_THROTTLE, error_code=error,
                topics=_topics(cls, "OffsetFetchResponseTopic", "OffsetFetchResponsePartition", offsets,
                               partition_error))


def _topics(cls, topic_class: str, partition_class: str, offsets, partition_error=ErrorCode.none):
    by_topic: dict[str, list] = {}
    for (topic, partition), committed in sorted(offsets.items()):
        by_topic.setdefault(topic, []).append(nested(
            cls, partition_class, partition_index=partition,
            committed_offset=committed.offset if committed else NO_OFFSET,
            committed_leader_epoch=committed.leader_epoch if committed else NO_LEADER_EPOCH,
            metadata=committed.metadata if committed else "", error_code=partition_error))
    return tuple(nested(cls, topic_class, name=topic, partitions=tuple(partitions))
                 for topic, partitions in by_topic.items())
