"""The controller's requests to a broker: LeaderAndIsr, StopReplica,
UpdateMetadata, and ControlledShutdown (which a broker sends to the controller).

Every request carries the controller epoch and the target broker's epoch
(the czxid of its registration): a request meant for an earlier incarnation
of this broker is refused with STALE_BROKER_EPOCH, and one from a deposed
controller with STALE_CONTROLLER_EPOCH, so nothing stale is acted on.
"""

from __future__ import annotations

import uuid

from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.metadata import metadata_from_update
from kafkactl.cluster.broker.role_changes import LeaderAndIsrState, StaleControllerEpochError
from kafkactl.cluster.protocol import control
from kafkactl.cluster.protocol.control_responses import framed, leader_and_isr_response_body

ZERO_UUID = uuid.UUID(int=0)


def leader_and_isr_states(request) -> list[LeaderAndIsrState]:
    """The partition states of a control.LeaderAndIsrRequest, as the replica manager applies them."""
    return [
        LeaderAndIsrState(
            topic=topic.topic_name, partition=p.partition_index, controller_epoch=p.controller_epoch,
            leader=p.leader, leader_epoch=p.leader_epoch, isr=tuple(p.isr),
            partition_epoch=p.partition_epoch, replicas=tuple(p.replicas), is_new=p.is_new,
            leader_recovery_state=p.leader_recovery_state,
        )
        for topic in request.topic_states for p in topic.partition_states
    ]


def live_leader_endpoints(request) -> dict[int, tuple[str, int]]:
    """broker id -> (host, port) of a control.LeaderAndIsrRequest's live leaders."""
    return {leader.broker_id: (leader.host_name, leader.port) for leader in request.live_leaders}


def stop_replica_partitions(request) -> dict[bool, dict[tuple[str, int], int]]:
    """A control.StopReplicaRequest as {delete: {(topic, partition): leader_epoch}}."""
    result: dict[bool, dict[tuple[str, int], int]] = {True: {}, False: {}}
    for topic in request.topic_states:
        for p in topic.partition_states:
            result[p.delete_partition][(topic.topic_name, p.partition_index)] = p.leader_epoch
    return result


def _stale_broker_epoch(services, broker_epoch: int) -> bool:
    # -1: the sender did not say (Kafka's rule); otherwise it must not be older.
    return broker_epoch != -1 and broker_epoch < services.zk_agent.broker_epoch


def leader_and_isr(services, header, request):
    if _stale_broker_epoch(services, request.broker_epoch):
        return _leader_and_isr_response(header, request, {}, ErrorCode.stale_broker_epoch)
    try:
        errors = services.replica_manager.apply_leader_and_isr(
            request.controller_id, request.controller_epoch,
            leader_and_isr_states(request), live_leader_endpoints(request))
    except StaleControllerEpochError:
        return _leader_and_isr_response(header, request, {}, ErrorCode.stale_controller_epoch)
    if request.type == control.LEADER_AND_ISR_TYPE_FULL:
        services.replica_manager.delete_strays(set(errors))
    return _leader_and_isr_response(header, request, errors, ErrorCode.none)


def _leader_and_isr_response(header, request, errors, top_level: ErrorCode):
    """One error per partition of the request, in its order; written straight to
    bytes (control_responses.py): a failover's carries 10,000 of them."""
    none = ErrorCode.none   # an IntEnum: packed as it is
    topics = []
    for topic in request.topic_states:
        if top_level != ErrorCode.none:
            codes = [(p.partition_index, top_level) for p in topic.partition_states]
        else:
            name = topic.topic_name
            codes = [(p.partition_index, errors.get((name, p.partition_index), none)) for p in topic.partition_states]
        topics.append((topic.topic_id or ZERO_UUID, codes))
    return framed(header.correlation_id, leader_and_isr_response_body(top_level, topics))


def stop_replica(services, header, request):
    if _stale_broker_epoch(services, request.broker_epoch):
        return control.StopReplicaResponse(error_code=ErrorCode.stale_broker_epoch, partition_errors=())
    errors = {}
    try:
        for delete, partitions in stop_replica_partitions(request).items():
            if partitions:
                errors.update(services.replica_manager.stop_replicas(
                    partitions, delete, request.controller_epoch, request.controller_id))
    except StaleControllerEpochError:
        return control.StopReplicaResponse(error_code=ErrorCode.stale_controller_epoch, partition_errors=())
    return control.StopReplicaResponse(error_code=ErrorCode.none, partition_errors=tuple(
        control.StopReplicaPartitionError(topic_name=t, partition_index=p, error_code=code)
        for (t, p), code in sorted(errors.items())))


def update_metadata(services, header, request):
    if _stale_broker_epoch(services, request.broker_epoch):
        return control.UpdateMetadataResponse(error_code=ErrorCode.stale_broker_epoch)
    current = services.metadata.snapshot
    if request.controller_epoch < current.controller_epoch:
        return control.UpdateMetadataResponse(error_code=ErrorCode.stale_controller_epoch)
    snapshot = metadata_from_update(current, request)
    services.metadata.replace_from_controller(snapshot)
    services.replica_manager.update_broker_endpoints(
        {b.broker_id: (b.host, b.port) for b in snapshot.brokers.values()})
    return control.UpdateMetadataResponse(error_code=ErrorCode.none)


def controlled_shutdown(services, header, request):
    controller = services.controller
    if controller is None or not controller.is_active():
        return control.ControlledShutdownResponse(error_code=ErrorCode.not_controller, remaining_partitions=())
    error, remaining = controller.controlled_shutdown(request.broker_id, request.broker_epoch)
    return control.ControlledShutdownResponse(error_code=error, remaining_partitions=tuple(
        control.RemainingPartition(topic_name=t, partition_index=p) for t, p in remaining))
