"""FindCoordinator: a group's coordinator is the leader of its
`__consumer_offsets` partition (Kafka's placement); the topic is wished for
creation on first need; transactions have no coordinator."""

import importlib

import pytest
from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.broker_client import decode_response, encode_request
from kafkactl.cluster.broker.config import from_properties
from kafkactl.cluster.broker.dispatcher import Dispatcher
from kafkactl.cluster.broker.handlers.services import BrokerServices
from kafkactl.cluster.broker.metadata import MetadataCache, MetadataSnapshot, TopicMetadata
from kafkactl.cluster.broker.topic_auto_creation import TopicAutoCreator
from kafkactl.cluster.coordinator.placement import partition_for
from kafkactl.cluster.protocol.codec import response_class
from kafkactl.cluster.zk.codecs import BrokerRegistration, PartitionState, TopicAssignment


class Agent:
    def __init__(self) -> None:
        self.created = []
        self.auto_creator = TopicAutoCreator(lambda *wish: self.created.append(wish) or True, lambda: None)


@pytest.fixture
def services(tmp_path):
    config, _ = from_properties({"broker.id": "1", "zookeeper.connect": "z:1", "log.dirs": f"{tmp_path}/a",
                                 "offsets.topic.num.partitions": "5"})
    return BrokerServices(config=config, metadata=MetadataCache(), replica_manager=None,
                          zk_agent=Agent(), producer_ids=None, clock_ms=lambda: 0)


def ask(services, version: int, key_type: int = 0, keys=("my-id",)):
    schema = importlib.import_module(f"kio.schema.find_coordinator.v{version}.request")
    fields = {"coordinator_keys": tuple(keys)} if version >= 4 else {"key": keys[0]}
    if version >= 1:
        fields["key_type"] = key_type
    request = schema.FindCoordinatorRequest(**fields)
    frame = encode_request(request, 2, "test")[4:]
    return decode_response(Dispatcher(services).dispatch(frame)[4:], response_class(10, version), 2)


def with_offsets_topic(services, leaders: dict[int, int]) -> None:
    brokers = {b: BrokerRegistration(b, f"host{b}", 9000 + b, (f"PLAINTEXT://host{b}:{9000 + b}",)) for b in (1, 2)}
    states = {p: PartitionState(leader, 0, [leader], 1) for p, leader in leaders.items()}
    topic = TopicMetadata("__consumer_offsets", TopicAssignment({p: [1, 2] for p in range(5)}), states)
    services.metadata.replace(MetadataSnapshot(brokers=brokers, topics={"__consumer_offsets": topic}))


def test_a_transaction_coordinator_is_said_to_be_unsupported(services):
    response = ask(services, 3, key_type=1)
    assert response.error_code == ErrorCode.coordinator_not_available
    assert response.error_message == "transactions are not supported: this broker has no transaction coordinator"


def test_without_the_offsets_topic_it_is_wished_for_and_the_answer_is_retriable(services):
    (coordinator,) = ask(services, 4).coordinators
    assert (coordinator.key, coordinator.error_code) == ("my-id", ErrorCode.coordinator_not_available)
    services.zk_agent.auto_creator.create_pending()
    [(topic, partitions, replicas, config)] = services.zk_agent.created
    assert (topic, partitions, replicas, config["cleanup.policy"]) == ("__consumer_offsets", 5, 3, "compact")


@pytest.mark.parametrize("version", [0, 3])
def test_the_coordinator_is_the_leader_of_the_groups_partition(services, version):
    partition = partition_for("my-id", 5)
    with_offsets_topic(services, {p: (2 if p == partition else 1) for p in range(5)})
    response = ask(services, version)
    assert (response.error_code, response.node_id, response.host, response.port) == (
        ErrorCode.none, 2, "host2", 9002)


def test_batched_keys_are_answered_each_and_a_leaderless_partition_is_not_available(services):
    partition = partition_for("my-id", 5)
    other = next(g for g in (f"g{i}" for i in range(100)) if partition_for(g, 5) != partition)
    with_offsets_topic(services, {p: 1 for p in range(5) if p != partition})
    answers = {c.key: c for c in ask(services, 4, keys=("my-id", other)).coordinators}
    assert answers["my-id"].error_code == ErrorCode.coordinator_not_available
    assert "has no live leader" in answers["my-id"].error_message
    assert (answers[other].error_code, answers[other].node_id) == (ErrorCode.none, 1)
