"""The core's broker requests (model) as wire requests (protocol.control).

LeaderAndIsr and UpdateMetadata, which carry a state per partition, are
encoded straight to bytes (protocol.control_writer); StopReplica, small, is a
kio entity.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict, defaultdict

from kio.schema.errors import ErrorCode

from kafkactl.cluster.controller import model
from kafkactl.cluster.protocol import control, control_writer
from kafkactl.cluster.zk.codecs import BrokerRegistration, topic_id_from_string

ZERO_UUID = uuid.UUID(int=0)


# The order the controller sends kinds of requests in, and their responses.
SEND_ORDER = (model.LeaderAndIsr, model.UpdateMetadata, model.StopReplica)
_RESPONSES = {model.LeaderAndIsr: control.LeaderAndIsrResponse,
              model.UpdateMetadata: control.UpdateMetadataResponse,
              model.StopReplica: control.StopReplicaResponse}


def response_class(request: model.BrokerRequest) -> type:
    try:
        return _RESPONSES[type(request)]
    except KeyError:
        raise TypeError(f"unknown broker request {request!r}") from None


def wire_request(request: model.BrokerRequest):
    if isinstance(request, model.LeaderAndIsr):
        return leader_and_isr(request)
    if isinstance(request, model.UpdateMetadata):
        return update_metadata(request)
    if isinstance(request, model.StopReplica):
        return stop_replica(request)
    raise TypeError(f"unknown broker request {request!r}")


def storage_errors(request: model.LeaderAndIsr, response) -> tuple[model.TopicPartition, ...]:
    """The partitions of `request` its broker answered KAFKA_STORAGE_ERROR for
    (it cannot store them: their log dir is offline). The response names
    topics by id (v5+); a topic without one is matched by position, since
    the broker answers the topics in the request's order."""
    if response.error_code != ErrorCode.none:
        return ()      # the whole request refused (a stale epoch): nothing about storage
    topics = list(_by_topic(request.partitions))          # (name, topic id), in the request's order
    by_id = {_topic_uuid(topic_id): name for name, topic_id in topics if topic_id}
    requested = {p.topic_partition for p in request.partitions}
    found = set()
    for index, topic in enumerate(response.topics):
        name = by_id.get(topic.topic_id) if topic.topic_id not in (None, ZERO_UUID) else None
        if name is None and index < len(topics):
            name = topics[index][0]
        for error in topic.partition_errors:
            tp = model.TopicPartition(name, error.partition_index)
            if error.error_code == ErrorCode.kafka_storage_error and tp in requested:
                found.add(tp)
    return tuple(sorted(found))


def _topic_uuid(topic_id: str | None) -> uuid.UUID:
    return topic_id_from_string(topic_id) if topic_id else ZERO_UUID


def _by_topic(partitions):
    """Partitions grouped by (topic, topic id), in order of first appearance.
    A request's partitions come sorted, so a topic's run is appended to its
    group without a lookup per partition."""
    grouped: dict[tuple, list] = {}
    last_topic = last_id = group = None
    for partition in partitions:
        topic, topic_id = partition.topic, getattr(partition, "topic_id", None)
        if group is None or topic != last_topic or topic_id != last_id:
            group = grouped.setdefault((topic, topic_id), [])
            last_topic, last_id = topic, topic_id
        group.append(partition)
    return grouped


class _SharedTopics:
    """Encoded topic-state arrays by the partitions tuple they came from.

    A decision sends every broker the same UpdateMetadata partitions, and the
    same LeaderAndIsr partitions to the replicas of the same partitions, as
    one shared tuple (RequestBatch.build); only the header (the broker epoch)
    differs. The first request encodes the partitions, the others reuse the
    bytes: a failover of 10,000 partitions encodes 10,000 states once, not
    once per broker. Keyed by the tuple's identity (kept alive in the entry,
    so the id cannot be reused meanwhile); the last few only."""

    SIZE = 8

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[str, int], tuple[tuple, bytes]] = OrderedDict()

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def get(self, kind: str, partitions: tuple, encode) -> bytes:
        key = (kind, id(partitions))
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry[0] is partitions:
                self._entries.move_to_end(key)
                return entry[1]
        encoded = encode(_topics(partitions))
        with self._lock:
            self._entries[key] = (partitions, encoded)
            while len(self._entries) > self.SIZE:
                self._entries.popitem(last=False)
        return encoded


_shared = _SharedTopics()


def leader_and_isr(request: model.LeaderAndIsr) -> control_writer.EncodedRequest:
    return control_writer.leader_and_isr_body_from(
        request.controller_id, request.controller_epoch, request.broker_epoch,
        control.LEADER_AND_ISR_TYPE_FULL if request.full else control.LEADER_AND_ISR_TYPE_INCREMENTAL,
        _shared.get("leader_and_isr", request.partitions, control_writer.leader_and_isr_topics),
        [(b.broker_id, b.host, b.port) for b in request.live_leaders])


def update_metadata(request: model.UpdateMetadata) -> control_writer.EncodedRequest:
    return control_writer.update_metadata_body_from(
        request.controller_id, request.controller_epoch, request.broker_epoch,
        _shared.get("update_metadata", request.partitions, control_writer.update_metadata_topics),
        [_live_broker(b) for b in request.live_brokers])


def _topics(partitions) -> list[tuple[str, uuid.UUID, list]]:
    return [(topic, _topic_uuid(topic_id), states) for (topic, topic_id), states in _by_topic(partitions).items()]


def _live_broker(registration: BrokerRegistration) -> control.UpdateMetadataBroker:
    endpoints = []
    for uri in registration.endpoints:
        listener, _, address = uri.partition("://")
        host, _, port = address.rpartition(":")
        endpoints.append(control.UpdateMetadataEndpoint(
            port=int(port), host=host.strip("[]"), listener=listener,
            security_protocol=control.SECURITY_PROTOCOL_PLAINTEXT))
    if not endpoints:
        endpoints.append(control.UpdateMetadataEndpoint(
            port=registration.port, host=registration.host, listener="PLAINTEXT",
            security_protocol=control.SECURITY_PROTOCOL_PLAINTEXT))
    return control.UpdateMetadataBroker(id=registration.broker_id, endpoints=tuple(endpoints),
                                        rack=registration.rack)


def stop_replica(request: model.StopReplica) -> control.StopReplicaRequest:
    grouped = defaultdict(list)
    for p in request.partitions:
        grouped[p.topic].append(p)
    return control.StopReplicaRequest(
        controller_id=request.controller_id, controller_epoch=request.controller_epoch,
        broker_epoch=request.broker_epoch,
        topic_states=tuple(
            control.StopReplicaTopicState(topic_name=topic, partition_states=tuple(
                control.StopReplicaPartitionState(partition_index=p.partition, leader_epoch=p.leader_epoch,
                                                  delete_partition=request.delete)
                for p in partitions))
            for topic, partitions in grouped.items()))
