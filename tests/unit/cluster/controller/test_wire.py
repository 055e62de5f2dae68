"""The controller's directly encoded LeaderAndIsr and UpdateMetadata are
byte for byte what kio writes for the same request built as kio entities,
and the broker decodes them back to the same values."""

import io
import uuid

from kio.serial import entity_writer

from kafkactl.cluster.controller import model, wire
from kafkactl.cluster.protocol import control
from kafkactl.cluster.protocol.codec import decode_request
from kafkactl.cluster.broker.broker_client import encode_request
from kafkactl.cluster.zk.codecs import BrokerRegistration, new_topic_id, topic_id_from_string

TOPIC_ID = new_topic_id()


def lai_partition(topic, p, *, topic_id=TOPIC_ID, isr=(1, 2), adding=(), removing=(), is_new=False, recovery=0):
    return model.LeaderAndIsrPartition(topic, p, topic_id, 7, isr[0] if isr else -1, 3 + p, tuple(isr), 11 + p,
                                       (1, 2, 3), tuple(adding), tuple(removing), is_new, recovery)


def um_partition(topic, p, *, topic_id=TOPIC_ID, isr=(1, 2), offline=()):
    return model.UpdateMetadataPartition(topic, p, topic_id, 7, isr[0] if isr else -1, 3 + p, tuple(isr),
                                         11 + p, (1, 2, 3), tuple(offline))


def registration(broker_id, rack=None, endpoints=None):
    endpoints = endpoints or (f"PLAINTEXT://host-{broker_id}:{9000 + broker_id}",)
    return BrokerRegistration(broker_id, f"host-{broker_id}", 9000 + broker_id, tuple(endpoints), rack=rack,
                              broker_epoch=100 + broker_id)


def topic_id_hex(topic_id: str) -> str:
    return topic_id_from_string(topic_id).hex


def kio_bytes(entity) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    return buffer.getvalue()


def _topic_uuid(topic_id):
    return None if topic_id is None else uuid.UUID(topic_id_hex(topic_id))


def reference_leader_and_isr(request: model.LeaderAndIsr) -> control.LeaderAndIsrRequest:
    topics = tuple(
        control.LeaderAndIsrTopicState(topic_name=topic, topic_id=_topic_uuid(topic_id), partition_states=tuple(
            control.LeaderAndIsrPartitionState(
                partition_index=p.partition, controller_epoch=p.controller_epoch, leader=p.leader,
                leader_epoch=p.leader_epoch, isr=tuple(p.isr), partition_epoch=p.zk_version,
                replicas=tuple(p.replicas), adding_replicas=tuple(p.adding_replicas),
                removing_replicas=tuple(p.removing_replicas), is_new=p.is_new,
                leader_recovery_state=p.leader_recovery_state)
            for p in partitions))
        for (topic, topic_id), partitions in wire._by_topic(request.partitions).items())
    return control.LeaderAndIsrRequest(
        controller_id=request.controller_id, controller_epoch=request.controller_epoch,
        broker_epoch=request.broker_epoch,
        type=control.LEADER_AND_ISR_TYPE_FULL if request.full else control.LEADER_AND_ISR_TYPE_INCREMENTAL,
        topic_states=topics,
        live_leaders=tuple(control.LeaderAndIsrLiveLeader(broker_id=b.broker_id, host_name=b.host, port=b.port)
                           for b in request.live_leaders))


def reference_update_metadata(request: model.UpdateMetadata) -> control.UpdateMetadataRequest:
    topics = tuple(
        control.UpdateMetadataTopicState(topic_name=topic, topic_id=_topic_uuid(topic_id), partition_states=tuple(
            control.UpdateMetadataPartitionState(
                partition_index=p.partition, controller_epoch=p.controller_epoch, leader=p.leader,
                leader_epoch=p.leader_epoch, isr=tuple(p.isr), zk_version=p.zk_version,
                replicas=tuple(p.replicas), offline_replicas=tuple(p.offline_replicas))
            for p in partitions))
        for (topic, topic_id), partitions in wire._by_topic(request.partitions).items())
    return control.UpdateMetadataRequest(
        controller_id=request.controller_id, controller_epoch=request.controller_epoch,
        broker_epoch=request.broker_epoch, topic_states=topics,
        live_brokers=tuple(wire._live_broker(b) for b in request.live_brokers))


LAI_CASES = [
    model.LeaderAndIsr(2, 102, 1, 5, (), (), full=False),
    model.LeaderAndIsr(2, 102, 1, 5, (lai_partition("t", 0),), (registration(1),), full=True),
    model.LeaderAndIsr(3, 2**40, 1, 2**31 - 1, (
        lai_partition("t", 0), lai_partition("t", 1, isr=(), is_new=True),
        lai_partition("u" * 249, 0, topic_id=None, adding=(4, 5), removing=(1,), recovery=1),
        lai_partition("t", 2, isr=(2,)), lai_partition("ü-topic", 300, isr=tuple(range(1, 40))),
    ), (registration(1), registration(2))),
]

UM_CASES = [
    model.UpdateMetadata(2, 102, 1, 5, (), ()),
    model.UpdateMetadata(2, -1, 1, 5, (um_partition("t", 0), um_partition("t", 1, isr=(), offline=(1, 2, 3)),
                                       um_partition("v", 0, topic_id=None)),
                         (registration(1, rack="r1"), registration(2),
                          registration(3, endpoints=("PLAINTEXT://[::1]:9093", "CONTROL://h3:9193")))),
]


def test_leader_and_isr_bytes_are_kios():
    for request in LAI_CASES:
        assert wire.leader_and_isr(request).body == kio_bytes(reference_leader_and_isr(request))


def test_update_metadata_bytes_are_kios():
    for request in UM_CASES:
        assert wire.update_metadata(request).body == kio_bytes(reference_update_metadata(request))


def test_the_broker_decodes_them_to_the_same_values():
    for request, reference in [(r, reference_leader_and_isr(r)) for r in LAI_CASES] + \
                              [(r, reference_update_metadata(r)) for r in UM_CASES]:
        encoded = wire.wire_request(request)
        frame = encode_request(encoded, 17, "controller-1")[4:]
        header, body = decode_request(frame, encoded.__api_key__, encoded.__version__)
        assert header.correlation_id == 17
        assert body == reference


def test_brokers_sent_the_same_partitions_share_one_encoding_with_their_own_header():
    # A failover's RequestBatch gives every broker the same partitions tuple;
    # the encoding is made once and each request keeps its broker epoch.
    from kafkactl.cluster.controller.broker_change import on_broker_change
    from kafkactl.cluster.controller.testing import make_context
    from kafkactl.cluster.controller.testing import registration as live
    from kafkactl.cluster.zk.codecs import topic_id_to_string

    ctx = make_context(live=(1, 2, 3, 4), topics={"t": {p: [2, 3, 1] for p in range(50)}})
    ctx.topic_ids["t"] = topic_id_to_string(uuid.UUID(int=7))
    decision = on_broker_change(ctx, {1: live(1), 3: live(3), 4: live(4)})
    lais = [r for r in decision.requests if isinstance(r, model.LeaderAndIsr)]
    ums = [r for r in decision.requests if isinstance(r, model.UpdateMetadata)]
    assert [r.broker_id for r in lais] == [1, 3] and lais[0].partitions is lais[1].partitions
    assert [r.broker_id for r in ums] == [1, 3, 4] and all(r.partitions is ums[0].partitions for r in ums)
    wire._shared.clear()
    for request in lais + ums:
        encoded = wire.wire_request(request).body
        reference = reference_leader_and_isr(request) if isinstance(request, model.LeaderAndIsr) \
            else reference_update_metadata(request)
        assert encoded == kio_bytes(reference)
    # Not shared: equal content in another tuple is encoded on its own, the same.
    again = model.UpdateMetadata(3, 103, 1, 5, tuple(ums[0].partitions), ums[0].live_brokers)
    assert wire.wire_request(again).body == kio_bytes(reference_update_metadata(again))
