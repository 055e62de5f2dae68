"""Admin clients on consumer groups, as applications and tools call them:
kafka-python's KafkaAdminClient and confluent-kafka's AdminClient list,
describe, read and alter committed offsets, and delete groups."""

from __future__ import annotations

import pytest

from support.fault_cluster import FaultCluster
from support.groups import Member, partitions_shared, poll_until, produce
from support.names import unique_topic
from support.waiting import wait_for


@pytest.fixture
def cluster(shared_cluster):
    fault_cluster = FaultCluster(*shared_cluster)
    yield fault_cluster
    fault_cluster.close()


@pytest.fixture
def live_group(cluster):
    """(topic, group, member): a Stable group of one member owning both partitions, 20 records consumed
    and committed."""
    topic = cluster.create_topic("admin-groups", 2, {0: [1], 1: [1]}, {"min.insync.replicas": "1"})
    group = unique_topic("g")
    member = Member(cluster.bootstrap, group, [topic])
    poll_until([member], lambda: partitions_shared([member], topic, 2), 60, "both partitions assigned")
    produce(cluster.bootstrap, topic, 20, 2)
    poll_until([member], lambda: len(member.values) == 20, 30, "20 records consumed")
    member.consumer.commit(asynchronous=False)
    yield topic, group, member
    member.close()


def test_kafka_python_admin_lists_describes_reads_offsets_and_deletes(cluster, live_group):
    from kafka import KafkaAdminClient, TopicPartition

    topic, group, member = live_group
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        listed = {g["group_id"]: g for g in admin.list_groups()}
        assert (listed[group]["protocol_type"], listed[group]["group_state"]) == ("consumer", "Stable")
        description = admin.describe_groups([group])[group]
        assert (description["group_state"], description["protocol_data"]) == ("Stable", "range")
        [described_member] = description["members"]
        assert described_member["member_metadata"]["topics"] == [topic]
        assert sorted(described_member["member_assignment"]["assigned_partitions"][0]["partitions"]) == [0, 1]
        offsets = admin.list_group_offsets({group: None})[group]
        assert {tp.partition: o.offset for tp, o in offsets.items()} == {0: 10, 1: 10}
        assert offsets[TopicPartition(topic, 0)].offset == 10
        assert admin.delete_groups([group]) == {group: "NonEmptyGroupError"}
        member.close()
        wait_for(lambda: admin.describe_groups([group])[group]["group_state"] == "Empty", 30, "the group Empty")
        assert admin.delete_groups([group]) == {group: "OK"}
        assert admin.list_group_offsets({group: None}) == {group: {}}
    finally:
        admin.close()


def test_confluent_admin_alters_and_reads_offsets_and_deletes(cluster, live_group):
    from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, TopicPartition
    from confluent_kafka.admin import AdminClient

    topic, group, member = live_group
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    listed = admin.list_consumer_groups(request_timeout=10).result()
    assert group in {g.group_id for g in listed.valid}
    reset = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, 3), TopicPartition(topic, 1, 4)])
    [altering] = admin.alter_consumer_group_offsets([reset]).values()
    # The group is alive: an admin's commit (generation -1) is refused per partition.
    refused = altering.result(timeout=15)
    assert {tp.error.code() for tp in refused.topic_partitions} == {KafkaError.UNKNOWN_MEMBER_ID}
    member.close()
    wait_for(lambda: _state(admin, group) == "EMPTY", 30, "the group Empty")
    [altering] = admin.alter_consumer_group_offsets([reset]).values()
    altering.result(timeout=15)
    [reading] = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)]).values()
    assert sorted((tp.partition, tp.offset) for tp in reading.result(timeout=15).topic_partitions) == [(0, 3), (1, 4)]
    [deleting] = admin.delete_consumer_groups([group], request_timeout=15).values()
    deleting.result(timeout=15)
    assert group not in {g.group_id for g in admin.list_consumer_groups(request_timeout=10).result().valid}


def _state(admin, group: str) -> str:
    [future] = admin.describe_consumer_groups([group], request_timeout=10).values()
    return future.result(timeout=15).state.name
