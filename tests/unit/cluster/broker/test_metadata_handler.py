"""Metadata through the dispatcher with broker 3 dead: each version group
answers replicas on dead brokers as ZooKeeper-mode Kafka 2.x does."""

import importlib

import pytest
from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.broker_client import decode_response, encode_request
from kafkactl.cluster.broker.config import from_properties
from kafkactl.cluster.broker.dispatcher import Dispatcher
from kafkactl.cluster.broker.handlers.services import BrokerServices
from kafkactl.cluster.broker.metadata import MetadataCache, MetadataSnapshot, TopicMetadata
from kafkactl.cluster.protocol.codec import response_class
from kafkactl.cluster.zk.codecs import BrokerRegistration, PartitionState, TopicAssignment


def registration(broker_id: int) -> BrokerRegistration:
    return BrokerRegistration(broker_id, "127.0.0.1", 9000 + broker_id, (f"PLAINTEXT://127.0.0.1:{9000 + broker_id}",))


@pytest.fixture
def dispatcher(tmp_path):
    config, _ = from_properties({"broker.id": "1", "zookeeper.connect": "z:1", "log.dirs": f"{tmp_path}/a"})
    cache = MetadataCache()
    cache.replace(MetadataSnapshot(
        cluster_id="c", controller_id=1, brokers={1: registration(1), 2: registration(2)},
        topics={"t": TopicMetadata("t", TopicAssignment({0: [1, 2, 3], 1: [3, 1], 2: [1, 2]}), {
            0: PartitionState(leader=1, leader_epoch=4, isr=[1, 3, 2], controller_epoch=1),
            1: PartitionState(leader=3, leader_epoch=2, isr=[3, 1], controller_epoch=1),
            2: PartitionState(leader=1, leader_epoch=1, isr=[1, 2], controller_epoch=1)})}))
    return Dispatcher(BrokerServices(config=config, metadata=cache, replica_manager=None,
                                     zk_agent=None, producer_ids=None, clock_ms=lambda: 0))


def ask(dispatcher, version: int):
    schema = importlib.import_module(f"kio.schema.metadata.v{version}.request")
    fields = schema.MetadataRequest.__dataclass_fields__
    topic_fields = {"name": "t"}
    if "topic_id" in schema.MetadataRequestTopic.__dataclass_fields__:
        topic_fields["topic_id"] = None
    values = {"topics": (schema.MetadataRequestTopic(**topic_fields),)}
    for name, value in (("allow_auto_topic_creation", False), ("include_cluster_authorized_operations", False),
                        ("include_topic_authorized_operations", False)):
        if name in fields:
            values[name] = value
    frame = encode_request(schema.MetadataRequest(**values), 5, "test")[4:]
    response = decode_response(dispatcher.dispatch(frame)[4:], response_class(3, version), 5)
    return {p.partition_index: p for p in response.topics[0].partitions}


def summary(partition) -> tuple:
    return (ErrorCode(partition.error_code), partition.leader_id, list(partition.replica_nodes),
            list(partition.isr_nodes))


def test_version_0_filters_dead_brokers_and_says_replica_not_available(dispatcher):
    answers = ask(dispatcher, 0)
    assert summary(answers[0]) == (ErrorCode.replica_not_available, 1, [1, 2], [1, 2])
    assert summary(answers[1]) == (ErrorCode.leader_not_available, -1, [1], [1])
    assert summary(answers[2]) == (ErrorCode.none, 1, [1, 2], [1, 2])


@pytest.mark.parametrize("version", [1, 4, 5, 8, 9, 12])
def test_later_versions_list_every_replica_unfiltered_without_error(dispatcher, version):
    answers = ask(dispatcher, version)
    assert summary(answers[0]) == (ErrorCode.none, 1, [1, 2, 3], [1, 3, 2])
    assert summary(answers[1]) == (ErrorCode.leader_not_available, -1, [3, 1], [3, 1])
    assert summary(answers[2]) == (ErrorCode.none, 1, [1, 2], [1, 2])
    if version >= 5:
        assert [list(answers[p].offline_replicas) for p in (0, 1, 2)] == [[3], [3], []]
