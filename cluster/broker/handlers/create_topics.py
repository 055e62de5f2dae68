"""CreateTopics (API 19, v0-v7): new topics in Kafka's ZooKeeper layout, on
the active controller only (NOT_CONTROLLER elsewhere, as Kafka's ZooKeeper
brokers answer).

The rules are admin/topic_requests.py's; the ZooKeeper reads (the topics
and deletion markers there) and writes (admin/topics.create_topic: config
and assignment in one multi) run on the admin-work thread, and the answer
waits for this broker's metadata (admin_answers.py). A refused or
validate_only topic writes nothing.

Versions: v0 has no validate_only and no error message; v2 adds the
throttle time; v4 accepts -1 counts (KIP-464; earlier versions get the
same resolution, as Kafka's broker does); v5 answers the topic's partition
count, replication factor and every topic config with its source (reset
to -1 and none when the topic is not created, as Kafka resets them); v7
the new topic's id.
"""

from __future__ import annotations

import logging

from kio.schema.errors import ErrorCode

from kafkactl.cluster.admin import topics as admin_topics
from kafkactl.cluster.admin.replica_assignment import BrokerInfo
from kafkactl.cluster.admin.topic_requests import (
    CreateView,
    NewTopic,
    PlannedTopic,
    Refusal,
    named_twice,
    plan_new_topics,
)
from kafkactl.cluster.broker.handlers.admin_answers import (
    NO_THROTTLE,
    MetadataAnswer,
    led,
    submit,
    timeout_ms,
)
from kafkactl.cluster.broker.handlers.describe_configs import topic_entries_for
from kafkactl.cluster.broker.handlers.services import is_controller
from kafkactl.cluster.protocol.build import has_field, make, module_of, nested
from kafkactl.cluster.protocol.codec import response_class
from kafkactl.cluster.zk import codecs

log = logging.getLogger(__name__)

API_KEY = 19
ZK_CALL_TIMEOUT_S = 10.0


def handle(services, header, request):
    version = header.api_version
    topics = [_new_topic(t) for t in request.topics]
    if not is_controller(services):
        return _response(services, version, [(t.name, Refusal(ErrorCode.not_controller, None)) for t in topics])
    twice = named_twice(t.name for t in topics)
    if all(t.name in twice for t in topics):   # nothing to create: no ZooKeeper work
        return _response(services, version, list(zip([t.name for t in topics], plan_new_topics(topics, _no_view()))))
    validate_only = bool(getattr(request, "validate_only", False))
    wait_ms = timeout_ms(request)
    snapshot = services.metadata.snapshot
    config = services.config
    live = tuple(BrokerInfo(b.broker_id, b.rack) for b in sorted(snapshot.brokers.values(), key=lambda b: b.broker_id))
    in_metadata = frozenset(snapshot.topics)

    def work(zk):
        view = CreateView(live, in_metadata, frozenset(admin_topics.list_topics(zk.client, ZK_CALL_TIMEOUT_S)),
                          frozenset(admin_topics.marked_for_deletion(zk.client, ZK_CALL_TIMEOUT_S)),
                          config.num_partitions, config.default_replication_factor)
        return [(t.name, _create(zk.client, plan, validate_only))
                for t, plan in zip(topics, plan_new_topics(topics, view))]

    def shown(outcome, snap) -> bool:
        return all(led(snap, name, len(result.plan.assignment))
                   for name, result in outcome if isinstance(result, Created))

    def build(outcome, snap):
        if not validate_only:
            outcome = [(name, _settled(name, result, snap)) for name, result in outcome]
        return _response(services, version, outcome)

    def on_failure(error):
        return _response(services, version, [(t.name, Refusal(error, None)) for t in topics])

    return MetadataAnswer(submit(services, work), services.metadata, 0 if validate_only else wait_ms / 1000,
                          shown, build, on_failure)


def _no_view() -> CreateView:
    # Only duplicates are decided with it: every entry is named twice.
    return CreateView((), frozenset(), frozenset(), frozenset(), 1, 1)


class Created:
    """A topic written to ZooKeeper (or validated, for validate_only)."""

    __slots__ = ("plan", "topic_id")

    def __init__(self, plan: PlannedTopic, topic_id: str | None) -> None:
        self.plan = plan
        self.topic_id = topic_id


def _new_topic(topic) -> NewTopic:
    return NewTopic(topic.name, topic.num_partitions, topic.replication_factor,
                    tuple((a.partition_index, tuple(a.broker_ids)) for a in topic.assignments),
                    tuple((c.name, c.value) for c in topic.configs))


def _create(client, plan, validate_only: bool):
    """Runs on the admin-work thread: writes one planned topic."""
    if isinstance(plan, Refusal) or validate_only:
        return plan if isinstance(plan, Refusal) else Created(plan, None)
    try:
        topic_id = admin_topics.create_topic(client, plan.name, plan.assignment, plan.config, ZK_CALL_TIMEOUT_S)
    except admin_topics.TopicExistsError:
        return Refusal(ErrorCode.topic_already_exists, f"Topic '{plan.name}' already exists.")
    except Exception as error:   # the write's outcome is unknown: the client may retry and learn it
        log.warning("creating topic %s: %r", plan.name, error)
        return Refusal(ErrorCode.request_timed_out, f"ZooKeeper did not confirm the write: {error}")
    return Created(plan, topic_id)


def _settled(name: str, result, snapshot):
    """A written topic is answered NONE once led in `snapshot` (None: no wait was due)."""
    if not isinstance(result, Created):
        return result
    if snapshot is None or not led(snapshot, name, len(result.plan.assignment)):
        return Refusal(ErrorCode.request_timed_out, None)
    return result


def _response(services, version: int, outcome):
    cls = response_class(API_KEY, version)
    return make(cls, throttle_time=NO_THROTTLE, topics=tuple(_result(services, cls, name, result)
                                                             for name, result in outcome))


def _result(services, cls, name: str, result):
    if isinstance(result, Refusal):
        return nested(cls, "CreatableTopicResult", name=name, topic_id=None, error_code=result.error,
                      error_message=result.message, num_partitions=-1, replication_factor=-1, configs=())
    plan = result.plan
    configs = ()
    if has_field(getattr(module_of(cls), "CreatableTopicResult"), "configs"):   # v5+
        configs = tuple(nested(cls, "CreatableTopicConfigs", name=key, value=value, read_only=False,
                               config_source=source, is_sensitive=False)
                        for key, value, source, _ in topic_entries_for(services, plan.config))
    topic_id = codecs.topic_id_from_string(result.topic_id) if result.topic_id else None
    return nested(cls, "CreatableTopicResult", name=name, topic_id=topic_id, error_code=ErrorCode.none,
                  error_message=None, num_partitions=len(plan.assignment),
                  replication_factor=plan.replication_factor, configs=configs)
