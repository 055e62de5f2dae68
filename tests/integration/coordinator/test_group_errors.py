"""The group APIs' refusals, from hand-built requests to a real broker: each
answered with Kafka's error code, and nothing persisted from a refused
request (a refused commit is not fetched back; a group whose assignment
could not be stored is not Stable)."""

from __future__ import annotations

import datetime

import pytest
from kio.schema.errors import ErrorCode as E
from kio.schema.find_coordinator.v3.request import FindCoordinatorRequest
from kio.schema.heartbeat.v4.request import HeartbeatRequest
from kio.schema.join_group.v5 import request as join5
from kio.schema.offset_commit.v8 import request as commit8
from kio.schema.offset_fetch.v8 import request as fetch8
from kio.schema.sync_group.v3 import request as sync3
from kio.schema.describe_groups.v5.request import DescribeGroupsRequest

from support.consumer_protocol import subscription
from support.fault_cluster import FaultCluster
from support.names import unique_topic
from support.waiting import wait_for
from support.wire import WireClient

MS = datetime.timedelta(milliseconds=1)


@pytest.fixture
def wire(shared_cluster):
    _, status = shared_cluster
    broker = status.brokers[0]
    client = WireClient(broker.host, broker.port, timeout_s=30)
    wait_for(lambda: client.request(FindCoordinatorRequest(key="probe", key_type=0)).error_code == E.none,
             60, "the group coordinator (the offsets topic created and led)")
    yield client
    client.close()


@pytest.fixture
def topic(shared_cluster):
    fault_cluster = FaultCluster(*shared_cluster)
    name = fault_cluster.create_topic("group-errors", 1, {0: [1]}, {"min.insync.replicas": "1"})
    fault_cluster.close()
    return name


def join(wire, group, member_id="", session_ms=10000, protocol_type="consumer", metadata=b"", instance=None):
    """A JoinGroup v5 (its answer: a lone member's completes at once, the local cluster's initial delay being 0)."""
    return wire.request(join5.JoinGroupRequest(
        group_id=group, session_timeout=session_ms * MS, rebalance_timeout=20000 * MS, member_id=member_id,
        group_instance_id=instance, protocol_type=protocol_type,
        protocols=(join5.JoinGroupRequestProtocol(name="range", metadata=metadata or subscription(["t"])),)))


def joined(wire, group, metadata=b""):
    """A one-member group through KIP-394's two JoinGroups: (member id, generation)."""
    first = join(wire, group, metadata=metadata)
    assert first.error_code == E.member_id_required
    second = join(wire, group, first.member_id, metadata=metadata)
    assert second.error_code == E.none and second.leader == first.member_id
    return first.member_id, second.generation_id


def sync(wire, group, member_id, generation, assignment=b"a"):
    return wire.request(sync3.SyncGroupRequest(
        group_id=group, generation_id=generation, member_id=member_id, group_instance_id=None,
        assignments=(sync3.SyncGroupRequestAssignment(member_id=member_id, assignment=assignment),)))


def commit(wire, group, topic, member_id="", generation=-1, metadata=None, partition=0):
    response = wire.request(commit8.OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=generation, member_id=member_id, group_instance_id=None,
        topics=(commit8.OffsetCommitRequestTopic(name=topic, partitions=(commit8.OffsetCommitRequestPartition(
            partition_index=partition, committed_offset=7, committed_leader_epoch=-1,
            committed_metadata=metadata),)),)))
    return response.topics[0].partitions[0].error_code


def fetched(wire, group, topic):
    response = wire.request(fetch8.OffsetFetchRequest(groups=(fetch8.OffsetFetchRequestGroup(
        group_id=group, topics=(fetch8.OffsetFetchRequestTopics(name=topic, partition_indexes=(0,)),)),)))
    return response.groups[0].topics[0].partitions[0].committed_offset


def test_join_refusals(wire):
    assert join(wire, "").error_code == E.invalid_group_id
    assert join(wire, unique_topic("g"), session_ms=1000).error_code == E.invalid_session_timeout
    assert join(wire, unique_topic("g"), member_id="never-handed-out").error_code == E.unknown_member_id
    group = unique_topic("g")
    joined(wire, group)
    assert join(wire, group, protocol_type="connect").error_code == E.inconsistent_group_protocol


def test_sync_and_heartbeat_check_member_and_generation(wire):
    group = unique_topic("g")
    member_id, generation = joined(wire, group)
    assert sync(wire, group, "stranger", generation).error_code == E.unknown_member_id
    assert sync(wire, group, member_id, generation + 1).error_code == E.illegal_generation
    assert sync(wire, group, member_id, generation).error_code == E.none

    def beat(member, gen):
        return wire.request(HeartbeatRequest(group_id=group, generation_id=gen, member_id=member,
                                             group_instance_id=None)).error_code
    assert beat(member_id, generation) == E.none
    assert beat(member_id, generation - 1) == E.illegal_generation
    assert beat("stranger", generation) == E.unknown_member_id


def test_refused_commits_are_not_persisted(wire, topic):
    group = unique_topic("g")
    assert commit(wire, group, topic, metadata="x" * 4097) == E.offset_metadata_too_large
    assert commit(wire, group, "no-such-topic") == E.unknown_topic_or_partition
    assert commit(wire, group, topic, partition=5) == E.unknown_topic_or_partition
    assert commit(wire, unique_topic("g"), topic, member_id="m", generation=3) == E.illegal_generation
    assert fetched(wire, group, topic) == -1
    member_id, generation = joined(wire, group)
    # CompletingRebalance: refused before the member is even looked at, as Kafka does.
    assert commit(wire, group, topic, member_id=member_id, generation=generation) == E.rebalance_in_progress
    assert sync(wire, group, member_id, generation).error_code == E.none
    assert commit(wire, group, topic, member_id="stranger", generation=generation) == E.unknown_member_id
    assert commit(wire, group, topic, member_id=member_id, generation=generation + 1) == E.illegal_generation
    assert fetched(wire, group, topic) == -1
    assert commit(wire, group, topic, member_id=member_id, generation=generation) == E.none
    assert fetched(wire, group, topic) == 7


@pytest.mark.parametrize("oversized", ["metadata", "assignment"])
def test_member_data_too_large_to_store_fails_the_sync_and_nothing_is_kept(wire, oversized):
    # Larger than the offsets topic's max.message.bytes (1 MB): the group's
    # record cannot be written. As Kafka: the JoinGroup is taken, the leader's
    # SyncGroup answers UNKNOWN_SERVER_ERROR and the group rebalances.
    group = unique_topic("g")
    big = b"x" * 1_100_000
    member_id, generation = joined(wire, group, metadata=big if oversized == "metadata" else b"")
    assignment = big if oversized == "assignment" else b"a"
    assert sync(wire, group, member_id, generation, assignment=assignment).error_code == E.unknown_server_error
    [described] = wire.request(DescribeGroupsRequest(groups=(group,), include_authorized_operations=False)).groups
    assert described.group_state == "PreparingRebalance"


def test_a_static_member_id_taken_over_is_fenced(wire):
    group = unique_topic("g")
    first = join(wire, group, instance="static-1")
    assert first.error_code == E.none           # static members skip KIP-394's round
    second = join(wire, group, instance="static-1")
    assert second.error_code == E.none and second.member_id != first.member_id
    assert sync(wire, group, second.member_id, second.generation_id).error_code == E.none
    fenced = wire.request(HeartbeatRequest(group_id=group, generation_id=second.generation_id,
                                           member_id=first.member_id, group_instance_id="static-1"))
    assert fenced.error_code == E.fenced_instance_id


def test_a_full_group_refuses_another_member(start_cluster):
    _, status = start_cluster(brokers=1, overrides={"group.max.size": "1", "offsets.topic.num.partitions": "1"})
    broker = status.brokers[0]
    client = WireClient(broker.host, broker.port, timeout_s=30)
    try:
        wait_for(lambda: client.request(FindCoordinatorRequest(key="g", key_type=0)).error_code == E.none,
                 60, "the group coordinator")
        joined(client, "g")
        assert join(client, "g").error_code == E.group_max_size_reached
    finally:
        client.close()


def test_clients_cannot_append_to_the_offsets_topic(wire):
    from kio.schema.metadata.v12 import request as metadata
    from kio.schema.produce.v8 import request as produce

    from kafkactl.cluster.protocol.record_batch import build_batch

    answer = wire.request(produce.ProduceRequest(
        transactional_id=None, acks=-1, timeout=5000 * MS, topic_data=(produce.TopicProduceData(
            name="__consumer_offsets", partition_data=(produce.PartitionProduceData(
                index=0, records=build_batch([(b"k", b"v", None, 0)])),)),)))
    assert answer.responses[0].partition_responses[0].error_code == E.invalid_topic_exception
    [topic] = wire.request(metadata.MetadataRequest(
        topics=(metadata.MetadataRequestTopic(topic_id=None, name="__consumer_offsets"),),
        allow_auto_topic_creation=False, include_topic_authorized_operations=False)).topics
    assert topic.is_internal


def test_too_few_brokers_for_the_offsets_topic_keep_the_coordinator_unavailable(start_cluster):
    # Kafka's rule: __consumer_offsets is not created with fewer live brokers
    # than offsets.topic.replication.factor; FindCoordinator keeps answering
    # COORDINATOR_NOT_AVAILABLE (retriable) until enough brokers are up.
    import time

    from kafkactl.cluster.admin.topics import list_topics
    from kafkactl.cluster.zk.client import close, connect

    _, status = start_cluster(brokers=1, overrides={"offsets.topic.replication.factor": "3"})
    broker = status.brokers[0]
    client = WireClient(broker.host, broker.port, timeout_s=30)
    zk = connect(status.zookeeper_connect, session_timeout_ms=10000, connection_timeout_ms=10000)
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            answer = client.request(FindCoordinatorRequest(key="g", key_type=0))
            assert answer.error_code == E.coordinator_not_available
            time.sleep(0.5)
        assert "__consumer_offsets" not in list_topics(zk)
    finally:
        client.close()
        close(zk)
