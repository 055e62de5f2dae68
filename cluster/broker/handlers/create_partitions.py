"""CreatePartitions (API 37, v0-v3): more partitions for existing topics, on
the active controller only (NOT_CONTROLLER elsewhere).

The rules are admin/topic_requests.plan_new_partitions, decided on the
admin-work thread over what ZooKeeper holds (each topic's assignment with
its reassignment state, the deletion markers, the registered brokers);
each topic's new assignment is written conditionally on the version read
(admin/topics.write_assignment; the controller creates the partitions from
its watch), and the answer waits until this broker's metadata shows every
partition led, or REQUEST_TIMED_OUT (admin_answers.py). One answer per
topic name, a name given twice included (INVALID_REQUEST), as Kafka's map.
"""

from __future__ import annotations

import dataclasses
import logging

from kio.schema.errors import ErrorCode

from kafkactl.cluster.admin import topics as admin_topics
from kafkactl.cluster.admin.replica_assignment import BrokerInfo
from kafkactl.cluster.admin.topic_names import InvalidTopicName, validate_topic_name
from kafkactl.cluster.admin.topic_requests import NewPartitions, PartitionsView, Refusal, plan_new_partitions
from kafkactl.cluster.broker.handlers.admin_answers import NO_THROTTLE, MetadataAnswer, led, submit, timeout_ms
from kafkactl.cluster.broker.handlers.services import is_controller
from kafkactl.cluster.protocol.build import make, nested
from kafkactl.cluster.protocol.codec import response_class
from kafkactl.cluster.zk import codecs, layout

log = logging.getLogger(__name__)

API_KEY = 37
ZK_CALL_TIMEOUT_S = 10.0


def handle(services, header, request):
    version = header.api_version
    requests = [NewPartitions(t.name, t.count, None if t.assignments is None else
                              tuple(tuple(a.broker_ids) for a in t.assignments)) for t in request.topics]
    names = list(dict.fromkeys(r.name for r in requests))
    if not is_controller(services):
        return _response(version, {name: Refusal(ErrorCode.not_controller, None) for name in names})
    if not names:
        return _response(version, {})
    validate_only = bool(request.validate_only)

    def work(zk):
        return _apply(zk.client, requests, validate_only)

    def shown(outcome, snap) -> bool:
        return all(led(snap, name, count) for name, count in _written(outcome).items())

    def build(outcome, snap):
        answers = {}
        for name, result in outcome.items():
            if isinstance(result, int) and not validate_only and (snap is None or not led(snap, name, result)):
                result = Refusal(ErrorCode.request_timed_out, None)
            answers[name] = result
        return _response(version, answers)

    def on_failure(error):
        return _response(version, {name: Refusal(error, None) for name in names})

    return MetadataAnswer(submit(services, work), services.metadata,
                          0 if validate_only else timeout_ms(request) / 1000, shown, build, on_failure)


def _legal(name: str) -> bool:
    try:
        validate_topic_name(name)
    except InvalidTopicName:
        return False
    return True


def _written(outcome) -> dict[str, int]:
    return {name: count for name, count in outcome.items() if isinstance(count, int)}


def _apply(client, requests: list[NewPartitions], validate_only: bool) -> dict[str, int | Refusal]:
    """Runs on the admin-work thread: per topic its new partition count, or a refusal."""
    # A name Kafka would refuse cannot name a topic: not read (a path of it could be no znode's).
    names = [name for name in dict.fromkeys(r.name for r in requests) if _legal(name)]
    nodes = admin_topics.read_nodes(client, [layout.topic(name) for name in names], ZK_CALL_TIMEOUT_S)
    assignments = {name: (codecs.decode_topic(name, node[0]), node[1].version)
                   for name, node in zip(names, nodes) if node is not None}
    brokers = tuple(BrokerInfo(b.broker_id, b.rack) for b in admin_topics.live_brokers(client, ZK_CALL_TIMEOUT_S))
    view = PartitionsView(
        brokers,
        {name: (assignment.partitions, bool(assignment.adding_replicas or assignment.removing_replicas))
         for name, (assignment, _) in assignments.items()},
        frozenset(admin_topics.marked_for_deletion(client, ZK_CALL_TIMEOUT_S)))
    outcome: dict[str, int | Refusal] = {}
    for name, plan in plan_new_partitions(requests, view).items():
        if isinstance(plan, Refusal):
            outcome[name] = plan
            continue
        assignment, zk_version = assignments[name]
        count = len(assignment.partitions) + len(plan)
        if not validate_only:
            refusal = _write(client, name, dataclasses.replace(
                assignment, partitions={**assignment.partitions, **plan}), zk_version)
            if refusal is not None:
                outcome[name] = refusal
                continue
        outcome[name] = count
    return outcome


def _write(client, name: str, assignment, zk_version: int) -> Refusal | None:
    try:
        admin_topics.write_assignment(client, name, assignment, zk_version, ZK_CALL_TIMEOUT_S)
    except admin_topics.ConcurrentChangeError:
        # A reassignment or another writer changed the topic after it was
        # read: nothing written; the client may retry.
        return Refusal(ErrorCode.reassignment_in_progress, f"The topic '{name}' changed while partitions were "
                                                           f"being added; nothing was written, try again.")
    except admin_topics.TopicNotFoundError:
        return Refusal(ErrorCode.unknown_topic_or_partition, f"The topic '{name}' does not exist.")
    except Exception as error:   # the write's outcome is unknown
        log.warning("adding partitions to %s: %r", name, error)
        return Refusal(ErrorCode.request_timed_out, f"ZooKeeper did not confirm the write: {error}")
    return None


def _response(version: int, answers: dict):
    cls = response_class(API_KEY, version)
    return make(cls, throttle_time=NO_THROTTLE, results=tuple(
        nested(cls, "CreatePartitionsTopicResult", name=name,
               error_code=result.error if isinstance(result, Refusal) else ErrorCode.none,
               error_message=result.message if isinstance(result, Refusal) else None)
        for name, result in answers.items()))
