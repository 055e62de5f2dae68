"""AlterPartitionReassignments (API 45, v0): start, change or cancel (null
target) partition reassignments (KIP-455), by the controller
(controller/admin_requests.py has the rules; the moves are reassignment.py's,
which write the topic znodes' adding/removing replicas as Kafka does).
Answered once the controller has started them, not when they complete, as
Kafka answers; a request the controller did not take up within its timeout
is REQUEST_TIMED_OUT. Not the controller: top-level NOT_CONTROLLER, as Kafka.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.deferred import FutureAnswer
from kafkactl.cluster.broker.handlers.controller_answers import error_of, timeout_s, to_controller
from kafkactl.cluster.broker.handlers.group_answers import NO_THROTTLE
from kafkactl.cluster.controller.events import ApiPartitionReassignment
from kafkactl.cluster.controller.model import TopicPartition
from kafkactl.cluster.protocol.build import make, nested
from kafkactl.cluster.protocol.codec import response_class

API_KEY = 45


def handle(services, header, request):
    cls = response_class(API_KEY, header.api_version)
    targets = {TopicPartition(t.name, p.partition_index): None if p.replicas is None else tuple(p.replicas)
               for t in request.topics for p in t.partitions}

    def build(outcome):
        error = error_of(outcome)
        if error is not None:
            return make(cls, throttle_time=NO_THROTTLE, error_code=error, error_message=None, responses=())
        by_topic: dict[str, list] = {}
        for tp, (code, message) in sorted(outcome.items()):
            by_topic.setdefault(tp.topic, []).append(nested(
                cls, "ReassignablePartitionResponse", partition_index=tp.partition, error_code=code,
                error_message=message))
        return make(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, error_message=None, responses=tuple(
            nested(cls, "ReassignableTopicResponse", name=topic, partitions=tuple(parts))
            for topic, parts in by_topic.items()))

    future = to_controller(services, lambda reply: ApiPartitionReassignment(
        reply=reply, targets=tuple(sorted(targets.items()))))
    if future is None:
        return build(None)
    return FutureAnswer(future, timeout_s(request.timeout), build, on_timeout=ErrorCode.request_timed_out)
