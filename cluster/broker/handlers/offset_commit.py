"""OffsetCommit (API 8, v2-v8): a group's consumed positions, acknowledged
once on the ISR of its `__consumer_offsets` partition
(coordinator/offsets.py has who may commit; group_requests.py the rest).
v2-v4 carry a retention time (-1: the broker's offsets.retention.minutes);
v6+ a leader epoch per partition; v7+ group.instance.id. A partition named
twice keeps its last offset, as Kafka's map does."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.handlers.group_answers import MARGIN_S, NO_THROTTLE, answered, milliseconds
from kafkactl.cluster.coordinator.group_requests import OffsetCommitRequest
from kafkactl.cluster.coordinator.records import NO_LEADER_EPOCH
from kafkactl.cluster.protocol.build import make, nested
from kafkactl.cluster.protocol.codec import response_class

API_KEY = 8


def handle(services, header, request):
    version = header.api_version
    offsets = {}
    for topic in request.topics:
        for p in topic.partitions:
            offsets[(topic.name, p.partition_index)] = (
                p.committed_offset, getattr(p, "committed_leader_epoch", NO_LEADER_EPOCH), p.committed_metadata)
    retention = getattr(request, "retention_time", -1)
    commit = OffsetCommitRequest(request.group_id, request.member_id, request.generation_id_or_member_epoch,
                                 getattr(request, "group_instance_id", None), offsets, milliseconds(retention))
    error = _refusal(commit)
    if error is None and services.group_coordinator is None:
        error = ErrorCode.coordinator_not_available
    if error is not None:
        return _response(version, {tp: error for tp in offsets})
    timeout_s = services.config.offsets_commit_timeout_ms / 1000 + MARGIN_S
    return answered(services.group_coordinator.commit_offsets(commit), lambda result: _response(version, result),
                    {tp: ErrorCode.request_timed_out for tp in offsets}, timeout_s)


def _refusal(commit: OffsetCommitRequest) -> ErrorCode | None:
    if not commit.group_id:
        return ErrorCode.invalid_group_id
    return None


def _response(version: int, results: dict):
    cls = response_class(API_KEY, version)
    by_topic: dict[str, list] = {}
    for (topic, partition), error in results.items():
        by_topic.setdefault(topic, []).append(
            nested(cls, "OffsetCommitResponsePartition", partition_index=partition, error_code=error))
    return make(cls, throttle_time=NO_THROTTLE, topics=tuple(
        nested(cls, "OffsetCommitResponseTopic", name=topic, partitions=tuple(partitions))
        for topic, partitions in by_topic.items()))
