"""Produce: validate, append as leader, acknowledge per `acks`.

Record bytes are never parsed record by record: each batch's header and
CRC are checked, offsets and the leader epoch are written in place, and the
bytes go to the segment file as received.

An acks=-1 request is answered in two steps: `handle` appends and returns a
`PendingCommit`; its `answer` waits until the ISR has every batch. The
connection may append its next produce request in between (network.py),
so one producer connection is not held to one replication round trip per
request; its answers still go out in request order.
"""

from __future__ import annotations

import datetime
import time

from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.replica_manager import AppendResult
from kafkactl.cluster.protocol.build import make, nested
from kafkactl.cluster.protocol.codec import response_class

VALID_ACKS = (0, 1, -1)


def handle(services, header, request):
    acks = request.acks
    results = {}
    meters = services.metrics.partitions
    for topic in request.topic_data:
        for partition in topic.partition_data:
            key = (topic.name, partition.index)
            if acks not in VALID_ACKS:
                results[key] = AppendResult(ErrorCode.invalid_required_acks)
            else:
                result = results[key] = _append(services, topic.name, partition.index, partition.records, acks)
                if result.error == ErrorCode.none:   # bytes in: appended as leader (Kafka's BytesInPerSec)
                    meters.add_bytes_in(topic.name, partition.index, len(partition.records))
    if acks == -1:
        return PendingCommit(services, results, request.timeout, header.api_version)
    if acks == 0:
        return None  # the protocol sends no response; errors surface via metadata
    return _response(header.api_version, results)


class PendingCommit:
    """An acks=-1 produce request whose batches are appended (or refused).

    Holds only the append results: the request's record views belong to the
    connection's receive buffer, which its next request reuses."""

    __slots__ = ("_services", "_results", "_deadline", "_api_version")

    def __init__(self, services, results, timeout: datetime.timedelta, api_version: int) -> None:
        self._services = services
        self._results = results
        # The request's timeout runs from its arrival, as Kafka's delayed produce does.
        self._deadline = time.monotonic() + max(timeout.total_seconds(), 0)
        self._api_version = api_version

    def answer(self):
        """Wait until every ISR member has each appended batch (or the timeout); the response."""
        for (topic, index), result in self._results.items():
            if result.error != ErrorCode.none:
                continue
            result.error = self._services.replica_manager.await_commit(
                topic, index, result.last_offset, self._deadline, result.leader_epoch)
        return _response(self._api_version, self._results)


def _append(services, topic: str, index: int, records, acks: int) -> AppendResult:
    replica_manager = services.replica_manager
    if replica_manager.get(topic, index) is None:
        known = services.metadata.snapshot.topics.get(topic)
        if known is not None and index in known.assignment.partitions:
            return AppendResult(ErrorCode.not_leader_or_follower)
        return AppendResult(ErrorCode.unknown_topic_or_partition)
    if not records:
        return AppendResult(ErrorCode.corrupt_message, message="no record batch")
    # `records` is a read-only view of the request frame (no copy): the log
    # writes it before this returns and keeps nothing of it.
    return replica_manager.append(topic, index, records, acks)


def _response(version: int, results):
    cls = response_class(0, version)
    by_topic: dict[str, list] = {}
    for (topic, index), result in results.items():
        by_topic.setdefault(topic, []).append(nested(
            cls, "PartitionProduceResponse",
            index=index,
            error_code=result.error,
            base_offset=result.base_offset,
            log_append_time=None,
            log_start_offset=result.log_start_offset,
            record_errors=(),
            error_message=result.message,
        ))
    topics = tuple(
        nested(cls, "TopicProduceResponse", name=name, partition_responses=tuple(partitions))
        for name, partitions in by_topic.items()
    )
    return make(cls, responses=topics, throttle_time=datetime.timedelta(0))
