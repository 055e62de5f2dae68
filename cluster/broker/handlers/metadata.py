"""Metadata: brokers, topics, partitions, leaders, ISRs; topic auto-creation.

Replicas on brokers that are not alive, as ZooKeeper-mode Kafka answers them
(MetadataCache.getPartitionMetadata): version 0 filters them out of the
replica and ISR lists and marks the partition REPLICA_NOT_AVAILABLE (its
clients had no other way to learn of them); version 1 and later list every
replica and ISR member as they are, with error NONE, and from version 5 name
the unavailable ones in `offline_replicas`. A leader that is not alive is
LEADER_NOT_AVAILABLE with leader -1 in every version.

A broker that has not yet had the controller's first UpdateMetadata holds
the answer until it has, with a bound (cluster/broker/metadata.py says why).
"""

from __future__ import annotations

import datetime
import logging

from kio.schema.errors import ErrorCode

from kafkactl.cluster.admin.topic_names import InvalidTopicName, validate_topic_name
from kafkactl.cluster.broker.deferred import PendingAnswer
from kafkactl.cluster.broker.topic_auto_creation import Wish
from kafkactl.cluster.coordinator.offsets_topic import offsets_topic_wish
from kafkactl.cluster.coordinator.placement import OFFSETS_TOPIC
from kafkactl.cluster.protocol.build import make, nested
from kafkactl.cluster.protocol.codec import response_class
from kafkactl.cluster.zk.codecs import topic_id_from_string

log = logging.getLogger(__name__)


def handle(services, header, request):
    if not services.metadata.controller_updated():
        return HeldMetadata(services, header, request)
    return _answer(services, header, request)


class HeldMetadata(PendingAnswer):
    """A Metadata request that came before the controller's first UpdateMetadata."""

    __slots__ = ("_services", "_header", "_request")

    def __init__(self, services, header, request) -> None:
        self._services = services
        self._header = header
        self._request = request

    def answer(self):
        if not self._services.metadata.wait_for_controller_update():
            log.warning("no UpdateMetadata from a controller yet: answering Metadata with what this broker has")
        return _answer(self._services, self._header, self._request)


def _answer(services, header, request):
    cls = response_class(3, header.api_version)
    snapshot = services.metadata.snapshot
    requested = _requested_topics(header.api_version, request)
    allow_auto_create = getattr(request, "allow_auto_topic_creation", True)
    names = sorted(snapshot.topics) if requested is None else requested
    topics = tuple(_topic(cls, services, snapshot, name, allow_auto_create) for name in names)
    brokers = tuple(
        nested(cls, "MetadataResponseBroker", node_id=b.broker_id, host=b.host, port=b.port, rack=b.rack)
        for b in sorted(snapshot.brokers.values(), key=lambda b: b.broker_id)
    )
    return make(
        cls,
        throttle_time=datetime.timedelta(0),
        brokers=brokers,
        cluster_id=snapshot.cluster_id,
        controller_id=snapshot.controller_id if snapshot.controller_id >= 0 else _fallback_controller(snapshot),
        topics=topics,
        cluster_authorized_operations=-2147483648,
    )


def _fallback_controller(snapshot) -> int:
    # Until a controller is elected (issue 3) clients still need a broker id
    # they can send admin requests to; the lowest live broker is stable.
    return min(snapshot.brokers) if snapshot.brokers else -1


def _requested_topics(version: int, request) -> list[str] | None:
    if request.topics is None:
        return None
    if version == 0 and not request.topics:
        return None  # v0: an empty list means all topics
    return [t.name for t in request.topics if t.name is not None]


def _topic(cls, services, snapshot, name: str, allow_auto_create: bool):
    topic = snapshot.topics.get(name)
    if topic is None or name in snapshot.deleting_topics:
        error = _missing_topic_error(services, snapshot, name, allow_auto_create)
        return nested(cls, "MetadataResponseTopic", error_code=error, name=name,
                      topic_id=None, is_internal=False, partitions=())
    filter_unavailable = cls.__version__ == 0
    partitions = tuple(
        _partition(cls, snapshot, topic, index, filter_unavailable) for index in sorted(topic.assignment.partitions)
    )
    topic_id = topic_id_from_string(topic.assignment.topic_id) if topic.assignment.topic_id else None
    return nested(cls, "MetadataResponseTopic", error_code=ErrorCode.none, name=name,
                  topic_id=topic_id, is_internal=name == OFFSETS_TOPIC, partitions=partitions)


def _partition(cls, snapshot, topic, index: int, filter_unavailable: bool):
    live = snapshot.brokers
    replicas = topic.assignment.partitions[index]
    state = topic.states.get(index)
    isr = state.isr if state else []
    offline = tuple(r for r in replicas if r not in live)
    shown_replicas = [r for r in replicas if r in live] if filter_unavailable else replicas
    shown_isr = [r for r in isr if r in live] if filter_unavailable else isr
    if state is None or state.leader not in live:
        error, leader, epoch = ErrorCode.leader_not_available, -1, (state.leader_epoch if state else -1)
    else:
        unavailable = len(shown_replicas) < len(replicas) or len(shown_isr) < len(isr)
        error = ErrorCode.replica_not_available if unavailable else ErrorCode.none
        leader, epoch = state.leader, state.leader_epoch
    return nested(cls, "MetadataResponsePartition", error_code=error, partition_index=index,
                  leader_id=leader, leader_epoch=epoch, replica_nodes=tuple(shown_replicas),
                  isr_nodes=tuple(shown_isr), offline_replicas=offline)


def _missing_topic_error(services, snapshot, name: str, allow_auto_create: bool) -> ErrorCode:
    try:
        validate_topic_name(name)
    except InvalidTopicName:
        return ErrorCode.invalid_topic_exception
    config = services.config
    if not (allow_auto_create and config.auto_create_topics_enable) or name in snapshot.deleting_topics:
        return ErrorCode.unknown_topic_or_partition
    # The zk-agent creates it (topic_auto_creation.py): no ZooKeeper call here.
    if name == OFFSETS_TOPIC:   # with its own partitions, replicas and config, as Kafka creates it
        wish = offsets_topic_wish(config)
    else:
        wish = Wish(name, config.num_partitions, config.default_replication_factor)
    return services.zk_agent.auto_creator.request(wish)
