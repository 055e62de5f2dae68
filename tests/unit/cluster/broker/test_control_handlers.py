"""Controller requests through the broker's dispatcher (no sockets, real logs)."""

import uuid
from types import SimpleNamespace

import pytest
from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.broker_client import decode_response, encode_request
from kafkactl.cluster.broker.dispatcher import Dispatcher
from kafkactl.cluster.broker.handlers.services import BrokerServices
from kafkactl.cluster.broker.metadata import MetadataCache
from kafkactl.cluster.protocol import control
from kafkactl.cluster.protocol.codec import SplicedResponse
from support.one_broker import one_broker

BROKER_EPOCH = 40
TOPIC_ID = uuid.uuid4()


@pytest.fixture
def broker(tmp_path):
    config, replica_manager = one_broker(f"{tmp_path}/a", lambda: 0)
    logs = replica_manager.log_manager
    services = BrokerServices(config=config, metadata=MetadataCache(), replica_manager=replica_manager,
                              zk_agent=SimpleNamespace(broker_epoch=BROKER_EPOCH), producer_ids=None,
                              clock_ms=lambda: 0)
    dispatcher = Dispatcher(services)

    def call(request):
        frame = encode_request(request, 7, "controller-1")[4:]
        response_cls = control.control_response_class(request.__api_key__, request.__version__)
        answer = dispatcher.dispatch(frame)
        if isinstance(answer, SplicedResponse):   # LeaderAndIsr's is written straight to bytes
            answer = b"".join(answer.parts)
        return decode_response(answer[4:], response_cls, 7)

    yield SimpleNamespace(call=call, services=services, replica_manager=replica_manager, logs=logs)
    replica_manager.shutdown()
    logs.shutdown()


def leader_and_isr(broker_epoch=BROKER_EPOCH, controller_epoch=1, leader_epoch=0):
    state = control.LeaderAndIsrPartitionState(
        partition_index=0, controller_epoch=controller_epoch, leader=1, leader_epoch=leader_epoch,
        isr=(1,), partition_epoch=0, replicas=(1,), adding_replicas=(), removing_replicas=(),
        is_new=True, leader_recovery_state=0)
    return control.LeaderAndIsrRequest(
        controller_id=1, controller_epoch=controller_epoch, broker_epoch=broker_epoch,
        topic_states=(control.LeaderAndIsrTopicState(topic_name="t", topic_id=TOPIC_ID, partition_states=(state,)),),
        live_leaders=(control.LeaderAndIsrLiveLeader(broker_id=1, host_name="h", port=1),))


def test_leader_and_isr_makes_the_broker_lead(broker):
    response = broker.call(leader_and_isr())
    assert response.error_code == ErrorCode.none
    assert response.topics[0].topic_id == TOPIC_ID
    assert response.topics[0].partition_errors[0].error_code == ErrorCode.none
    assert broker.replica_manager.get("t", 0).is_leader


def test_requests_for_an_older_incarnation_or_from_an_older_controller_are_refused(broker):
    assert broker.call(leader_and_isr(broker_epoch=BROKER_EPOCH - 1)).error_code == ErrorCode.stale_broker_epoch
    assert broker.replica_manager.get("t", 0) is None
    broker.call(leader_and_isr(controller_epoch=5))
    stale = broker.call(leader_and_isr(controller_epoch=4, leader_epoch=1))
    assert stale.error_code == ErrorCode.stale_controller_epoch


def test_update_metadata_replaces_brokers_and_partitions(broker):
    request = control.UpdateMetadataRequest(
        controller_id=3, controller_epoch=2, broker_epoch=BROKER_EPOCH,
        topic_states=(control.UpdateMetadataTopicState(topic_name="t", topic_id=TOPIC_ID, partition_states=(
            control.UpdateMetadataPartitionState(partition_index=0, controller_epoch=2, leader=2, leader_epoch=4,
                                                 isr=(2, 1), zk_version=3, replicas=(2, 1)),)),),
        live_brokers=(control.UpdateMetadataBroker(id=2, endpoints=(control.UpdateMetadataEndpoint(
            port=9, host="h2", listener="PLAINTEXT", security_protocol=0),)),))
    assert broker.call(request).error_code == ErrorCode.none
    snapshot = broker.services.metadata.snapshot
    assert snapshot.controller_id == 3 and set(snapshot.brokers) == {2}
    assert snapshot.topics["t"].states[0].leader == 2 and snapshot.topics["t"].replicas(0) == [2, 1]


def test_stop_replica_with_delete_removes_the_log(broker):
    broker.call(leader_and_isr())
    request = control.StopReplicaRequest(
        controller_id=1, controller_epoch=1, broker_epoch=BROKER_EPOCH,
        topic_states=(control.StopReplicaTopicState(topic_name="t", partition_states=(
            control.StopReplicaPartitionState(partition_index=0, leader_epoch=-2, delete_partition=True),)),))
    response = broker.call(request)
    assert response.error_code == ErrorCode.none
    assert [(e.topic_name, e.error_code) for e in response.partition_errors] == [("t", ErrorCode.none)]
    assert broker.logs.get_log("t", 0) is None and broker.replica_manager.get("t", 0) is None


def test_a_full_leader_and_isr_deletes_partitions_no_longer_assigned(broker):
    from dataclasses import replace

    broker.logs.get_or_create_log("gone", 0)          # e.g. deleted while this broker was down
    full = replace(leader_and_isr(), type=control.LEADER_AND_ISR_TYPE_FULL)
    assert broker.call(full).error_code == ErrorCode.none
    assert broker.logs.get_log("gone", 0) is None
    assert broker.logs.get_log("t", 0) is not None     # listed, so kept
    broker.logs.get_or_create_log("kept", 0)
    broker.call(leader_and_isr(leader_epoch=1))        # incremental: strays are not its business
    assert broker.logs.get_log("kept", 0) is not None
