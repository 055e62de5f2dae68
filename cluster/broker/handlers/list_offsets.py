"""ListOffsets: earliest (-2), latest (-1), max timestamp (-3) or by timestamp.

Consumers (replica_id -1) are answered by the leader, up to the high
watermark. Kafka's debugging replica id (-2) may ask any replica, leader or
follower, and gets the replica's own log: latest is its log end offset, as in
Kafka, where no isolation level applies to a non-client replica id. Tools use
it to see how far a follower is behind (`kafkactl isr`).
"""

from __future__ import annotations

import datetime
from functools import cache

from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.partition import check_epoch
from kafkactl.cluster.protocol.build import has_field, make, module_of, nested
from kafkactl.cluster.protocol.codec import response_class
from kafkactl.cluster.protocol.list_offsets import (DEBUGGING_REPLICA_ID, EARLIEST_TIMESTAMP, LATEST_TIMESTAMP,
                                                    MAX_TIMESTAMP)
from kafkactl.cluster.broker.handlers.services import not_hosted_error


def handle(services, header, request):
    if header.api_version == 0:
        return _handle_v0(services, request)
    cls = response_class(2, header.api_version)
    replica_manager = services.replica_manager
    debugging = request.replica_id == DEBUGGING_REPLICA_ID
    answer = _partition_answer(cls)
    topics = []
    for topic in request.topics:
        partitions = []
        for partition in topic.partitions:
            epoch_check = getattr(partition, "current_leader_epoch", -1)
            if debugging:
                error, offset, timestamp = _replica_offset(
                    replica_manager, topic.name, partition.partition_index, partition.timestamp, epoch_check)
            else:
                error, offset, timestamp = leader_offset(
                    replica_manager, topic.name, partition.partition_index, partition.timestamp, epoch_check)
            if error == ErrorCode.unknown_topic_or_partition:
                error = not_hosted_error(services, topic.name, partition.partition_index)
            local = replica_manager.get(topic.name, partition.partition_index)
            partitions.append(answer(partition.partition_index, error, timestamp, offset,
                                     local.leader_epoch if local is not None else -1))
        topics.append(nested(cls, "ListOffsetsTopicResponse", name=topic.name, partitions=tuple(partitions)))
    return make(cls, throttle_time=datetime.timedelta(0), topics=tuple(topics))


@cache
def _partition_answer(cls):
    """A constructor of the version's ListOffsetsPartitionResponse from the
    values every version may carry, the fields it lacks left out. Resolved
    once per version rather than per partition (a probe may ask for 10,000)."""
    partition_cls = getattr(module_of(cls), "ListOffsetsPartitionResponse")
    wanted = [name for name in ("timestamp", "offset", "leader_epoch", "old_style_offsets")
              if has_field(partition_cls, name)]
    with_timestamp, with_offset, with_epoch, with_old = (name in wanted for name in
                                                         ("timestamp", "offset", "leader_epoch", "old_style_offsets"))

    def answer(index: int, error, timestamp: int, offset: int, leader_epoch: int):
        values = {"partition_index": index, "error_code": error}
        if with_timestamp:
            values["timestamp"] = timestamp
        if with_offset:
            values["offset"] = offset
        if with_epoch:
            values["leader_epoch"] = leader_epoch
        if with_old:
            values["old_style_offsets"] = (offset,) if offset >= 0 else ()
        return partition_cls(**values)

    return answer


def leader_offset(replica_manager, topic: str, index: int, timestamp: int, current_leader_epoch: int):
    """(error, offset, timestamp) from the leader, for a consumer (read_uncommitted):
    nothing at or above the high watermark."""
    partition = replica_manager.get(topic, index)
    if partition is None:
        return ErrorCode.unknown_topic_or_partition, -1, -1
    with partition.lock:
        error = check_epoch(partition, current_leader_epoch)
        high_watermark = partition.high_watermark
    if error is not None:
        return error, -1, -1
    return (ErrorCode.none, *_offset_in(partition.log, timestamp, high_watermark))


def _replica_offset(replica_manager, topic: str, index: int, timestamp: int, current_leader_epoch: int):
    """(error, offset, timestamp) from this broker's replica, leader or not:
    its whole log (latest is its log end offset)."""
    partition = replica_manager.get(topic, index)
    if partition is None:
        return ErrorCode.unknown_topic_or_partition, -1, -1
    with partition.lock:
        leader_epoch = partition.leader_epoch
    if current_leader_epoch not in (-1, leader_epoch):
        # Kafka's fencing for a replica of either role (KIP-320).
        error = ErrorCode.fenced_leader_epoch if current_leader_epoch < leader_epoch else ErrorCode.unknown_leader_epoch
        return error, -1, -1
    log_ = partition.log
    return (ErrorCode.none, *_offset_in(log_, timestamp, log_.log_end_offset))


def _offset_in(log_, timestamp: int, latest: int) -> tuple[int, int]:
    """(offset, timestamp) of a sentinel or a timestamp in `log_`, below
    `latest` (the high watermark or the log end offset); (-1, -1) if none."""
    if timestamp == EARLIEST_TIMESTAMP:
        return log_.log_start_offset, -1
    if timestamp == LATEST_TIMESTAMP:
        return latest, -1
    found = log_.offset_of_max_timestamp() if timestamp == MAX_TIMESTAMP else log_.offset_for_timestamp(timestamp)
    if found is None or found[0] >= latest:
        return -1, -1
    return found[0], found[1]


# --- version 0: a list of offsets per partition ----------------------------------

def _handle_v0(services, request):
    cls = response_class(2, 0)
    topics = []
    for topic in request.topics:
        partitions = []
        for partition in topic.partitions:
            error, offsets = _offsets_v0(services, topic.name, partition, request.replica_id)
            partitions.append(nested(cls, "ListOffsetsPartitionResponse", partition_index=partition.partition_index,
                                     error_code=error, old_style_offsets=tuple(offsets)))
        topics.append(nested(cls, "ListOffsetsTopicResponse", name=topic.name, partitions=tuple(partitions)))
    return make(cls, topics=tuple(topics))


def _offsets_v0(services, topic: str, partition, replica_id: int) -> tuple[ErrorCode, list[int]]:
    replica_manager = services.replica_manager
    if partition.max_num_offsets < 0:   # Kafka fails on it (a negative array size): say why instead
        return ErrorCode.invalid_request, []
    debugging = replica_id == DEBUGGING_REPLICA_ID
    if debugging:   # any replica answers from its own log, as in later versions
        error, high_watermark, _ = _replica_offset(replica_manager, topic, partition.partition_index,
                                                   LATEST_TIMESTAMP, -1)
    else:
        error, high_watermark, _ = leader_offset(replica_manager, topic, partition.partition_index,
                                                 LATEST_TIMESTAMP, -1)
    if error == ErrorCode.unknown_topic_or_partition:
        error = not_hosted_error(services, topic, partition.partition_index)
    if error != ErrorCode.none:
        return error, []
    log_ = replica_manager.get(topic, partition.partition_index).log
    points = offset_time_points(log_.segment_summaries(), log_.log_start_offset, log_.log_end_offset,
                                services.clock_ms())
    offsets = legacy_offsets(points, partition.timestamp, partition.max_num_offsets)
    if replica_id == -1 and partition.timestamp == LATEST_TIMESTAMP:
        offsets = capped_at_high_watermark(offsets, high_watermark)
    return ErrorCode.none, offsets


def offset_time_points(segments: list[tuple[int, int, int]], log_start_offset: int, log_end_offset: int,
                       now_ms: int) -> list[tuple[int, int]]:
    """Kafka 2.x's (offset, time) points of a log for ListOffsets v0: each
    segment's base offset (not below the log start) with its last
    modification, then the log end offset at `now_ms` if the active segment
    holds anything. `segments` are (base offset, size, last modified ms)."""
    points = [(max(base, log_start_offset), modified) for base, _, modified in segments]
    if segments and segments[-1][1] > 0:
        points.append((log_end_offset, now_ms))
    return points


def legacy_offsets(points: list[tuple[int, int]], timestamp: int, max_num_offsets: int) -> list[int]:
    """Up to `max_num_offsets` offsets, newest first: from the last point
    (latest, -1), the first (earliest, -2), or the last point whose time is
    at or before `timestamp`, going back through older points."""
    if timestamp == LATEST_TIMESTAMP:
        start = len(points) - 1
    elif timestamp == EARLIEST_TIMESTAMP:
        start = 0
    else:
        start = next((i for i in range(len(points) - 1, -1, -1) if points[i][1] <= timestamp), -1)
    chosen = [points[i][0] for i in range(start, max(start - max_num_offsets, -1), -1)]
    return sorted(chosen, reverse=True)


def capped_at_high_watermark(offsets: list[int], high_watermark: int) -> list[int]:
    """A consumer never learns an offset above the high watermark: those are
    replaced by the high watermark itself (Kafka's ReplicaManager does this)."""
    if not any(offset > high_watermark for offset in offsets):
        return offsets
    return [high_watermark] + [offset for offset in offsets if offset <= high_watermark]

