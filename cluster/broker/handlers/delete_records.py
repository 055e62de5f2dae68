"""DeleteRecords (API 21, v0-v2; KIP-107): move partitions' log start
offsets up, on their leaders, as Kafka 2.8's ReplicaManager.deleteRecords.

Per partition (the request goes to each partition's leader):
- an internal topic (__consumer_offsets): INVALID_TOPIC_EXCEPTION;
- not hosted here: UNKNOWN_TOPIC_OR_PARTITION when the cluster does not
  know it, else NOT_LEADER_OR_FOLLOWER; hosted as a follower likewise;
- cleanup.policy without delete: POLICY_VIOLATION;
- offset -1 means the high watermark; an offset below 0 or beyond the high
  watermark: OFFSET_OUT_OF_RANGE;
- otherwise the leader's log start offset moves at once (fetches below it
  are OFFSET_OUT_OF_RANGE, ListOffsets earliest answers it, retention
  deletes the segments wholly below it) and the answer waits, like Kafka's
  DelayedDeleteRecords, until the low watermark (the lowest log start
  offset of the leader and its followers on live brokers, which followers
  report in their fetches) reaches the offset; then NONE with the low
  watermark, or REQUEST_TIMED_OUT at the request's timeout.
The answer waits on the connection's answer sender, never on the request
thread, looking at the partitions every LOW_WATERMARK_POLL_S (follower
fetches signal nothing this could wait on).
"""

from __future__ import annotations

import time

from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.deferred import PendingAnswer
from kafkactl.cluster.broker.handlers.controller_answers import timeout_s
from kafkactl.cluster.broker.handlers.group_answers import NO_THROTTLE
from kafkactl.cluster.broker.handlers.services import not_hosted_error
from kafkactl.cluster.coordinator.placement import OFFSETS_TOPIC
from kafkactl.cluster.protocol.build import make, nested
from kafkactl.cluster.protocol.codec import response_class

API_KEY = 21
LOW_WATERMARK_POLL_S = 0.05

# (topic, partition) -> [error, low watermark, offset asked]
Status = dict[tuple[str, int], list]


def handle(services, header, request):
    status: Status = {}
    for topic in request.topics:
        for p in topic.partitions:
            status[(topic.name, p.partition_index)] = _delete(services, topic.name, p.partition_index, p.offset)
    answer = _Answer(services, header.api_version, status, timeout_s(request.timeout))
    if not answer.pending():
        return answer.build()
    return answer


def _delete(services, topic: str, index: int, offset: int) -> list:
    if topic == OFFSETS_TOPIC:
        return [ErrorCode.invalid_topic_exception, -1, -1]
    replica_manager = services.replica_manager
    if replica_manager.get(topic, index) is None:
        return [not_hosted_error(services, topic, index), -1, -1]
    error, wanted = replica_manager.delete_records(topic, index, offset)
    if error != ErrorCode.none:
        return [error, -1, -1]
    # Waiting for the followers: REQUEST_TIMED_OUT until the low watermark gets there.
    return [ErrorCode.request_timed_out, -1, wanted]


class _Answer(PendingAnswer):
    __slots__ = ("_services", "_version", "_status", "_deadline")

    def __init__(self, services, version: int, status: Status, timeout: float) -> None:
        self._services = services
        self._version = version
        self._status = status
        self._deadline = time.monotonic() + timeout

    def pending(self) -> bool:
        """Look at the partitions still waiting; whether any still is."""
        live = self._services.metadata.snapshot.brokers.keys()
        waiting = False
        for (topic, index), entry in self._status.items():
            if entry[0] != ErrorCode.request_timed_out:
                continue
            low_watermark = self._services.replica_manager.low_watermark(topic, index, live)
            if low_watermark is None:     # no longer the leader
                entry[0], entry[1] = ErrorCode.not_leader_or_follower, -1
            elif low_watermark >= entry[2]:
                entry[0], entry[1] = ErrorCode.none, low_watermark
            else:
                entry[1] = low_watermark
                waiting = True
        return waiting

    def answer(self):
        while self.pending() and time.monotonic() < self._deadline:
            time.sleep(LOW_WATERMARK_POLL_S)
        return self.build()

    def build(self):
        cls = response_class(API_KEY, self._version)
        by_topic: dict[str, list] = {}
        for (topic, index), (error, low_watermark, _) in sorted(self._status.items()):
            by_topic.setdefault(topic, []).append(nested(
                cls, "DeleteRecordsPartitionResult", partition_index=index, low_watermark=low_watermark,
                error_code=error))
        return make(cls, throttle_time=NO_THROTTLE, topics=tuple(
            nested(cls, "DeleteRecordsTopicResult", name=topic, partitions=tuple(parts))
            for topic, parts in by_topic.items()))
