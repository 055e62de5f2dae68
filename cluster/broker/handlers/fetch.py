"""Fetch: long poll, then whole batches straight from the segment files.

The request waits until `min_bytes` are available or `max_wait` passes; an
append anywhere wakes it to re-read. Record bytes are never copied into
Python: the response is spliced with file regions (see protocol.codec).
Fetch sessions (KIP-227, fetch_session.py) let a fetcher send and receive
only the partitions that changed, and the leader read only those: the
partitions where the fetcher already has everything are not read again
until they change, and a follower's fetch records them caught up through
its session's clock, once per fetch.

A fetch with `replica_id` >= 0 comes from a follower: it reads up to the log
end offset rather than the high watermark, and the leader records what the
fetch proves (the follower's log end offset, its caught-up time, a higher
high watermark, ISR expansion) before reading and once it is answered.

An isolation level other than 0 (read_uncommitted) or 1 (read_committed)
fails the whole request as in Kafka, where reading it throws and the error
response carries UNKNOWN_SERVER_ERROR at the top and, below v13, in every
partition asked for; nothing is read and no fetch session changes.
"""

from __future__ import annotations

import datetime
import time
from dataclasses import replace

from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.fetch_session import FetchContext, FetchTarget
from kafkactl.cluster.broker.handlers.services import not_hosted_error
from kafkactl.cluster.protocol import fetch_response
from kafkactl.cluster.protocol.build import make, nested
from kafkactl.cluster.protocol.codec import new_placeholder, response_class, splice_records


ISOLATION_LEVELS = (0, 1)   # read_uncommitted, read_committed


def handle(services, header, request):
    if request.isolation_level not in ISOLATION_LEVELS:
        return _unknown_isolation_level(header, request)
    replica_id = getattr(request, "replica_id", -1)
    replica_manager = services.replica_manager
    # Before the session looks for changes: a partition it skips was
    # unchanged, so at the log end, at this time (fetch_session.py).
    now_ms = replica_manager.clock_ms() if replica_id >= 0 else 0
    context = services.fetch_sessions.context(request, replica_id)
    if context.error != ErrorCode.none:
        return _response(header, [], context)
    if replica_id < 0:
        return _long_poll(services, header, request, context, replica_id)
    clock = context.clock
    if clock is not None and context.forgotten:
        replica_manager.leave_sessions(context.forgotten, replica_id, clock)
    fetches = _begin_follower_fetches(replica_manager, context.targets, replica_id, now_ms, clock)
    if clock is not None:   # after the real records: they fold in only the earlier fetches
        replica_manager.begin_session_fetch(clock, now_ms)
    try:
        return _long_poll(services, header, request, context, replica_id)
    finally:
        for fetch in fetches:
            replica_manager.end_follower_fetch(fetch)
        if clock is not None:
            replica_manager.end_session_fetch(clock)


def _long_poll(services, header, request, context: FetchContext, replica_id: int):
    deadline = time.monotonic() + max(request.max_wait.total_seconds(), 0)
    response_max_bytes = getattr(request, "max_bytes", 0x7FFFFFFF)
    replica_manager = services.replica_manager
    meters = services.metrics.partitions
    # Kafka's BytesOutPerSec leaves followers out; they have ReplicationBytesOutPerSec.
    count_bytes_out = meters.add_replication_bytes_out if replica_id >= 0 else meters.add_bytes_out
    follower = replica_id >= 0
    while True:
        generation = replica_manager.follower_generation if follower else replica_manager.data_generation
        context.more_targets()   # after the generation: a later change wakes the wait below
        reads, total_bytes = _read_all(replica_manager, context.targets, response_max_bytes, replica_id)
        reads = [(topic, index, _not_hosted(services, topic, index, result)) for topic, index, result in reads]
        has_error = any(r.error != ErrorCode.none for _, _, r in reads)
        remaining = deadline - time.monotonic()
        if (total_bytes >= request.min_bytes or has_error or remaining <= 0
                or not (reads or context.waits_for_changes)):
            return _response(header, reads, context, count_bytes_out)
        # Nothing new until the deadline: what was read is the answer.
        if not replica_manager.wait_for_data(remaining, generation, follower):
            return _response(header, reads, context, count_bytes_out)


def _not_hosted(services, topic: str, index: int, result):
    if result.error != ErrorCode.unknown_topic_or_partition:
        return result
    return replace(result, error=not_hosted_error(services, topic, index))


def _begin_follower_fetches(replica_manager, targets: list[FetchTarget], replica_id: int, now_ms: int,
                            clock) -> list:
    recorded = replica_manager.begin_follower_fetches(
        [(t.topic, t.partition, t.fetch_offset, t.log_start_offset, t.current_leader_epoch) for t in targets],
        replica_id, now_ms, clock)
    return [fetch for fetch in recorded if fetch is not None]


def _read_all(replica_manager, targets: list[FetchTarget], response_max_bytes: int, replica_id: int):
    reads = []
    total_bytes = 0
    throttles = replica_manager.throttles
    for topic, index, fetch_offset, _, partition_max_bytes, epoch in targets:
        budget = max(min(partition_max_bytes, response_max_bytes - total_bytes), 0)
        # KIP-74: the first non-empty partition returns at least one
        # whole batch, so an oversized batch cannot stall a consumer.
        min_one_batch = total_bytes == 0
        if replica_id >= 0 and throttles.leader_throttled(topic, index, replica_id):
            result = replica_manager.read_for_follower(topic, index, replica_id, fetch_offset, 0, epoch, False)
        elif replica_id >= 0:
            result = replica_manager.read_for_follower(topic, index, replica_id, fetch_offset, budget,
                                                       epoch, min_one_batch)
            if result.size and throttles.leader_throttled_replica(topic, index, replica_id):
                throttles.leader_quota.record(result.size)
        else:
            result = replica_manager.read(topic, index, fetch_offset, budget, epoch, min_one_batch)
        total_bytes += result.size
        reads.append((topic, index, result))
    return reads, total_bytes


def _response(header, reads, context: FetchContext, count_bytes_out=None):
    """`count_bytes_out(topic, partition, size)`: the meter of the bytes sent
    (consumers' or followers'); counted here, once per answer, because the
    long poll may read a partition more than once."""
    by_topic: dict[str, list] = {}
    settled, unsettled = [], []
    for topic, index, result in reads:
        (settled if result.settled else unsettled).append((topic, index))
        if not context.include(topic, index, result.size > 0, result.error, result.high_watermark,
                               result.log_start_offset):
            continue
        if result.region is not None and count_bytes_out is not None:
            count_bytes_out(topic, index, result.size)
        by_topic.setdefault(topic, []).append((index, result))
    context.settle(settled, unsettled)
    if header.api_version == fetch_response.VERSION:
        return _response_v12(header.correlation_id, context, by_topic)
    cls = response_class(1, header.api_version)
    regions = []
    responses = []
    for name, answers in by_topic.items():
        partitions = []
        for index, result in answers:
            records = b""
            if result.region is not None:
                records = new_placeholder()
                regions.append((records, result.region))
            partitions.append(nested(
                cls, "PartitionData",
                partition_index=index,
                error_code=result.error,
                high_watermark=result.high_watermark,
                last_stable_offset=result.high_watermark,
                log_start_offset=result.log_start_offset,
                aborted_transactions=None,
                preferred_read_replica=-1,
                records=records,
            ))
        responses.append(nested(cls, "FetchableTopicResponse", topic=name, partitions=tuple(partitions)))
    response = make(
        cls,
        throttle_time=datetime.timedelta(0),
        error_code=context.error,
        session_id=context.session_id,
        responses=tuple(responses),
    )
    return splice_records(response, header.correlation_id, regions)


def _response_v12(correlation_id: int, context: FetchContext, by_topic: dict[str, list]):
    """Fetch v12, the version every follower (replica_fetcher.py) uses, written
    straight to bytes: a follower's first fetch of a session carries every
    partition (10,000 on a failover), and as many kio entities cost the new
    leader ~300 ms of CPU while it takes over."""
    return fetch_response.encode_fetch_response(correlation_id, context.error, context.session_id, [
        (name, [fetch_response.PartitionToSend(index, result.error, result.high_watermark, result.high_watermark,
                                               result.log_start_offset, result.region)
                for index, result in answers])
        for name, answers in by_topic.items()])


def _unknown_isolation_level(header, request):
    error = ErrorCode.unknown_server_error
    session_id = getattr(request, "session_id", 0)   # echoed, as Kafka's error response does
    topics = [(topic.topic, [partition.partition for partition in topic.partitions])
              for topic in request.topics]
    if header.api_version == fetch_response.VERSION:
        return fetch_response.encode_fetch_response(header.correlation_id, error, session_id, [
            (name, [fetch_response.PartitionToSend(index, error, -1, -1, -1, None) for index in indexes])
            for name, indexes in topics])
    cls = response_class(1, header.api_version)
    responses = tuple(
        nested(cls, "FetchableTopicResponse", topic=name, partitions=tuple(
            nested(cls, "PartitionData", partition_index=index, error_code=error, high_watermark=-1,
                   last_stable_offset=-1, log_start_offset=-1, aborted_transactions=None,
                   preferred_read_replica=-1, records=b"")
            for index in indexes))
        for name, indexes in topics)
    return make(cls, throttle_time=datetime.timedelta(0), error_code=error, session_id=session_id,
                responses=responses)
