"""A partition this broker does not host, through the dispatcher: Kafka's
answer is NOT_LEADER_OR_FOLLOWER when the cluster knows it (it is on other
brokers, or just moved away: the client refreshes metadata and retries), and
UNKNOWN_TOPIC_OR_PARTITION only when it does not exist. Consumers give up on
the second (kcat -e exits 1 on it: a consumer right after a reassignment did)."""

import datetime
import importlib

import pytest
from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.broker_client import decode_response, encode_request
from kafkactl.cluster.broker.dispatcher import Dispatcher
from kafkactl.cluster.broker.handlers.services import BrokerServices
from kafkactl.cluster.broker.metadata import MetadataCache, MetadataSnapshot, TopicMetadata
from kafkactl.cluster.broker.role_changes import LeaderAndIsrState
from kafkactl.cluster.protocol.codec import response_class
from kafkactl.cluster.zk.codecs import PartitionState, TopicAssignment
from support.one_broker import one_broker

NOW_MS = 1_700_000_000_000


@pytest.fixture
def dispatcher(tmp_path):
    config, manager = one_broker(f"{tmp_path}/a", lambda: NOW_MS)
    manager.apply_leader_and_isr(0, 1, [LeaderAndIsrState("t", 0, 1, 1, 4, (1,), 0, (1,))], {})
    metadata = MetadataCache()
    # Partition 1 lives on brokers 2 and 3 only.
    metadata.replace(MetadataSnapshot(topics={"t": TopicMetadata("t", TopicAssignment({0: [1], 1: [2, 3]}), {
        0: PartitionState(1, 4, [1], 1), 1: PartitionState(2, 7, [2, 3], 1)})}))
    yield Dispatcher(BrokerServices(config=config, metadata=metadata, replica_manager=manager,
                                    zk_agent=None, producer_ids=None, clock_ms=lambda: NOW_MS))
    manager.shutdown()
    manager.log_manager.shutdown()


def ask(dispatcher, api_key: int, request, version: int):
    answer = dispatcher.dispatch(encode_request(request, 5, "test")[4:])
    if not isinstance(answer, bytes):   # a Fetch answer: spliced, all bytes while the logs are empty
        answer = b"".join(answer.parts)
    return decode_response(answer[4:], response_class(api_key, version), 5)


def test_a_consumer_fetch_of_a_partition_on_other_brokers_is_told_to_find_the_leader(dispatcher):
    schema = importlib.import_module("kio.schema.fetch.v12.request")
    partitions = tuple(schema.FetchPartition(partition=p, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1,
                                             log_start_offset=-1, partition_max_bytes=1 << 20) for p in (0, 1, 5))
    request = schema.FetchRequest(
        cluster_id=None, replica_id=-1, max_wait=datetime.timedelta(0), min_bytes=0, max_bytes=1 << 20, isolation_level=0,
        session_id=0, session_epoch=-1, topics=(schema.FetchTopic(topic="t", partitions=partitions),
                                                 schema.FetchTopic(topic="gone", partitions=partitions[:1])),
        forgotten_topics_data=(), rack_id="")
    response = ask(dispatcher, 1, request, 12)
    errors = {(t.topic, p.partition_index): ErrorCode(p.error_code) for t in response.responses for p in t.partitions}
    assert errors == {("t", 0): ErrorCode.none, ("t", 1): ErrorCode.not_leader_or_follower,
                      ("t", 5): ErrorCode.unknown_topic_or_partition, ("gone", 0): ErrorCode.unknown_topic_or_partition}


def test_list_offsets_of_a_partition_on_other_brokers_is_told_to_find_the_leader(dispatcher):
    schema = importlib.import_module("kio.schema.list_offsets.v7.request")
    request = schema.ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=(schema.ListOffsetsTopic(
        name="t", partitions=tuple(schema.ListOffsetsPartition(partition_index=p, current_leader_epoch=-1, timestamp=-1)
                                   for p in (0, 1, 5))),))
    response = ask(dispatcher, 2, request, 7)
    assert [ErrorCode(p.error_code) for p in response.topics[0].partitions] == [
        ErrorCode.none, ErrorCode.not_leader_or_follower, ErrorCode.unknown_topic_or_partition]
