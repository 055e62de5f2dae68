"""ListPartitionReassignments (API 46, v0): the partitions being reassigned
(all, or those asked that are), with their full replica set and the replicas
being added and removed, from the controller's own state, as Kafka answers
(KIP-455). Not the controller: top-level NOT_CONTROLLER.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.deferred import FutureAnswer
from kafkactl.cluster.broker.handlers.controller_answers import error_of, timeout_s, to_controller
from kafkactl.cluster.broker.handlers.group_answers import NO_THROTTLE
from kafkactl.cluster.controller.events import ListPartitionReassignments
from kafkactl.cluster.controller.model import TopicPartition
from kafkactl.cluster.protocol.build import make, nested
from kafkactl.cluster.protocol.codec import response_class

API_KEY = 46


def handle(services, header, request):
    cls = response_class(API_KEY, header.api_version)
    asked = None if request.topics is None else tuple(sorted({
        TopicPartition(t.name, p) for t in request.topics for p in t.partition_indexes}))

    def build(outcome):
        error = error_of(outcome)
        if error is not None:
            return make(cls, throttle_time=NO_THROTTLE, error_code=error, error_message=None, topics=())
        by_topic: dict[str, list] = {}
        for tp, assignment in sorted(outcome.items()):
            by_topic.setdefault(tp.topic, []).append(nested(
                cls, "OngoingPartitionReassignment", partition_index=tp.partition,
                replicas=tuple(assignment.replicas), adding_replicas=tuple(assignment.adding),
                removing_replicas=tuple(assignment.removing)))
        return make(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, error_message=None, topics=tuple(
            nested(cls, "OngoingTopicReassignment", name=topic, partitions=tuple(parts))
            for topic, parts in by_topic.items()))

    future = to_controller(services, lambda reply: ListPartitionReassignments(reply=reply, partitions=asked))
    if future is None:
        return build(None)
    return FutureAnswer(future, timeout_s(request.timeout), build, on_timeout=ErrorCode.request_timed_out)
