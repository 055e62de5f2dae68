"""The core's broker requests (model) as wire requests (protocol.control)."""

from __future__ import annotations

import uuid
from collections import defaultdict

from kafkactl.cluster.controller import model
from kafkactl.cluster.protocol import control
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


def _topic_uuid(topic_id: str | None) -> uuid.UUID:
    return topic_id_from_string(topic_id) if topic_id else ZERO_UUID


def _by_topic(partitions):
    grouped = defaultdict(list)
    for partition in partitions:
        grouped[(partition.topic, getattr(partition, "topic_id", None))].append(partition)
    return grouped


def leader_and_isr(request: model.LeaderAndIsr) -> control.LeaderAndIsrRequest:
    topics = tuple(
        control.LeaderAndIsrTopicState(topic_name=topic, topic_id=_topic_uuid(topic_id), partition_states=tuple(
            control.LeaderAndIsrPartitionState(
                partition_index=p.partition, controller_epoch=p.controller_epoch, leader=p.leader,
                leader_epoch=p.leader_epoch, isr=tuple(p.isr), partition_epoch=p.zk_version,
                replicas=tuple(p.replicas), adding_replicas=tuple(p.adding_replicas),
                removing_replicas=tuple(p.removing_replicas), is_new=p.is_new,
                leader_recovery_state=p.leader_recovery_state)
            for p in partitions))
        for (topic, topic_id), partitions in _by_topic(request.partitions).items())
    return control.LeaderAndIsrRequest(
        controller_id=request.controller_id, controller_epoch=request.controller_epoch,
        broker_epoch=request.broker_epoch,
        type=control.LEADER_AND_ISR_TYPE_FULL if request.full else control.LEADER_AND_ISR_TYPE_INCREMENTAL,
        topic_states=topics,
        live_leaders=tuple(control.LeaderAndIsrLiveLeader(broker_id=b.broker_id, host_name=b.host, port=b.port)
                           for b in request.live_leaders))


def update_metadata(request: model.UpdateMetadata) -> control.UpdateMetadataRequest:
    topics = tuple(
        control.UpdateMetadataTopicState(topic_name=topic, topic_id=_topic_uuid(topic_id), partition_states=tuple(
            control.UpdateMetadataPartitionState(
                partition_index=p.partition, controller_epoch=p.controller_epoch, leader=p.leader,
                leader_epoch=p.leader_epoch, isr=tuple(p.isr), zk_version=p.zk_version,
                replicas=tuple(p.replicas), offline_replicas=tuple(p.offline_replicas))
            for p in partitions))
        for (topic, topic_id), partitions in _by_topic(request.partitions).items())
    return control.UpdateMetadataRequest(
        controller_id=request.controller_id, controller_epoch=request.controller_epoch,
        broker_epoch=request.broker_epoch, topic_states=topics,
        live_brokers=tuple(_live_broker(b) for b in request.live_brokers))


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
