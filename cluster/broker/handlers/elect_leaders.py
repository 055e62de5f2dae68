"""ElectLeaders (API 43, v0-v2): preferred (0) or unclean (1) leader
elections of named partitions or (null) of every partition, by the
controller (admin_requests.py has the rules), as Kafka 2.8 does: the
controller elects, then the answer waits until this broker's metadata shows
each new leader (Kafka's DelayedElectLeader), at most the request's timeout;
a partition not shown by then is REQUEST_TIMED_OUT. With null partitions the
answer leaves out those that needed no election, as Kafka's does. Not the
controller: NOT_CONTROLLER for every partition (top-level NONE, as Kafka
answers).
"""

from __future__ import annotations

import time

from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.deferred import PendingAnswer
from kafkactl.cluster.broker.handlers.controller_answers import error_of, timeout_s, to_controller
from kafkactl.cluster.broker.handlers.group_answers import NO_THROTTLE
from kafkactl.cluster.controller.events import ApiElectLeaders
from kafkactl.cluster.controller.model import TopicPartition
from kafkactl.cluster.protocol.build import make, nested
from kafkactl.cluster.protocol.codec import response_class

API_KEY = 43
PREFERRED, UNCLEAN = 0, 1
# How often the answer looks at the metadata snapshot for the new leaders
# (it changes by whole-snapshot replacement, which nothing signals).
METADATA_POLL_S = 0.02

# partition -> (error, message, leader)
Results = dict[TopicPartition, tuple[ErrorCode, str | None, int]]


def handle(services, header, request):
    election_type = getattr(request, "election_type", PREFERRED)
    asked = None if request.topic_partitions is None else sorted({
        TopicPartition(t.topic, p) for t in request.topic_partitions for p in t.partitions})
    answer = _Answer(services, header.api_version, asked is None, timeout_s(request.timeout))
    if election_type not in (PREFERRED, UNCLEAN):
        return answer.build({tp: (ErrorCode.invalid_request, f"unknown election type {election_type}", -1)
                             for tp in (_all(services) if asked is None else asked)})
    future = to_controller(services, lambda reply: ApiElectLeaders(
        reply=reply, partitions=None if asked is None else tuple(asked), unclean=election_type == UNCLEAN))
    if future is None:
        return answer.build({tp: (ErrorCode.not_controller, None, -1) for tp in (_all(services) if asked is None else asked)})
    answer.future = future
    answer.asked = asked
    return answer


def _all(services) -> list[TopicPartition]:
    snapshot = services.metadata.snapshot
    return [TopicPartition(name, p) for name, topic in sorted(snapshot.topics.items())
            for p in sorted(topic.assignment.partitions)]


class _Answer(PendingAnswer):
    __slots__ = ("_services", "_version", "_all", "_timeout_s", "_deadline", "future", "asked")

    def __init__(self, services, version: int, all_partitions: bool, timeout: float) -> None:
        self._services = services
        self._version = version
        self._all = all_partitions
        self._timeout_s = timeout
        self._deadline = time.monotonic() + timeout
        self.future = None
        self.asked: list[TopicPartition] | None = None

    def answer(self):
        try:
            outcome = self.future.result(timeout=max(0.0, self._deadline - time.monotonic()))
        except TimeoutError:
            outcome = ErrorCode.request_timed_out
        error = error_of(outcome)
        if error is not None:
            return self.build({tp: (error, None, -1) for tp in (_all(self._services) if self.asked is None else self.asked)})
        return self.build(self._shown(outcome))

    def _shown(self, results: Results) -> Results:
        """Wait until the metadata shows every new leader, or the deadline."""
        waiting = {tp: r[2] for tp, r in results.items() if r[0] == ErrorCode.none}
        while waiting:
            snapshot = self._services.metadata.snapshot
            waiting = {tp: leader for tp, leader in waiting.items()
                       if snapshot.leader_of(tp.topic, tp.partition) != leader}
            if not waiting or time.monotonic() >= self._deadline:
                break
            time.sleep(METADATA_POLL_S)
        timed_out = {tp: (ErrorCode.request_timed_out, "the new leader was not in the metadata in time", -1)
                     for tp in waiting}
        return {**results, **timed_out}

    def build(self, results: Results):
        if self._all:   # Kafka leaves out what needed no election when asked for every partition
            results = {tp: r for tp, r in results.items() if r[0] != ErrorCode.election_not_needed}
        cls = response_class(API_KEY, self._version)
        by_topic: dict[str, list] = {}
        for tp, (error, message, _) in sorted(results.items()):
            by_topic.setdefault(tp.topic, []).append(
                nested(cls, "PartitionResult", partition_id=tp.partition, error_code=error, error_message=message))
        return make(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, replica_election_results=tuple(
            nested(cls, "ReplicaElectionResult", topic=topic, partition_result=tuple(parts))
            for topic, parts in by_topic.items()))
