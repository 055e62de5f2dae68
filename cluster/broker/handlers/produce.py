"""Produce: validate, append as leader, acknowledge per `acks`.

Each batch's header, CRC and records are checked (Log.check_produce,
protocol/record_validation.py), offsets and the leader epoch are written in
place, and the bytes go to the segment file as received.

As Kafka's KafkaApis answers them:
- a partition carries exactly one record batch (ProduceRequest v3+):
  INVALID_RECORD otherwise, nothing of it appended;
- the same partition named twice in one request: the last occurrence's
  records replace the earlier ones (Kafka keeps the partitions in a map keyed
  by topic and partition), so one append and one answer per partition;
- acks=0 with any partition refused: there is no response to carry the
  error, so the connection is closed (CloseConnection) and the client
  notices, refreshes its metadata and retries.

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

from kafkactl.cluster.broker.deferred import PendingAnswer
from kafkactl.cluster.broker.handlers.services import not_hosted_error
from kafkactl.cluster.broker.partition import AppendResult
from kafkactl.cluster.coordinator.placement import OFFSETS_TOPIC
from kafkactl.cluster.protocol.build import has_field, make, module_of, nested
from kafkactl.cluster.protocol.codec import response_class
from kafkactl.cluster.protocol.framing import FrameError
from kafkactl.cluster.protocol.record_validation import count_batches

VALID_ACKS = (0, 1, -1)


class CloseConnection(FrameError):
    """An acks=0 produce that failed: the network layer closes the connection
    (it closes on FrameError), the only way to tell a client that expects
    no response."""


def handle(services, header, request):
    acks = request.acks
    results = {}
    meters = services.metrics.partitions
    for (topic, index), records in _partitions(request).items():
        if acks not in VALID_ACKS:
            results[(topic, index)] = AppendResult(ErrorCode.invalid_required_acks)
            continue
        result = results[(topic, index)] = _append(services, topic, index, records, acks)
        if result.error == ErrorCode.none:   # bytes in: appended as leader (Kafka's BytesInPerSec)
            meters.add_bytes_in(topic, index, len(records))
    if acks == -1:
        return PendingCommit(services, results, request.timeout, header.api_version)
    if acks == 0:
        _close_if_refused(header, results)
        return None  # the protocol sends no response
    return _response(header.api_version, results)


def _partitions(request) -> dict[tuple[str, int], object]:
    """(topic, partition) -> records; a partition named again replaces its
    earlier records, as Kafka's map of the request's partitions does."""
    return {(topic.name, partition.index): partition.records
            for topic in request.topic_data for partition in topic.partition_data}


def _close_if_refused(header, results) -> None:
    refused = {f"{topic}-{index}": result.error.name for (topic, index), result in results.items()
               if result.error != ErrorCode.none}
    if refused:
        raise CloseConnection(f"acks=0 produce (correlation id {header.correlation_id}) refused, "
                              f"closing the connection so the client notices: {refused}")


class PendingCommit(PendingAnswer):
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
    if topic == OFFSETS_TOPIC:   # only the group coordinator writes it, as Kafka allows
        return AppendResult(ErrorCode.invalid_topic_exception, message=f"cannot append to internal topic {topic}")
    if replica_manager.get(topic, index) is None:
        return AppendResult(not_hosted_error(services, topic, index))
    if not records:
        return AppendResult(ErrorCode.corrupt_message, message="no record batch")
    batches = count_batches(records)
    if batches != 1:
        return AppendResult(ErrorCode.invalid_record, message=(
            f"{batches} record batches for {topic}-{index}; a Produce request (v3 and later) "
            "carries exactly one record batch per partition"))
    # `records` is a read-only view of the request frame (no copy): the log
    # writes it before this returns and keeps nothing of it.
    return replica_manager.append(topic, index, records, acks)


def _response(version: int, results):
    cls = response_class(0, version)
    by_topic: dict[str, list] = {}
    with_record_errors = has_field(module_of(cls).PartitionProduceResponse, "record_errors")
    for (topic, index), result in results.items():
        by_topic.setdefault(topic, []).append(nested(
            cls, "PartitionProduceResponse",
            index=index,
            error_code=result.error,
            base_offset=result.base_offset,
            log_append_time=None,
            log_start_offset=result.log_start_offset,
            record_errors=_record_errors(cls, result) if with_record_errors else (),
            error_message=result.message,
        ))
    topics = tuple(
        nested(cls, "TopicProduceResponse", name=name, partition_responses=tuple(partitions))
        for name, partitions in by_topic.items()
    )
    return make(cls, responses=topics, throttle_time=datetime.timedelta(0))


def _record_errors(cls, result) -> tuple:
    """Kafka's BatchIndexAndErrorMessage (v8+): the index of the record within its batch."""
    return tuple(nested(cls, "BatchIndexAndErrorMessage", batch_index=error.batch_index,
                        batch_index_error_message=error.message)
                 for error in result.record_errors)
