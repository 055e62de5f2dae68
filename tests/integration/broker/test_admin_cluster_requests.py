"""The Admin API's cluster requests on a 3-broker cluster, as real clients
send them: DescribeCluster, the ACL APIs (no authorizer), ElectLeaders,
Alter/ListPartitionReassignments, DeleteRecords; NOT_CONTROLLER from a
broker that is not the controller. Checked against ZooKeeper.

One cluster for the module; the tests that stop or kill brokers run last.
"""

from __future__ import annotations

import datetime

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, AclBindingFilter, AclOperation, AclPermissionType
from confluent_kafka.admin import ResourcePatternType, ResourceType
from kafka import TopicPartition as KafkaTopicPartition
from kafka.admin import KafkaAdminClient
from kafka.errors import OffsetOutOfRangeError
from kio.schema.errors import ErrorCode
from support.fault_cluster import FaultCluster
from support.waiting import wait_for
from support.wire import client

from kafkactl.cluster.local import LocalCluster
from kafkactl.cluster.zk import layout

TIMEOUT_S = 30


@pytest.fixture(scope="module")
def fc(tmp_path_factory):
    cluster = LocalCluster(tmp_path_factory.mktemp("admin") / "cluster")
    status = cluster.up(brokers=3, overrides={"zookeeper.session.timeout.ms": "4000",
                                              "auto.leader.rebalance.enable": "false"})
    faults = FaultCluster(cluster, status)
    try:
        # As Kafka's own test harness (waitUntilBrokerMetadataIsPropagated): every broker knows the
        # others and the controller before the module's clients start.
        for broker in status.brokers:
            wait_for(lambda b=broker: _knows_the_cluster(b, len(status.brokers)), 30,
                     f"broker {broker.id}'s metadata names every broker and the controller")
        yield faults
    finally:
        faults.close()
        cluster.down()


def _knows_the_cluster(broker, count: int) -> bool:
    try:
        admin = KafkaAdminClient(bootstrap_servers=f"{broker.host}:{broker.port}", request_timeout_ms=5000)
    except Exception:       # not answering yet: polled again
        return False
    try:
        answer = admin.describe_cluster()
        return len(answer["brokers"]) == count and answer["controller_id"] >= 0
    except Exception:       # not answering yet: polled again
        return False
    finally:
        admin.close()


@pytest.fixture
def confluent(fc):
    return AdminClient({"bootstrap.servers": fc.bootstrap})


@pytest.fixture
def kafka_python(fc):
    admin = KafkaAdminClient(bootstrap_servers=fc.bootstrap, request_timeout_ms=TIMEOUT_S * 1000)
    yield admin
    admin.close()


def produce(fc, topic: str, count: int, partition: int = 0) -> None:
    producer = Producer({"bootstrap.servers": fc.bootstrap, "acks": "all", "linger.ms": 5})
    for i in range(count):
        producer.produce(topic, f"value-{i}".encode(), partition=partition)
    assert producer.flush(TIMEOUT_S) == 0


def non_controller(fc):
    controller = fc.controller()
    return next(b for b in fc.status.brokers if b.id != controller)


def test_describe_cluster_names_the_brokers_the_cluster_id_and_the_controller(fc, confluent, kafka_python):
    described = confluent.describe_cluster(request_timeout=TIMEOUT_S).result(TIMEOUT_S)
    cluster_id, _ = fc.zk.get(layout.CLUSTER_ID)
    assert sorted(n.id for n in described.nodes) == [1, 2, 3]
    assert described.controller.id == fc.controller()
    assert described.cluster_id and described.cluster_id in cluster_id.decode()
    answer = kafka_python.describe_cluster()
    assert answer["controller_id"] == fc.controller() and len(answer["brokers"]) == 3


def test_acl_apis_answer_security_disabled(fc, confluent, kafka_python):
    from confluent_kafka.admin import AclBinding
    from kafka.admin import ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType
    from kafka.admin import ResourcePatternFilter
    from kafka.admin import ResourceType as KafkaResourceType
    from kafka.errors import SecurityDisabledError

    # librdkafka reads DescribeAcls' top-level error as no ACLs; kafka-python raises it.
    with pytest.raises(SecurityDisabledError, match="No Authorizer is configured"):
        kafka_python.describe_acls(ACLFilter(principal=None, host="*", operation=ACLOperation.ANY,
                                             permission_type=ACLPermissionType.ANY,
                                             resource_pattern=ResourcePatternFilter(
                                                 KafkaResourceType.TOPIC, None, ACLResourcePatternType.ANY)))
    binding = AclBinding(ResourceType.TOPIC, "t", ResourcePatternType.LITERAL, "User:alice", "*",
                         AclOperation.READ, AclPermissionType.ALLOW)
    acl_filter = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                  AclOperation.ANY, AclPermissionType.ANY)
    for futures in (confluent.create_acls([binding], request_timeout=TIMEOUT_S),
                    confluent.delete_acls([acl_filter], request_timeout=TIMEOUT_S)):
        [future] = futures.values()
        with pytest.raises(KafkaException) as raised:
            future.result(TIMEOUT_S)
        assert raised.value.args[0].code() == ErrorCode.security_disabled


def test_requests_for_the_controller_answer_not_controller_elsewhere(fc):
    from kio.schema.alter_partition_reassignments.v0 import request as apr
    from kio.schema.elect_leaders.v2 import request as el
    from kio.schema.list_partition_reassignments.v0 import request as lpr

    topic = fc.create_topic("notctl", 1)
    c = client(non_controller(fc))
    try:
        elected = c.request(el.ElectLeadersRequest(election_type=0, topic_partitions=(
            el.TopicPartitions(topic=topic, partitions=(0,)),), timeout=datetime.timedelta(seconds=1)))
        altered = c.request(apr.AlterPartitionReassignmentsRequest(timeout=datetime.timedelta(seconds=1), topics=(
            apr.ReassignableTopic(name=topic, partitions=(apr.ReassignablePartition(partition_index=0,
                                                                                   replicas=(3, 2, 1)),)),)))
        listed = c.request(lpr.ListPartitionReassignmentsRequest(timeout=datetime.timedelta(seconds=1), topics=None))
    finally:
        c.close()
    [result] = elected.replica_election_results
    assert [p.error_code for p in result.partition_result] == [ErrorCode.not_controller]
    assert altered.error_code == ErrorCode.not_controller and listed.error_code == ErrorCode.not_controller
    assert not fc.exists(layout.REASSIGN_PARTITIONS) and fc.assignment(topic).adding_replicas == {}


def test_reassignment_start_list_cancel_and_refusals(fc, confluent, kafka_python):
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    topic = fc.create_topic("move", 2, assignment={0: [1, 2], 1: [1, 2]})
    produce(fc, topic, 2000)
    # Broker 3 may fetch partition 0 at 1 byte/s: its move stays in progress (KIP-73 throttles).
    for resource in (ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[ConfigEntry(
                         "follower.replication.throttled.replicas", "0:3", incremental_operation=AlterConfigOpType.SET)]),
                     ConfigResource(ConfigResource.Type.BROKER, "3", incremental_configs=[ConfigEntry(
                         "follower.replication.throttled.rate", "1", incremental_operation=AlterConfigOpType.SET)])):
        confluent.incremental_alter_configs([resource])[resource].result(TIMEOUT_S)
    tp0, tp1 = KafkaTopicPartition(topic, 0), KafkaTopicPartition(topic, 1)
    unknown = KafkaTopicPartition(topic, 9)
    answer = kafka_python.alter_partition_reassignments({tp0: [1, 2, 3], tp1: [2, 3], unknown: [1, 2]})
    assert answer[tp0] is None and answer[tp1] is None
    assert answer[unknown].errno == ErrorCode.unknown_topic_or_partition
    assignment = fc.assignment(topic)
    assert assignment.partitions[0] == [1, 2, 3] and assignment.adding_replicas[0] == [3]
    listed = kafka_python.list_partition_reassignments()
    assert listed[tp0] == {"replicas": [1, 2, 3], "adding_replicas": [3], "removing_replicas": []}
    # Partition 1 completes (unthrottled): ZooKeeper shows its target, and it is no longer listed.
    wait_for(lambda: fc.assignment(topic).partitions[1] == [2, 3], TIMEOUT_S, what="partition 1 moved")
    assert tp1 not in kafka_python.list_partition_reassignments({topic: [0, 1]})

    refused = kafka_python.alter_partition_reassignments({tp1: [2, 2], KafkaTopicPartition(topic, 0): [1, 9]})
    assert refused[tp1].errno == refused[tp0].errno == ErrorCode.invalid_replica_assignment
    assert fc.assignment(topic).partitions == {0: [1, 2, 3], 1: [2, 3]}

    # Cancel: partition 0 back to [1, 2], broker 3's replica stopped; a second cancel has nothing to cancel.
    assert kafka_python.alter_partition_reassignments({tp0: None}) == {tp0: None}
    wait_for(lambda: fc.assignment(topic).partitions[0] == [1, 2] and not fc.assignment(topic).adding_replicas,
             TIMEOUT_S, what="the cancelled move undone")
    wait_for(lambda: not kafka_python.list_partition_reassignments(), TIMEOUT_S, what="nothing listed")
    assert fc.state(topic, 0).isr in ([1, 2], [2, 1])
    assert kafka_python.alter_partition_reassignments({tp0: None})[tp0].errno == ErrorCode.no_reassignment_in_progress
    assert not fc.exists(layout.REASSIGN_PARTITIONS)


def test_delete_records_moves_the_log_start_offset_on_leader_and_followers(fc, confluent, kafka_python):
    topic = fc.create_topic("delrec", 1)
    produce(fc, topic, 100)
    # (confluent-kafka 2.16.1's delete_records fails in its own binding: kafka-python's)
    partition = KafkaTopicPartition(topic, 0)
    deleted = kafka_python.delete_records({partition: 40})
    assert deleted[partition]["low_watermark"] == 40       # the followers have it too
    # Consumers start at the new start offset; a fetch below it is out of range.
    consumer = Consumer({"bootstrap.servers": fc.bootstrap, "group.id": f"g-{topic}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=TIMEOUT_S)
        assert (low, high) == (40, 100)
        consumer.assign([TopicPartition(topic, 0, 10)])   # below the start: reset to earliest
        message = wait_for(lambda: consumer.poll(1.0), TIMEOUT_S, what="a record")
        assert message.error() is None and message.offset() == 40
    finally:
        consumer.close()
    # -1: up to the high watermark; beyond it: OFFSET_OUT_OF_RANGE, nothing moves.
    assert kafka_python.delete_records({partition: -1})[partition]["low_watermark"] == 100
    with pytest.raises(OffsetOutOfRangeError):
        kafka_python.delete_records({partition: 500})
    for broker in fc.status.brokers:     # every replica starts at 100 now
        c = client(broker)
        try:
            wait_for(lambda: earliest(c, topic) == 100, TIMEOUT_S, what=f"broker {broker.id}'s log start offset")
        finally:
            c.close()


def earliest(c, topic: str) -> int:
    """ListOffsets earliest with the debugging replica id: any replica answers its own."""
    from kio.schema.list_offsets.v7 import request as lo

    answer = c.request(lo.ListOffsetsRequest(replica_id=-2, isolation_level=0, topics=(lo.ListOffsetsTopic(
        name=topic, partitions=(lo.ListOffsetsPartition(partition_index=0, current_leader_epoch=-1,
                                                         timestamp=-2),)),)))
    return answer.topics[0].partitions[0].offset


def test_preferred_election_after_a_leader_moved(fc, confluent):
    from confluent_kafka import ElectionType

    topic = fc.create_topic("pref", 3)
    moved = [p for p in range(3) if fc.assignment(topic).partitions[p][0] == 1]
    fc.stop(1)
    wait_for(lambda: all(fc.leader(topic, p) != 1 for p in range(3)), TIMEOUT_S, what="leaders off broker 1")
    fc.start_only(1)
    fc.wait_full_isr(topic, timeout_s=TIMEOUT_S)
    asked = [TopicPartition(topic, p) for p in range(3)] + [TopicPartition(topic, 7)]
    results = confluent.elect_leaders(ElectionType.PREFERRED, asked).result(TIMEOUT_S)
    by_partition = {tp.partition: error for tp, error in results.items()}
    for p in range(3):
        if p in moved:
            assert by_partition[p] is None and fc.leader(topic, p) == 1
        else:
            assert by_partition[p].code() == ErrorCode.election_not_needed
    assert by_partition[7].code() == ErrorCode.unknown_topic_or_partition
    assert not fc.exists(layout.PREFERRED_REPLICA_ELECTION)


def test_unclean_election_elects_a_live_out_of_sync_replica(fc, confluent, kafka_python):
    from confluent_kafka import ElectionType

    topic = fc.create_topic("unclean", 1, assignment={0: [2]})
    lost = fc.create_topic("lost", 1, assignment={0: [2]})
    # A replica on broker 3 that fetches at 1 byte/s: alive, never in the ISR.
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    def setting(resource_type, name, key, value):
        return ConfigResource(resource_type, name, incremental_configs=[ConfigEntry(
            key, value, incremental_operation=AlterConfigOpType.SET)])

    for resource in (setting(ConfigResource.Type.TOPIC, topic, "min.insync.replicas", "1"),
                     setting(ConfigResource.Type.BROKER, "3", "follower.replication.throttled.rate", "1")):
        confluent.incremental_alter_configs([resource])[resource].result(TIMEOUT_S)
    resource = setting(ConfigResource.Type.TOPIC, topic, "follower.replication.throttled.replicas", "0:3")
    confluent.incremental_alter_configs([resource])[resource].result(TIMEOUT_S)
    wait_for(lambda: confluent.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topic)])[
        ConfigResource(ConfigResource.Type.TOPIC, topic)].result(TIMEOUT_S)["min.insync.replicas"].value == "1",
        TIMEOUT_S, what="the leader applying min.insync.replicas=1")
    produce(fc, topic, 3000)
    assert kafka_python.alter_partition_reassignments({KafkaTopicPartition(topic, 0): [2, 3]}) == {
        KafkaTopicPartition(topic, 0): None}
    wait_for(lambda: fc.assignment(topic).partitions[0] == [2, 3], TIMEOUT_S, what="the adding replica")
    assert fc.state(topic, 0).isr == [2]
    fc.kill(2)
    wait_for(lambda: fc.leader(topic, 0) == -1, TIMEOUT_S, what="the partition to go offline")
    # A new client: librdkafka sends ElectLeaders to the controller it last
    # saw and waits for it to come back, not for a new one, when broker 2 was it.
    confluent = AdminClient({"bootstrap.servers": fc.bootstrap})
    # Preferred cannot help; unclean elects broker 3; a partition with no live replica cannot be elected.
    asked = [TopicPartition(topic, 0), TopicPartition(lost, 0)]
    preferred = confluent.elect_leaders(ElectionType.PREFERRED, asked[:1]).result(TIMEOUT_S)
    assert preferred[asked[0]].code() == ErrorCode.preferred_leader_not_available
    results = confluent.elect_leaders(ElectionType.UNCLEAN, asked).result(TIMEOUT_S)
    assert results[asked[0]] is None and fc.leader(topic, 0) == 3
    assert results[asked[1]].code() == ErrorCode.eligible_leaders_not_available
