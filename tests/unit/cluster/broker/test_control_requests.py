"""The hand-written controller-to-broker requests (protocol.control) on the wire."""

import io
import struct
import uuid

import pytest
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer

from kafkactl.cluster.protocol import control as c

TOPIC_ID = uuid.UUID("6a3b1c2d-0000-4000-8000-00000000abcd")


def encode(entity) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    return buffer.getvalue()


def round_trip(entity):
    data = encode(entity)
    decoded, size = entity_reader(type(entity))(data, 0)
    assert size == len(data)
    return decoded


def leader_and_isr(topic_id=TOPIC_ID):
    return c.LeaderAndIsrRequest(
        controller_id=3, controller_epoch=7, broker_epoch=4242, type=c.LEADER_AND_ISR_TYPE_FULL,
        topic_states=(c.LeaderAndIsrTopicState(
            topic_name="orders", topic_id=topic_id,
            partition_states=(
                c.LeaderAndIsrPartitionState(
                    partition_index=0, controller_epoch=7, leader=1, leader_epoch=12,
                    isr=(1, 2), partition_epoch=33, replicas=(1, 2, 3),
                    adding_replicas=(3,), removing_replicas=(), is_new=True, leader_recovery_state=1),
                c.LeaderAndIsrPartitionState(
                    partition_index=1, controller_epoch=6, leader=-1, leader_epoch=0,
                    isr=(), partition_epoch=0, replicas=(2,)),
            )),),
        live_leaders=(c.LeaderAndIsrLiveLeader(broker_id=1, host_name="broker-1.local", port=9092),),
    )


SAMPLES = [
    leader_and_isr(),
    c.LeaderAndIsrResponse(error_code=ErrorCode.none, topics=(c.LeaderAndIsrTopicError(
        topic_id=TOPIC_ID, partition_errors=(
            c.LeaderAndIsrPartitionError(partition_index=0, error_code=ErrorCode.none),
            c.LeaderAndIsrPartitionError(partition_index=1, error_code=ErrorCode.stale_controller_epoch),
        )),)),
    c.StopReplicaRequest(controller_id=3, controller_epoch=7, broker_epoch=99, topic_states=(
        c.StopReplicaTopicState(topic_name="orders", partition_states=(
            c.StopReplicaPartitionState(partition_index=0, leader_epoch=12, delete_partition=True),
            c.StopReplicaPartitionState(partition_index=1, delete_partition=False),
        )),)),
    c.StopReplicaResponse(error_code=ErrorCode.none, partition_errors=(
        c.StopReplicaPartitionError(topic_name="orders", partition_index=0,
                                    error_code=ErrorCode.fenced_leader_epoch),)),
    c.UpdateMetadataRequest(
        controller_id=3, controller_epoch=7, broker_epoch=5,
        topic_states=(c.UpdateMetadataTopicState(topic_name="orders", topic_id=TOPIC_ID, partition_states=(
            c.UpdateMetadataPartitionState(partition_index=0, controller_epoch=7, leader=1, leader_epoch=12,
                                           isr=(1, 2), zk_version=33, replicas=(1, 2, 3),
                                           offline_replicas=(3,)),)),),
        live_brokers=(
            c.UpdateMetadataBroker(id=1, endpoints=(c.UpdateMetadataEndpoint(
                port=9092, host="h1", listener="PLAINTEXT", security_protocol=0),), rack="r1"),
            c.UpdateMetadataBroker(id=2, endpoints=(), rack=None),
        )),
    c.UpdateMetadataResponse(error_code=ErrorCode.stale_broker_epoch),
    c.ControlledShutdownRequest(broker_id=2, broker_epoch=77),
    c.ControlledShutdownResponse(error_code=ErrorCode.none, remaining_partitions=(
        c.RemainingPartition(topic_name="orders", partition_index=4),)),
]


@pytest.mark.parametrize("entity", SAMPLES, ids=lambda e: type(e).__name__)
def test_round_trip_through_kio(entity):
    assert round_trip(entity) == entity


def test_zero_topic_id_reads_back_as_none():
    assert round_trip(leader_and_isr(topic_id=None)).topic_states[0].topic_id is None


def uvarint(value: int) -> bytes:
    assert value < 0x80
    return bytes([value])


def compact_string(text: str) -> bytes:
    data = text.encode()
    return uvarint(len(data) + 1) + data


def compact_int32s(*values: int) -> bytes:
    return uvarint(len(values) + 1) + b"".join(struct.pack(">i", v) for v in values)


def test_leader_and_isr_bytes_match_a_hand_computed_encoding():
    request = c.LeaderAndIsrRequest(
        controller_id=1, controller_epoch=2, broker_epoch=3,
        topic_states=(c.LeaderAndIsrTopicState(
            topic_name="t", topic_id=TOPIC_ID,
            partition_states=(c.LeaderAndIsrPartitionState(
                partition_index=0, controller_epoch=2, leader=1, leader_epoch=5,
                isr=(1, 2), partition_epoch=7, replicas=(1, 2)),)),),
        live_leaders=(c.LeaderAndIsrLiveLeader(broker_id=1, host_name="h", port=9092),),
    )
    no_tags = b"\x00"
    partition = (
        struct.pack(">iiii", 0, 2, 1, 5)    # index, controller epoch, leader, leader epoch
        + compact_int32s(1, 2)              # isr
        + struct.pack(">i", 7)              # partition epoch
        + compact_int32s(1, 2)              # replicas
        + compact_int32s() + compact_int32s()  # adding, removing
        + b"\x00"                           # is_new
        + b"\x00"                           # leader_recovery_state
        + no_tags
    )
    topic = compact_string("t") + TOPIC_ID.bytes + uvarint(2) + partition + no_tags
    live_leader = struct.pack(">i", 1) + compact_string("h") + struct.pack(">i", 9092) + no_tags
    expected = (
        struct.pack(">iiqb", 1, 2, 3, 0)    # controller id, epoch, broker epoch, type
        + uvarint(2) + topic
        + uvarint(2) + live_leader
        + no_tags
    )
    assert encode(request) == expected


def test_every_class_is_flexible_with_the_documented_version_and_headers():
    for api_key, version in c.VERSIONS.items():
        request_cls = c.control_request_class(api_key, version)
        response_cls = c.control_response_class(api_key, version)
        for cls in (request_cls, response_cls):
            assert (cls.__api_key__, cls.__version__, cls.__flexible__) == (api_key, version, True)
        assert request_cls.__header_schema__.__version__ == 2
        assert response_cls.__header_schema__.__version__ == 1


def test_other_versions_are_refused():
    assert c.is_control_api(4) and not c.is_control_api(3)
    with pytest.raises(c.UnsupportedControlVersion):
        c.control_request_class(c.LEADER_AND_ISR, 5)
    with pytest.raises(c.UnsupportedControlVersion):
        c.control_response_class(1, 12)
